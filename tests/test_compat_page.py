"""The compatibility page in the order its readers ask: a headline per platform, failures
first with their counterexample and repro command, subject x platform counts, every check
last; and the repro commands it prints work."""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

import pytest
from chromium import dump_dom
from sample_reports import HIGH_ADDRESS, OVERFLOW, Known, report, result
from scenario_runs import copy_scenarios, use_profile

from ptrport.cli import main
from ptrport.report import compat, history
from ptrport.report.matrix import Matrix, build_matrix
from ptrport.report.records import Outcome, Result
from ptrport.report.render import write
from ptrport.report.render_html import to_html
from ptrport.report.render_markdown import to_markdown

ISSUE = "https://github.com/pytorch/pytorch/issues/12345"
OPERATION = "uint64_operations::test_operation[sort]"
AT_2_63 = {"src": "0x0000000000000000", "dst": "0x8000000000000000", "nbytes": 0}
"""The minimal counterexample of an int64 table's round trip."""
BELOW_2_63 = {"src": "0x0000000000000000", "dst": "0x0000000000001000", "nbytes": 0}
ROUND_TRIP = "table_round_trip::test_an_entry_reads_back_bit_exact"
USER_SUBJECTS = """
import torch


class PointerTable:
    '''src, dst and nbytes columns of one dtype, staged through a numpy view of the host
    tensor, as the getting-started page's subject.'''

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def create(self, capacity, backend):
        self.host = torch.zeros((3, capacity), dtype=self.dtype)
        self.view = self.host.numpy()
        self.device = torch.zeros((3, capacity), dtype=self.dtype, device=backend.device)
        self.count = 0

    def stage(self, batch):
        for entry in batch.entries:
            self.view[:, self.count] = (entry.src, entry.dst, entry.nbytes)
            self.count += 1

    def transfer(self, n):
        self.device[:, :n].copy_(self.host[:, :n])

    def read_back(self, n):
        return list(zip(*self.device[:, :n].cpu().tolist()))


def uint64_table():
    return PointerTable("my-uint64-table", torch.uint64)


def int64_table():
    return PointerTable("my-int64-table", torch.int64)
"""
MARKED_TEST = """
import pytest
import torch


@pytest.mark.ptrport
def test_an_int64_table_holds_a_data_ptr(ptrport_device):
    t = torch.zeros(4, device=ptrport_device.device)
    assert int(torch.tensor([t.data_ptr()], dtype=torch.int64)[0]) == t.data_ptr()
"""


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


class TestWhatRan:
    def test_a_users_subjects_count_by_their_encoding_and_every_grid_row_is_named(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester)
        # Modules are the user's own tests unless they mark themselves scenarios.
        conftest = pytester.path / "conftest.py"
        conftest.write_text(conftest.read_text().split("def pytest_collectstart")[0])
        copy_scenarios(pytester, "test_table_round_trip", "test_uint64_operations")
        pytester.makepyfile(page_subjects=USER_SUBJECTS, test_marked=MARKED_TEST)
        pytester.runpytest(
            "--backend=cpu,cpu-usm",
            "--subject=page_subjects:uint64_table,page_subjects:int64_table",
            "--platform-name=lab",
            "--no-isolate",
        )
        reports = pytester.path / "reports"
        for page in ("page.md", "page.html"):
            assert main(["report", "merge", str(reports), "-o", str(pytester.path / page)]) == 0
        markdown = (pytester.path / "page.md").read_text()
        html = (pytester.path / "page.html").read_text()

        headline = markdown.split("\n\n")[1]
        # The uint64 table passed, the int64 one failed at 2**63; the probe's verdicts between.
        assert re.fullmatch(
            r"- \*\*lab\*\*: .*; uint64 pointer tables: \*\*work\*\*; encodings that break: "
            r"int64(; uint64 operations that raise: [^;]+)?; marked tests: \*\*1 of 1 fails\*\* "
            r"\(on cpu-usm\)",
            headline,
        ), headline
        assert "uint64 pointer tables: work; encodings that break: int64;" in html
        grid = html.split('id="grid"')[1].split('id="all"')[0]
        assert re.findall(r'<th scope="row">([^<]*)</th>', grid) == [
            "my-uint64-table",
            "my-int64-table",
            "own test",
            "uint64 operations",
        ]
        for text in (markdown, html):
            assert "(no subject)" not in text

    @pytest.mark.parametrize(
        ("results", "user_subjects", "uint64_tables", "breaking"),
        [
            pytest.param(
                [
                    result("kernel::test_k[uint64-int32]", Outcome.FAILED, subject=None),
                    result("kernel::test_k[int64-bitcast-int32]", subject=None),
                    result("kernel::test_k[int64-int32]", Outcome.XFAILED, subject=None),
                ],
                (),
                "fail",
                ("int64", "uint64"),
                id="a check that takes no subject counts by its parameter's encoding",
            ),
            pytest.param(
                [
                    result(ROUND_TRIP, subject="mine"),
                    result(ROUND_TRIP, Outcome.FAILED, subject="mine", on="xpu", example=AT_2_63),
                ],
                ("mine",),
                "fail",
                ("uint64",),
                id="a users subject that held every address somewhere is uint64 everywhere",
            ),
            pytest.param(
                [result(ROUND_TRIP, Outcome.FAILED, subject="mine", example=BELOW_2_63)],
                ("mine",),
                "not run",
                ("mine",),
                id="a users subject failing below 2**63 is of no known encoding",
            ),
            pytest.param(
                [
                    result(ROUND_TRIP, subject="mine"),
                    result("batch_copy::test_copy", Outcome.XFAILED, subject="mine"),
                ],
                ("mine",),
                "not run",
                ("mine",),
                id="a users control is no uint64 table",
            ),
            pytest.param(
                [result(ROUND_TRIP, subject="alpha/custom")],
                (),
                "not run",
                (),
                id="a subject no report loaded as the users is not counted",
            ),
        ],
    )
    def test_the_headline_counts_each_row_by_the_encoding_its_report_shows(
        self,
        tmp_path: Path,
        results: list[Result],
        user_subjects: tuple[str, ...],
        uint64_tables: str,
        breaking: tuple[str, ...],
    ) -> None:
        written = report(tmp_path, "lab", results)
        specs = {name: f"mine.subject:{name}" for name in user_subjects}
        loaded = dataclasses.replace(written, run={**written.run, "subject_specs": specs})
        (line,) = compat.headlines(build_matrix([loaded]))
        assert (line.uint64_tables, line.breaking_encodings) == (uint64_tables, breaking)

    def test_a_check_that_takes_no_subject_is_named_by_its_check_and_scenario_alone(
        self, tmp_path: Path
    ) -> None:
        check = "kernel::test_k[uint64-int32]"
        matrix = build_matrix(
            [report(tmp_path, "lab", [result(check, Outcome.FAILED, subject=None)])]
        )
        assert f"### (1) **FAIL** {check} · lab/cpu\n" in to_markdown(matrix)
        page = to_html(matrix)
        assert f"<code>cpu · {check}</code>" in page
        assert '<th scope="row">kernel</th>' in page
