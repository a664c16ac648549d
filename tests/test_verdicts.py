"""The verdict by difference: a user's test judged by its outcomes on ``cpu`` and on the
upper-half and placed backends; in the summary, the report, the page and a whole-suite run's
exit status; and where a failure happened, in the user's or the engine's code."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sample_reports import document, result

from ptrport.addresses import to_hex
from ptrport.report import schema
from ptrport.report.matrix import build_matrix
from ptrport.report.platform_report import (
    SCHEMA,
    SCHEMA_FILE,
    ReportError,
    load_report,
    report_from_document,
    write_report,
)
from ptrport.report.records import OWN_TEST, Outcome, Result
from ptrport.report.render_html import to_html
from ptrport.report.render_markdown import to_markdown
from ptrport.report.verdicts import CheckVerdict, Verdict, Verdicts, judge
from ptrport.run.outcomes import where_failed
from tests.scenario_runs import own_tests_project, written_report

OVERFLOW = "ValueError: Overflow when unpacking long long"
"""What torch says when ``torch.tensor([p], dtype=torch.int64)`` meets ``p >= 2**63``."""
BACKENDS = {"cpu": False, "cpu-usm": True, "cpu-tbi": True}
"""A default CPU run's backends, those judged against ``cpu`` marked."""


def _own(check: str, on: str, outcome: Outcome = Outcome.PASSED, **changes: Any) -> Result:
    """A user's test's result on backend ``on``."""
    return replace(result(check, outcome, subject=OWN_TEST, on=on), **changes)


def _everywhere(check: str, *outcomes: Outcome, **changes: Any) -> list[Result]:
    """The results of ``check`` on cpu, cpu-usm and cpu-tbi, in that order."""
    return [_own(check, on, o, **changes) for on, o in zip(BACKENDS, outcomes, strict=True)]


PASSED, FAILED = Outcome.PASSED, Outcome.FAILED


class TestJudge:
    def test_a_test_passing_on_cpu_and_failing_above_2_63_is_address_sensitive(self) -> None:
        results = [
            _own("test_t.py::test_table", "cpu"),
            _own(
                "test_t.py::test_table",
                "cpu-usm",
                FAILED,
                message=f"{OVERFLOW}\nmore",
                where="engine.py:12",
            ),
            _own("test_t.py::test_table", "cpu-tbi", Outcome.CRASHED, message="crashed: SIGSEGV"),
        ]
        verdicts = judge(results, BACKENDS)
        assert verdicts is not None
        assert verdicts.checks == (
            CheckVerdict(
                "test_t.py::test_table",
                Verdict.ADDRESS_SENSITIVE,
                backends=("cpu-usm", "cpu-tbi"),
                message=OVERFLOW,
                where="engine.py:12",
            ),
        )
        assert verdicts.findings == verdicts.checks
        assert verdicts.judged == ("cpu-usm", "cpu-tbi")

    def test_a_test_failing_on_cpu_fails_everywhere_and_is_no_finding(self) -> None:
        results = _everywhere(
            "test_t.py::test_gpu", Outcome.ERROR, FAILED, PASSED, message="in setup: no CUDA"
        )
        verdicts = judge(results, BACKENDS)
        assert verdicts is not None
        (found,) = verdicts.checks
        assert (found.verdict, found.backends, found.message) == (
            Verdict.FAILS_EVERYWHERE,
            ("cpu", "cpu-usm"),
            "in setup: no CUDA",
        )
        assert verdicts.findings == ()

    @pytest.mark.parametrize("on_cpu", [Outcome.SKIPPED, Outcome.UNAVAILABLE])
    def test_a_test_not_run_on_cpu_is_counted_as_skipped(self, on_cpu: Outcome) -> None:
        verdicts = judge(_everywhere("test_t.py::test_x", on_cpu, FAILED, FAILED), BACKENDS)
        assert verdicts is not None
        assert [c.verdict for c in verdicts.checks] == [Verdict.SKIPPED]

    def test_the_counts_line_names_every_verdict(self) -> None:
        results = [
            *_everywhere("test_t.py::a", PASSED, FAILED, PASSED),
            *_everywhere("test_t.py::b", FAILED, FAILED, FAILED),
            *_everywhere("test_t.py::c", FAILED, FAILED, FAILED),
            *_everywhere("test_t.py::d", PASSED, PASSED, Outcome.SKIPPED),
            *_everywhere("test_t.py::e", Outcome.SKIPPED, PASSED, PASSED),
        ]
        verdicts = judge(results, BACKENDS)
        assert verdicts is not None
        assert verdicts.counts_line() == (
            "1 address-sensitive, 2 fail everywhere (cannot run here), 1 pass everywhere, 1 skipped"
        )

    def test_failing_only_on_cpu_placed_is_address_sensitive(self) -> None:
        results = [
            _own("test_t.py::test_end", "cpu"),
            _own("test_t.py::test_end", "cpu-placed", FAILED, message="AssertionError: wrapped"),
        ]
        verdicts = judge(results, {"cpu": False, "cpu-placed": True})
        assert verdicts is not None
        assert [(c.verdict, c.backends) for c in verdicts.checks] == [
            (Verdict.ADDRESS_SENSITIVE, ("cpu-placed",))
        ]

    @pytest.mark.parametrize(
        "backends",
        [{"cpu-usm": True, "cpu-tbi": True}, {"cpu": False}, {"cpu": False, "cuda": False}],
        ids=["without cpu", "cpu alone", "without an upper-half backend"],
    )
    def test_a_run_without_cpu_or_a_judged_backend_has_no_verdict(
        self, backends: dict[str, bool]
    ) -> None:
        results = [_own("test_t.py::test_x", on, FAILED) for on in backends]
        assert judge(results, backends) is None

    def test_scenarios_are_not_judged_and_a_run_of_them_alone_has_no_verdict(self) -> None:
        scenarios = [result("a::test_x", FAILED, on=on) for on in BACKENDS]
        assert judge(scenarios, BACKENDS) is None
        verdicts = judge(
            [*scenarios, *_everywhere("test_t.py::y", PASSED, PASSED, PASSED)], BACKENDS
        )
        assert verdicts is not None
        assert [c.check for c in verdicts.checks] == ["test_t.py::y"]


class TestReport:
    def _verdicts(self) -> Verdicts:
        found = judge(
            [
                *_everywhere("test_t.py::test_table", PASSED, FAILED, FAILED, message=OVERFLOW),
                *_everywhere("test_t.py::test_gpu", FAILED, FAILED, FAILED, message="no CUDA"),
            ],
            BACKENDS,
        )
        assert found is not None
        return replace(
            found, checks=(replace(found.checks[0], where="engine.py:12"), *found.checks[1:])
        )

    def _document(self, verdicts: Verdicts | None = None) -> dict[str, Any]:
        results = [_own("test_t.py::test_table", "cpu-usm", FAILED, where="engine.py:12")]
        written = document("lab-1", results)
        if verdicts is not None:
            written["verdicts"] = verdicts.to_record()
        return written

    def test_a_report_holds_the_verdicts_and_each_failures_frame_and_reads_them_back(
        self, tmp_path: Path
    ) -> None:
        verdicts = self._verdicts()
        path = write_report(self._document(verdicts), tmp_path)
        written = json.loads(path.read_text())
        assert written["schema"] == SCHEMA == "ptrport.report/2"
        assert written["verdicts"]["counts"] == {
            "address-sensitive": 1,
            "fails everywhere": 1,
            "passes everywhere": 0,
            "skipped": 0,
        }
        assert written["results"][0]["where"] == "engine.py:12"
        jsonschema.Draft202012Validator(schema.load_schema(SCHEMA_FILE)).validate(written)
        read = load_report(path)
        assert read.verdicts == verdicts
        assert read.results[0].where == "engine.py:12"
        assert read.to_record()["verdicts"] == written["verdicts"]

    def test_a_result_without_a_frame_has_no_where_field(self) -> None:
        assert "where" not in _own("test_t.py::test_x", "cpu").to_record()

    def test_a_version_1_report_is_still_read_and_holds_no_verdicts(self, tmp_path: Path) -> None:
        old = document("lab-1", [result("a::test_x")])
        old["schema"] = "ptrport.report/1"
        path = tmp_path / "lab-1.json"
        path.write_text(json.dumps(old))
        read = load_report(path)
        assert read.verdicts is None and read.results[0].outcome is Outcome.PASSED

    def test_a_version_1_report_with_a_verdicts_section_is_refused(self) -> None:
        old = document("lab-1", [result("a::test_x")])
        old["schema"] = "ptrport.report/1"
        old["verdicts"] = self._verdicts().to_record()
        with pytest.raises(ReportError, match="'verdicts' is not allowed"):
            report_from_document(old, Path("lab-1.json"))

    def test_a_frame_that_is_no_file_and_line_is_refused(self) -> None:
        bad = self._document()
        bad["results"][0]["where"] = "engine.py"
        with pytest.raises(ReportError, match=r"results\[0\]\.where: 'engine.py' does not match"):
            report_from_document(bad, Path("lab-1.json"))

    def test_the_page_and_the_job_summary_list_the_address_sensitive_tests(
        self, tmp_path: Path
    ) -> None:
        matrix = build_matrix(
            [load_report(write_report(self._document(self._verdicts()), tmp_path))]
        )
        page, summary = to_html(matrix), to_markdown(matrix)
        assert "<h2>Address-sensitive tests</h2>" in page
        assert (
            "<code>test_t.py::test_table</code> on cpu-usm, cpu-tbi</p>"
            f'<p class="message">{OVERFLOW}</p>'
            '<p class="message">at <code>engine.py:12</code></p>'
        ) in page
        assert "## Address-sensitive tests" in summary
        assert (
            f"- **test_t.py::test_table** on cpu-usm, cpu-tbi: {OVERFLOW} (at engine.py:12)"
        ) in summary.splitlines()
        assert "1 fail everywhere (cannot run here)" in summary

    def test_a_page_of_reports_without_verdicts_has_no_such_section(self, tmp_path: Path) -> None:
        matrix = build_matrix([load_report(write_report(self._document(), tmp_path))])
        assert "Address-sensitive" not in to_html(matrix)
        assert "Address-sensitive" not in to_markdown(matrix)


ENGINE_CODE = """
def pointer_table(tensors):
    import torch
    return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64)
"""
BENEATH_CODE = """
def call(function, *args):
    return function(*args)
"""


class TestWhereFailed:
    def _module(self, path: Path, source: str) -> dict[str, Any]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        namespace: dict[str, Any] = {}
        exec(compile(source, str(path), "exec"), namespace)
        return namespace

    def test_an_engine_installed_in_site_packages_is_named_from_its_package(
        self, tmp_path: Path
    ) -> None:
        site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
        engine = self._module(site / "vllm" / "v1" / "worker" / "mamba_utils.py", ENGINE_CODE)
        torch_like = self._module(site / "torch" / "overrides.py", BENEATH_CODE)

        class High:
            def data_ptr(self) -> int:
                return 2**63

        with pytest.raises(ValueError, match="Overflow") as excinfo:
            torch_like["call"](engine["pointer_table"], [High()])
        assert where_failed(excinfo, tmp_path / "project") == "vllm/v1/worker/mamba_utils.py:4"

    def test_a_helper_under_the_rootdir_is_named_from_it(self, tmp_path: Path) -> None:
        module = self._module(
            tmp_path / "tests" / "helpers.py", "def divide(n):\n    return n / 0\n"
        )
        with pytest.raises(ZeroDivisionError) as excinfo:
            module["divide"](1)
        assert where_failed(excinfo, tmp_path) == "tests/helpers.py:2"

    def test_frames_of_the_standard_library_and_of_ptrport_are_passed_over(self) -> None:
        rootdir = Path(__file__).parent.parent
        with pytest.raises(TypeError) as in_json:
            json.dumps(object())
        line = _line_of("json.dumps(object())")
        assert where_failed(in_json, rootdir) == f"tests/test_verdicts.py:{line}"
        with pytest.raises(ValueError) as in_ptrport:
            to_hex("not an address")  # type: ignore[arg-type]
        line = _line_of('to_hex("not an address")')
        assert where_failed(in_ptrport, rootdir) == f"tests/test_verdicts.py:{line}"


def _line_of(text: str, path: Path = Path(__file__)) -> int:
    """The line (from 1) of ``path`` on which ``text`` first appears."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} is not in {path}")


TABLE_TEST = """
import pytest
import torch


@pytest.mark.ptrport
def test_pointer_table(ptrport_device):
    t = torch.zeros(4, device=ptrport_device.device)
    table = torch.tensor([t.data_ptr()], dtype=torch.int64)
    assert table.numel() == 1


@pytest.mark.ptrport
def test_sum(ptrport_device):
    assert torch.ones(3, device=ptrport_device.device).sum() == 3
"""
SUITE = """
import torch

import engine


def test_pointer_table():
    assert engine.pointer_table([torch.zeros(4)]).numel() == 1


def test_sum():
    assert torch.ones(3).sum() == 3


def test_needs_a_gpu():
    raise RuntimeError("Found no NVIDIA driver on your system")
"""
RUN = ("--no-isolate", "-p", "no:cacheprovider")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return own_tests_project(pytester, max_examples=10)


class TestMarkedRun:
    def test_the_summary_leads_with_the_finding_and_the_report_holds_it(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(test_engine_tables=TABLE_TEST)
        line = _line_of("dtype=torch.int64", project.path / "test_engine_tables.py")
        ran = project.runpytest("--backend=cpu,cpu-usm,cpu-tbi", *RUN)
        ran.assert_outcomes(passed=4, failed=2)
        ran.stdout.fnmatch_lines(
            [
                "*= ptrport =*",
                "ADDRESS-SENSITIVE test_engine_tables.py::test_pointer_table on cpu-usm, cpu-tbi: "
                f"ValueError: Overflow when unpacking long long* (test_engine_tables.py:{line})",
                "verdict by difference (cpu against cpu-usm, cpu-tbi): 1 address-sensitive, "
                "0 fail everywhere (cannot run here), 1 pass everywhere, 0 skipped",
            ]
        )
        ran.stdout.no_fnmatch_line("whole suite:*")
        assert ran.ret == pytest.ExitCode.TESTS_FAILED
        written = written_report(project)
        assert written["schema"] == "ptrport.report/2"
        verdicts = written["verdicts"]
        assert (verdicts["reference"], verdicts["judged"]) == ("cpu", ["cpu-usm", "cpu-tbi"])
        assert [
            (c["check"], c["verdict"], c["backends"], c["where"]) for c in verdicts["checks"]
        ] == [
            (
                "test_engine_tables.py::test_pointer_table",
                "address-sensitive",
                ["cpu-usm", "cpu-tbi"],
                f"test_engine_tables.py:{line}",
            ),
            ("test_engine_tables.py::test_sum", "passes everywhere", [], None),
        ]
        assert verdicts["checks"][0]["message"].startswith(OVERFLOW)
        where = {(r["check"], r["backend"]): r.get("where") for r in written["results"]}
        table = "test_engine_tables.py::test_pointer_table"
        assert where[(table, "cpu-usm")] == f"test_engine_tables.py:{line}"
        assert where[(table, "cpu")] is None

    def test_an_isolated_run_names_the_frame_too(self, project: pytest.Pytester) -> None:
        project.makepyfile(test_engine_tables=TABLE_TEST)
        line = _line_of("dtype=torch.int64", project.path / "test_engine_tables.py")
        project.runpytest("--backend=cpu,cpu-usm", "-p", "no:cacheprovider", "-k", "pointer")
        (finding,) = written_report(project)["verdicts"]["checks"]
        assert (finding["verdict"], finding["where"]) == (
            "address-sensitive",
            f"test_engine_tables.py:{line}",
        )

    def test_a_run_on_cpu_alone_says_no_verdict(self, project: pytest.Pytester) -> None:
        project.makepyfile(test_engine_tables=TABLE_TEST)
        ran = project.runpytest("--backend=cpu", *RUN)
        ran.assert_outcomes(passed=2)
        ran.stdout.no_fnmatch_line("*verdict by difference*")
        assert "verdicts" not in written_report(project)


class TestWholeSuiteRun:
    def _suite(self, project: pytest.Pytester, *, sensitive: bool) -> None:
        project.makepyfile(engine=ENGINE_CODE)
        suite = SUITE if sensitive else SUITE.replace("def test_pointer_table", "def _unused")
        project.makepyfile(test_suite=suite)

    def test_it_passes_where_every_failing_test_fails_on_cpu_too(
        self, project: pytest.Pytester
    ) -> None:
        self._suite(project, sensitive=False)
        ran = project.runpytest("--ptrport-all", "--backend=cpu,cpu-usm,cpu-tbi", *RUN)
        ran.assert_outcomes(passed=3, failed=3)
        ran.stdout.fnmatch_lines(
            [
                "verdict by difference (cpu against cpu-usm, cpu-tbi): 0 address-sensitive, "
                "1 fail everywhere (cannot run here), 1 pass everywhere, 0 skipped",
                "whole suite: no test is address-sensitive; 1 test cannot run here "
                "(failing on cpu too)",
            ]
        )
        assert ran.ret == pytest.ExitCode.OK

    def test_it_fails_where_a_test_is_address_sensitive_naming_the_engines_line(
        self, project: pytest.Pytester
    ) -> None:
        self._suite(project, sensitive=True)
        line = _line_of("dtype=torch.int64", project.path / "engine.py")
        ran = project.runpytest("--ptrport-all", "--backend=cpu,cpu-usm,cpu-tbi", *RUN)
        ran.assert_outcomes(passed=4, failed=5)
        ran.stdout.fnmatch_lines(
            [
                "ADDRESS-SENSITIVE test_suite.py::test_pointer_table on cpu-usm, cpu-tbi: "
                f"ValueError: Overflow when unpacking long long* (engine.py:{line})",
                "*1 address-sensitive, 1 fail everywhere (cannot run here)*",
                "whole suite: 1 test is address-sensitive; 1 test cannot run here*",
            ]
        )
        assert ran.ret == pytest.ExitCode.TESTS_FAILED

    def test_cpu_added_as_the_reference_says_so(self, project: pytest.Pytester) -> None:
        self._suite(project, sensitive=True)
        ran = project.runpytest("--ptrport-all", "--backend=cpu-usm", *RUN)
        ran.stdout.fnmatch_lines(
            [
                "ptrport: cpu added as the reference the other backends are judged against",
                "ADDRESS-SENSITIVE test_suite.py::test_pointer_table on cpu-usm: *",
            ]
        )
        assert ran.ret == pytest.ExitCode.TESTS_FAILED

    def test_an_interrupted_run_keeps_its_status(self, project: pytest.Pytester) -> None:
        project.makepyfile(
            test_suite="""
import torch


def test_a_fine_one():
    pass


def test_stopped():
    if torch.zeros(1).data_ptr() >= 2**63:
        raise KeyboardInterrupt
"""
        )
        ran = project.runpytest(
            "--ptrport-all", "--backend=cpu,cpu-usm", *RUN, no_reraise_ctrlc=True
        )
        assert ran.ret == pytest.ExitCode.INTERRUPTED
