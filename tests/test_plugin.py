"""The pytest plugin, end to end through ``pytester``: options, controls, seeds and the report."""

from __future__ import annotations

import json
import signal
import textwrap
from typing import Any

import pytest

from ptrport.report.platform_report import load_report
from tests.scenario_runs import copy_scenarios, signal_when_started, use_profile

TWIN_BACKEND = """
from ptrport.device.backends import CpuBackend


class CpuTwin(CpuBackend):
    name = "cpu-twin"

    def platform_slug(self):
        return "cpu-twin"
"""


def _report(pytester: pytest.Pytester, platform: str = "test-platform") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / "reports" / f"{platform}.json").read_text())
    return data


def _results(report: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    return [r for r in report["results"] if all(r[k] == v for k, v in match.items())]


def _install_plugin_distribution(
    pytester: pytest.Pytester, module: str, source: str, entry_points: str
) -> None:
    """A distribution on sys.path whose entry points importlib.metadata finds, as if installed."""
    pytester.makepyfile(**{module: source})
    dist = pytester.mkdir(f"{module}-0.1.dist-info")
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    pytester.syspathinsert()


ADDRESS_CHECK = """
from hypothesis import given
from ptrport.check import strategies as hst


@given(address=hst.addresses())
def test_low_addresses_only(backend, address):
    assert address < 2**63, hex(address)


@given(address=hst.addresses(classes=["user-space"]))
def test_user_space_addresses_pass(backend, address):
    assert address < 2**63
"""


class TestBackendOption:
    def test_an_unknown_backend_is_a_usage_error_listing_the_known_ones(
        self, pytester: pytest.Pytester
    ) -> None:
        result = pytester.runpytest("--backend=bogus")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [
                "*--backend: unknown backend 'bogus'; known: cpu, cpu-usm, cpu-tbi, "
                "cpu-placed, cuda, rocm, xpu, mps*"
            ]
        )

    def test_an_unknown_subject_is_a_usage_error_listing_the_known_ones(
        self, pytester: pytest.Pytester
    ) -> None:
        result = pytester.runpytest("--subject=uint64/torch,nope")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*--subject: unknown subject 'nope'; known: uint64/triton, uint64/torch*"]
        )

    @pytest.mark.parametrize(
        ("value", "reason"),
        [
            ("0", "0 is not a positive number of seconds"),
            ("-1", "-1 is not a positive number of seconds"),
            ("nan", "nan is not a positive number of seconds"),
            ("soon", "'soon' is not a number of seconds"),
        ],
    )
    def test_an_example_timeout_that_is_not_a_positive_number_is_a_usage_error(
        self, pytester: pytest.Pytester, value: str, reason: str
    ) -> None:
        result = pytester.runpytest(f"--example-timeout={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*argument --example-timeout: {reason}"])

    def test_a_requested_backend_that_is_not_here_fails_the_run_with_one_line_saying_why(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        pytester.makepyfile(test_scenario=ADDRESS_CHECK)
        result = pytester.runpytest("--backend=xpu")
        assert result.ret != 0
        lines = [line for line in result.stderr.lines if line.strip()]
        assert lines == [
            "ERROR: backend xpu is not available: torch "
            f"{__import__('torch').__version__} has no XPU support"
        ]
        assert not (pytester.path / "reports").exists()

    def test_all_runs_what_is_here_and_records_the_rest_as_unavailable(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        pytester.makepyfile(
            test_scenario="""
            from hypothesis import given
            from ptrport.check import strategies as hst

            @given(address=hst.addresses(classes=["user-space"]))
            def test_passes(backend, address):
                assert address < 2**63
            """
        )
        result = pytester.runpytest("--backend=all", "--platform-name=test-platform")
        assert result.ret == 0
        report = _report(pytester)
        assert _results(report, backend="cpu")[0]["outcome"] == "passed"
        for name in ("cuda", "rocm", "xpu", "mps"):
            (found,) = _results(report, backend=name)
            assert found["outcome"] == "unavailable"
            assert found["message"].startswith(f"{name}: torch ")
            assert found["examples"] == 0
            assert report["platform"]["fingerprint"]["backends"][name]["available"] is False

    def test_a_plugin_backend_from_an_entry_point_runs_like_a_built_in_one(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        _install_plugin_distribution(
            pytester,
            "twin_backend",
            TWIN_BACKEND,
            "[ptrport.backends]\ncpu-twin = twin_backend:CpuTwin\n",
        )
        pytester.makepyfile(test_scenario=ADDRESS_CHECK)
        result = pytester.runpytest("--backend=cpu-twin")
        result.assert_outcomes(passed=1, failed=1)
        report = _report(pytester, "cpu-twin")
        assert {r["backend"] for r in report["results"]} == {"cpu-twin"}

    def test_a_plugin_backend_that_fails_to_load_is_unavailable_with_the_reason(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        _install_plugin_distribution(
            pytester, "broken_backend", "", "[ptrport.backends]\nbroken = no_such_module:Thing\n"
        )
        pytester.makepyfile(test_scenario=ADDRESS_CHECK)
        result = pytester.runpytest("--backend=all", "--platform-name=test-platform")
        assert result.ret == 1  # test_low_addresses_only fails on cpu, as it should
        (found, _) = _results(_report(pytester), backend="broken")
        assert found["outcome"] == "unavailable"
        assert "no_such_module:Thing failed to load: ModuleNotFoundError" in found["message"]


class TestControls:
    def test_int64_controls_are_expected_failures_with_a_minimal_counterexample(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester, max_examples=30)
        copy_scenarios(pytester, "test_table_round_trip", "test_mixed_batches")
        result = pytester.runpytest(
            "--backend=cpu", "--subject=uint64/torch,int64/torch", "--platform-name=test-platform"
        )
        result.assert_outcomes(passed=3, xfailed=3)
        controls = _results(_report(pytester), subject="int64/torch")
        assert len(controls) == 3
        for found in controls:
            assert found["outcome"] == "xfailed"
            assert found["message"].startswith("OverflowError")
            assert "0x8000000000000000" in json.dumps(found["example"])

    def test_a_control_that_passes_where_its_bug_must_show_fails_the_run(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        pytester.makepyfile(
            test_table_round_trip="""
            from ptrport.check.batches import Batch, Entry

            def test_only_low_addresses(backend, subject):
                subject.create(1, backend)
                subject.stage(Batch((Entry(4096, 8192, 0),)))
            """
        )
        result = pytester.runpytest(
            "--backend=cpu", "--subject=int64/torch", "--platform-name=test-platform"
        )
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        (found,) = _report(pytester)["results"]
        assert found["outcome"] == "xpassed"
        assert "int64/torch" in found["message"]

    def test_a_control_runs_like_any_subject_in_other_scenarios(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        copy_scenarios(pytester, "test_buffer_creation")
        result = pytester.runpytest(
            "--backend=cpu", "--subject=int64/ctypes", "--platform-name=test-platform"
        )
        result.assert_outcomes(passed=4)
        assert {r["outcome"] for r in _report(pytester)["results"]} == {"passed"}


class TestReport:
    def test_a_failure_is_reported_with_its_minimal_example_in_hex(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        pytester.makepyfile(test_scenario=ADDRESS_CHECK)
        pytester.runpytest("--backend=cpu", "--platform-name=test-platform")
        report = _report(pytester)
        assert report["schema"] == "ptrport.report/2"
        assert report["complete"] is True
        (failed,) = _results(report, outcome="failed")
        assert failed["check"] == "scenario::test_low_addresses_only"
        assert failed["subject"] is None
        assert failed["example"] == {"address": "0x8000000000000000"}
        assert failed["message"].startswith("AssertionError: 0x8000000000000000")
        assert failed["examples"] > 1

    def test_every_check_subject_and_backend_has_one_result_whose_id_omits_the_backend(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        pytester.makepyfile(
            test_scenario="""
            import pytest

            @pytest.mark.parametrize("width", [4, 8])
            def test_widths(backend, subject, width):
                assert width in (4, 8)
            """
        )
        result = pytester.runpytest(
            "--backend=cpu", "--subject=uint64/torch,int64-bitcast/ctypes", "-p", "no:randomly"
        )
        result.assert_outcomes(passed=4)
        report = _report(pytester, "cpu-x86-64")
        keys = {(r["check"], r["subject"], r["backend"]) for r in report["results"]}
        assert keys == {
            (f"scenario::test_widths[{w}]", s, "cpu")
            for w in (4, 8)
            for s in ("uint64/torch", "int64-bitcast/ctypes")
        }

    def test_the_report_goes_where_the_options_or_the_environment_say(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        use_profile(pytester)
        pytester.makepyfile(test_scenario=ADDRESS_CHECK)
        pytester.runpytest("--backend=cpu", "--report-dir=out", "--platform-name=lab-1")
        assert (
            json.loads((pytester.path / "out" / "lab-1.json").read_text())["platform"]["id"]
            == "lab-1"
        )
        monkeypatch.setenv("PTRPORT_PLATFORM", "from-env")
        result = pytester.runpytest("--backend=cpu")
        assert (pytester.path / "reports" / "from-env.json").exists()
        result.stdout.fnmatch_lines(
            [
                "*= ptrport =*",
                "backend  passed  failed  expected failures  unavailable*time",
                "cpu           1       1                  0            0*s",
                "report: *from-env.json",
            ]
        )

    def test_a_run_killed_midway_leaves_an_incomplete_report_with_every_finished_result(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        pytester.makepyfile(
            test_scenario="""
            import pathlib
            import time

            def test_first(backend):
                assert True

            def test_second(backend):
                assert False, "a failure before the kill"

            def test_hangs(backend):
                pathlib.Path("hanging").touch()
                time.sleep(300)
            """
        )
        status, _ = signal_when_started(
            pytester, "hanging", signal.SIGKILL, "--backend=cpu", "--platform-name=killed"
        )
        assert status == -signal.SIGKILL
        report = load_report(pytester.path / "reports" / "killed.json")
        assert report.complete is False
        assert report.run["status"] == "running"
        assert [(r.check, r.outcome.value) for r in report.results] == [
            ("scenario::test_first", "passed"),
            ("scenario::test_second", "failed"),
        ]

    def test_a_platform_name_that_cannot_name_a_file_is_a_usage_error(
        self, pytester: pytest.Pytester
    ) -> None:
        result = pytester.runpytest("--platform-name=../escape")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--platform-name: platform id '../escape' must be*"])

    def test_a_run_without_scenarios_writes_no_report(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile("def test_plain():\n    assert True\n")
        result = pytester.runpytest()
        result.assert_outcomes(passed=1)
        assert not (pytester.path / "reports").exists()

    def test_the_header_shows_backends_subjects_and_the_hypothesis_profile(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        result = pytester.runpytest("--backend=cpu", "--subject=uint64/torch,int64/torch", "--co")
        result.stdout.fnmatch_lines(
            [
                "ptrport: platform cpu-x86-64, report *cpu-x86-64.json",
                "ptrport: backends cpu",
                "ptrport: subjects uint64/torch, int64/torch (controls: int64/torch)",
                "ptrport: hypothesis profile pytester, seed derandomized",
            ]
        )


SEED_PROBE = """
import json
import pytest
from hypothesis import given, strategies as st
from ptrport.check import strategies as hst


# A parametrize mark makes Hypothesis key its seed on the node id, which names the backend.
@pytest.mark.parametrize("width", [8])
@given(data=st.data())
def test_draws(backend, data, width):
    batch = data.draw(hst.copy_batches(backend, max_entries=4))
    shape = [
        [e.synthetic, e.nbytes, e.src if e.synthetic else e.src - e.src_allocation.address]
        for e in batch
    ]
    dtypes = [str(a.dtype) for a in batch.allocations]
    with open("draws.jsonl", "a") as log:
        log.write(json.dumps([backend.name, shape, dtypes]) + "\\n")
"""


class TestSeeds:
    @pytest.mark.parametrize(
        ("derandomize", "options"),
        [(True, ()), (False, ("--hypothesis-seed=1234",))],
        ids=["derandomized", "explicit-seed"],
    )
    def test_the_same_seed_gives_the_same_inputs_on_every_backend(
        self, pytester: pytest.Pytester, derandomize: bool, options: tuple[str, ...]
    ) -> None:
        use_profile(pytester, max_examples=15, derandomize=derandomize)
        _install_plugin_distribution(
            pytester,
            "twin_backend",
            TWIN_BACKEND,
            "[ptrport.backends]\ncpu-twin = twin_backend:CpuTwin\n",
        )
        pytester.makepyfile(test_seed_probe=SEED_PROBE)
        result = pytester.runpytest("--backend=cpu,cpu-twin", *options)
        result.assert_outcomes(passed=2)
        draws: dict[str, list[Any]] = {"cpu": [], "cpu-twin": []}
        for line in (pytester.path / "draws.jsonl").read_text().splitlines():
            name, *drawn = json.loads(line)
            draws[name].append(drawn)
        assert len(draws["cpu"]) >= 10
        assert draws["cpu"] == draws["cpu-twin"]
