"""The Markdown job summary as GitHub shows it and as people read it: report text comes out as
written unless it could make markup or a link, and a matrix of many platforms and results is
cut to fit GitHub's 1 MiB job summary, least important parts first, never silently."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from sample_reports import Known, report, result, unwritten_report

from ptrport.report.markup import markdown_text
from ptrport.report.matrix import Matrix, build_matrix
from ptrport.report.records import Outcome, Result
from ptrport.report.render_markdown import SUMMARY_LIMIT, to_markdown

PLAIN = [
    "cpu-x86-64",
    "torch 2.13.0+cpu",
    "2.13.0+cpu",
    "address_arithmetic",
    "uint64/torch",
    "int64-bitcast/torch",
    "0xffff85abd4e00000",
    "test_real_entries_are_copied_exactly[cpu-usm]",
    "table_round_trip::test_property_0",
    "scenarios/test_round_trip.py::test_x[cpu-uint64/torch]",
    "OverflowError: Python int too large to convert to C long",
    "NotImplementedError: 'copy_' not implemented for 'UInt64'",
    "1.5 GB/s (x0.93 of Tensor.copy_)",
    "not available: torch 2.13.0+cpu has no XPU support",
    "simulated: an upper-half device",
    "a ~ b",
    "C:\\Users\\lab",
    "#123",
    "-O2",
    "42",
    "{'src': 1}",
    "x != y; z == w?",
]
"""Ids, versions, addresses and messages with no markup in them."""

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<https://evil.invalid/x>",
    "[click](javascript:alert(1))",
    "[click](https://evil.invalid)",
    "![pixel](https://evil.invalid/p.png)",
    "[a]: https://evil.invalid",
    "[^1]: a footnote",
    "see https://evil.invalid/x and HTTP://EVIL.INVALID",
    "mail me@evil.invalid now",
    "**bold** *em* _em_ __strong__ snake_case_",
    "~~strike~~ and ~one~",
    "`code` and ```fence``` here",
    "# heading",
    "###### heading ##",
    "- item",
    "+ item",
    "* item",
    "1. item",
    "1) item",
    "> quote",
    "---",
    "___",
    "===",
    "~~~",
    "a | b | c",
    "line one\nline two\n\n  line three",
    "&amp; &#60;script&#62; &lt;b&gt;",
    "trailing backslash \\",
    "\\*not emphasis\\* and \\<b\\>",
    "x_<b>_y",
]
"""Text that would be markup, a link or raw HTML if it went into Markdown as written."""

ISSUE = "https://github.com/pytorch/pytorch/issues/12345"
_INERT = {"text", "text_special"}


def _gfm() -> MarkdownIt:
    """CommonMark with GitHub's tables, strikethrough and autolinks (links from a scheme)."""
    md = MarkdownIt("commonmark", {"linkify": True}).enable(["table", "strikethrough", "linkify"])
    md.linkify.set({"fuzzy_link": False})
    return md


def _inline(tokens: list[Token]) -> list[Token]:
    return [t for t in tokens if t.type == "inline"]


def _shown(token: Token) -> str:
    """What an inline token shows, if it is plain text only; else a description of the markup."""
    kinds = {child.type for child in token.children or []}
    if not kinds <= _INERT:
        return f"markup: {sorted(kinds - _INERT)}"
    return "".join(child.content for child in token.children or [])


class TestPlainText:
    @pytest.mark.parametrize("text", PLAIN)
    def test_text_without_markup_comes_out_as_written(self, text: str) -> None:
        assert markdown_text(text) == text

    @pytest.mark.parametrize("text", PLAIN + HOSTILE)
    def test_a_paragraph_shows_the_text_on_one_line_and_nothing_else(self, text: str) -> None:
        tokens = _gfm().parse(markdown_text(text))
        assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"]
        assert _shown(tokens[1]) == " ".join(text.split())

    @pytest.mark.parametrize("text", PLAIN + HOSTILE)
    def test_a_table_cell_shows_the_text_and_keeps_its_columns(self, text: str) -> None:
        escaped = markdown_text(text)
        table = f"| a | b |\n| --- | --- |\n| {escaped} | {escaped} |\n"
        cells = _inline(_gfm().parse(table))
        flat = " ".join(text.split())
        assert [_shown(c) for c in cells] == ["a", "b", flat, flat]

    @pytest.mark.parametrize("text", HOSTILE)
    def test_hostile_text_renders_no_tag_link_or_emphasis(self, text: str) -> None:
        html = _gfm().render(f"Message: {markdown_text(text)}\n\n| {markdown_text(text)} |\n")
        assert re.findall(r"<(?!/?p>)[^>]*>", html) == []

    def test_autolink_openers_are_escaped_where_github_would_link_them(self) -> None:
        # The test renderer does not link "www." without a scheme; GitHub does.
        assert markdown_text("see www.evil.invalid") == "see www\\.evil.invalid"
        assert markdown_text("https://evil.invalid") == "https\\://evil.invalid"

    def test_an_escaped_issue_url_is_still_a_link_destination(self) -> None:
        escaped = markdown_text(ISSUE)
        link = _gfm().parse(f"[{escaped}]({escaped})")[1].children or []
        assert link[0].type == "link_open"
        assert link[0].attrGet("href") == ISSUE
        assert _shown(Token("inline", "", 0, children=link[1:-1])) == ISSUE


def test_a_known_issue_is_one_link_to_its_url(tmp_path: Path) -> None:
    def known(platform_id: str, result: Result) -> Known:
        return Known("copy_ lacks uint64", ISSUE)

    failed = [result("round_trip::test_x", Outcome.FAILED)]
    markdown = to_markdown(build_matrix([report(tmp_path, "lab-1", failed)], known=known))
    html = _gfm().render(markdown)
    assert re.findall(r'href="([^"]*)"', html) == [ISSUE]
    assert "github.com/pytorch/pytorch/issues/12345</a>" in html


# The size limit.

PLATFORMS = 8
SCENARIOS = 4
CHECKS = 100
SUBJECTS = tuple(f"subject_{i}/torch" for i in range(6))
LONG_MESSAGE = "AssertionError: bits differ at <0xffff85abd4e00000> | " * 60
"""About 3,000 characters, with text to escape."""
LONG_EXAMPLE = {"addresses": [f"0x{i:016x}" for i in range(150)]}
"""About 3,500 characters of JSON."""


def _results(fail_every: int) -> list[Result]:
    """2,400 results (4 scenarios x 100 checks x 6 subjects); every ``fail_every``-th fails
    with a long message and counterexample, the rest pass."""
    results = []
    for scenario in range(SCENARIOS):
        for check in range(CHECKS):
            for subject in SUBJECTS:
                name = f"scenario_{scenario}::test_check_{check}"
                if len(results) % fail_every:
                    results.append(result(name, subject=subject))
                else:
                    failed = result(name, Outcome.FAILED, subject=subject, message=LONG_MESSAGE)
                    results.append(replace(failed, example=LONG_EXAMPLE))
    return results


def _eight_platforms(fail_every: int) -> Matrix:
    results = _results(fail_every)
    return build_matrix([unwritten_report(f"lab-{p}", results) for p in range(PLATFORMS)])


def _note(markdown: str) -> str:
    last = markdown.rstrip("\n").splitlines()[-1]
    assert last.startswith("**Shortened to fit a job summary (1,000 KiB):** left out "), last
    return last


def _listed_failures(markdown: str) -> int:
    return len(re.findall(r"^### \(\d+\) \*\*FAIL\*\* ", markdown, flags=re.MULTILINE))


class TestSizeLimit:
    def test_the_limit_is_under_githubs_one_mebibyte(self) -> None:
        assert 900 * 1024 <= SUMMARY_LIMIT < 1024 * 1024

    def test_a_summary_that_fits_is_not_cut(self, tmp_path: Path) -> None:
        markdown = to_markdown(build_matrix([report(tmp_path, "lab-1", [result("a::test_x")])]))
        assert "Shortened" not in markdown
        assert "| test_x | uint64/torch | pass |" in markdown

    def test_eight_platforms_of_results_are_cut_to_fit_and_keep_every_failure(self) -> None:
        matrix = _eight_platforms(fail_every=40)
        failing = PLATFORMS * SCENARIOS * CHECKS * len(SUBJECTS) // 40
        markdown = to_markdown(matrix)
        assert len(markdown.encode("utf-8")) <= SUMMARY_LIMIT
        note = _note(markdown)
        assert "the table rows where nothing failed" in note
        assert "the counterexamples over 2,000 characters" in note
        assert "each message past its first 500 characters" in note
        assert "scenario tables" not in note
        assert "failures (the last ones" not in note
        assert "HTML or JSON file" in note
        assert _listed_failures(markdown) == failing
        # A line per platform first, then the totals, whole: a row per platform.
        headline = markdown.split("\n\n")[1].splitlines()
        assert [line.split("**")[1] for line in headline] == [f"lab-{p}" for p in range(PLATFORMS)]
        totals = markdown.split("\n\n")[2].splitlines()
        assert [line.split(" | ")[0] for line in totals[2:]] == [
            f"| lab-{p}" for p in range(PLATFORMS)
        ]
        assert "**60**" in totals[2]
        assert "2,340 rows where nothing failed are left out." not in markdown
        assert markdown.count("rows where nothing failed are left out.") == SCENARIOS

    def test_when_even_the_failures_do_not_fit_the_note_says_how_many_are_left_out(
        self,
    ) -> None:
        matrix = _eight_platforms(fail_every=1)
        markdown = to_markdown(matrix)
        assert len(markdown.encode("utf-8")) <= SUMMARY_LIMIT
        note = _note(markdown)
        assert "the scenario tables" in note
        total = PLATFORMS * SCENARIOS * CHECKS * len(SUBJECTS)
        found = re.search(r"; ([\d,]+) of the ([\d,]+) failures \(the last ones", note)
        assert found is not None, note
        left_out, of = (int(n.replace(",", "")) for n in found.groups())
        listed = _listed_failures(markdown)
        assert of == total
        assert listed > 0
        assert listed + left_out == total
        assert markdown.startswith("# ptrport compatibility matrix\n\n- **lab-0**")
        assert "\n\n| platform |" in markdown

    def test_the_cuts_come_in_a_fixed_order(self) -> None:
        matrix = _eight_platforms(fail_every=40)
        order = [
            "the table rows where nothing failed",
            "the counterexamples over 2,000 characters",
            "each message past its first 500 characters",
            "the details of known and expected failures",
            "the other counterexamples",
            "the scenario tables",
        ]
        seen = []
        for limit in (600_000, 400_000, 200_000, 100_000, 20_000):
            markdown = to_markdown(matrix, limit=limit, full_matrix="matrix.html")
            assert len(markdown.encode("utf-8")) <= limit
            note = markdown.rstrip("\n").splitlines()[-1]
            assert note.endswith("The full matrix is in matrix.html.")
            cut = [name for name in order if name in note]
            assert cut == order[: len(cut)], note
            seen.append(len(cut))
        assert seen == sorted(seen)
        assert seen[-1] == len(order)
