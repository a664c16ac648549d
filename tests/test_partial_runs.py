"""A partial run (node ids, ``-k``, ``--deselect``, ``--lf``...) merges into the platform's report:
its results replace those of the same checks and every other result is kept, also under xdist
and when the run is interrupted or killed; a whole run replaces the report."""

from __future__ import annotations

import json
import shlex
import signal
from pathlib import Path
from typing import Any

import pytest

from ptrport.report import repro
from ptrport.report.platform_report import load_report
from tests.scenario_runs import signal_when_started, use_profile

TESTS = """
import pathlib
import time

import pytest


@pytest.mark.ptrport
@pytest.mark.parametrize("n", range(3))
def test_n(ptrport_device, n):
    assert n != 1 or pathlib.Path("fixed").exists(), "not fixed yet"


@pytest.mark.ptrport
def test_other(ptrport_device):
    assert ptrport_device.name != "cpu-usm"


@pytest.mark.ptrport
def test_slow(ptrport_device):
    if pathlib.Path("slow").exists():
        pathlib.Path("started").touch()
        time.sleep(60)
"""
BACKENDS = "--backend=cpu,cpu-usm"
ALL_CHECKS = {
    *((f"test_table.py::test_n[{n}]", b) for n in range(3) for b in ("cpu", "cpu-usm")),
    *(
        (f"test_table.py::{name}", b)
        for name in ("test_other", "test_slow")
        for b in ("cpu", "cpu-usm")
    ),
}
FAILED_FIRST = {
    ("test_table.py::test_n[1]", "cpu"),
    ("test_table.py::test_n[1]", "cpu-usm"),
    ("test_table.py::test_other", "cpu-usm"),
}


def _tests_of_a_project(pytester: pytest.Pytester) -> None:
    use_profile(pytester, max_examples=10)
    # The profile's conftest marks every module a scenario: these are the user's own tests.
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text().split("def pytest_collectstart")[0])
    pytester.makepyfile(test_table=TESTS)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project of marked tests, run whole once: 10 results, 3 of them failures."""
    _tests_of_a_project(pytester)
    pytester.runpytest(BACKENDS, "--no-isolate").assert_outcomes(passed=7, failed=3)
    assert _by_check(pytester).keys() == ALL_CHECKS
    return pytester


def _path(pytester: pytest.Pytester) -> Path:
    (path,) = (pytester.path / "reports").glob("*.json")
    return path


def _document(pytester: pytest.Pytester) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(_path(pytester).read_text())
    return document


def _by_check(pytester: pytest.Pytester) -> dict[tuple[str, str], dict[str, Any]]:
    """The report's results (its journal's included) by check and backend."""
    results = load_report(_path(pytester)).results
    by_check = {(r.check, r.backend): r.to_record() for r in results}
    assert len(by_check) == len(results)
    return by_check


def _rerun_arguments(pytester: pytest.Pytester, check: str, backend: str) -> list[str]:
    """The pytest arguments of the command the page prints to rerun one failure."""
    report = load_report(_path(pytester))
    (failure,) = (r for r in report.results if r.check == check and r.backend == backend)
    words = shlex.split(repro.command(failure, report))
    while "=" in words[0]:  # HYPOTHESIS_PROFILE=...: the profile's conftest loads its own
        words.pop(0)
    assert words[0] == "pytest"
    return words[1:]


class TestRerunningOneFailure:
    def test_the_pages_rerun_command_replaces_that_result_and_keeps_the_other_nine(
        self, project: pytest.Pytester
    ) -> None:
        before = _by_check(project)
        started = _document(project)["run"]["started"]
        rerun = _rerun_arguments(project, "test_table.py::test_n[1]", "cpu")
        assert rerun[:2] == ["test_table.py::test_n[cpu-1]", "--backend=cpu"]

        result = project.runpytest(*rerun, "--no-isolate")

        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "ptrport: platform *, report *.json (a partial run, by node ids: other results "
                "are kept)",
                f"report: *.json (10 results: 1 from this run, 9 kept from the run of {started})",
            ]
        )
        after = _by_check(project)
        assert after.keys() == ALL_CHECKS
        replaced = after.pop(("test_table.py::test_n[1]", "cpu"))
        assert "from_run" not in replaced and replaced["outcome"] == "failed"
        for key, kept in after.items():
            assert kept.pop("from_run")["started"] == started
            assert kept == before[key]
        assert _document(project)["complete"] is True

    def test_a_rerun_keeps_the_reports_benchmarks_section(self, project: pytest.Pytester) -> None:
        document = _document(project)
        document["benchmarks"] = {
            "measured": document["run"]["started"],
            "torch": document["platform"]["fingerprint"]["software"]["torch"],
            "quick": True,
            "argv": ["bench", "--backend=cpu"],
            "measurements": [],
        }
        _path(project).write_text(json.dumps(document))

        project.runpytest("test_table.py::test_other[cpu]", "--backend=cpu", "--no-isolate")

        assert _document(project)["benchmarks"] == document["benchmarks"]
        assert len(_by_check(project)) == 10

    def test_a_rerun_that_passes_now_turns_that_one_result_green(
        self, project: pytest.Pytester
    ) -> None:
        (project.path / "fixed").touch()
        rerun = _rerun_arguments(project, "test_table.py::test_n[1]", "cpu")

        project.runpytest(*rerun, "--no-isolate").assert_outcomes(passed=1)

        failed = {key for key, r in _by_check(project).items() if r["outcome"] == "failed"}
        assert failed == FAILED_FIRST - {("test_table.py::test_n[1]", "cpu")}
        assert _document(project)["totals"]["failed"] == 2

    def test_a_whole_run_afterwards_replaces_the_report(self, project: pytest.Pytester) -> None:
        project.runpytest("test_table.py::test_other", BACKENDS, "--no-isolate")
        (project.path / "test_table.py").write_text(
            TESTS.split("@pytest.mark.ptrport\ndef test_other")[0]
        )

        result = project.runpytest(BACKENDS, "--no-isolate")

        result.assert_outcomes(passed=4, failed=2)
        result.stdout.fnmatch_lines(["report: *.json"])
        results = _document(project)["results"]
        assert len(results) == 6 and not any("from_run" in r for r in results)
        assert not any(r["check"] == "test_table.py::test_other" for r in results)

    def test_a_rerun_into_a_report_without_results_of_its_own_says_there_was_none(
        self, pytester: pytest.Pytester
    ) -> None:
        _tests_of_a_project(pytester)
        result = pytester.runpytest("test_table.py::test_other", "--backend=cpu", "--no-isolate")
        result.stdout.fnmatch_lines(
            ["report: *.json (1 result, from this run: there was no report to merge into)"]
        )


OTHER = {("test_table.py::test_other", b) for b in ("cpu", "cpu-usm")}


@pytest.mark.parametrize(
    ("selection", "selected", "summary"),
    [
        pytest.param(["-k", "test_other"], OTHER, "2 from this run, 8 kept from *", id="-k"),
        pytest.param(
            ["-m", "not slow"],
            ALL_CHECKS,
            "all from this run, which reran every check the report had",
            id="-m",
        ),
        pytest.param(
            ["--deselect=test_table.py::test_n", "--deselect=test_table.py::test_slow"],
            OTHER,
            "2 from this run, 8 kept from *",
            id="--deselect",
        ),
        pytest.param(["--lf"], FAILED_FIRST, "3 from this run, 7 kept from *", id="--lf"),
    ],
)
def test_a_selection_by_option_is_a_partial_run_too(
    project: pytest.Pytester, selection: list[str], selected: set[Any], summary: str
) -> None:
    before = _by_check(project)

    result = project.runpytest(*selection, BACKENDS, "--no-isolate")

    result.stdout.fnmatch_lines([f"report: *.json (10 results*{summary})"])
    after = _by_check(project)
    assert after.keys() == before.keys()
    assert {key for key, r in after.items() if "from_run" not in r} == selected


def test_under_xdist_the_controller_merges_the_workers_results(project: pytest.Pytester) -> None:
    result = project.runpytest("-k", "test_other", BACKENDS, "-n", "2")

    result.assert_outcomes(passed=1, failed=1)
    after = _by_check(project)
    assert after.keys() == ALL_CHECKS
    ours = {key for key, r in after.items() if "from_run" not in r}
    assert ours == {("test_table.py::test_other", b) for b in ("cpu", "cpu-usm")}


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_a_partial_run_stopped_mid_way_keeps_every_earlier_result(
    project: pytest.Pytester, sent: signal.Signals
) -> None:
    """Its own results so far replace theirs; the rest stay, in the file from the first write
    on (a killed run's journal holds the new ones)."""
    before = _by_check(project)
    (project.path / "slow").touch()

    signal_when_started(
        project, "started", sent, "-k", "test_n or test_slow", "--backend=cpu", "--no-isolate"
    )

    after = _by_check(project)
    assert after.keys() == ALL_CHECKS
    ours = {key for key, r in after.items() if "from_run" not in r}
    assert ours == {(f"test_table.py::test_n[{n}]", "cpu") for n in range(3)}
    assert all(
        r == before[key] | {"from_run": r["from_run"]}
        for key, r in after.items()
        if key not in ours
    )
    document = _document(project)
    assert document["complete"] is False
    in_the_file = {(r["check"], r["backend"]) for r in document["results"]}
    assert in_the_file == ALL_CHECKS


class TestRefusals:
    def test_a_partial_run_refuses_a_report_it_cannot_read_and_leaves_it(
        self, project: pytest.Pytester
    ) -> None:
        path = _path(project)
        path.write_text(path.read_text()[:100])

        result = project.runpytest("-k", "test_other", BACKENDS, "--no-isolate")

        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [
                "ERROR: *.json: not valid JSON (*); the file is truncated or corrupted; this run "
                "selects tests (-k) and would keep the report's other results: move the file "
                "away, or run all the tests to replace it"
            ]
        )
        assert len(path.read_text()) == 100

    def test_a_partial_run_refuses_a_report_of_another_torch(
        self, project: pytest.Pytester
    ) -> None:
        path = _path(project)
        document = _document(project)
        document["platform"]["fingerprint"]["software"]["torch"] = "2.3.0"
        path.write_text(json.dumps(document))

        result = project.runpytest("-k", "test_other", BACKENDS, "--no-isolate")

        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [
                "ERROR: *.json: made with torch 2.3.0, and this is torch *; this run selects tests "
                "(-k) and would keep the report's other results: run all the tests to replace it, "
                "or use another --report-dir"
            ]
        )
        assert json.loads(path.read_text()) == document
