"""What the Markdown (:mod:`ptrport.report.render_markdown`) and the HTML
(:mod:`ptrport.report.render_html`) of a matrix say alike: the title, the label of each cell,
the counts and versions of a column, what a platform's backends that are no column say, what
a headline says of marked tests.

The texts are plain; each renderer escapes them its own way (:mod:`ptrport.report.markup`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ptrport.report import op_support
from ptrport.report.compat import Headline
from ptrport.report.matrix import (
    BackendColumn,
    Cell,
    CellState,
    Matrix,
    Platform,
    Row,
    cell_verdict,
)

TITLE = "ptrport compatibility matrix"
MAIN_VERSIONS = ("torch", "triton", "ipex", "device")
"""The versions a column header shows; the totals table shows them all."""

LABELS: dict[CellState, str] = {
    CellState.PASSED: "pass",
    CellState.FAILED: "FAIL",
    CellState.KNOWN_FAILURE: "known",
    CellState.EXPECTED_FAILURE: "xfail",
    CellState.UNEXPECTED_PASS: "XPASS",
    CellState.SKIPPED: "skip",
    CellState.UNAVAILABLE: "n/a",
    CellState.CRASHED: "CRASH",
    CellState.TIMED_OUT: "TIMEOUT",
    CellState.ERROR: "ERROR",
    CellState.NOT_RUN: "—",
}
COUNT_HEADERS = {**LABELS, CellState.NOT_RUN: "not run"}
"""A totals table's header for each state."""


def state_counts(matrix: Matrix, index: int) -> Counter[CellState]:
    return Counter(row.cells[index].state for row in matrix.rows)


def columns_of(matrix: Matrix, platform: Platform) -> Iterator[tuple[int, BackendColumn]]:
    for index, column in enumerate(matrix.columns):
        if column.platform_id == platform.platform_id:
            yield index, column


def idle_backends(matrix: Matrix, platform: Platform) -> dict[str, str]:
    """What the totals table says about a platform's backends that are not columns, so that
    a platform with no column at all still shows up."""
    idle = {name: f"not available: {reason}" for name, reason in platform.unavailable.items()}
    if not idle and not any(True for _ in columns_of(matrix, platform)):
        idle["—"] = "no results"
    return idle


def main_versions(column: BackendColumn) -> list[str]:
    """What a column's header says under its name: simulated, and the main versions."""
    shown = [f"{n} {column.versions[n]}" for n in MAIN_VERSIONS if column.versions.get(n)]
    if not column.simulated:
        return shown
    return [f"simulated: {column.simulates}" if column.simulates else "simulated", *shown]


def all_versions(versions: dict[str, str]) -> list[str]:
    return [f"{name} {value}" for name, value in versions.items()]


def run_state(platform: Platform) -> str:
    return "complete" if platform.complete else f"incomplete ({platform.status or 'unknown'})"


def short_check(row: Row) -> str:
    return op_support.operation_of(row.check) or row.check.removeprefix(f"{row.scenario}::")


def scenario_title(scenario: str) -> str:
    return op_support.TITLE if scenario == op_support.SCENARIO else scenario


def cell_label(scenario: str, cell: Cell) -> str:
    """``works``, ``raises NotImplementedError`` or ``wrong`` for an operation's probe, else
    the label of the cell's state."""
    found = cell_verdict(scenario, cell)
    return LABELS[cell.state] if found is None else op_support.label(found, cell.message)


def example_json(example: dict[str, Any]) -> str:
    return json.dumps(example, indent=2, ensure_ascii=False)


def own_tests_verdict(line: Headline) -> tuple[str, str] | None:
    """What a platform's headline says of the tests marked ``@pytest.mark.ptrport``, where it
    holds any: how many of those that ran fail (``1 of 2 fails``, ``0 of 2 fail``, ``not
    run``), and on which backends (``on cpu, cpu-usm``; empty where none fails)."""
    if line.own_tests is None:
        return None
    if not line.own_tests:
        return "not run", ""
    failing, ran = line.own_tests_failing, line.own_tests
    count = f"{failing} of {ran} {'fails' if failing == 1 else 'fail'}"
    where = "on " + ", ".join(line.own_tests_failing_on) if failing else ""
    return count, where
