"""The compatibility matrix: platform reports, written and read back, merged into checks x
(platform, backend)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sample_reports import (
    CPU,
    HIGH_ADDRESS,
    NO_XPU,
    OVERFLOW,
    Known,
    document,
    report,
    result,
    upper_half_report,
)

from ptrport.report.matrix import Cell, CellState, Matrix, build_matrix
from ptrport.report.platform_report import (
    FINISHED,
    MATRIX_SCHEMA,
    ReportError,
    ReportWriter,
    load_report,
    load_reports,
)
from ptrport.report.records import Outcome, Result


def _cell(matrix: Matrix, check: str, subject: str | None, column: str) -> Cell:
    names = [c.name for c in matrix.columns]
    (row,) = [r for r in matrix.rows if r.check == check and r.subject == subject]
    return row.cells[names.index(column)]


def test_two_reports_merge_into_two_columns_with_their_versions(tmp_path: Path) -> None:
    old = report(tmp_path, "lab-old", [result("a::test_x")], torch="2.12.0+cpu")
    new = report(tmp_path, "lab-new", [result("a::test_x")], torch="2.13.0+cpu")
    matrix = build_matrix([old, new])
    assert [c.name for c in matrix.columns] == ["lab-old/cpu", "lab-new/cpu"]
    assert [c.versions["torch"] for c in matrix.columns] == ["2.12.0+cpu", "2.13.0+cpu"]
    assert matrix.columns[0].versions == old.versions()
    assert matrix.columns[0].totals == old.totals
    assert [c.state for c in matrix.rows[0].cells] == [CellState.PASSED, CellState.PASSED]


def test_a_subject_missing_from_one_report_is_not_run_there(tmp_path: Path) -> None:
    both = result("a::test_x")
    only_here = result("a::test_x", subject="int64/torch")
    matrix = build_matrix(
        [report(tmp_path, "p1", [both, only_here]), report(tmp_path, "p2", [both])]
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
        result("a::test_x", outcome, message=OVERFLOW, example=HIGH_ADDRESS),
        result("a::test_y"),
    ]
    cell = _cell(
        build_matrix([report(tmp_path, "p", results)]), "a::test_x", "uint64/torch", "p/cpu"
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
        result("a::test_x"),
        result("a::test_x", Outcome.UNAVAILABLE, on="xpu", message=f"xpu: {NO_XPU}"),
    ]
    only_cpu = report(tmp_path, "p", results, backends={"cpu": CPU, "xpu": xpu})
    matrix = build_matrix([only_cpu])
    assert [c.name for c in matrix.columns] == ["p/cpu"]
    assert matrix.platforms[0].unavailable == {"xpu": NO_XPU}


def test_a_backend_available_but_with_nothing_usable_gives_its_results_message(
    tmp_path: Path,
) -> None:
    no_triton = "triton engine: triton is not installed"
    results = [result("a::test_x", Outcome.UNAVAILABLE, subject="uint64/triton", message=no_triton)]
    matrix = build_matrix([report(tmp_path, "p", results)])
    assert matrix.columns == ()
    assert matrix.platforms[0].unavailable == {"cpu": no_triton}
    assert [c.state for c in matrix.rows[0].cells] == []


def test_known_failures_carry_their_reason_and_issue(tmp_path: Path) -> None:
    issue = "https://github.com/pytorch/pytorch/issues/12345"
    results = [
        result("a::test_failed", Outcome.FAILED, message=OVERFLOW),
        result("a::test_error", Outcome.ERROR),
        result("a::test_crashed", Outcome.CRASHED),
        result("a::test_xfailed", Outcome.XFAILED),
        result("a::test_xpassed", Outcome.XPASSED),
        result("a::test_other_failure", Outcome.FAILED),
    ]
    asked: list[tuple[str, str]] = []

    def known(platform_id: str, result: Result) -> Known | None:
        asked.append((platform_id, result.check))
        if result.check == "a::test_other_failure":
            return None
        return Known("uint64 copy_ is not implemented", issue)

    matrix = build_matrix([report(tmp_path, "p", results)], known=known)
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
    header = document("killed", [], status="running")
    writer = ReportWriter(tmp_path, header)
    writer.add(result("a::test_x"))
    finished = report(tmp_path, "done", [result("a::test_x")])
    matrix = build_matrix([load_report(writer.path), finished])
    assert [(p.complete, p.status) for p in matrix.platforms] == [
        (False, "running"),
        (True, FINISHED),
    ]
    assert [c.complete for c in matrix.columns] == [False, True]
    assert matrix.rows[0].cells[0].state is CellState.PASSED


def test_rows_go_by_scenario_then_subject_as_first_seen_then_check(tmp_path: Path) -> None:
    first = [
        result("b::test_z", subject="uint64/torch"),
        result("b::test_a", subject="uint64/torch"),
        result("a::test_m", subject="zeta/custom"),
        result("a::test_m", subject="alpha/custom"),
    ]
    second = [result("a::test_b", subject=None), result("a::test_a", subject="alpha/custom")]
    matrix = build_matrix([report(tmp_path, "p1", first), report(tmp_path, "p2", second)])
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
        report(tmp_path, "p1", [result("a::test_x", Outcome.XFAILED, message=OVERFLOW)]),
        report(tmp_path, "p2", [result("a::test_x", subject="int64/torch")]),
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
    results = [result("a::test_x", Outcome.FAILED, message=OVERFLOW, example=HIGH_ADDRESS)]
    record = build_matrix([report(tmp_path, "p", results)]).to_record()
    assert record["columns"][0]["platform"] == "p"
    assert record["columns"][0]["backend"] == "cpu"
    assert record["columns"][0]["complete"] is True
    assert record["rows"][0]["cells"][0]["state"] == "failed"
    assert record["rows"][0]["cells"][0]["example"] == HIGH_ADDRESS
    json.dumps(record)


def test_two_reports_with_one_platform_id_are_refused(tmp_path: Path) -> None:
    one = report(tmp_path / "one", "p", [result("a::test_x")])
    two = report(tmp_path / "two", "p", [result("a::test_x")])
    with pytest.raises(ReportError, match="platform id 'p' is also the id of"):
        build_matrix([one, two])


def test_a_realistic_cpu_and_xpu_nightly_lines_up_check_by_check(tmp_path: Path) -> None:
    round_trip = "table_round_trip::test_an_entry_reads_back_bit_exact"
    copy = "batch_copy::test_real_entries_are_copied_exactly"
    intel = "Intel(R) Data Center GPU Max 1550"
    cpu_run = [
        result(copy, subject="uint64/triton"),
        result(round_trip, subject="uint64/triton"),
        result(
            round_trip,
            Outcome.XFAILED,
            subject="int64/torch",
            message=OVERFLOW,
            example=HIGH_ADDRESS,
        ),
    ]
    xpu_run = [
        result(copy, subject="uint64/triton", on="xpu"),
        result(
            round_trip,
            Outcome.FAILED,
            subject="uint64/triton",
            on="xpu",
            message="NotImplementedError: \"copy_\" not implemented for 'UInt64'",
            example={"src": "0xffff85abd4e00000", "dst": "0xff00000b65ba2000", "nbytes": 0},
        ),
        result(
            round_trip,
            Outcome.XFAILED,
            subject="int64/torch",
            on="xpu",
            message=OVERFLOW,
            example=HIGH_ADDRESS,
        ),
        result(round_trip, subject="int64/torch", on="cpu"),
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
            report(tmp_path, "cpu-x86-64", cpu_run),
            report(
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


def test_an_upper_half_backend_is_its_own_column_marked_simulated(tmp_path: Path) -> None:
    matrix = build_matrix([upper_half_report(tmp_path)])
    assert [(c.name, c.simulated) for c in matrix.columns] == [
        ("cpu-x86-64/cpu", False),
        ("cpu-x86-64/cpu-usm", True),
    ]
    assert matrix.to_record()["columns"][1]["simulated"] is True
