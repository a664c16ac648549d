"""What a compatibility page answers first, from a merged :class:`~ptrport.report.matrix.Matrix`:

- per platform, one headline: how many checks ran, passed, failed anew, failed as known,
  crashed; and the verdicts on what the run holds: for the scenarios, the question the project
  exists for (do uint64 pointer tables work here, which encodings break, which uint64
  operations raise: each row counted by its encoding, :func:`encodings`), for a team's own
  tests marked ``@pytest.mark.ptrport``, how many fail and on which backends;
- the verdict by difference, where a platform's run made one: its address-sensitive tests,
  each with the backends it fails on, its first error line and where it failed
  (:func:`verdicts`);
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

from ptrport.addresses import HIGH_HALF
from ptrport.report import op_support, repro
from ptrport.report.matrix import BackendColumn, Cell, CellState, Matrix, Row, cell_verdict
from ptrport.report.platform_report import PlatformReport
from ptrport.report.records import OWN_TEST, Result, compact_example
from ptrport.report.verdicts import Verdicts

UINT64 = "uint64"
"""The encoding whose pointer tables are ``torch.uint64``: the fix the question is about."""
ENCODINGS = (UINT64, "int64-bitcast", "int64")
"""The encodings a report names: a built-in subject's before its ``/`` (``uint64/triton``), and
the first parameter of a check that takes no subject
(``triton_kernel::test_...[int64-bitcast-int32]``)."""
ROUND_TRIP = "table_round_trip"
"""The scenario whose checks stage addresses across all 64 bits and read them back."""
_HEX_ADDRESS = re.compile(r"0x[0-9a-fA-F]{16}")
"""An address as a recorded example holds it (:func:`ptrport.addresses.to_hex`)."""
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
    """``work``, ``fail`` or ``not run``: the checks of uint64 tables here (:func:`encodings`);
    ``None`` where the platform holds marked tests and nothing else, which say nothing of
    pointer tables."""
    breaking_encodings: tuple[str, ...]
    """Encodings with a check that failed or was expected to (:func:`encodings`; a user's
    subject of no known encoding by its name)."""
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


def _parameter_encoding(check: str) -> str | None:
    """The encoding a check's parameters begin with (``[int64-bitcast-int32]``), if any."""
    parameters = check.partition("[")[2].removesuffix("]")
    for name in sorted(ENCODINGS, key=len, reverse=True):
        if parameters == name or parameters.startswith(f"{name}-"):
            return name
    return None


def _highest_address(example: object) -> int | None:
    """The highest address (a hex string) a recorded example holds, however deep."""
    if isinstance(example, dict | list):
        values = example.values() if isinstance(example, dict) else example
        found = [a for a in map(_highest_address, values) if a is not None]
        return max(found, default=None)
    if isinstance(example, str) and _HEX_ADDRESS.fullmatch(example):
        return int(example, 16)
    return None


def _user_subject_encodings(matrix: Matrix) -> dict[str, str]:
    """The encoding of each of the user's own subjects (those a report's ``run.subject_specs``
    names) that is no control, as its round trip shows it: ``uint64`` where it read every
    address back bit-exact on some column, as a uint64 table does; else ``int64`` where it
    failed at ``2**63`` as the highest address of its minimal counterexample, as an int64 table
    does (the addresses shrink to it only where lower ones pass)."""
    users = {name for report in matrix.reports for name in report.run.get("subject_specs") or ()}
    controls = {
        row.subject
        for row in matrix.rows
        for cell in row.cells
        if cell.state in (CellState.EXPECTED_FAILURE, CellState.UNEXPECTED_PASS)
    }
    found: dict[str, str] = {}
    for row in matrix.rows:
        subject = row.subject
        if subject is None or subject not in users - controls or row.scenario != ROUND_TRIP:
            continue
        if any(cell.state is CellState.PASSED for cell in row.cells):
            found[subject] = UINT64
        elif any(
            _highest_address(cell.example) == HIGH_HALF
            for cell in row.cells
            if cell.state is CellState.FAILED
        ):
            found.setdefault(subject, "int64")
    return found


def encodings(matrix: Matrix) -> list[str | None]:
    """Each row's encoding, where the report says it: a built-in subject's, a subject-less
    check's parameter's, a user's own subject's as its round trip shows it
    (:func:`_user_subject_encodings`); ``None`` for the rest (marked tests, uint64 operations,
    a user's control or a subject whose round trip says nothing of its encoding)."""
    users = _user_subject_encodings(matrix)
    found: list[str | None] = []
    for row in matrix.rows:
        prefix, slash, _ = (row.subject or "").partition("/")
        if row.scenario == op_support.SCENARIO or row.subject == OWN_TEST:
            found.append(None)
        elif row.subject is None:
            found.append(_parameter_encoding(row.check))
        elif slash and prefix in ENCODINGS:
            found.append(prefix)
        else:
            found.append(users.get(row.subject))
    return found


def row_name(row: Row) -> str:
    """What a row is of: its subject, or the scenario for a check that takes no subject."""
    if row.subject is not None:
        return row.subject
    return op_support.TITLE if row.scenario == op_support.SCENARIO else row.scenario


def _uint64_verdict(uint64: Counter[CellState]) -> str:
    if not any(n for s, n in uint64.items() if s not in _NOT_RUN):
        return "not run"
    return "fail" if any(n for s, n in uint64.items() if s in FAILING) else "work"


def headlines(matrix: Matrix) -> list[Headline]:
    found = []
    row_encodings = encodings(matrix)
    for platform in matrix.platforms:
        states: Counter[CellState] = Counter()
        uint64: Counter[CellState] = Counter()
        breaking: dict[str, None] = {}
        raising: dict[str, None] = {}
        scenario_results = 0
        for number, row, _, cell in _cells_of(matrix, platform.platform_id):
            states[cell.state] += 1
            if row.subject == OWN_TEST:
                continue
            scenario_results += cell.state is not CellState.NOT_RUN
            verdict = cell_verdict(row.scenario, cell)
            if verdict is op_support.OperationVerdict.RAISES:
                raising[op_support.operation_of(row.check) or row.check] = None
            encoding = row_encodings[number]
            if encoding == UINT64:
                uint64[cell.state] += 1
            if cell.state.detailed and (encoding is not None or row.subject is not None):
                # A user's subject of no known encoding is named as itself.
                breaking[encoding or (row.subject or "").split("/", 1)[0]] = None
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
                breaking_encodings=tuple(sorted(breaking)),
                raising_operations=tuple(raising),
                own_tests=own_tests,
                own_tests_failing=own_failing,
                own_tests_failing_on=own_failing_on,
            )
        )
    return found


def verdicts(matrix: Matrix) -> list[tuple[str, Verdicts]]:
    """The verdict by difference of each platform whose report holds one
    (:mod:`ptrport.report.verdicts`), by platform id, in the matrix's order of platforms."""
    held = {r.platform_id: r.verdicts for r in matrix.reports if r.verdicts is not None}
    return [(p.platform_id, held[p.platform_id]) for p in matrix.platforms if p.platform_id in held]


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
    """Subjects (rows; a check that takes no subject under its scenario, :func:`row_name`),
    platforms (columns) and the counts of each pair that has cells."""
    subjects = list(dict.fromkeys(row_name(row) for row in matrix.rows))
    platforms = [p.platform_id for p in matrix.platforms]
    cells: dict[tuple[str, str], Counts] = {}
    for row in matrix.rows:
        subject = row_name(row)
        for column, cell in zip(matrix.columns, row.cells, strict=True):
            if cell.state is not CellState.NOT_RUN:
                cells.setdefault((subject, column.platform_id), Counts()).add(
                    row.scenario, cell.state
                )
    return subjects, platforms, cells
