"""The compatibility page in the order its readers ask: a headline per platform, failures
first with their counterexample and repro command, subject x platform counts, every check
last; and the repro commands it prints work."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from chromium import dump_dom
from sample_reports import HIGH_ADDRESS, OVERFLOW, Known, report, result

from ptrport.cli import main
from ptrport.report import compat, history
from ptrport.report.matrix import Matrix, build_matrix
from ptrport.report.records import Outcome, Result
from ptrport.report.render import write
from ptrport.report.render_html import to_html
from ptrport.report.render_markdown import to_markdown

ISSUE = "https://github.com/pytorch/pytorch/issues/12345"
OPERATION = "uint64_operations::test_operation[sort]"


def _matrix(directory: Path) -> Matrix:
    """lab-1: uint64 tables pass, int64 fails (new) and is caught as a control (xfail), a known
    failure, a crash, and a uint64 operation that raises; lab-2: everything passes."""
    lab1 = [
        result("round_trip::test_entry"),
        result("round_trip::test_entry", Outcome.XFAILED, subject="int64/torch", message=OVERFLOW),
        result(
            "batch_copy::test_copy",
            Outcome.FAILED,
            subject="int64/triton",
            message=OVERFLOW + "\nwith a traceback below",
            example={"batch": {"type": "batch", "entries": [{"type": "entry", **HIGH_ADDRESS}]}},
            on="cpu-usm",
            body="ptrport.check.checks:real_entries_are_copied_exactly",
        ),
        result("batch_copy::test_known", Outcome.FAILED, message="NotImplementedError: copy_"),
        result("batch_copy::test_crash", Outcome.CRASHED, message="crashed: SIGSEGV"),
        result(OPERATION, Outcome.SKIPPED, subject=None, message="raises RuntimeError: sort"),
    ]
    lab2 = [
        result("round_trip::test_entry"),
        result("batch_copy::test_copy", subject="uint64/torch"),
    ]

    def known(platform_id: str, found: Result) -> Known | None:
        return Known("copy_ lacks uint64", ISSUE) if found.check.endswith("known") else None

    return build_matrix(
        [report(directory, "lab-1", lab1), report(directory, "lab-2", lab2)], known=known
    )


def test_each_platform_has_one_headline_with_its_counts_and_verdicts(tmp_path: Path) -> None:
    lab1, lab2 = compat.headlines(_matrix(tmp_path))
    assert (lab1.platform_id, lab1.runs, lab1.passes, lab1.new_failures, lab1.known) == (
        "lab-1",
        5,
        1,
        2,
        1,
    )
    assert lab1.crashed == 1
    assert lab1.uint64_tables == "fail"  # the known failure is a uint64 subject's
    assert lab1.breaking_encodings == ("int64", "uint64")
    assert lab1.raising_operations == ("sort",)
    assert (lab2.runs, lab2.passes, lab2.new_failures, lab2.uint64_tables) == (2, 2, 0, "work")
    assert lab2.breaking_encodings == () and lab2.raising_operations == ()


def test_failures_list_every_failing_result_new_before_known_with_a_repro_command(
    tmp_path: Path,
) -> None:
    found = compat.failures(_matrix(tmp_path))
    assert found[-1].known is not None
    assert sorted((f.check, f.state.value, f.known) for f in found) == [
        ("batch_copy::test_copy", "failed", None),
        ("batch_copy::test_crash", "crashed", None),
        ("batch_copy::test_known", "known failure", "copy_ lacks uint64"),
    ]
    (copy,) = [f for f in found if f.check == "batch_copy::test_copy"]
    assert copy.first_line == OVERFLOW
    assert copy.counterexample == "batch=[0x0000000000000000->0x8000000000000000:0]"
    assert copy.repro == (
        "ptrport report repro reports/lab-1.json --check batch_copy::test_copy "
        "--subject int64/triton --backend cpu-usm -o repro.py"
    )


def test_the_page_puts_headline_failures_grid_and_every_check_in_that_order(
    tmp_path: Path,
) -> None:
    page = to_html(_matrix(tmp_path))
    order = [page.index(f'id="{name}"') for name in ("headline", "failures", "grid", "all")]
    assert order == sorted(order)
    failures = page.split('id="failures"')[1].split('id="grid"')[0]
    assert failures.count('class="failure"') == 3
    assert failures.count('class="repro"') == 1 and failures.count("rerun: ") == 2
    assert "batch=[0x0000000000000000-&gt;0x8000000000000000:0]" in failures
    assert "with a traceback below" not in failures  # the message's first line only
    assert f'known: copy_ lacks uint64 (<a href="{ISSUE}">{ISSUE}</a>)' in failures
    assert not re.search("(?<!u)int64/torch", failures)  # an expected failure is not one
    headline = page.split('id="headline"')[1].split('id="failures"')[0]
    assert "uint64 operations that raise: sort" in headline
    grid = page.split('id="grid"')[1].split('id="all"')[0]
    assert re.search(r"<th scope=\"row\">int64/triton</th><td class=\"failed\">", grid)


def test_a_repro_command_on_the_page_writes_the_script_for_that_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = _matrix(tmp_path / "reports")
    (copy,) = [f for f in compat.failures(matrix) if f.check == "batch_copy::test_copy"]
    monkeypatch.chdir(tmp_path)
    words = shlex.split(copy.repro)
    assert words[:3] == ["ptrport", "report", "repro"]
    assert main(words[1:]) == 0
    script = (tmp_path / "repro.py").read_text()
    assert "batch_copy::test_copy" in script and "0x8000000000000000" in script


def test_chromium_shows_the_failures_before_the_grid(tmp_path: Path) -> None:
    page = tmp_path / "matrix.html"
    page.write_text(to_html(_matrix(tmp_path / "reports")))
    dumped = dump_dom(page, tmp_path / "profile")
    assert dumped.index('id="failures"') < dumped.index('id="grid"')
    assert dumped.count("ptrport report repro reports/lab-1.json") == 1  # the one with an example
    assert dumped.count("rerun: ") >= 2
    assert "<script" not in dumped


def test_the_nights_kept_are_drawn_after_the_grid_and_summed_up_in_the_markdown(
    tmp_path: Path,
) -> None:
    matrix = _matrix(tmp_path / "reports")
    night = history.read_night(history.keep_matrix(matrix, tmp_path / "history"))
    write(matrix, tmp_path / "matrix.html", [night])
    page = (tmp_path / "matrix.html").read_text()
    order = [page.index(f'id="{name}"') for name in ("failures", "grid", "trends", "all")]
    assert order == sorted(order)
    assert page.count("<svg") == 2  # one chart per platform
    write(matrix, tmp_path / "matrix.md", [night])
    assert "## Across nights" in (tmp_path / "matrix.md").read_text()
    write(matrix, tmp_path / "plain.html")
    assert 'id="trends"' not in (tmp_path / "plain.html").read_text()


def test_the_markdown_gives_each_failure_with_an_example_its_repro_command(tmp_path: Path) -> None:
    text = to_markdown(_matrix(tmp_path))
    assert text.index("- **lab-1**") < text.index("## Failures") < text.index("## round_trip")
    assert (
        "```\nptrport report repro reports/lab-1.json --check batch_copy::test_copy "
        "--subject int64/triton --backend cpu-usm -o repro.py\n```"
    ) in text
