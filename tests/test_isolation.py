"""Crash isolation end to end: a subject that segfaults and one that hangs each cost one result,
``crashed`` or ``timed out`` with the inputs of the example they were in, and every other
result of the run is there and right."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import isolation
from harness.records import Outcome
from tests.scenario_runs import copy_scenarios, use_profile

HERE = Path(__file__).resolve().parent


def _setup(pytester: pytest.Pytester, *scenarios: str) -> None:
    use_profile(pytester, max_examples=10)
    pytester.makepyfile(crashing_subjects=(HERE / "crashing_subjects.py").read_text())
    copy_scenarios(pytester, *scenarios)


def _results(pytester: pytest.Pytester) -> dict[tuple[str, str], dict[str, Any]]:
    report = json.loads((pytester.path / "reports" / "iso.json").read_text())
    assert report["complete"] is True
    return {(r["check"], r["subject"]): r for r in report["results"]}


COPY = "batch_copy::test_real_entries_are_copied_exactly"


def test_a_segfault_and_a_hang_cost_one_result_each_and_the_run_goes_on(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, "test_batch_copy", "test_table_round_trip")
    result = pytester.runpytest_subprocess(
        "--backend=cpu",
        "--subject=crashing_subjects:segfaulting,crashing_subjects:hanging,uint64/torch",
        "--example-timeout=3",
        "--platform-name=iso",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*crashed: the check's process was killed by SIGSEGV in example *",
            "*timed out: no new example for 3 s (--example-timeout); killed in example *",
        ]
    )
    results = _results(pytester)
    assert len(results) == 9
    crashed, hung = results[(COPY, "segfaulting")], results[(COPY, "hanging")]
    assert crashed["outcome"] == Outcome.CRASHED.value
    assert hung["outcome"] == Outcome.TIMED_OUT.value
    for lost in (crashed, hung):
        entries = lost["example"]["batch"]["entries"]
        assert entries and all(e["src"].startswith("0x") and len(e["src"]) == 18 for e in entries)
        assert lost["examples"] >= 1
    others = [
        r for key, r in results.items() if key not in {(COPY, "segfaulting"), (COPY, "hanging")}
    ]
    assert {r["outcome"] for r in others} == {"passed"}
    assert {r["subject"] for r in others} == {"segfaulting", "hanging", "uint64/torch"}


def test_an_isolated_control_is_caught_with_its_counterexample_as_in_process(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, "test_table_round_trip")
    result = pytester.runpytest_subprocess(
        "--backend=cpu",
        "--subject=int64/torch,uint64/torch",
        "--isolate",
        "--platform-name=iso",
        "-p",
        "no:cacheprovider",
        "-k",
        "an_entry",
    )
    result.assert_outcomes(passed=1, xfailed=1)
    caught = _results(pytester)[
        ("table_round_trip::test_an_entry_reads_back_bit_exact", "int64/torch")
    ]
    assert caught["outcome"] == "xfailed"
    assert "0x8000000000000000" in json.dumps(caught["example"])
    assert caught["found_after"] >= 1


def test_a_child_that_exits_without_a_result_is_a_crash(tmp_path: Path) -> None:
    ended = isolation.run_child(
        ["python3", "-c", "import os; os._exit(3)"], tmp_path, example_timeout=5
    )
    assert ended.outcome == Outcome.CRASHED
    assert ended.message == (
        "crashed: the check's process exited with status 3 without a result "
        "before its first example"
    )


def test_a_child_that_stops_making_progress_is_killed(tmp_path: Path) -> None:
    progress = tmp_path / isolation.EXAMPLE_FILE
    document = {"count": 2, "example": {"src": "0x8000000000000000"}}
    script = (
        f"import json, time; json.dump({document!r}, open({str(progress)!r}, 'w')); time.sleep(60)"
    )
    ended = isolation.run_child(["python3", "-c", script], tmp_path, example_timeout=1)
    assert ended.outcome == Outcome.TIMED_OUT
    assert ended.example == {"src": "0x8000000000000000"} and ended.examples == 2
    assert ended.duration_s < 30
