"""Rendering the matrix: Markdown for a job summary, one HTML page, JSON; every text from a
report escaped, the page free of scripts and external assets."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from chromium import dump_dom
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

from ptrport.report.matrix import Matrix, build_matrix
from ptrport.report.platform_report import ReportWriter, load_report, load_reports
from ptrport.report.records import Outcome, Result
from ptrport.report.render import RenderError, to_json, write
from ptrport.report.render_html import to_html
from ptrport.report.render_markdown import to_markdown

HOSTILE = (
    "<script>alert(1)</script>"
    "<script>document.documentElement.setAttribute('data-pwned','1')</script>"
)
MESSY = "AssertionError: a | b with ```fence``` and `tick`\nsecond line <b>bold</b>"
ISSUE = "https://github.com/pytorch/pytorch/issues/12345"


def _every_state(directory: Path) -> Matrix:
    """One platform with a result of every kind, a known failure, and a second platform that
    lacks a subject and has an unavailable backend."""
    results = [
        result("round_trip::test_passed"),
        result("round_trip::test_failed", Outcome.FAILED, message=OVERFLOW, example=HIGH_ADDRESS),
        result("round_trip::test_known", Outcome.FAILED, message="NotImplementedError: copy_"),
        result("round_trip::test_xfailed", Outcome.XFAILED, message=OVERFLOW),
        result("round_trip::test_xpassed", Outcome.XPASSED, message="control passed"),
        result("round_trip::test_skipped", Outcome.SKIPPED, message="no pinned memory"),
        result("round_trip::test_unavailable", Outcome.UNAVAILABLE, message="no triton"),
        result("round_trip::test_crashed", Outcome.CRASHED, message="Fatal Python error"),
        result("round_trip::test_error", Outcome.ERROR, message="RuntimeError: setup"),
    ]
    other = [
        result("round_trip::test_passed", subject="int64/torch"),
        result("round_trip::test_passed", Outcome.UNAVAILABLE, on="xpu", message="xpu: none"),
    ]
    xpu = {"available": False, "reason": NO_XPU}

    def known(platform_id: str, result: Result) -> Known | None:
        return Known("copy_ lacks uint64", ISSUE) if result.check.endswith("known") else None

    return build_matrix(
        [
            report(directory, "lab-1", results),
            report(directory, "lab-2", other, torch="2.12.0", backends={"cpu": CPU, "xpu": xpu}),
        ],
        known=known,
    )


def _hostile(directory: Path, message: str = HOSTILE) -> Matrix:
    results = [
        result("round_trip::test_x", Outcome.FAILED, message=message, example={"note": message}),
        result("round_trip::test_y"),
    ]
    return build_matrix([report(directory, "lab-1", results)])


def _table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("| ")]


def _cells_of(line: str) -> list[str]:
    """A Markdown table row split on its unescaped pipes, as GitHub splits it."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


class _Elements(HTMLParser):
    """Every tag and attribute name in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)
        self.hrefs += [value or "" for name, value in attrs if name == "href"]


def _elements(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    parser.close()
    return parser


class TestMarkdown:
    def test_it_starts_with_totals_per_platform_and_backend_with_their_versions(
        self, tmp_path: Path
    ) -> None:
        markdown = to_markdown(_every_state(tmp_path))
        rows = _table_rows(markdown)
        header = _cells_of(rows[0])
        assert header[:3] == ["platform", "backend", "run"]
        lab_1 = dict(zip(header, _cells_of(rows[2]), strict=True))
        assert lab_1["platform"] == "lab-1"
        assert lab_1["FAIL"] == "**1**"
        assert lab_1["known"] == "1"
        assert "torch 2.13.0+cpu<br>triton 3.9.0" in lab_1["versions"]
        lab_2 = _cells_of(rows[3])
        assert lab_2[:2] == ["lab-2", "cpu"]
        assert "torch 2.12.0" in lab_2[-1]

    def test_a_backend_that_ran_nothing_is_listed_with_its_reason(self, tmp_path: Path) -> None:
        rows = _table_rows(to_markdown(_every_state(tmp_path)))
        xpu = _cells_of(rows[4])
        assert xpu[:3] == ["lab-2", "xpu", "not available: torch 2.13.0+cpu has no XPU support"]

    def test_a_platform_without_results_still_has_its_totals_row(self, tmp_path: Path) -> None:
        markdown = to_markdown(build_matrix([report(tmp_path, "empty", [])]))
        assert _cells_of(_table_rows(markdown)[2])[:3] == ["empty", "—", "no results"]
        assert "No results." in markdown

    def test_each_column_header_shows_platform_backend_and_main_versions(
        self, tmp_path: Path
    ) -> None:
        markdown = to_markdown(_every_state(tmp_path))
        header = _cells_of(markdown.split("## round_trip\n\n")[1].splitlines()[0])
        assert header == [
            "check",
            "subject",
            "lab-1 / cpu<br>torch 2.13.0+cpu<br>triton 3.9.0<br>device Xeon",
            "lab-2 / cpu<br>torch 2.12.0<br>triton 3.9.0<br>device Xeon",
        ]

    def test_each_cell_state_has_its_short_label(self, tmp_path: Path) -> None:
        markdown = to_markdown(_every_state(tmp_path))
        table = markdown.split("## round_trip\n\n")[1].split("\n\n")[0]
        shown = [tuple(_cells_of(line)) for line in table.splitlines()[2:]]
        assert shown == [
            ("test_crashed", "uint64/torch", "**CRASH** (1)", "—"),
            ("test_error", "uint64/torch", "**ERROR** (2)", "—"),
            ("test_failed", "uint64/torch", "**FAIL** (3)", "—"),
            ("test_known", "uint64/torch", "known (4)", "—"),
            ("test_passed", "uint64/torch", "pass", "—"),
            ("test_skipped", "uint64/torch", "skip", "—"),
            ("test_unavailable", "uint64/torch", "n/a", "—"),
            ("test_xfailed", "uint64/torch", "xfail (5)", "—"),
            ("test_xpassed", "uint64/torch", "**XPASS** (6)", "—"),
            ("test_passed", "int64/torch", "—", "pass"),
        ]

    def test_failures_list_each_message_and_counterexample_in_a_code_block(
        self, tmp_path: Path
    ) -> None:
        failures = to_markdown(_every_state(tmp_path)).split("## Failures\n\n")[1]
        headings = [line for line in failures.splitlines() if line.startswith("### ")]
        assert [h.split()[2] for h in headings] == [
            "**CRASH**",
            "**ERROR**",
            "**FAIL**",
            "known",
            "xfail",
            "**XPASS**",
        ]
        failed = failures.split("### (3)")[1].split("### (4)")[0]
        assert "round_trip::test_failed · uint64/torch · lab-1/cpu" in failed
        assert f"Message: {OVERFLOW}" in failed
        assert "```\n" + json.dumps(HIGH_ADDRESS, indent=2) + "\n```" in failed
        known = failures.split("### (4)")[1].split("### (5)")[0]
        assert f"Known: copy_ lacks uint64 ([{ISSUE.removeprefix('https://')}]({ISSUE}))" in known

    def test_a_hostile_message_stays_plain_text_on_one_line(self, tmp_path: Path) -> None:
        markdown = to_markdown(_hostile(tmp_path, HOSTILE + " " + MESSY))
        # A code block shows its text literally; everywhere else nothing may stay markup.
        outside, example, after = re.split(r"^````$", markdown, flags=re.MULTILINE)
        assert HOSTILE in example
        markdown = outside + after
        assert "<script" not in markdown
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown
        assert "<b>" not in markdown
        message = next(line for line in markdown.splitlines() if line.startswith("Message: "))
        assert "a \\| b" in message
        assert "\\`\\`\\`fence\\`\\`\\`" in message
        assert "second line" in message  # the newline folded into this one line
        for block in markdown.split("\n\n"):
            widths = {len(_cells_of(line)) for line in _table_rows(block)}
            assert len(widths) <= 1, block

    def test_a_counterexample_with_backticks_keeps_its_code_block_closed(
        self, tmp_path: Path
    ) -> None:
        markdown = to_markdown(_hostile(tmp_path, MESSY))
        fences = [line for line in markdown.splitlines() if line.startswith("```")]
        assert fences.count("````") == 2  # the counterexample's; the repro command has ```
        block = markdown.split("````")[1]
        assert "```fence```" in block and markdown.split("````")[2].startswith("\n")

    def test_a_subject_or_check_with_a_pipe_does_not_add_a_column(self, tmp_path: Path) -> None:
        piped = result("round_trip::test_x[a|b]", subject="evil|subject", message=MESSY)
        markdown = to_markdown(build_matrix([report(tmp_path, "lab-1", [piped])]))
        table = markdown.split("## round_trip\n\n")[1].split("\n\n")[0].splitlines()
        assert [len(_cells_of(line)) for line in table] == [3, 3, 3]
        assert _cells_of(table[2])[:2] == ["test_x[a\\|b]", "evil\\|subject"]


class TestHtml:
    def test_it_is_one_page_with_inline_style_and_no_script_or_external_asset(
        self, tmp_path: Path
    ) -> None:
        page = to_html(_every_state(tmp_path))
        found = _elements(page)
        assert "style" in found.tags
        assert "script" not in found.tags
        assert "<script" not in page.lower()
        assert not {"link", "img", "iframe", "object", "embed"} & found.tags
        assert not {"src", "srcset", "onload", "onclick"} & found.attributes
        assert "@import" not in page and "url(" not in page
        assert set(found.hrefs) == {ISSUE}  # in the failures list and in its cell

    def test_it_starts_with_totals_and_marks_incomplete_platforms(self, tmp_path: Path) -> None:
        header = document("killed", [], status="running")
        writer = ReportWriter(tmp_path, header)
        writer.add(result("round_trip::test_x"))
        matrix = build_matrix(
            [load_report(writer.path), report(tmp_path, "done", [result("round_trip::test_x")])]
        )
        page = to_html(matrix)
        totals = page.split('<table class="totals">')[1].split("</table>")[0]
        assert '<td class="incomplete">incomplete (running)</td>' in totals
        assert "<td>complete</td>" in totals
        scenario = page.split('<table class="matrix">')[1]
        headers = scenario.split("</thead>")[0]
        assert headers.count('<span class="incomplete">incomplete</span>') == 1
        assert page.index("Platforms") < page.index("round_trip")

    def test_a_failing_cell_opens_onto_its_message_and_counterexample(self, tmp_path: Path) -> None:
        page = to_html(_every_state(tmp_path))
        cell = page.split('<td class="failed" title="failed">')[1].split("</td>")[0]
        assert cell.startswith("<details><summary>FAIL</summary>")
        assert f'<p class="message">{OVERFLOW}</p>' in cell
        assert "<pre>" + json.dumps(HIGH_ADDRESS, indent=2).replace('"', "&quot;") in cell
        known = page.split('<td class="known-failure"')[1].split("</td>")[0]
        assert f'known: copy_ lacks uint64 (<a href="{ISSUE}">{ISSUE}</a>)' in known
        skipped = page.split('<td class="skipped"')[1].split("</td>")[0]
        assert skipped == ' title="no pinned memory">skip'

    def test_a_hostile_message_is_escaped_everywhere(self, tmp_path: Path) -> None:
        page = to_html(_hostile(tmp_path, HOSTILE + MESSY))
        assert "<script" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "<b>" not in page
        assert "&lt;b&gt;bold&lt;/b&gt;" in page

    def test_an_issue_that_is_not_a_plain_https_url_stays_text(self, tmp_path: Path) -> None:
        results = [result("round_trip::test_x", Outcome.FAILED)]
        for issue in ("javascript:alert(1)", 'https://x.invalid/"onmouseover="a', "#123"):

            def known(platform_id: str, result: Result, issue: str = issue) -> Known:
                return Known("known", issue)

            matrix = build_matrix([report(tmp_path, "lab-1", results)], known=known)
            assert _elements(to_html(matrix)).hrefs == []
            assert "](" not in to_markdown(matrix)

    def test_chromium_shows_a_hostile_message_as_text_and_runs_nothing(
        self, tmp_path: Path
    ) -> None:
        page = tmp_path / "matrix.html"
        write(_hostile(tmp_path / "reports"), page)
        # A script that ran an alert() would hold the page open: the escaping failed.
        dom = dump_dom(page, tmp_path / "profile")
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
        found = _elements(dom)
        assert "details" in found.tags
        assert "script" not in found.tags
        assert "<script" not in dom
        assert "data-pwned" not in found.attributes


def test_versions_subjects_and_reasons_from_a_report_are_escaped_too(tmp_path: Path) -> None:
    image = "<img src=x onerror=alert(1)>"
    xpu = {"available": False, "reason": HOSTILE}
    results = [
        result("round_trip::test_x", subject=image, message=HOSTILE),
        result("round_trip::test_x", Outcome.SKIPPED, subject="s", message=f'" onclick="{image}'),
    ]
    hostile = report(tmp_path, "lab-1", results, torch=image, backends={"cpu": CPU, "xpu": xpu})
    matrix = build_matrix([hostile])
    page = to_html(matrix)
    markdown = to_markdown(matrix)
    for text in (page, markdown):
        assert "<img" not in text
        assert "<script" not in text
    found = _elements(page)
    assert not {"img", "script"} & found.tags
    assert not {"src", "onerror", "onclick"} & found.attributes
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown


class TestJsonAndFiles:
    def test_json_is_the_matrix_record_and_reads_back_as_its_reports(self, tmp_path: Path) -> None:
        matrix = _every_state(tmp_path / "reports")
        out = tmp_path / "matrix.json"
        write(matrix, out)
        assert json.loads(out.read_text()) == json.loads(to_json(matrix)) == matrix.to_record()
        again = load_reports([out])
        assert [r.platform_id for r in again] == ["lab-1", "lab-2"]
        assert [r.results for r in again] == [r.results for r in matrix.reports]

    @pytest.mark.parametrize(
        ("name", "start"),
        [
            ("matrix.md", "# ptrport compatibility matrix\n"),
            ("matrix.html", "<!DOCTYPE html>\n"),
            ("MATRIX.HTML", "<!DOCTYPE html>\n"),
            ("matrix.json", '{\n  "schema": "ptrport.matrix/1"'),
        ],
        ids=["md", "html", "upper-case-html", "json"],
    )
    def test_write_picks_the_format_from_the_extension(
        self, tmp_path: Path, name: str, start: str
    ) -> None:
        out = tmp_path / "site" / name
        write(_every_state(tmp_path), out)
        text = out.read_text(encoding="utf-8")
        assert text.startswith(start)
        assert text.endswith("\n")

    def test_write_refuses_an_unknown_extension_in_one_line(self, tmp_path: Path) -> None:
        out = tmp_path / "matrix.txt"
        with pytest.raises(RenderError) as refused:
            write(_every_state(tmp_path), out)
        assert str(refused.value) == f"{out}: unknown output format '.txt'; use .md, .html or .json"
        assert not out.exists()

    def test_write_refuses_a_place_it_cannot_write_in_one_line(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("")
        out = blocker / "matrix.md"
        with pytest.raises(RenderError, match=f"^{re.escape(str(out))}: cannot write it: "):
            write(_every_state(tmp_path), out)


def test_a_simulated_column_says_so_under_its_name(tmp_path: Path) -> None:
    matrix = build_matrix([upper_half_report(tmp_path)])
    text = to_markdown(matrix)
    assert "cpu-usm<br>simulated: an upper-half device" in text
    assert text.count("simulated: ") == 1
    assert "simulated: an upper-half device" in to_html(matrix)
