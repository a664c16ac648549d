"""The plugin in someone else's pytest run: it acts only on ptrport scenarios, finds pytest's
configuration whichever way ``--report-dir`` is written, and under pytest-xdist keeps one
report with every result. Real pytest runs in subprocesses (``pytester``), as a user's are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ptrport.report.platform_report import load_report
from tests.scenario_runs import PROFILE_CONFTEST, copy_scenarios, use_profile

FOREIGN = """
import sys

import pytest


@pytest.fixture
def backend():
    return "sqlite"


def test_db(backend):
    assert backend == "sqlite"


def test_nothing_heavy_was_imported_for_the_plugin():
    assert not {"torch", "triton", "numpy", "ptrport.run.session"} & set(sys.modules)
"""

SCENARIO = """
import pytest
from hypothesis import given, strategies as st

pytestmark = pytest.mark.ptrport_scenario


@given(x=st.integers(0, 2**64 - 1))
def test_fits(backend, x):
    assert 0 <= x < 2**64
"""


def test_a_foreign_backend_fixture_is_left_alone_and_nothing_of_ours_happens(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_other=FOREIGN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    printed = result.stdout.str() + result.stderr.str()
    assert "ptrport:" not in printed and "= ptrport =" not in printed
    assert not (pytester.path / "reports").exists()
    assert not [p for p in pytester.path.rglob("*") if p.suffix in (".json", ".jsonl")]


def test_a_foreign_run_next_to_scenarios_in_another_directory_is_left_alone(
    pytester: pytest.Pytester,
) -> None:
    # A scenario module elsewhere in the tree is not collected by a run of the other file.
    pytester.makepyfile(test_other=FOREIGN)
    pytester.mkdir("checks")
    (pytester.path / "checks" / "test_scenario.py").write_text(SCENARIO)
    result = pytester.runpytest_subprocess("test_other.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "reports").exists()


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    code = (
        "import sys, pytest, ptrport.plugin; "
        "print(sorted({'torch', 'triton', 'numpy', 'hypothesis'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _project(pytester: pytest.Pytester) -> None:
    """A project whose configuration names its scenarios (testpaths), beside other tests."""
    pytester.makepyprojecttoml(
        """
        [tool.pytest.ini_options]
        testpaths = ["checks"]
        """
    )
    pytester.mkdir("checks")
    (pytester.path / "checks" / "test_scenario.py").write_text(SCENARIO)
    (pytester.path / "checks" / "conftest.py").write_text(
        PROFILE_CONFTEST.format(max_examples=5, derandomize=True)
    )
    pytester.makepyfile(test_elsewhere="def test_not_a_scenario():\n    assert False\n")


@pytest.mark.parametrize("written", ["joined", "apart", "environment"])
def test_the_report_directory_is_taken_however_it_is_written(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str
) -> None:
    _project(pytester)
    out = tmp_path / "elsewhere"
    out.mkdir()
    options = {
        "joined": [f"--report-dir={out}"],
        "apart": ["--report-dir", str(out)],
        "environment": [],
    }[written]
    if written == "environment":
        monkeypatch.setenv("PTRPORT_REPORT_DIR", str(out))
    result = pytester.runpytest_subprocess("--backend=cpu", "-p", "no:cacheprovider", *options)
    result.assert_outcomes(passed=1)
    assert [p.name for p in out.iterdir()] == ["cpu-x86-64.json"]
    assert not (pytester.path / "reports").exists()


def test_a_configuration_pytest_cannot_take_back_late_asks_for_the_joined_form(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.pytest.ini_options]
        testpaths = ["checks"]
        addopts = "-q"
        """
    )
    out = tmp_path / "out"
    out.mkdir()
    result = pytester.runpytest_subprocess("--backend=cpu", "--report-dir", str(out))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--report-dir {out}: *write --report-dir={out}"])


def _outcomes(report_path: Path) -> list[tuple[Any, ...]]:
    report = load_report(report_path)
    return sorted((r.check, r.subject, r.backend, r.outcome.value) for r in report.results)


def test_xdist_workers_results_end_in_one_report_with_every_result(
    pytester: pytest.Pytester,
) -> None:
    use_profile(pytester, max_examples=5)
    copy_scenarios(pytester, "test_table_round_trip", "test_uint64_operations")
    options = ["--backend=cpu,cpu-usm", "-p", "no:cacheprovider"]
    serial = pytester.runpytest_subprocess(*options, "--platform-name=serial")
    assert serial.ret == 0
    parallel = pytester.runpytest_subprocess(*options, "--platform-name=parallel", "-n", "2")
    assert parallel.ret == 0
    assert parallel.stdout.str().count("= ptrport =") == 1
    reports = pytester.path / "reports"
    expected = _outcomes(reports / "serial.json")
    assert len(expected) > 40
    assert _outcomes(reports / "parallel.json") == expected
    assert load_report(reports / "parallel.json").complete


def test_a_worker_that_dies_costs_one_crashed_result_and_the_rest_are_kept(
    pytester: pytest.Pytester,
) -> None:
    use_profile(pytester, max_examples=3)
    pytester.makepyfile(
        test_scenario=textwrap.dedent(
            """
            import os

            def test_before(backend):
                assert True

            def test_dies(backend):
                os.abort()

            def test_after(backend):
                assert True
            """
        )
    )
    result = pytester.runpytest_subprocess(
        "--backend=cpu,cpu-usm", "--no-isolate", "-n", "2", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = json.loads((pytester.path / "reports" / "cpu-x86-64.json").read_text())
    outcomes = sorted((r["check"], r["backend"], r["outcome"]) for r in report["results"])
    assert outcomes == [
        ("scenario::test_after", "cpu", "passed"),
        ("scenario::test_after", "cpu-usm", "passed"),
        ("scenario::test_before", "cpu", "passed"),
        ("scenario::test_before", "cpu-usm", "passed"),
        ("scenario::test_dies", "cpu", "crashed"),
        ("scenario::test_dies", "cpu-usm", "crashed"),
    ]
    for died in (r for r in report["results"] if r["outcome"] == "crashed"):
        assert died["message"].startswith("crashed: "), died["message"]


def test_scenarios_an_xdist_run_did_not_ask_for_still_reach_one_report(
    pytester: pytest.Pytester,
) -> None:
    # No ptrport option and no scenarios package among the paths: the workers find marked
    # scenarios while collecting, and the controller, which collects nothing, keeps their
    # results all the same.
    use_profile(pytester, max_examples=5)
    copy_scenarios(pytester, "test_table_round_trip")
    serial = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--platform-name=serial")
    assert serial.ret == 0
    parallel = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    assert parallel.ret == 0
    reports = pytester.path / "reports"
    (written,) = [p for p in reports.glob("*.json") if p.name != "serial.json"]
    assert _outcomes(written) == _outcomes(reports / "serial.json")
    assert len(_outcomes(written)) > 10


def test_ptrport_run_from_another_directory_names_isolated_checks_as_in_process_ones(
    tmp_path: Path,
) -> None:
    # The packaged scenarios lie outside this directory's rootdir; an isolated child runs each
    # by its absolute path, and the parent names its results as it names its own items.
    def run(*options: str) -> list[str]:
        command = [sys.executable, "-m", "ptrport.cli", "run", "--backend=cpu"]
        done = subprocess.run(
            [
                *command,
                "-p",
                "no:cacheprovider",
                "-k",
                "table_round_trip and uint64/torch",
                *options,
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "HYPOTHESIS_PROFILE": "dev"},
        )
        assert done.returncode == 0, done.stdout[-3000:]
        (path,) = (tmp_path / "reports").glob("*.json")
        nodeids = sorted(r.nodeid or "" for r in load_report(path).results)
        path.unlink()
        return nodeids

    in_process = run("--no-isolate")
    assert len(in_process) == 2 and all(
        n.startswith("test_table_round_trip.py::") for n in in_process
    )
    assert run("--isolate") == in_process
