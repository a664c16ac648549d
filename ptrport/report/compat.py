"""What a compatibility page answers first, from a merged :class:`~ptrport.report.matrix.Matrix`:

- per platform, one headline: how many checks ran, passed, failed anew, failed as known,
  crashed; and the verdict on the question the project exists for (do uint64 pointer tables
  work here, which encodings break, which uint64 operations raise);
- every failure, grouped by platform, with its minimal counterexample, its message's first line
  and the command that reproduces it;
- subject x platform, one cell per pair with its counts, per scenario underneath.

Pure data; :mod:`ptrport.report.render` lays it out.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ptrport.report import op_support
from ptrport.report.matrix import Cell, CellState, Matrix, cell_verdict
from ptrport.report.records import OWN_TEST, compact_example

UINT64_PREFIX = "uint64/"
"""Built-in subjects whose pointer tables are ``torch.uint64``: the fix the question is about."""
NO_SUBJECT = "(no subject)"
FAILING = tuple(s for s in CellState if s.bad or s is CellState.KNOWN_FAILURE)
"""The cells the failures list shows: every bad one, and the known failures, marked known."""
_NOT_RUN = (CellState.SKIPPED, CellState.UNAVAILABLE, CellState.NOT_RUN)


@dataclass(frozen=True)
class Headline:
    """One platform in one line."""

    platform_id: str
    complete: bool
    runs: int
    passes: int
    new_failures: int
    known: int
    crashed: int
    """Crashed or timed out."""
    uint64_tables: str
    """``work``, ``fail`` or ``not run``: the uint64 subjects' checks here."""
    breaking_encodings: tuple[str, ...]
    """Encodings (a subject's name before ``/``) with a check that failed or was expected to."""
    raising_operations: tuple[str, ...]
    """uint64 operations whose probe raised here."""


@dataclass(frozen=True)
class Failure:
    """A failing cell, as the failures list shows it."""

    platform_id: str
    backend: str
    scenario: str
    check: str
    subject: str | None
    state: CellState
    first_line: str
    example: dict[str, Any] | None
    counterexample: str
    """The example on one line, addresses in hex
    (:func:`ptrport.report.records.compact_example`)."""
    known: str | None
    """Why it is known to fail (from the expectations), if it is."""
    issue: str | None
    repro: str | None
    """The command that writes a script rerunning it, where its example was recorded."""
    nodeid: str


@dataclass
class Counts:
    """The cells of one subject on one platform, in all and per scenario."""

    total: Counter[CellState] = field(default_factory=Counter)
    by_scenario: dict[str, Counter[CellState]] = field(default_factory=dict)

    def add(self, scenario: str, state: CellState) -> None:
        self.total[state] += 1
        self.by_scenario.setdefault(scenario, Counter())[state] += 1


def repro_command(platform_id: str, backend: str, check: str, subject: str | None) -> str:
    """The command that writes a script rerunning one failure from its platform's report (for a
    user's own test, that prints the pytest command rerunning it)."""
    words = ["ptrport", "report", "repro", f"reports/{platform_id}.json", "--check", check]
    if subject is not None:
        words += ["--subject", subject]
    words += ["--backend", backend]
    # A user's own test is rerun by a pytest command, which repro prints; a check by a script.
    return shlex.join(words if subject == OWN_TEST else [*words, "-o", "repro.py"])


def _first_line(cell: Cell) -> str:
    text = (cell.message or cell.state.value).strip()
    return text.splitlines()[0] if text else cell.state.value


def headlines(matrix: Matrix) -> list[Headline]:
    found = []
    for platform in matrix.platforms:
        states: Counter[CellState] = Counter()
        uint64: Counter[CellState] = Counter()
        encodings: dict[str, None] = {}
        raising: dict[str, None] = {}
        for row in matrix.rows:
            for column, cell in zip(matrix.columns, row.cells, strict=True):
                if column.platform_id != platform.platform_id:
                    continue
                states[cell.state] += 1
                verdict = cell_verdict(row.scenario, cell)
                if verdict is op_support.OperationVerdict.RAISES:
                    raising[op_support.operation_of(row.check) or row.check] = None
                if row.subject is None or row.scenario == op_support.SCENARIO:
                    continue
                if row.subject.startswith(UINT64_PREFIX):
                    uint64[cell.state] += 1
                if cell.state.detailed:
                    encodings[row.subject.split("/", 1)[0]] = None
        ran = sum(n for s, n in states.items() if s not in _NOT_RUN)
        uint64_ran = sum(n for s, n in uint64.items() if s not in _NOT_RUN)
        uint64_bad = sum(n for s, n in uint64.items() if s in FAILING)
        found.append(
            Headline(
                platform_id=platform.platform_id,
                complete=platform.complete,
                runs=ran,
                passes=states[CellState.PASSED],
                new_failures=sum(n for s, n in states.items() if s.bad),
                known=states[CellState.KNOWN_FAILURE],
                crashed=states[CellState.CRASHED] + states[CellState.TIMED_OUT],
                uint64_tables="not run" if not uint64_ran else "fail" if uint64_bad else "work",
                breaking_encodings=tuple(sorted(encodings)),
                raising_operations=tuple(raising),
            )
        )
    return found


def failures(matrix: Matrix) -> list[Failure]:
    """Every failing cell, platform by platform in the matrix's order, new ones before known."""
    found = []
    for platform in matrix.platforms:
        here = []
        for row in matrix.rows:
            for column, cell in zip(matrix.columns, row.cells, strict=True):
                if column.platform_id != platform.platform_id or cell.state not in FAILING:
                    continue
                here.append(
                    Failure(
                        platform_id=column.platform_id,
                        backend=column.backend,
                        scenario=row.scenario,
                        check=row.check,
                        subject=row.subject,
                        state=cell.state,
                        first_line=_first_line(cell),
                        example=cell.example,
                        counterexample=compact_example(cell.example),
                        known=cell.reason,
                        issue=cell.issue,
                        repro=repro_command(
                            column.platform_id, column.backend, row.check, row.subject
                        )
                        if cell.example is not None or row.subject == OWN_TEST
                        else None,
                        nodeid=cell.nodeid,
                    )
                )
        found += sorted(here, key=lambda f: f.state is CellState.KNOWN_FAILURE)
    return found


def grid(matrix: Matrix) -> tuple[list[str], list[str], dict[tuple[str, str], Counts]]:
    """Subjects (rows), platforms (columns) and the counts of each pair that has cells."""
    subjects = list(dict.fromkeys(row.subject or NO_SUBJECT for row in matrix.rows))
    platforms = [p.platform_id for p in matrix.platforms]
    cells: dict[tuple[str, str], Counts] = {}
    for row in matrix.rows:
        subject = row.subject or NO_SUBJECT
        for column, cell in zip(matrix.columns, row.cells, strict=True):
            if cell.state is not CellState.NOT_RUN:
                cells.setdefault((subject, column.platform_id), Counts()).add(
                    row.scenario, cell.state
                )
    return subjects, platforms, cells
