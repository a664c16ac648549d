"""The compatibility matrix: platform reports, written and read back, merged into checks x
(platform, backend)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.matrix import Cell, CellState, Matrix, build_matrix
from harness.records import Outcome, Result
from harness.report import (
    FINISHED,
    MATRIX_SCHEMA,
    PlatformReport,
    ReportError,
    ReportWriter,
    RunInfo,
    build_report,
    load_report,
    load_reports,
    write_report,
)

OVERFLOW = "OverflowError: Python int too large to convert to C long"
HIGH_ADDRESS = {"src": "0x0000000000000000", "dst": "0x8000000000000000", "nbytes": 0}
NO_XPU = "torch 2.13.0+cpu has no XPU support"


def _run(status: str = FINISHED) -> RunInfo:
    return RunInfo(
        started="2026-12-02T00:00:00+00:00",
        hypothesis_profile="ci",
        seed="derandomized",
        backend_spec="all",
        subjects=("uint64/torch", "int64/torch"),
        status=status,
        finished="2026-12-02T00:01:00+00:00" if status == FINISHED else None,
        duration_s=60.0 if status == FINISHED else None,
    )


def _result(
    check: str,
    outcome: Outcome = Outcome.PASSED,
    *,
    subject: str | None = "uint64/torch",
    on: str = "cpu",
    message: str | None = None,
    example: dict[str, Any] | None = None,
) -> Result:
    scenario = check.split("::")[0]
    return Result(
        check=check,
        scenario=scenario,
        subject=subject,
        backend=on,
        outcome=outcome,
        message=message,
        example=example,
        examples=10,
        duration_s=0.25,
        nodeid=f"scenarios/test_{scenario}.py::{check.split('::')[1]}[{on}-{subject}]",
        body=None,
    )


def _fingerprint(torch: str, backends: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "software": {"ptrport": "0.1.0", "torch": torch, "triton": "3.9.0", "ipex": None},
        "system": {"os": "Linux", "arch": "x86_64"},
        "backends": backends,
    }


CPU = {"available": True, "reason": None, "device": "cpu", "device_model": "Xeon"}
CPU_TARGET = {
    "kind": "cpu",
    "backend": "cpu",
    "device_model": "Xeon",
    "runtime": {},
    "driver": None,
}


def _report(
    directory: Path,
    platform_id: str,
    results: list[Result],
    *,
    torch: str = "2.13.0+cpu",
    backends: dict[str, dict[str, Any]] | None = None,
    target: dict[str, Any] = CPU_TARGET,
) -> PlatformReport:
    """A finished report, written to ``directory`` and read back as tooling reads it."""
    document = build_report(
        platform_id=platform_id,
        fingerprint=_fingerprint(torch, backends or {"cpu": CPU}),
        execution_target=target,
        run=_run(),
        results=results,
    )
    return load_report(write_report(document, directory))


def _cell(matrix: Matrix, check: str, subject: str | None, column: str) -> Cell:
    names = [c.name for c in matrix.columns]
    (row,) = [r for r in matrix.rows if r.check == check and r.subject == subject]
    return row.cells[names.index(column)]


@dataclass(frozen=True)
class Known:
    reason: str
    issue: str | None = None


def test_two_reports_merge_into_two_columns_with_their_versions(tmp_path: Path) -> None:
    old = _report(tmp_path, "lab-old", [_result("a::test_x")], torch="2.12.0+cpu")
    new = _report(tmp_path, "lab-new", [_result("a::test_x")], torch="2.13.0+cpu")
    matrix = build_matrix([old, new])
    assert [c.name for c in matrix.columns] == ["lab-old/cpu", "lab-new/cpu"]
    assert [c.versions["torch"] for c in matrix.columns] == ["2.12.0+cpu", "2.13.0+cpu"]
    assert matrix.columns[0].versions == old.versions()
    assert matrix.columns[0].totals == old.totals
    assert [c.state for c in matrix.rows[0].cells] == [CellState.PASSED, CellState.PASSED]


def test_a_subject_missing_from_one_report_is_not_run_there(tmp_path: Path) -> None:
    both = _result("a::test_x")
    only_here = _result("a::test_x", subject="int64/torch")
    matrix = build_matrix(
        [_report(tmp_path, "p1", [both, only_here]), _report(tmp_path, "p2", [both])]
    )
    assert _cell(matrix, "a::test_x", "int64/torch", "p1/cpu").state is CellState.PASSED
    assert _cell(matrix, "a::test_x", "int64/torch", "p2/cpu").state is CellState.NOT_RUN


@pytest.mark.parametrize(
    ("outcome", "state"),
    [
        (Outcome.PASSED, CellState.PASSED),
        (Outcome.FAILED, CellState.FAILED),
        (Outcome.XFAILED, CellState.EXPECTED_FAILURE),
        (Outcome.XPASSED, CellState.UNEXPECTED_PASS),
        (Outcome.SKIPPED, CellState.SKIPPED),
        (Outcome.UNAVAILABLE, CellState.UNAVAILABLE),
        (Outcome.ERROR, CellState.ERROR),
        (Outcome.CRASHED, CellState.CRASHED),
    ],
)
def test_each_outcome_shows_as_its_cell_state_with_message_and_example(
    tmp_path: Path, outcome: Outcome, state: CellState
) -> None:
    # A passing result beside it keeps the backend a column even for ``unavailable``.
    results = [
        _result("a::test_x", outcome, message=OVERFLOW, example=HIGH_ADDRESS),
        _result("a::test_y"),
    ]
    cell = _cell(
        build_matrix([_report(tmp_path, "p", results)]), "a::test_x", "uint64/torch", "p/cpu"
    )
    assert cell.state is state
    assert cell.message == OVERFLOW
    assert cell.example == HIGH_ADDRESS
    assert cell.nodeid == "scenarios/test_a.py::test_x[cpu-uint64/torch]"


def test_a_backend_whose_results_are_all_unavailable_is_listed_on_its_platform_instead(
    tmp_path: Path,
) -> None:
    xpu = {"available": False, "reason": NO_XPU}
    results = [
        _result("a::test_x"),
        _result("a::test_x", Outcome.UNAVAILABLE, on="xpu", message=f"xpu: {NO_XPU}"),
    ]
    report = _report(tmp_path, "p", results, backends={"cpu": CPU, "xpu": xpu})
    matrix = build_matrix([report])
    assert [c.name for c in matrix.columns] == ["p/cpu"]
    assert matrix.platforms[0].unavailable == {"xpu": NO_XPU}


def test_a_backend_available_but_with_nothing_usable_gives_its_results_message(
    tmp_path: Path,
) -> None:
    no_triton = "triton engine: triton is not installed"
    results = [
        _result("a::test_x", Outcome.UNAVAILABLE, subject="uint64/triton", message=no_triton)
    ]
    matrix = build_matrix([_report(tmp_path, "p", results)])
    assert matrix.columns == ()
    assert matrix.platforms[0].unavailable == {"cpu": no_triton}
    assert [c.state for c in matrix.rows[0].cells] == []


def test_known_failures_carry_their_reason_and_issue(tmp_path: Path) -> None:
    issue = "https://github.com/pytorch/pytorch/issues/12345"
    results = [
        _result("a::test_failed", Outcome.FAILED, message=OVERFLOW),
        _result("a::test_error", Outcome.ERROR),
        _result("a::test_crashed", Outcome.CRASHED),
        _result("a::test_xfailed", Outcome.XFAILED),
        _result("a::test_xpassed", Outcome.XPASSED),
        _result("a::test_other_failure", Outcome.FAILED),
    ]
    asked: list[tuple[str, str]] = []

    def known(platform_id: str, result: Result) -> Known | None:
        asked.append((platform_id, result.check))
        if result.check == "a::test_other_failure":
            return None
        return Known("uint64 copy_ is not implemented", issue)

    matrix = build_matrix([_report(tmp_path, "p", results)], known=known)
    states = {r.check: r.cells[0].state for r in matrix.rows}
    assert states == {
        "a::test_crashed": CellState.KNOWN_FAILURE,
        "a::test_error": CellState.KNOWN_FAILURE,
        "a::test_failed": CellState.KNOWN_FAILURE,
        "a::test_other_failure": CellState.FAILED,
        "a::test_xfailed": CellState.EXPECTED_FAILURE,
        "a::test_xpassed": CellState.UNEXPECTED_PASS,
    }
    failed = _cell(matrix, "a::test_failed", "uint64/torch", "p/cpu")
    assert (failed.reason, failed.issue, failed.message) == (
        "uint64 copy_ is not implemented",
        issue,
        OVERFLOW,
    )
    # An xpassed control means the harness went blind; nothing may excuse it.
    assert sorted(check for _, check in asked) == [
        "a::test_crashed",
        "a::test_error",
        "a::test_failed",
        "a::test_other_failure",
    ]
    assert {platform for platform, _ in asked} == {"p"}


def test_an_interrupted_run_is_flagged_incomplete_on_its_platform_and_columns(
    tmp_path: Path,
) -> None:
    header = build_report(
        platform_id="killed",
        fingerprint=_fingerprint("2.13.0+cpu", {"cpu": CPU}),
        execution_target=CPU_TARGET,
        run=_run("running"),
        results=(),
    )
    writer = ReportWriter(tmp_path, header)
    writer.add(_result("a::test_x"))
    finished = _report(tmp_path, "done", [_result("a::test_x")])
    matrix = build_matrix([load_report(writer.path), finished])
    assert [(p.complete, p.status) for p in matrix.platforms] == [
        (False, "running"),
        (True, FINISHED),
    ]
    assert [c.complete for c in matrix.columns] == [False, True]
    assert matrix.rows[0].cells[0].state is CellState.PASSED


def test_rows_go_by_scenario_then_subject_as_first_seen_then_check(tmp_path: Path) -> None:
    first = [
        _result("b::test_z", subject="uint64/torch"),
        _result("b::test_a", subject="uint64/torch"),
        _result("a::test_m", subject="zeta/custom"),
        _result("a::test_m", subject="alpha/custom"),
    ]
    second = [_result("a::test_b", subject=None), _result("a::test_a", subject="alpha/custom")]
    matrix = build_matrix([_report(tmp_path, "p1", first), _report(tmp_path, "p2", second)])
    assert [(r.scenario, r.subject, r.check) for r in matrix.rows] == [
        ("a", "zeta/custom", "a::test_m"),
        ("a", "alpha/custom", "a::test_a"),
        ("a", "alpha/custom", "a::test_m"),
        ("a", None, "a::test_b"),
        ("b", "uint64/torch", "b::test_a"),
        ("b", "uint64/torch", "b::test_z"),
    ]
    assert matrix.scenarios == ["a", "b"]


def test_a_matrix_file_reads_back_through_load_reports_as_its_reports(tmp_path: Path) -> None:
    reports = [
        _report(tmp_path, "p1", [_result("a::test_x", Outcome.XFAILED, message=OVERFLOW)]),
        _report(tmp_path, "p2", [_result("a::test_x", subject="int64/torch")]),
    ]
    record = build_matrix(reports).to_record()
    assert record["schema"] == MATRIX_SCHEMA
    assert len(record["columns"]) == 2
    assert len(record["rows"]) == 2
    merged = tmp_path / "merged" / "matrix.json"
    merged.parent.mkdir()
    merged.write_text(json.dumps(record))
    again = load_reports([merged])
    assert [r.platform_id for r in again] == ["p1", "p2"]
    assert [r.results for r in again] == [r.results for r in reports]
    assert [r.versions() for r in again] == [r.versions() for r in reports]
    assert build_matrix(again).to_record() == record


def test_a_record_names_each_columns_platform_backend_and_each_cells_state(
    tmp_path: Path,
) -> None:
    results = [_result("a::test_x", Outcome.FAILED, message=OVERFLOW, example=HIGH_ADDRESS)]
    record = build_matrix([_report(tmp_path, "p", results)]).to_record()
    assert record["columns"][0]["platform"] == "p"
    assert record["columns"][0]["backend"] == "cpu"
    assert record["columns"][0]["complete"] is True
    assert record["rows"][0]["cells"][0]["state"] == "failed"
    assert record["rows"][0]["cells"][0]["example"] == HIGH_ADDRESS
    json.dumps(record)


def test_two_reports_with_one_platform_id_are_refused(tmp_path: Path) -> None:
    one = _report(tmp_path / "one", "p", [_result("a::test_x")])
    two = _report(tmp_path / "two", "p", [_result("a::test_x")])
    with pytest.raises(ReportError, match="platform id 'p' is also the id of"):
        build_matrix([one, two])


def test_a_realistic_cpu_and_xpu_nightly_lines_up_check_by_check(tmp_path: Path) -> None:
    round_trip = "table_round_trip::test_an_entry_reads_back_bit_exact"
    copy = "batch_copy::test_real_entries_are_copied_exactly"
    intel = "Intel(R) Data Center GPU Max 1550"
    cpu_run = [
        _result(copy, subject="uint64/triton"),
        _result(round_trip, subject="uint64/triton"),
        _result(
            round_trip,
            Outcome.XFAILED,
            subject="int64/torch",
            message=OVERFLOW,
            example=HIGH_ADDRESS,
        ),
    ]
    xpu_run = [
        _result(copy, subject="uint64/triton", on="xpu"),
        _result(
            round_trip,
            Outcome.FAILED,
            subject="uint64/triton",
            on="xpu",
            message="NotImplementedError: \"copy_\" not implemented for 'UInt64'",
            example={"src": "0xffff85abd4e00000", "dst": "0xff00000b65ba2000", "nbytes": 0},
        ),
        _result(
            round_trip,
            Outcome.XFAILED,
            subject="int64/torch",
            on="xpu",
            message=OVERFLOW,
            example=HIGH_ADDRESS,
        ),
        _result(round_trip, subject="int64/torch", on="cpu"),
    ]
    xpu_backend = {
        "available": True,
        "reason": None,
        "device": "xpu:0",
        "device_model": intel,
        "xpu_runtime": "2025.1",
        "driver": "1.6.32224",
    }
    xpu_target = {
        "kind": "gpu",
        "backend": "xpu",
        "device_model": intel,
        "runtime": {"xpu": "2025.1"},
        "driver": "1.6.32224",
    }
    matrix = build_matrix(
        [
            _report(tmp_path, "cpu-x86-64", cpu_run),
            _report(
                tmp_path,
                "intel-max-1550",
                xpu_run,
                torch="2.5.1+xpu",
                backends={"cpu": CPU, "xpu": xpu_backend},
                target=xpu_target,
            ),
        ]
    )
    assert [c.name for c in matrix.columns] == [
        "cpu-x86-64/cpu",
        "intel-max-1550/xpu",
        "intel-max-1550/cpu",
    ]
    assert [c.versions["device"] for c in matrix.columns] == ["Xeon", intel, "Xeon"]
    assert matrix.columns[1].versions["xpu"] == "2025.1"
    cells = [_cell(matrix, round_trip, "uint64/triton", c.name) for c in matrix.columns]
    assert [c.state for c in cells] == [
        CellState.PASSED,
        CellState.FAILED,
        CellState.NOT_RUN,
    ]
    assert cells[1].example == {
        "src": "0xffff85abd4e00000",
        "dst": "0xff00000b65ba2000",
        "nbytes": 0,
    }
    assert [(r.scenario, r.subject) for r in matrix.rows] == [
        ("batch_copy", "uint64/triton"),
        ("table_round_trip", "uint64/triton"),
        ("table_round_trip", "int64/torch"),
    ]
