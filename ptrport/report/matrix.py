"""The compatibility matrix: platform reports merged into checks x (platform, backend).

Pure data: reports in, a :class:`Matrix` out; :mod:`ptrport.report.render` turns it into text. A
matrix's record carries the reports it was made from, so
:func:`ptrport.report.platform_report.load_reports` reads a merged matrix back as those reports.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ptrport.report import op_support
from ptrport.report.platform_report import MATRIX_SCHEMA, PlatformReport, by_platform, totals
from ptrport.report.records import Outcome, Result


class KnownFailure(Protocol):
    """A failure someone has already looked at: why it fails, and where it is tracked."""

    @property
    def reason(self) -> str: ...

    @property
    def issue(self) -> str | None: ...


KnownLookup = Callable[[str, Result], KnownFailure | None]
"""Given (platform id, result), the known failure it matches, or ``None``."""


class CellState(enum.StrEnum):
    """What one matrix cell shows."""

    PASSED = "passed"
    FAILED = "failed"
    KNOWN_FAILURE = "known failure"
    """Failed (or error, or crashed) in a way an expectation already records."""
    EXPECTED_FAILURE = "expected failure"
    UNEXPECTED_PASS = "unexpected pass"
    SKIPPED = "skipped"
    UNAVAILABLE = "unavailable"
    CRASHED = "crashed"
    TIMED_OUT = "timed out"
    ERROR = "error"
    NOT_RUN = "not run"
    """The column has no result for this row."""

    @property
    def bad(self) -> bool:
        """Whether the cell is red: a new failure, or a control that went blind."""
        return self in (
            CellState.FAILED,
            CellState.UNEXPECTED_PASS,
            CellState.CRASHED,
            CellState.TIMED_OUT,
            CellState.ERROR,
        )

    @property
    def detailed(self) -> bool:
        """Whether the cell's message and example are worth showing beside the table."""
        return self.bad or self in (CellState.KNOWN_FAILURE, CellState.EXPECTED_FAILURE)


_STATE_OF: dict[Outcome, CellState] = {
    Outcome.PASSED: CellState.PASSED,
    Outcome.FAILED: CellState.FAILED,
    Outcome.XFAILED: CellState.EXPECTED_FAILURE,
    Outcome.XPASSED: CellState.UNEXPECTED_PASS,
    Outcome.SKIPPED: CellState.SKIPPED,
    Outcome.UNAVAILABLE: CellState.UNAVAILABLE,
    Outcome.ERROR: CellState.ERROR,
    Outcome.CRASHED: CellState.CRASHED,
    Outcome.TIMED_OUT: CellState.TIMED_OUT,
}
_KNOWABLE = (Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMED_OUT)


@dataclass(frozen=True)
class Cell:
    """One result as the matrix shows it; ``reason`` and ``issue`` come from a known failure."""

    state: CellState
    message: str | None = None
    example: dict[str, Any] | None = None
    nodeid: str = ""
    reason: str | None = None
    issue: str | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "message": self.message,
            "example": self.example,
            "nodeid": self.nodeid,
            "reason": self.reason,
            "issue": self.issue,
        }


NOT_RUN = Cell(CellState.NOT_RUN)

_VERDICT_OUTCOMES = {
    CellState.PASSED: Outcome.PASSED,
    CellState.FAILED: Outcome.FAILED,
    CellState.SKIPPED: Outcome.SKIPPED,
}


def cell_verdict(scenario: str, cell: Cell) -> op_support.OperationVerdict | None:
    """What a cell of the ``uint64_operations`` scenario says about its operation (works,
    raises, wrong); ``None`` for other scenarios and for cells that are not a verdict."""
    outcome = _VERDICT_OUTCOMES.get(cell.state)
    return None if outcome is None else op_support.verdict(scenario, outcome, cell.message)


@dataclass(frozen=True)
class BackendColumn:
    """One backend of one platform, with the versions it ran under."""

    platform_id: str
    backend: str
    versions: dict[str, str]
    complete: bool
    totals: dict[str, int]
    simulated: bool = False
    """Whether the backend stands in for another kind of device (``cpu-usm``, ``cpu-tbi``)."""
    simulates: str = ""
    """What it stands in for, in a few words (``an upper-half device``, ``placed memory``): its
    fingerprint's ``simulated`` line up to the colon."""

    @property
    def name(self) -> str:
        return f"{self.platform_id}/{self.backend}"

    def to_record(self) -> dict[str, Any]:
        return {
            "platform": self.platform_id,
            "backend": self.backend,
            "versions": self.versions,
            "complete": self.complete,
            "totals": self.totals,
            "simulated": self.simulated,
        }


@dataclass(frozen=True)
class Platform:
    """One report's platform: its versions, how far its run got, and the backends it selected
    that could not run anything (by name, with the reason)."""

    platform_id: str
    versions: dict[str, str]
    complete: bool
    status: str
    totals: dict[str, int]
    unavailable: dict[str, str]

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.platform_id,
            "versions": self.versions,
            "complete": self.complete,
            "status": self.status,
            "totals": self.totals,
            "unavailable": self.unavailable,
        }


@dataclass(frozen=True)
class Row:
    """One check for one subject, a cell per column."""

    scenario: str
    subject: str | None
    check: str
    cells: tuple[Cell, ...]

    def to_record(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "subject": self.subject,
            "check": self.check,
            "cells": [c.to_record() for c in self.cells],
        }


@dataclass(frozen=True)
class Matrix:
    """Checks x (platform, backend), with the platforms and reports it was made from."""

    platforms: tuple[Platform, ...]
    columns: tuple[BackendColumn, ...]
    rows: tuple[Row, ...]
    reports: tuple[PlatformReport, ...]

    @property
    def scenarios(self) -> list[str]:
        return list(dict.fromkeys(r.scenario for r in self.rows))

    def rows_of(self, scenario: str) -> list[Row]:
        return [r for r in self.rows if r.scenario == scenario]

    def to_record(self) -> dict[str, Any]:
        """The matrix as a JSON document; ``reports`` holds every report whole."""
        return {
            "schema": MATRIX_SCHEMA,
            "platforms": [p.to_record() for p in self.platforms],
            "columns": [c.to_record() for c in self.columns],
            "rows": [r.to_record() for r in self.rows],
            "reports": [r.to_record() for r in self.reports],
        }

    def to_json(self) -> str:
        """The record as indented JSON: what ``ptrport report merge -o X.json`` writes and the
        history keeps."""
        return json.dumps(self.to_record(), indent=2)


def _cell(platform_id: str, result: Result, known: KnownLookup | None) -> Cell:
    match = None
    if known is not None and result.outcome in _KNOWABLE:
        match = known(platform_id, result)
    return Cell(
        state=_STATE_OF[result.outcome] if match is None else CellState.KNOWN_FAILURE,
        message=result.message,
        example=result.example,
        nodeid=result.nodeid,
        reason=None if match is None else match.reason,
        issue=None if match is None else match.issue,
    )


def _backend_entry(report: PlatformReport, backend: str) -> dict[str, Any]:
    entry = report.fingerprint.get("backends", {}).get(backend)
    return entry if isinstance(entry, dict) else {}


def _column_versions(report: PlatformReport, backend: str) -> dict[str, str]:
    """The report's versions, with the device this backend ran on: ``versions()`` names the
    execution target's device, which is another backend's on a cpu column of a GPU run."""
    found = report.versions()
    model = _backend_entry(report, backend).get("device_model")
    if model and backend != report.execution_target.get("backend"):
        found["device"] = str(model)
    return found


def _unavailable(report: PlatformReport, by_backend: dict[str, list[Result]]) -> dict[str, str]:
    """Backends that ran nothing here, each with why: the fingerprint's reason, else the
    first result's message."""
    found: dict[str, str] = {}
    for name, results in by_backend.items():
        if all(r.outcome is Outcome.UNAVAILABLE for r in results):
            reason = _backend_entry(report, name).get("reason") or results[0].message
            found[name] = str(reason or "every result unavailable")
    for name, entry in report.fingerprint.get("backends", {}).items():
        if name not in by_backend and entry.get("available") is False:
            found[name] = str(entry.get("reason") or "not available")
    return found


def _by_backend(report: PlatformReport) -> dict[str, list[Result]]:
    found: dict[str, list[Result]] = {}
    for result in report.results:
        found.setdefault(result.backend, []).append(result)
    return found


def build_matrix(reports: Sequence[PlatformReport], *, known: KnownLookup | None = None) -> Matrix:
    """Merge platform reports into one matrix.

    A column per (platform id, backend) with at least one result that is not ``unavailable``,
    in report order, backends in the order their results appear; a backend that ran nothing
    is listed on its :class:`Platform` with the reason. A row per (scenario, subject, check)
    found in any report, ordered by scenario, then subject in the order subjects first appear,
    then check. ``known`` is asked about each failed, error and crashed result; a match makes
    the cell a known failure carrying its reason and issue. Two reports with one platform id
    raise :class:`~ptrport.report.platform_report.ReportError`.
    """
    by_platform(reports)
    platforms: list[Platform] = []
    columns: list[BackendColumn] = []
    cells: dict[tuple[str, str | None, str], dict[int, Cell]] = {}
    subject_order: dict[str | None, int] = {}
    for report in reports:
        by_backend = _by_backend(report)
        unavailable = _unavailable(report, by_backend)
        platforms.append(
            Platform(
                platform_id=report.platform_id,
                versions=report.versions(),
                complete=report.complete,
                status=str(report.run.get("status", "")),
                totals=report.totals,
                unavailable=unavailable,
            )
        )
        for result in report.results:
            subject_order.setdefault(result.subject, len(subject_order))
            cells.setdefault((result.scenario, result.subject, result.check), {})
        for backend, results in by_backend.items():
            if backend in unavailable:
                continue
            index = len(columns)
            columns.append(
                BackendColumn(
                    platform_id=report.platform_id,
                    backend=backend,
                    versions=_column_versions(report, backend),
                    complete=report.complete,
                    totals=totals(results),
                    simulated=bool(_backend_entry(report, backend).get("simulated")),
                    simulates=str(_backend_entry(report, backend).get("simulated") or "")
                    .split(":", 1)[0]
                    .strip(),
                )
            )
            for result in results:
                row = cells[(result.scenario, result.subject, result.check)]
                row.setdefault(index, _cell(report.platform_id, result, known))
    ordered = sorted(cells, key=lambda k: (k[0], subject_order[k[1]], k[2]))
    rows = tuple(
        Row(
            scenario=scenario,
            subject=subject,
            check=check,
            cells=tuple(
                cells[(scenario, subject, check)].get(i, NOT_RUN) for i in range(len(columns))
            ),
        )
        for scenario, subject, check in ordered
    )
    return Matrix(
        platforms=tuple(platforms),
        columns=tuple(columns),
        rows=rows,
        reports=tuple(reports),
    )
