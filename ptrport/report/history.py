"""Nights kept: a bounded directory of merged matrices, one a night, read back as counts per
platform so that a regression shows as a step across nights (:mod:`ptrport.report.trend_chart`).

A night is the merged matrix JSON that ``ptrport report merge -o X.json`` writes, kept as
``<UTC start of its run>.json`` (:data:`NIGHT_FORMAT`; the names sort as the nights do). It is
read back with :func:`ptrport.report.platform_report.load_reports`, as ``ptrport report
render`` reads it, and the cells of its rows give the counts, known failures included as the
merge marked them.

Pure: no torch, numpy, pytest or hypothesis (the nightly's report job has none of them).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ptrport.errors import HarnessError
from ptrport.report.defaults import DEFAULT_LIMIT
from ptrport.report.matrix import CellState, Matrix
from ptrport.report.measurements import measurements_of
from ptrport.report.platform_report import (
    MATRIX_SCHEMA,
    PlatformReport,
    ReportError,
    load_reports,
    write_text_atomically,
)

NIGHT_FORMAT = "%Y-%m-%dT%H%M%SZ"
"""A kept night's file name, before ``.json``: its run's UTC start, e.g. ``2026-12-02T021500Z``."""
_NIGHT_NAME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{6}Z\.json")

_STATES = {s.value: s for s in CellState}


@dataclass(frozen=True)
class PlatformNight:
    """One platform's results in one night: how many cells passed, failed (failed, crashed,
    timed out, error, unexpected pass) or failed as an expectation records, out of how many
    that ran; and each benchmark's ratio to its baseline, by :func:`measurement_label`."""

    passes: int
    failures: int
    known_failures: int
    total: int
    ratios: Mapping[str, float]


@dataclass(frozen=True)
class Night:
    """One kept matrix: when its run started (UTC) and each platform's counts, by platform id."""

    started: datetime
    path: Path
    platforms: Mapping[str, PlatformNight]

    @property
    def name(self) -> str:
        """The file name it is kept under, without ``.json``."""
        return night_name(self.started)

    @property
    def date(self) -> str:
        """The night as axis labels and tables show it: ``2026-12-02``."""
        return self.started.strftime("%Y-%m-%d")


def night_name(started: datetime) -> str:
    return started.astimezone(UTC).strftime(NIGHT_FORMAT)


def measurement_label(name: str, backend: str, size: str) -> str:
    """How a benchmark is named across nights: one name can be measured on several backends
    and sizes, and a diff compares only measurements of one backend and size."""
    return f"{name} ({backend}, {size})"


def _started(reports: Sequence[PlatformReport], path: Path) -> datetime:
    """The earliest start of the reports' runs, in UTC (a start without a zone is UTC)."""
    found: list[datetime] = []
    for report in reports:
        text = str(report.run.get("started", ""))
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise ReportError(
                f"{report.path}: run.started {text!r} is not an ISO date and time"
            ) from None
        found.append(when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC))
    if not found:
        raise ReportError(f"{path}: a matrix without reports")
    return min(found)


def _document(path: Path) -> dict[str, Any]:
    """The matrix document at ``path``; :func:`load_reports` has read it strictly already."""
    document = json.loads(path.read_text(encoding="utf-8-sig"))
    if not isinstance(document, dict) or document.get("schema") != MATRIX_SCHEMA:
        raise ReportError(
            f"{path}: not a merged matrix ({MATRIX_SCHEMA}); keep what "
            "`ptrport report merge -o X.json` writes"
        )
    return document


def _cell_states(document: dict[str, Any], path: Path) -> list[tuple[str, CellState]]:
    """(platform id, state) of every cell of the matrix's rows."""
    columns = document.get("columns")
    rows = document.get("rows")
    if not isinstance(columns, list) or not isinstance(rows, list):
        raise ReportError(f"{path}: a matrix without its 'columns' and 'rows' lists")
    platforms = [c.get("platform") if isinstance(c, dict) else None for c in columns]
    found: list[tuple[str, CellState]] = []
    for number, row in enumerate(rows):
        cells = row.get("cells") if isinstance(row, dict) else None
        if not isinstance(cells, list) or len(cells) != len(platforms):
            raise ReportError(f"{path}: rows[{number}] has not one cell per column")
        for index, cell in enumerate(cells):
            state = _STATES.get(str(cell.get("state"))) if isinstance(cell, dict) else None
            platform = platforms[index]
            if state is None or not isinstance(platform, str):
                raise ReportError(f"{path}: rows[{number}].cells[{index}] is not a matrix cell")
            found.append((platform, state))
    return found


def _platform_night(states: Sequence[CellState], report: PlatformReport) -> PlatformNight:
    ratios = {
        measurement_label(m.name, m.backend, m.size): m.ratio for m in measurements_of(report)
    }
    return PlatformNight(
        passes=sum(s is CellState.PASSED for s in states),
        failures=sum(s.bad for s in states),
        known_failures=sum(s is CellState.KNOWN_FAILURE for s in states),
        total=sum(s is not CellState.NOT_RUN for s in states),
        ratios=ratios,
    )


def read_night(path: Path) -> Night:
    """The night kept at ``path`` (any merged matrix JSON); raises
    :class:`~ptrport.report.platform_report.ReportError` for a file that is not one."""
    reports = load_reports([path])
    try:
        document = _document(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read it: {exc}") from None
    states: dict[str, list[CellState]] = {r.platform_id: [] for r in reports}
    for platform, state in _cell_states(document, path):
        if platform not in states:
            raise ReportError(f"{path}: a column of platform {platform!r}, which has no report")
        states[platform].append(state)
    return Night(
        started=_started(reports, path),
        path=path,
        platforms={r.platform_id: _platform_night(states[r.platform_id], r) for r in reports},
    )


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"Cannot have limit={limit} < 1; keep at least one night")


def _store(text: str, started: datetime, history_dir: Path, limit: int) -> Path:
    """Write ``text`` as the night that started at ``started`` (replacing a night of the same
    start), atomically, then remove the oldest nights beyond ``limit``."""
    try:
        history_dir.mkdir(parents=True, exist_ok=True)
        path = history_dir / f"{night_name(started)}.json"
        write_text_atomically(path, text if text.endswith("\n") else text + "\n")
        kept = sorted(p for p in history_dir.iterdir() if _NIGHT_NAME.fullmatch(p.name))
        for old in kept[:-limit]:
            old.unlink()
    except OSError as exc:
        raise HarnessError(f"{history_dir}: cannot keep the night there: {exc}") from None
    return path


def keep(matrix_json_path: Path, history_dir: Path, *, limit: int = DEFAULT_LIMIT) -> Path:
    """Copy the merged matrix at ``matrix_json_path`` into ``history_dir`` as its night
    (:data:`NIGHT_FORMAT`), then remove the oldest nights there beyond ``limit`` (files of
    other names are left alone). Returns the night's path. Raises
    :class:`~ptrport.report.platform_report.ReportError` for a file that is not a merged matrix."""
    _check_limit(limit)
    night = read_night(matrix_json_path)
    text = matrix_json_path.read_text(encoding="utf-8-sig")
    return _store(text, night.started, history_dir, limit)


def keep_matrix(matrix: Matrix, history_dir: Path, *, limit: int = DEFAULT_LIMIT) -> Path:
    """:func:`keep` for a matrix just merged: its JSON as ``ptrport report merge`` writes it."""
    _check_limit(limit)
    started = _started(matrix.reports, history_dir)
    return _store(matrix.to_json(), started, history_dir, limit)


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def load(history_dir: Path, *, say: Callable[[str], None] = _say) -> list[Night]:
    """The nights kept in ``history_dir`` (every ``*.json`` there), oldest first; none if it
    does not exist. A file that cannot be read is skipped, with one line to ``say``
    (stderr by default) naming it and why."""
    if not history_dir.is_dir():
        return []
    nights: list[Night] = []
    for path in sorted(p for p in history_dir.glob("*.json") if p.is_file()):
        try:
            nights.append(read_night(path))
        except HarnessError as exc:
            say(f"ptrport: {exc}; night skipped")
    return sorted(nights, key=lambda n: (n.started, n.path.name))
