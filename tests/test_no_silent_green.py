"""No silent green: each way a run could end green without having checked anything ends it
non-zero with a one-line reason, and an interrupted run keeps what it has."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from ptrport.report.platform_report import load_report
from tests.scenario_runs import signal_when_started, use_profile

ANY_CHECK = """
def test_any(backend, subject):
    assert backend.is_available()
"""


def _setup(pytester: pytest.Pytester, **files: str) -> None:
    use_profile(pytester, max_examples=10)
    pytester.makepyfile(**files)


def test_a_run_in_which_no_check_ran_fails_with_the_reason(pytester: pytest.Pytester) -> None:
    _setup(
        pytester,
        test_scenario=ANY_CHECK,
        elsewhere="""
        class Away:
            name = "away"
            def unavailable_reason(self, backend):
                return "its device is in another lab"
            def create(self, capacity, backend): ...
            def stage(self, batch): ...
            def transfer(self, n): ...
            def read_back(self, n):
                return []

        def make():
            return Away()
        """,
    )
    result = pytester.runpytest("--backend=cpu", "--subject=elsewhere:make", "--platform-name=g")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ptrport: no check ran: all 1 were skipped or unavailable"])


def test_a_requested_backend_that_is_missing_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _setup(pytester, test_scenario=ANY_CHECK)
    result = pytester.runpytest("--backend=xpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: backend xpu is not available: *"])


def test_a_report_directory_that_cannot_be_written_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, test_scenario=ANY_CHECK)
    blocker = pytester.path / "not-a-directory"
    blocker.write_text("a file where the report directory should be")
    result = pytester.runpytest(
        "--backend=cpu", "--subject=uint64/torch", f"--report-dir={blocker / 'reports'}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1
    assert errors[0].startswith(f"ERROR: --report-dir: cannot write reports in {blocker}")


def test_a_health_check_failure_is_an_error_and_never_catches_a_control(
    pytester: pytest.Pytester,
) -> None:
    _setup(
        pytester,
        test_table_round_trip="""
        from hypothesis import given, strategies as st

        @given(x=st.integers().filter(lambda x: False))
        def test_nothing_can_be_generated(backend, subject, x):
            raise AssertionError("never reached")
        """,
    )
    result = pytester.runpytest(
        "--backend=cpu", "--subject=uint64/torch,int64/torch", "--platform-name=g"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=2)
    report = json.loads((pytester.path / "reports" / "g.json").read_text())
    outcomes = {r["subject"]: (r["outcome"], r["message"]) for r in report["results"]}
    for subject in ("uint64/torch", "int64/torch"):
        outcome, message = outcomes[subject]
        assert outcome == "error"
        assert message.startswith("Hypothesis health check failed: FailedHealthCheck")
        assert "\n" not in message


def test_ctrl_c_keeps_every_finished_result_and_marks_the_report_interrupted(
    pytester: pytest.Pytester,
) -> None:
    _setup(
        pytester,
        test_scenario="""
        import pathlib
        import time

        def test_first(backend):
            assert True

        def test_waits(backend):
            pathlib.Path("waiting").touch()
            time.sleep(300)
        """,
    )
    status, printed = signal_when_started(
        pytester, "waiting", signal.SIGINT, "--backend=cpu", "--platform-name=ctrl-c"
    )
    assert status == pytest.ExitCode.INTERRUPTED
    assert "KeyboardInterrupt" in printed
    report = load_report(Path(pytester.path) / "reports" / "ctrl-c.json")
    assert report.complete is False
    assert report.run["status"] == "interrupted"
    assert [(r.check, r.outcome.value) for r in report.results] == [
        ("scenario::test_first", "passed")
    ]
