"""A :class:`~ptrport.report.matrix.Matrix` as one self-contained HTML page.

Every text that came from a report goes through :mod:`ptrport.report.markup` on its way out.
The page has no script and loads nothing; its only external links are issue URLs.
"""

from __future__ import annotations

from collections import Counter

from ptrport.report import compat
from ptrport.report.markup import html_issue, html_text
from ptrport.report.matrix import Cell, CellState, Matrix
from ptrport.report.render_common import (
    COUNT_HEADERS,
    LABELS,
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


def _lines(parts: list[str]) -> str:
    return "<br>".join(html_text(p) for p in parts)


def _tag(name: str, body: str, css: str = "", **attributes: str) -> str:
    attrs = "".join(f' {k}="{html_text(v)}"' for k, v in attributes.items())
    if css:
        attrs = f' class="{html_text(css)}"' + attrs
    return f"<{name}{attrs}>{body}</{name}>"


def _totals(matrix: Matrix) -> str:
    states = list(CellState)
    head = "".join(
        _tag("th", html_text(h))
        for h in ["platform", "backend", "run", *(COUNT_HEADERS[s] for s in states), "versions"]
    )
    rows = []
    for platform in matrix.platforms:
        run_css = "" if platform.complete else "incomplete"
        run = _tag("td", html_text(run_state(platform)), run_css)
        name = _tag("td", html_text(platform.platform_id))
        for index, column in columns_of(matrix, platform):
            counts = state_counts(matrix, index)
            shown = "".join(
                _tag("td", str(counts[s]), f"count {_css_class(s)}" if counts[s] else "count")
                for s in states
            )
            versions = _tag("td", _lines(all_versions(column.versions)), "versions")
            rows.append(
                _tag("tr", name + _tag("td", html_text(column.backend)) + run + shown + versions)
            )
        for backend, reason in idle_backends(matrix, platform).items():
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


def _known(reason: str, issue: str | None) -> str:
    """Why a failure is known, and where it is tracked."""
    tracked = "" if issue is None else f" ({html_issue(issue)})"
    return _tag("p", "known: " + html_text(reason) + tracked, "message")


def _details(label: str, cell: Cell) -> str:
    parts = [_tag("summary", html_text(label))]
    if cell.reason is not None:
        parts.append(_known(cell.reason, cell.issue))
    if cell.message:
        parts.append(_tag("p", html_text(cell.message), "message"))
    if cell.example is not None:
        parts.append(_tag("pre", html_text(example_json(cell.example))))
    if cell.nodeid:
        parts.append(_tag("p", "rerun: " + _tag("code", html_text(cell.nodeid)), "message"))
    return _tag("details", "".join(parts))


def _cell(scenario: str, cell: Cell) -> str:
    label = cell_label(scenario, cell)
    body = _details(label, cell) if cell.state.detailed else html_text(label)
    title = cell.message if cell.message and not cell.state.detailed else cell.state.value
    return _tag("td", body, _css_class(cell.state), title=title)


def _scenario(matrix: Matrix, scenario: str) -> str:
    headers = [_tag("th", "check"), _tag("th", "subject")]
    for column in matrix.columns:
        body = _tag("strong", html_text(f"{column.platform_id} / {column.backend}"))
        body += "<br>" + _tag("span", _lines(main_versions(column)), "versions")
        if not column.complete:
            body += "<br>" + _tag("span", "incomplete", "incomplete")
        headers.append(_tag("th", body))
    rows = []
    for row in matrix.rows_of(scenario):
        subject = "(none)" if row.subject is None else row.subject
        cells = _tag("th", html_text(short_check(row)), title=row.check, scope="row")
        cells += _tag("td", html_text(subject))
        cells += "".join(_cell(scenario, c) for c in row.cells)
        rows.append(_tag("tr", cells))
    table = _tag("thead", _tag("tr", "".join(headers))) + _tag("tbody", "".join(rows))
    heading = _tag("h2", html_text(scenario_title(scenario)))
    return _tag("section", heading + _tag("table", table, "matrix"))


def _counts_text(counts: Counter[CellState]) -> str:
    shown = [(s, counts[s]) for s in CellState if counts[s] and s is not CellState.NOT_RUN]
    return ", ".join(f"{n} {LABELS[s]}" for s, n in shown) or "nothing"


def _headline(matrix: Matrix) -> str:
    lines = []
    for line in compat.headlines(matrix):
        numbers = (
            f"{line.runs} run, {line.passes} pass, {line.new_failures} new failures, "
            f"{line.known} known, {line.crashed} crashed"
        )
        css = "bad" if line.new_failures else "good"
        verdicts = []
        if line.uint64_tables is not None:
            verdicts.append(f"uint64 pointer tables: {line.uint64_tables}")
        if line.breaking_encodings:
            verdicts.append("encodings that break: " + ", ".join(line.breaking_encodings))
        if line.raising_operations:
            verdicts.append("uint64 operations that raise: " + ", ".join(line.raising_operations))
        own_tests = own_tests_verdict(line)
        if own_tests is not None:
            count, where = own_tests
            verdicts.append(f"marked tests: {count}" + (f" ({where})" if where else ""))
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


def _per_backend(group: compat.FailureGroup, texts: list[tuple[str, str]], css: str) -> str:
    """One text of a group, where every backend's is the same; else each backend's, named."""
    if group.alike(texts):
        return _tag("pre", html_text(texts[0][1]), css)
    return _tag("pre", html_text("\n".join(f"{b}: {text}" for b, text in texts)), css)


def _failure(group: compat.FailureGroup) -> str:
    """A group of failures of one cause: where, once; its message's first line, each
    backend's where they differ; each counterexample; the command that reproduces it on each
    backend."""
    first = group.first
    backends = ", ".join(group.backends)
    where = " · ".join([backends, first.check, *([] if first.subject is None else [first.subject])])
    label = _tag("span", html_text(LABELS[first.state]), _css_class(first.state))
    parts = [_tag("p", label + " " + _tag("code", html_text(where)))]
    if group.alike([(f.backend, f.first_line) for f in group.failures]):
        parts.append(_tag("p", html_text(first.first_line), "message"))
    else:
        items = "".join(
            _tag("li", _tag("code", html_text(f.backend)) + ": " + html_text(f.first_line))
            for f in group.failures
        )
        parts.append(_tag("ul", items, "message"))
    if first.known is not None:
        parts.append(_known(first.known, first.issue))
    examples = [(f.backend, f.counterexample) for f in group.failures if f.counterexample]
    if examples:
        parts.append(_per_backend(group, examples, "example"))
    commands = [f.repro for f in group.failures if f.repro is not None]
    if commands:
        parts.append(_tag("pre", html_text("\n".join(commands)), "repro"))
    reruns = [f.nodeid for f in group.failures if f.repro is None and f.nodeid]
    if reruns:
        codes = ", ".join(_tag("code", html_text(n)) for n in reruns)
        parts.append(_tag("p", "rerun: " + codes, "message"))
    return _tag("div", "".join(parts), "failure")


def _address_sensitive(matrix: Matrix) -> str:
    """Where a platform's run judged the user's tests by difference: each address-sensitive
    test with its backends, its first error line and where it failed; the counts."""
    judged = compat.verdicts(matrix)
    if not judged:
        return ""
    parts = [_tag("h2", "Address-sensitive tests")]
    for platform_id, verdicts in judged:
        against = f"{verdicts.reference} against {', '.join(verdicts.judged)}"
        parts.append(_tag("h3", html_text(platform_id)))
        parts.append(_tag("p", html_text(f"{against}: {verdicts.counts_line()}")))
        for finding in verdicts.findings:
            on = (
                _tag("code", html_text(finding.check))
                + " on "
                + html_text(", ".join(finding.backends))
            )
            lines = [_tag("p", _tag("span", "address-sensitive", "failed") + " " + on)]
            if finding.message:
                lines.append(_tag("p", html_text(finding.message), "message"))
            if finding.where:
                lines.append(_tag("p", "at " + _tag("code", html_text(finding.where)), "message"))
            parts.append(_tag("div", "".join(lines), "failure"))
    return _tag("section", "".join(parts), id="address-sensitive")


def _failures(matrix: Matrix) -> str:
    found = compat.failures(matrix)
    groups = compat.grouped(found)
    new = sum(f.known is None for f in found)
    # Where failures of one cause make a group, the groups are what the section lists.
    shown = "" if len(groups) == len(found) else f", in {_groups(len(groups))}"
    heading = _tag("h2", f"Failures: {new} new, {len(found) - new} known{shown}")
    if not found:
        return _tag("section", heading + _tag("p", "None."), id="failures")
    sections = []
    for platform in dict.fromkeys(g.first.platform_id for g in groups):
        mine = [_failure(g) for g in groups if g.first.platform_id == platform]
        sections.append(_tag("h3", html_text(platform)) + "".join(mine))
    return _tag("section", heading + "".join(sections), id="failures")


def _groups(count: int) -> str:
    return "one group" if count == 1 else f"{count} groups"


def _grid(matrix: Matrix) -> str:
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
    line per platform with its verdicts, the address-sensitive tests where a platform's run
    judged its tests by difference, every failure with its counterexample and the command
    that reproduces it (those of one cause on several backends as one group), subject x
    platform counts, the nights as a trend (``trends``, HTML of
    :mod:`ptrport.report.trend_chart`, if given), then every check: totals per platform and
    backend and a table per scenario whose failing cells open onto their message and
    counterexample.
    No script, no external assets."""
    every = [_tag("h3", "Totals") + _totals(matrix)]
    if not matrix.rows:
        every.append(_tag("p", "No results."))
    every += [_scenario(matrix, s) for s in matrix.scenarios]
    summary = _tag("summary", html_text(f"Every check ({len(matrix.rows)} rows)"))
    body = [
        _tag("h1", html_text(TITLE)),
        _headline(matrix),
        _address_sensitive(matrix),
        _failures(matrix),
        _grid(matrix),
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
