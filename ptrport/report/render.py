"""Text out of a :class:`~ptrport.report.matrix.Matrix`: Markdown for a CI job summary, one
self-contained HTML page, JSON.

Every text that came from a report (messages, ids, versions, examples) can hold anything, so
each one goes through :mod:`ptrport.report.markup` on its way out. The HTML page has no script and
loads nothing; its only external links are issue URLs.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ptrport.errors import HarnessError
from ptrport.report import compat, op_support, trend_chart
from ptrport.report.history import Night
from ptrport.report.markup import (
    html_issue,
    html_text,
    markdown_code,
    markdown_issue,
    markdown_text,
)
from ptrport.report.matrix import (
    BackendColumn,
    Cell,
    CellState,
    Matrix,
    Platform,
    Row,
    cell_verdict,
)
from ptrport.report.records import OWN_TEST

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
_COUNT_HEADERS = {**LABELS, CellState.NOT_RUN: "not run"}


class RenderError(HarnessError):
    """A matrix that cannot be written: ``<path>: <problem>``."""


def _state_counts(matrix: Matrix, index: int) -> Counter[CellState]:
    return Counter(row.cells[index].state for row in matrix.rows)


def _columns_of(matrix: Matrix, platform: Platform) -> Iterator[tuple[int, BackendColumn]]:
    for index, column in enumerate(matrix.columns):
        if column.platform_id == platform.platform_id:
            yield index, column


def _idle_backends(matrix: Matrix, platform: Platform) -> dict[str, str]:
    """What the totals table says about a platform's backends that are not columns, so that
    a platform with no column at all still shows up."""
    idle = {name: f"not available: {reason}" for name, reason in platform.unavailable.items()}
    if not idle and not any(True for _ in _columns_of(matrix, platform)):
        idle["—"] = "no results"
    return idle


def _main_versions(column: BackendColumn) -> list[str]:
    """What a column's header says under its name: simulated, and the main versions."""
    shown = [f"{n} {column.versions[n]}" for n in MAIN_VERSIONS if column.versions.get(n)]
    if not column.simulated:
        return shown
    return [f"simulated: {column.simulates}" if column.simulates else "simulated", *shown]


def _all_versions(versions: dict[str, str]) -> list[str]:
    return [f"{name} {value}" for name, value in versions.items()]


def _run_state(platform: Platform) -> str:
    return "complete" if platform.complete else f"incomplete ({platform.status or 'unknown'})"


def _short_check(row: Row) -> str:
    return op_support.operation_of(row.check) or row.check.removeprefix(f"{row.scenario}::")


def _title(scenario: str) -> str:
    return op_support.TITLE if scenario == op_support.SCENARIO else scenario


def _label(scenario: str, cell: Cell) -> str:
    """``works``, ``raises NotImplementedError`` or ``wrong`` for an operation's probe, else
    the label of the cell's state."""
    found = cell_verdict(scenario, cell)
    return LABELS[cell.state] if found is None else op_support.label(found, cell.message)


_Place = tuple[str, int, int]
"""Where a cell is: scenario, row within the scenario, column."""


def _detailed_cells(matrix: Matrix) -> Iterator[tuple[_Place, Row, BackendColumn, Cell]]:
    """Cells worth a closer look, in the order the tables show them."""
    for scenario in matrix.scenarios:
        for number, row in enumerate(matrix.rows_of(scenario)):
            for index, (column, cell) in enumerate(zip(matrix.columns, row.cells, strict=True)):
                if cell.state.detailed:
                    yield (scenario, number, index), row, column, cell


def _example_json(example: dict[str, Any]) -> str:
    return json.dumps(example, indent=2, ensure_ascii=False)


# Markdown

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


class _MdRow(NamedTuple):
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


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _md_lines(parts: list[str]) -> str:
    return "<br>".join(markdown_text(p) for p in parts)


def _md_label(scenario: str, cell: Cell) -> str:
    label = markdown_text(_label(scenario, cell))
    return f"**{label}**" if cell.state.bad else label


def _md_totals(matrix: Matrix) -> list[str]:
    states = list(CellState)
    lines = [
        _md_row(["platform", "backend", "run", *(_COUNT_HEADERS[s] for s in states), "versions"]),
        _md_row(["---"] * (len(states) + 4)),
    ]
    for platform in matrix.platforms:
        run = markdown_text(_run_state(platform))
        run = run if platform.complete else f"**{run}**"
        for index, column in _columns_of(matrix, platform):
            counts = _state_counts(matrix, index)
            shown = [f"**{counts[s]}**" if s.bad and counts[s] else str(counts[s]) for s in states]
            lines.append(
                _md_row(
                    [
                        markdown_text(platform.platform_id),
                        markdown_text(column.backend),
                        run,
                        *shown,
                        _md_lines(_all_versions(column.versions)),
                    ]
                )
            )
        for backend, reason in _idle_backends(matrix, platform).items():
            lines.append(
                _md_row(
                    [
                        markdown_text(platform.platform_id),
                        markdown_text(backend),
                        markdown_text(reason),
                        *([""] * (len(states) + 1)),
                    ]
                )
            )
    return lines


def _md_table_rows(matrix: Matrix, scenario: str, numbers: dict[_Place, int]) -> list[_MdRow]:
    rows = []
    for position, row in enumerate(matrix.rows_of(scenario)):
        shown = []
        for index, cell in enumerate(row.cells):
            number = numbers.get((scenario, position, index))
            shown.append(_md_label(scenario, cell) + ("" if number is None else f" ({number})"))
        subject = "(none)" if row.subject is None else markdown_text(row.subject)
        line = _md_row([markdown_text(_short_check(row)), subject, *shown])
        rows.append(_MdRow(line, any(c.state.detailed for c in row.cells)))
    return rows


def _md_scenario(matrix: Matrix, scenario: str, rows: list[_MdRow], cuts: set[_Cut]) -> list[str]:
    if _Cut.TABLES in cuts:
        return []
    kept = [r.line for r in rows if _Cut.PASSING_ROWS not in cuts or r.failed]
    left_out = len(rows) - len(kept)
    lines = [f"## {markdown_text(_title(scenario))}", ""]
    if not kept:
        return [*lines, f"Nothing failed here; its {left_out:,} rows are left out.", ""]
    headers = []
    for column in matrix.columns:
        parts = [f"{column.platform_id} / {column.backend}", *_main_versions(column)]
        incomplete = "" if column.complete else "<br>**incomplete**"
        headers.append(_md_lines(parts) + incomplete)
    lines += [
        _md_row(["check", "subject", *headers]),
        _md_row(["---"] * (len(matrix.columns) + 2)),
        *kept,
    ]
    if left_out:
        lines += ["", f"{left_out:,} rows where nothing failed are left out."]
    return [*lines, ""]


def _md_message(message: str, cuts: set[_Cut]) -> str:
    if _Cut.LONG_MESSAGES in cuts and len(message) > _LONG_MESSAGE:
        rest = len(message) - _LONG_MESSAGE
        return f"{markdown_text(message[:_LONG_MESSAGE])} … ({rest:,} more characters)"
    return markdown_text(message)


def _md_failure(
    number: int, row: Row, column: BackendColumn, cell: Cell, cuts: set[_Cut]
) -> list[str]:
    where = [row.check, row.subject or "(no subject)", column.name]
    lines = [
        f"### ({number}) {_md_label(row.scenario, cell)} "
        + " · ".join(markdown_text(w) for w in where),
        "",
    ]
    if cell.reason is not None:
        issue = "" if cell.issue is None else f" ({markdown_issue(cell.issue)})"
        lines += [f"Known: {markdown_text(cell.reason)}{issue}", ""]
    if cell.message:
        lines += [f"Message: {_md_message(cell.message, cuts)}", ""]
    if cell.example is not None or row.subject == OWN_TEST:
        command = compat.repro_command(column.platform_id, column.backend, row.check, row.subject)
        lines += ["Reproduce:", "", markdown_code(command), ""]
    elif cell.nodeid:
        lines += [f"Rerun: {markdown_text(cell.nodeid)}", ""]
    if cell.example is not None:
        example = _example_json(cell.example)
        if _Cut.EXAMPLES in cuts or (_Cut.LONG_EXAMPLES in cuts and len(example) > _LONG_EXAMPLE):
            lines += [f"Minimal counterexample: left out ({len(example):,} characters).", ""]
        else:
            lines += ["Minimal counterexample:", "", markdown_code(example), ""]
    return lines


def _md_text(
    head: list[str], failures: list[list[str]], note: list[str], tail: Sequence[str] = ()
) -> str:
    """``head``, the failures, ``tail`` (the scenario tables, the trend), the cut note."""
    lines = list(head)
    if failures:
        lines += ["## Failures", ""]
        for failure in failures:
            lines += failure
    return "\n".join([*lines, *tail, *note]).rstrip("\n") + "\n"


def _md_headline(matrix: Matrix) -> list[str]:
    """A line per platform: its counts and the verdict on uint64 pointer tables."""
    lines = []
    for line in compat.headlines(matrix):
        state = "" if line.complete else " (incomplete)"
        numbers = (
            f"{line.runs} run, {line.passes} pass, **{line.new_failures} new failures**, "
            f"{line.known} known, {line.crashed} crashed"
        )
        more = []
        if line.breaking_encodings:
            more.append("encodings that break: " + ", ".join(line.breaking_encodings))
        if line.raising_operations:
            more.append("uint64 operations that raise: " + ", ".join(line.raising_operations))
        lines.append(
            f"- **{markdown_text(line.platform_id)}**{state}: {numbers}; "
            f"uint64 pointer tables: **{line.uint64_tables}**"
            + "".join(f"; {markdown_text(m)}" for m in more)
        )
    return lines


def _md_failures(
    detailed: list[tuple[_Place, Row, BackendColumn, Cell]], cuts: set[_Cut], budget: int
) -> tuple[list[list[str]], int]:
    """The failures' sections in order while they fit in ``budget`` bytes, and how many were
    meant to be listed."""
    listed = [
        (number, d)
        for number, d in enumerate(detailed, 1)
        if _Cut.EXPECTED not in cuts or d[3].state.bad
    ]
    sections = []
    for number, (_, row, column, cell) in listed:
        section = _md_failure(number, row, column, cell, cuts)
        budget -= sum(_size(line) + 1 for line in section)
        if budget < 0:
            break
        sections.append(section)
    return sections, len(listed)


def _md_cut_note(
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
    readers ask: a line per platform with its verdict, totals per platform and backend with
    their versions, each failing, known, expected or unexpected result with its message and
    minimal counterexample, a table per scenario, then ``trend`` (the nights kept, from
    :func:`ptrport.report.trend_chart.trends_markdown`).

    Past ``limit`` bytes, the least important parts are left out in a fixed order (the table
    rows where nothing failed, long counterexamples, the end of long messages, the details of
    known and expected failures, the other counterexamples, the scenario tables), then the
    failures that do not fit, and a last line says what was left out and that the whole is in
    ``full_matrix`` (by default, the HTML or JSON file of the same merge)."""
    detailed = list(_detailed_cells(matrix))
    numbers = {place: n for n, (place, *_) in enumerate(detailed, 1)}
    tables = {s: _md_table_rows(matrix, s, numbers) for s in matrix.scenarios}
    head = [f"# {TITLE}", "", *_md_headline(matrix), "", *_md_totals(matrix), ""]
    if not matrix.rows:
        head += ["No results.", ""]
    trend_lines = [*trend, ""] if trend else []
    cuts: list[_Cut] = []
    for cut in (None, *_Cut):
        if cut is not None:
            cuts.append(cut)
        tail = []
        for scenario, rows in tables.items():
            tail += _md_scenario(matrix, scenario, rows, set(cuts))
        tail += trend_lines
        # Room for the longest note this step could end with.
        note = _md_cut_note(cuts, len(detailed), len(detailed), limit, full_matrix)
        budget = limit - _size(_md_text(head, [["## Failures", ""]], note, tail))
        failures, listed = _md_failures(detailed, set(cuts), budget)
        if len(failures) == listed:
            note = _md_cut_note(cuts, 0, 0, limit, full_matrix)
            return _md_text(head, failures, note, tail)
    # Everything else is cut: the failures that fit, in the order of the tables.
    note = _md_cut_note(cuts, listed - len(failures), listed, limit, full_matrix)
    return _md_text(head, failures, note, tail)


# HTML

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1f2328; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.5em; vertical-align: top; }
thead th { background: #f6f8fa; text-align: left; }
tbody th { text-align: left; font-weight: normal; font-family: ui-monospace, monospace; }
td.count { text-align: right; }
.versions { color: #57606a; font-size: 90%; font-weight: normal; }
.incomplete { color: #9a6700; font-weight: bold; }
.passed { background: #dafbe1; }
.failed, .unexpected-pass, .crashed, .timed-out, .error { background: #ffebe9; font-weight: bold; }
.known-failure { background: #fff8c5; }
.expected-failure { background: #ddf4ff; }
.skipped, .unavailable, .not-run { color: #57606a; }
details summary { cursor: pointer; }
.message { white-space: pre-wrap; font-weight: normal; }
pre { background: #f6f8fa; padding: 0.5em; margin: 0.25em 0; font-weight: normal; }
#headline ul { padding-left: 1.2em; }
.good { color: #1a7f37; }
.bad { color: #cf222e; font-weight: bold; }
.failure { border-left: 4px solid #cf222e; padding: 0.1em 0.75em; margin: 0.5em 0; }
.failure p { margin: 0.2em 0; }
.failure pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 8em; overflow: auto; }
pre.repro { background: #fff; border: 1px solid #d0d7de; }
table.grid td { min-width: 8em; }
""".strip()

# Even if some text escaped its escaping, the page may not run or load anything.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def _css_class(state: CellState) -> str:
    return state.value.replace(" ", "-")


def _html_lines(parts: list[str]) -> str:
    return "<br>".join(html_text(p) for p in parts)


def _tag(name: str, body: str, css: str = "", **attributes: str) -> str:
    attrs = "".join(f' {k}="{html_text(v)}"' for k, v in attributes.items())
    if css:
        attrs = f' class="{html_text(css)}"' + attrs
    return f"<{name}{attrs}>{body}</{name}>"


def _html_totals(matrix: Matrix) -> str:
    states = list(CellState)
    head = "".join(
        _tag("th", html_text(h))
        for h in ["platform", "backend", "run", *(_COUNT_HEADERS[s] for s in states), "versions"]
    )
    rows = []
    for platform in matrix.platforms:
        run_css = "" if platform.complete else "incomplete"
        run = _tag("td", html_text(_run_state(platform)), run_css)
        name = _tag("td", html_text(platform.platform_id))
        for index, column in _columns_of(matrix, platform):
            counts = _state_counts(matrix, index)
            shown = "".join(
                _tag("td", str(counts[s]), f"count {_css_class(s)}" if counts[s] else "count")
                for s in states
            )
            versions = _tag("td", _html_lines(_all_versions(column.versions)), "versions")
            rows.append(
                _tag("tr", name + _tag("td", html_text(column.backend)) + run + shown + versions)
            )
        for backend, reason in _idle_backends(matrix, platform).items():
            cells = (
                name
                + _tag("td", html_text(backend))
                + _tag(
                    "td",
                    html_text(reason),
                    "unavailable",
                    colspan=str(len(states) + 2),
                )
            )
            rows.append(_tag("tr", cells))
    return _tag("table", _tag("thead", _tag("tr", head)) + _tag("tbody", "".join(rows)), "totals")


def _html_known(reason: str, issue: str | None) -> str:
    """Why a failure is known, and where it is tracked."""
    tracked = "" if issue is None else f" ({html_issue(issue)})"
    return _tag("p", "known: " + html_text(reason) + tracked, "message")


def _html_details(label: str, cell: Cell) -> str:
    parts = [_tag("summary", html_text(label))]
    if cell.reason is not None:
        parts.append(_html_known(cell.reason, cell.issue))
    if cell.message:
        parts.append(_tag("p", html_text(cell.message), "message"))
    if cell.example is not None:
        parts.append(_tag("pre", html_text(_example_json(cell.example))))
    if cell.nodeid:
        parts.append(_tag("p", "rerun: " + _tag("code", html_text(cell.nodeid)), "message"))
    return _tag("details", "".join(parts))


def _html_cell(scenario: str, cell: Cell) -> str:
    label = _label(scenario, cell)
    body = _html_details(label, cell) if cell.state.detailed else html_text(label)
    title = cell.message if cell.message and not cell.state.detailed else cell.state.value
    return _tag("td", body, _css_class(cell.state), title=title)


def _html_scenario(matrix: Matrix, scenario: str) -> str:
    headers = [_tag("th", "check"), _tag("th", "subject")]
    for column in matrix.columns:
        body = _tag("strong", html_text(f"{column.platform_id} / {column.backend}"))
        body += "<br>" + _tag("span", _html_lines(_main_versions(column)), "versions")
        if not column.complete:
            body += "<br>" + _tag("span", "incomplete", "incomplete")
        headers.append(_tag("th", body))
    rows = []
    for row in matrix.rows_of(scenario):
        subject = "(none)" if row.subject is None else row.subject
        cells = _tag("th", html_text(_short_check(row)), title=row.check, scope="row")
        cells += _tag("td", html_text(subject))
        cells += "".join(_html_cell(scenario, c) for c in row.cells)
        rows.append(_tag("tr", cells))
    table = _tag("thead", _tag("tr", "".join(headers))) + _tag("tbody", "".join(rows))
    heading = _tag("h2", html_text(_title(scenario)))
    return _tag("section", heading + _tag("table", table, "matrix"))


def _counts_text(counts: Counter[CellState]) -> str:
    shown = [(s, counts[s]) for s in CellState if counts[s] and s is not CellState.NOT_RUN]
    return ", ".join(f"{n} {LABELS[s]}" for s, n in shown) or "nothing"


def _html_headline(matrix: Matrix) -> str:
    lines = []
    for line in compat.headlines(matrix):
        numbers = (
            f"{line.runs} run, {line.passes} pass, {line.new_failures} new failures, "
            f"{line.known} known, {line.crashed} crashed"
        )
        css = "bad" if line.new_failures else "good"
        verdicts = [f"uint64 pointer tables: {line.uint64_tables}"]
        if line.breaking_encodings:
            verdicts.append("encodings that break: " + ", ".join(line.breaking_encodings))
        if line.raising_operations:
            verdicts.append("uint64 operations that raise: " + ", ".join(line.raising_operations))
        state = "" if line.complete else " " + _tag("span", "incomplete", "incomplete")
        body = (
            _tag("strong", html_text(line.platform_id))
            + state
            + ": "
            + _tag("span", html_text(numbers), css)
            + " — "
            + html_text("; ".join(verdicts))
        )
        lines.append(_tag("li", body))
    return _tag("section", _tag("h2", "Platforms") + _tag("ul", "".join(lines)), id="headline")


def _html_failure(failure: compat.Failure) -> str:
    where = f"{failure.backend} · {failure.check} · {failure.subject or compat.NO_SUBJECT}"
    label = _tag("span", html_text(LABELS[failure.state]), _css_class(failure.state))
    parts = [
        _tag("p", label + " " + _tag("code", html_text(where))),
        _tag("p", html_text(failure.first_line), "message"),
    ]
    if failure.known is not None:
        parts.append(_html_known(failure.known, failure.issue))
    if failure.counterexample:
        parts.append(_tag("pre", html_text(failure.counterexample), "example"))
    if failure.repro is not None:
        parts.append(_tag("pre", html_text(failure.repro), "repro"))
    elif failure.nodeid:
        parts.append(_tag("p", "rerun: " + _tag("code", html_text(failure.nodeid)), "message"))
    return _tag("div", "".join(parts), "failure")


def _html_failures(matrix: Matrix) -> str:
    found = compat.failures(matrix)
    new = sum(f.known is None for f in found)
    heading = _tag("h2", f"Failures: {new} new, {len(found) - new} known")
    if not found:
        return _tag("section", heading + _tag("p", "None."), id="failures")
    groups = []
    for platform in dict.fromkeys(f.platform_id for f in found):
        mine = [_html_failure(f) for f in found if f.platform_id == platform]
        groups.append(_tag("h3", html_text(platform)) + "".join(mine))
    return _tag("section", heading + "".join(groups), id="failures")


def _html_grid(matrix: Matrix) -> str:
    subjects, platforms, cells = compat.grid(matrix)
    head = _tag("th", "subject") + "".join(_tag("th", html_text(p)) for p in platforms)
    rows = []
    for subject in subjects:
        row = _tag("th", html_text(subject), scope="row")
        for platform in platforms:
            counts = cells.get((subject, platform))
            if counts is None:
                row += _tag("td", "—", "not-run")
                continue
            worst = next((s for s in CellState if s.bad and counts.total[s]), None)
            css = _css_class(worst) if worst is not None else "passed"
            lines = "".join(
                _tag("li", html_text(f"{scenario}: {_counts_text(c)}"))
                for scenario, c in counts.by_scenario.items()
            )
            summary = _tag("summary", html_text(_counts_text(counts.total)))
            row += _tag("td", _tag("details", summary + _tag("ul", lines)), css)
        rows.append(_tag("tr", row))
    table = _tag("thead", _tag("tr", head)) + _tag("tbody", "".join(rows))
    heading = _tag("h2", "Subjects and platforms")
    return _tag("section", heading + _tag("table", table, "grid"), id="grid")


def to_html(matrix: Matrix, trends: str = "") -> str:
    """The matrix as one HTML page that needs nothing else, in the order its readers ask: a
    line per platform with its verdict, every failure with its counterexample and the command
    that reproduces it, subject x platform counts, the nights as a trend (``trends``, HTML of
    :mod:`ptrport.report.trend_chart`, if given), then every check: totals per platform and backend
    and a table per scenario whose failing cells open onto their message and counterexample.
    No script, no external assets."""
    every = [_tag("h3", "Totals") + _html_totals(matrix)]
    if not matrix.rows:
        every.append(_tag("p", "No results."))
    every += [_html_scenario(matrix, s) for s in matrix.scenarios]
    summary = _tag("summary", html_text(f"Every check ({len(matrix.rows)} rows)"))
    body = [
        _tag("h1", html_text(TITLE)),
        _html_headline(matrix),
        _html_failures(matrix),
        _html_grid(matrix),
        trends,
        _tag("section", _tag("details", summary + "".join(every), id="checks"), id="all"),
    ]
    head = (
        '<meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{html_text(_POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html_text(TITLE)}</title><style>\n{_STYLE}\n</style>"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>{head}</head>\n<body>\n'
        + "\n".join(part for part in body if part)
        + "\n</body>\n</html>\n"
    )


def to_json(matrix: Matrix) -> str:
    """The matrix's record (reports embedded) as indented JSON."""
    return matrix.to_json()


FORMATS: dict[str, Callable[[Matrix], str]] = {
    ".md": to_markdown,
    ".html": to_html,
    ".json": to_json,
}


def write(matrix: Matrix, out: Path, nights: Sequence[Night] = ()) -> None:
    """Write the matrix to ``out`` in the format its extension names (``.md``, ``.html``,
    ``.json``), with the ``nights`` kept so far (:mod:`ptrport.report.history`, oldest first) as a
    trend in the page and the Markdown; raise :class:`RenderError` for any other extension or
    a file that cannot be written."""
    suffix = out.suffix.lower()
    render = FORMATS.get(suffix)
    if render is None:
        raise RenderError(f"{out}: unknown output format '{out.suffix}'; use .md, .html or .json")
    if nights and suffix == ".html":
        text = to_html(matrix, trends=trend_chart.trends_html(nights))
    elif nights and suffix == ".md":
        text = to_markdown(matrix, trend=trend_chart.trends_markdown(nights))
    else:
        text = render(matrix)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as exc:
        raise RenderError(f"{out}: cannot write it: {exc.strerror or exc}") from None
