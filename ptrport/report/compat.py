"""What a compatibility page answers first, from a merged :class:`~ptrport.report.matrix.Matrix`:

- per platform, one headline: how many checks ran, passed, failed anew, failed as known,
  crashed; and the verdicts on what the run holds: for the scenarios, the question the project
  exists for (do uint64 pointer tables work here, which encodings break, which uint64
  operations raise), for a team's own tests marked ``@pytest.mark.ptrport``, how many fail and
  on which backends;
- every failure, grouped by platform, with its minimal counterexample, its message's first line
  and the command that reproduces it; failures of one cause (one check, one message but for
  its addresses) on several backends of a platform make one group;
- subject x platform, one cell per pair with its counts, per scenario underneath.

Pure data; :mod:`ptrport.report.render` lays it out.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ptrport.report import op_support, repro
from ptrport.report.matrix import BackendColumn, Cell, CellState, Matrix, Row, cell_verdict
from ptrport.report.platform_report import PlatformReport
from ptrport.report.records import OWN_TEST, Result, compact_example

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
    uint64_tables: str | None
    """``work``, ``fail`` or ``not run``: the uint64 subjects' checks here; ``None`` where the
    platform holds marked tests and nothing else, which say nothing of pointer tables."""
    breaking_encodings: tuple[str, ...]
    """Encodings (a subject's name before ``/``) with a check that failed or was expected to."""
    raising_operations: tuple[str, ...]
    """uint64 operations whose probe raised here."""
    own_tests: int | None = None
    """Tests marked ``@pytest.mark.ptrport`` that ran here, on one backend or more; ``None``
    where the platform holds no marked test."""
    own_tests_failing: int = 0
    """Of those, the tests that failed (or failed as known) on one backend or more."""
    own_tests_failing_on: tuple[str, ...] = ()
    """The backends they failed on, in the order of the platform's columns."""


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
    """For a scenario's check, the command that writes a script rerunning it, where its
    example was recorded; for a marked test, the pytest command that reruns it (what
    ``ptrport report repro`` prints for it)."""
    nodeid: str
    message: str | None = None
    """The whole message; :attr:`first_line` is its first line."""
    row: int = 0
    """The cell's row in the matrix's rows."""
    column: int = 0
    """The cell's column in the matrix's columns."""


@dataclass(frozen=True)
class FailureGroup:
    """Failures of one cause on one platform, a failure per backend: one check for one
    subject, in one state, whose messages are the same once their addresses are left out
    (:func:`cause`)."""

    failures: tuple[Failure, ...]

    @property
    def first(self) -> Failure:
        return self.failures[0]

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(f.backend for f in self.failures)

    def alike(self, shown: Sequence[tuple[str, object]]) -> bool:
        """Whether ``shown`` (a text or an example per backend, where one has it) is the same
        on every backend of the group, so that it is shown once, not per backend."""
        return len(shown) == len(self.failures) and all(v == shown[0][1] for _, v in shown)


@dataclass
class Counts:
    """The cells of one subject on one platform, in all and per scenario."""

    total: Counter[CellState] = field(default_factory=Counter)
    by_scenario: dict[str, Counter[CellState]] = field(default_factory=dict)

    def add(self, scenario: str, state: CellState) -> None:
        self.total[state] += 1
        self.by_scenario.setdefault(scenario, Counter())[state] += 1


def repro_command(platform_id: str, backend: str, check: str, subject: str | None) -> str:
    """The command that writes a script rerunning one failure of a scenario's check from its
    platform's report."""
    words = ["ptrport", "report", "repro", f"reports/{platform_id}.json", "--check", check]
    if subject is not None:
        words += ["--subject", subject]
    return shlex.join([*words, "--backend", backend, "-o", "repro.py"])


_ADDRESS = re.compile(r"\b0[xX][0-9a-fA-F]+\b|\b[0-9]{10,}\b")
"""A number in a message taken for an address: any hex number, and a decimal one of ten digits
or more (an address printed as an int, as pytest's assertion message does; 2**32 has ten)."""
_WHERE_HELD = re.compile(
    r" \((?:placed at [^;()]+(?:; last presented at [^;()]+)?|last presented at [^;()]+)\)\Z"
)
"""What the run adds to a marked test's failure, where the backend held its memory
(``_addresses_here`` in :mod:`ptrport.run.outcomes`): ``(placed at ...; last presented at
...)``, its parts as the backend has them."""


def cause(message: str | None) -> str:
    """What a failure's message says whatever the backend: the message without its addresses,
    and without what the run adds to a marked test's failure about where the backend held its
    memory. Two failures of one check are of one cause where this is the same."""
    return _ADDRESS.sub("0x", _WHERE_HELD.sub("", (message or "").strip()))


def _first_line(cell: Cell) -> str:
    text = (cell.message or cell.state.value).strip()
    return text.splitlines()[0] if text else cell.state.value


def _cells_of(matrix: Matrix, platform_id: str) -> Iterator[tuple[int, Row, int, Cell]]:
    """Each cell of one platform's columns, row by row: (row index, row, column index, cell)."""
    for number, row in enumerate(matrix.rows):
        for index, (column, cell) in enumerate(zip(matrix.columns, row.cells, strict=True)):
            if column.platform_id == platform_id:
                yield number, row, index, cell


def _own_tests(matrix: Matrix, platform_id: str) -> tuple[int | None, int, tuple[str, ...]]:
    """How many marked tests ran on a platform (``None`` where it holds none), how many of them
    failed, and on which backends."""
    held = False
    failed: dict[str, bool] = {}
    backends: dict[str, None] = {}
    for _, row, index, cell in _cells_of(matrix, platform_id):
        if row.subject != OWN_TEST or cell.state is CellState.NOT_RUN:
            continue
        held = True
        if cell.state in _NOT_RUN:
            continue
        failing = cell.state in FAILING
        failed[row.check] = failed.get(row.check, False) or failing
        if failing:
            backends[matrix.columns[index].backend] = None
    return len(failed) if held else None, sum(failed.values()), tuple(backends)


def _uint64_verdict(uint64: Counter[CellState]) -> str:
    if not any(n for s, n in uint64.items() if s not in _NOT_RUN):
        return "not run"
    return "fail" if any(n for s, n in uint64.items() if s in FAILING) else "work"


def headlines(matrix: Matrix) -> list[Headline]:
    found = []
    for platform in matrix.platforms:
        states: Counter[CellState] = Counter()
        uint64: Counter[CellState] = Counter()
        encodings: dict[str, None] = {}
        raising: dict[str, None] = {}
        scenario_results = 0
        for _, row, _, cell in _cells_of(matrix, platform.platform_id):
            states[cell.state] += 1
            if row.subject == OWN_TEST:
                continue
            scenario_results += cell.state is not CellState.NOT_RUN
            verdict = cell_verdict(row.scenario, cell)
            if verdict is op_support.OperationVerdict.RAISES:
                raising[op_support.operation_of(row.check) or row.check] = None
            if row.subject is None or row.scenario == op_support.SCENARIO:
                continue
            if row.subject.startswith(UINT64_PREFIX):
                uint64[cell.state] += 1
            if cell.state.detailed:
                encodings[row.subject.split("/", 1)[0]] = None
        own_tests, own_failing, own_failing_on = _own_tests(matrix, platform.platform_id)
        found.append(
            Headline(
                platform_id=platform.platform_id,
                complete=platform.complete,
                runs=sum(n for s, n in states.items() if s not in _NOT_RUN),
                passes=states[CellState.PASSED],
                new_failures=sum(n for s, n in states.items() if s.bad),
                known=states[CellState.KNOWN_FAILURE],
                crashed=states[CellState.CRASHED] + states[CellState.TIMED_OUT],
                # Marked tests alone say nothing of the scenarios' pointer tables.
                uint64_tables=None
                if own_tests is not None and not scenario_results
                else _uint64_verdict(uint64),
                breaking_encodings=tuple(sorted(encodings)),
                raising_operations=tuple(raising),
                own_tests=own_tests,
                own_tests_failing=own_failing,
                own_tests_failing_on=own_failing_on,
            )
        )
    return found


def _own_test_results(matrix: Matrix) -> dict[tuple[str, str, str], tuple[Result, PlatformReport]]:
    """Each marked test's result with its report, by (platform id, check, backend): what the
    pytest command that reruns a failed one is made of."""
    return {
        (report.platform_id, result.check, result.backend): (result, report)
        for report in matrix.reports
        for result in report.results
        if result.own_test and result.nodeid
    }


def _failure(
    number: int,
    row: Row,
    index: int,
    column: BackendColumn,
    cell: Cell,
    own_tests: dict[tuple[str, str, str], tuple[Result, PlatformReport]],
) -> Failure:
    if row.subject == OWN_TEST:
        found = own_tests.get((column.platform_id, row.check, column.backend))
        command = repro.command(*found) if found is not None else None
    elif cell.example is not None:
        command = repro_command(column.platform_id, column.backend, row.check, row.subject)
    else:
        command = None
    return Failure(
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
        repro=command,
        nodeid=cell.nodeid,
        message=cell.message,
        row=number,
        column=index,
    )


def failures(matrix: Matrix) -> list[Failure]:
    """Every failing cell, platform by platform in the matrix's order, new ones before known."""
    own_tests = _own_test_results(matrix)
    found = []
    for platform in matrix.platforms:
        here = [
            _failure(number, row, index, matrix.columns[index], cell, own_tests)
            for number, row, index, cell in _cells_of(matrix, platform.platform_id)
            if cell.state in FAILING
        ]
        found += sorted(here, key=lambda f: f.state is CellState.KNOWN_FAILURE)
    return found


def detailed(matrix: Matrix) -> list[Failure]:
    """Every cell worth a closer look (:attr:`CellState.detailed
    <ptrport.report.matrix.CellState.detailed>`: the failing ones, and expected failures), in
    the order of the matrix's tables: row by row, columns left to right."""
    own_tests = _own_test_results(matrix)
    return [
        _failure(number, row, index, column, cell, own_tests)
        for number, row in enumerate(matrix.rows)
        for index, (column, cell) in enumerate(zip(matrix.columns, row.cells, strict=True))
        if cell.state.detailed
    ]


def grouped(found: Iterable[Failure]) -> list[FailureGroup]:
    """``found`` in groups of one cause on one platform (:class:`FailureGroup`), in the order
    of each group's first failure; within a group, failures keep their order."""
    groups: dict[tuple[object, ...], list[Failure]] = {}
    for failure in found:
        key = (
            failure.platform_id,
            failure.scenario,
            failure.check,
            failure.subject,
            failure.state,
            failure.known,
            failure.issue,
            cause(failure.message),
        )
        groups.setdefault(key, []).append(failure)
    return [FailureGroup(tuple(members)) for members in groups.values()]


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
