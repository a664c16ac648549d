"""A :class:`~ptrport.report.matrix.Matrix` as GitHub-flavoured Markdown for a CI job summary,
cut to fit the size GitHub allows one (:data:`SUMMARY_LIMIT`).

Every text that came from a report goes through :mod:`ptrport.report.markup` on its way out.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

from ptrport.report import compat
from ptrport.report.markup import markdown_code, markdown_issue, markdown_text
from ptrport.report.matrix import Cell, CellState, Matrix
from ptrport.report.render_common import (
    COUNT_HEADERS,
    TITLE,
    all_versions,
    cell_label,
    columns_of,
    example_json,
    idle_backends,
    main_versions,
    own_tests_verdict,
    run_state,
    scenario_title,
    short_check,
    state_counts,
)

SUMMARY_LIMIT = 1000 * 1024
"""The most bytes (UTF-8) :func:`to_markdown` writes. GitHub refuses a step's job summary past
1 MiB: "each step is restricted to a maximum size of 1MiB" (GitHub Docs, Workflow commands for
GitHub Actions, Step isolation and limits); the rest is room for what else the step adds."""

_LONG_EXAMPLE = 2000
"""Characters of a counterexample's JSON past which it is among the first details cut."""
_LONG_MESSAGE = 500
"""Characters of a message kept once long messages are cut."""
_FULL_MATRIX = (
    "the HTML or JSON file that `ptrport report merge` writes (`-o matrix.html`, `-o matrix.json`)"
)


class _TableRow(NamedTuple):
    """A scenario table's row, and whether one of its results failed or is a known or
    expected failure."""

    line: str
    failed: bool


class _Cut(enum.Enum):
    """What a summary longer than its limit leaves out, least important first; each value is
    how the closing note names it. The totals and the failures are never among them."""

    PASSING_ROWS = "the table rows where nothing failed"
    LONG_EXAMPLES = f"the counterexamples over {_LONG_EXAMPLE:,} characters"
    LONG_MESSAGES = f"each message past its first {_LONG_MESSAGE} characters"
    EXPECTED = "the details of known and expected failures"
    EXAMPLES = "the other counterexamples"
    TABLES = "the scenario tables"


_Numbers = dict[tuple[int, int], int]
"""The number of each detailed cell's failure group, by (row, column) of the matrix."""


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _lines(parts: list[str]) -> str:
    return "<br>".join(markdown_text(p) for p in parts)


def _label(scenario: str, cell: Cell) -> str:
    label = markdown_text(cell_label(scenario, cell))
    return f"**{label}**" if cell.state.bad else label


def _totals(matrix: Matrix) -> list[str]:
    states = list(CellState)
    lines = [
        _row(["platform", "backend", "run", *(COUNT_HEADERS[s] for s in states), "versions"]),
        _row(["---"] * (len(states) + 4)),
    ]
    for platform in matrix.platforms:
        run = markdown_text(run_state(platform))
        run = run if platform.complete else f"**{run}**"
        for index, column in columns_of(matrix, platform):
            counts = state_counts(matrix, index)
            shown = [f"**{counts[s]}**" if s.bad and counts[s] else str(counts[s]) for s in states]
            lines.append(
                _row(
                    [
                        markdown_text(platform.platform_id),
                        markdown_text(column.backend),
                        run,
                        *shown,
                        _lines(all_versions(column.versions)),
                    ]
                )
            )
        for backend, reason in idle_backends(matrix, platform).items():
            lines.append(
                _row(
                    [
                        markdown_text(platform.platform_id),
                        markdown_text(backend),
                        markdown_text(reason),
                        *([""] * (len(states) + 1)),
                    ]
                )
            )
    return lines


def _table_rows(matrix: Matrix, scenario: str, numbers: _Numbers) -> list[_TableRow]:
    rows = []
    for position, row in enumerate(matrix.rows):
        if row.scenario != scenario:
            continue
        shown = []
        for index, cell in enumerate(row.cells):
            number = numbers.get((position, index))
            shown.append(_label(scenario, cell) + ("" if number is None else f" ({number})"))
        subject = "(none)" if row.subject is None else markdown_text(row.subject)
        line = _row([markdown_text(short_check(row)), subject, *shown])
        rows.append(_TableRow(line, any(c.state.detailed for c in row.cells)))
    return rows


def _scenario(matrix: Matrix, scenario: str, rows: list[_TableRow], cuts: set[_Cut]) -> list[str]:
    if _Cut.TABLES in cuts:
        return []
    kept = [r.line for r in rows if _Cut.PASSING_ROWS not in cuts or r.failed]
    left_out = len(rows) - len(kept)
    lines = [f"## {markdown_text(scenario_title(scenario))}", ""]
    if not kept:
        return [*lines, f"Nothing failed here; its {left_out:,} rows are left out.", ""]
    headers = []
    for column in matrix.columns:
        parts = [f"{column.platform_id} / {column.backend}", *main_versions(column)]
        incomplete = "" if column.complete else "<br>**incomplete**"
        headers.append(_lines(parts) + incomplete)
    lines += [
        _row(["check", "subject", *headers]),
        _row(["---"] * (len(matrix.columns) + 2)),
        *kept,
    ]
    if left_out:
        lines += ["", f"{left_out:,} rows where nothing failed are left out."]
    return [*lines, ""]


def _message(message: str, cuts: set[_Cut]) -> str:
    if _Cut.LONG_MESSAGES in cuts and len(message) > _LONG_MESSAGE:
        rest = len(message) - _LONG_MESSAGE
        return f"{markdown_text(message[:_LONG_MESSAGE])} … ({rest:,} more characters)"
    return markdown_text(message)


def _example(title: str, example: dict[str, Any], cuts: set[_Cut]) -> list[str]:
    text = example_json(example)
    if _Cut.EXAMPLES in cuts or (_Cut.LONG_EXAMPLES in cuts and len(text) > _LONG_EXAMPLE):
        return [f"{title}: left out ({len(text):,} characters).", ""]
    return [f"{title}:", "", markdown_code(text), ""]


def _messages(group: compat.FailureGroup, cuts: set[_Cut]) -> list[str]:
    """The group's message once where every backend's is the same, else each backend's."""
    messages = [(f.backend, f.message) for f in group.failures if f.message]
    if not messages:
        return []
    if group.alike(messages):
        return [f"Message: {_message(messages[0][1], cuts)}", ""]
    items = [f"- {markdown_text(backend)}: {_message(text, cuts)}" for backend, text in messages]
    return ["Messages:", "", *items, ""]


def _examples(group: compat.FailureGroup, cuts: set[_Cut]) -> list[str]:
    """The group's counterexample once where every backend's is the same, else each
    backend's, named."""
    examples = [(f.backend, f.example) for f in group.failures if f.example is not None]
    if not examples:
        return []
    if group.alike(examples):
        return _example("Minimal counterexample", examples[0][1], cuts)
    lines = []
    for backend, example in examples:
        lines += _example(f"Minimal counterexample on {markdown_text(backend)}", example, cuts)
    return lines


def _failure(number: int, group: compat.FailureGroup, cuts: set[_Cut]) -> list[str]:
    """A group of failures of one cause: where, once; each backend's message where they
    differ; the command that reproduces it on each backend; each counterexample."""
    first = group.first
    backends = ", ".join(group.backends)
    on = (
        f"{first.platform_id}/{backends}"
        if len(group.backends) == 1
        else f"{first.platform_id}: {backends}"
    )
    where = [first.check, *([] if first.subject is None else [first.subject]), on]
    label = _label(first.scenario, Cell(first.state, first.message))
    lines = [f"### ({number}) {label} " + " · ".join(markdown_text(w) for w in where), ""]
    if first.known is not None:
        issue = "" if first.issue is None else f" ({markdown_issue(first.issue)})"
        lines += [f"Known: {markdown_text(first.known)}{issue}", ""]
    lines += _messages(group, cuts)
    commands = [f.repro for f in group.failures if f.repro is not None]
    if commands:
        lines += ["Reproduce:", "", markdown_code("\n".join(commands)), ""]
    reruns = [f.nodeid for f in group.failures if f.repro is None and f.nodeid]
    if reruns:
        lines += ["Rerun: " + "; ".join(markdown_text(n) for n in reruns), ""]
    return lines + _examples(group, cuts)


def _summary(
    head: list[str], failures: list[list[str]], note: list[str], tail: Sequence[str] = ()
) -> str:
    """``head``, the failures, ``tail`` (the scenario tables, the trend), the cut note."""
    lines = list(head)
    if failures:
        lines += ["## Failures", ""]
        for failure in failures:
            lines += failure
    return "\n".join([*lines, *tail, *note]).rstrip("\n") + "\n"


def _headline(matrix: Matrix) -> list[str]:
    """A line per platform: its counts, the verdict on uint64 pointer tables where it ran
    scenarios, and on its marked tests where it ran those."""
    lines = []
    for line in compat.headlines(matrix):
        state = "" if line.complete else " (incomplete)"
        numbers = (
            f"{line.runs} run, {line.passes} pass, **{line.new_failures} new failures**, "
            f"{line.known} known, {line.crashed} crashed"
        )
        verdicts = []
        if line.uint64_tables is not None:
            verdicts.append(f"uint64 pointer tables: **{line.uint64_tables}**")
        if line.breaking_encodings:
            encodings = ", ".join(line.breaking_encodings)
            verdicts.append(markdown_text(f"encodings that break: {encodings}"))
        if line.raising_operations:
            operations = ", ".join(line.raising_operations)
            verdicts.append(markdown_text(f"uint64 operations that raise: {operations}"))
        own_tests = own_tests_verdict(line)
        if own_tests is not None:
            count, where = own_tests
            where = f" ({markdown_text(where)})" if where else ""
            verdicts.append(f"marked tests: **{markdown_text(count)}**{where}")
        lines.append(
            f"- **{markdown_text(line.platform_id)}**{state}: {numbers}"
            + "".join(f"; {v}" for v in verdicts)
        )
    return lines


def _address_sensitive(matrix: Matrix) -> list[str]:
    """Where a platform's run judged the user's tests by difference: a line per
    address-sensitive test with its backends, its first error line and where it failed; the
    counts."""
    judged = compat.verdicts(matrix)
    if not judged:
        return []
    lines = ["## Address-sensitive tests", ""]
    for platform_id, verdicts in judged:
        against = f"{verdicts.reference} against {', '.join(verdicts.judged)}"
        lines += [
            f"**{markdown_text(platform_id)}** ({markdown_text(against)}): "
            + markdown_text(verdicts.counts_line()),
            "",
        ]
        for finding in verdicts.findings:
            backends = markdown_text(", ".join(finding.backends))
            line = f"- **{markdown_text(finding.check)}** on {backends}"
            if finding.message:
                line += f": {markdown_text(finding.message)}"
            if finding.where:
                line += f" (at {markdown_text(finding.where)})"
            lines.append(line)
        if verdicts.findings:
            lines.append("")
    return lines


def _failures(
    groups: list[compat.FailureGroup], cuts: set[_Cut], budget: int
) -> tuple[list[list[str]], int]:
    """The failures' sections in order while they fit in ``budget`` bytes, and how many were
    meant to be listed."""
    listed = [
        (number, group)
        for number, group in enumerate(groups, 1)
        if _Cut.EXPECTED not in cuts or group.first.state.bad
    ]
    sections = []
    for number, group in listed:
        section = _failure(number, group, cuts)
        budget -= sum(_size(line) + 1 for line in section)
        if budget < 0:
            break
        sections.append(section)
    return sections, len(listed)


def _cut_note(
    cuts: list[_Cut], unlisted: int, failures: int, limit: int, full_matrix: str | None
) -> list[str]:
    if not cuts:
        return []
    parts = [cut.value for cut in cuts]
    if unlisted:
        parts.append(f"{unlisted:,} of the {failures:,} failures (the last ones in table order)")
    where = _FULL_MATRIX if full_matrix is None else markdown_text(full_matrix)
    return [
        "",
        "---",
        "",
        f"**Shortened to fit a job summary ({limit // 1024:,} KiB):** left out "
        + "; ".join(parts)
        + f". The full matrix is in {where}.",
    ]


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def to_markdown(
    matrix: Matrix,
    *,
    limit: int = SUMMARY_LIMIT,
    full_matrix: str | None = None,
    trend: Sequence[str] = (),
) -> str:
    """The matrix as GitHub-flavoured Markdown, sized for a job summary, in the order its
    readers ask: a line per platform with its verdicts, the address-sensitive tests where a
    platform's run judged its tests by difference, totals per platform and backend with
    their versions, each failing, known, expected or unexpected result with its message and
    minimal counterexample (those of one cause on several backends of a platform as one
    group, :func:`ptrport.report.compat.grouped`), a table per scenario, then ``trend`` (the
    nights kept, from :func:`ptrport.report.trend_chart.trends_markdown`).

    Past ``limit`` bytes, the least important parts are left out in a fixed order (the table
    rows where nothing failed, long counterexamples, the end of long messages, the details of
    known and expected failures, the other counterexamples, the scenario tables), then the
    failures that do not fit, and a last line says what was left out and that the whole is in
    ``full_matrix`` (by default, the HTML or JSON file of the same merge)."""
    groups = compat.grouped(compat.detailed(matrix))
    numbers = {
        (failure.row, failure.column): n
        for n, group in enumerate(groups, 1)
        for failure in group.failures
    }
    tables = {s: _table_rows(matrix, s, numbers) for s in matrix.scenarios}
    head = [f"# {TITLE}", "", *_headline(matrix), "", *_address_sensitive(matrix)]
    head += [*_totals(matrix), ""]
    if not matrix.rows:
        head += ["No results.", ""]
    trend_lines = [*trend, ""] if trend else []
    cuts: list[_Cut] = []
    for cut in (None, *_Cut):
        if cut is not None:
            cuts.append(cut)
        tail = []
        for scenario, rows in tables.items():
            tail += _scenario(matrix, scenario, rows, set(cuts))
        tail += trend_lines
        # Room for the longest note this step could end with.
        note = _cut_note(cuts, len(groups), len(groups), limit, full_matrix)
        budget = limit - _size(_summary(head, [["## Failures", ""]], note, tail))
        failures, listed = _failures(groups, set(cuts), budget)
        if len(failures) == listed:
            note = _cut_note(cuts, 0, 0, limit, full_matrix)
            return _summary(head, failures, note, tail)
    # Everything else is cut: the failures that fit, in the order of the tables.
    note = _cut_note(cuts, listed - len(failures), listed, limit, full_matrix)
    return _summary(head, failures, note, tail)
