"""Regressions of the current reports against a baseline, and their Markdown summary."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Unpack

import pytest
from sample_reports import ReportParts, document, expectations_file, result, unwritten_report

from ptrport.report.diff import Diff, PlatformNotCompared, diff_reports, to_markdown
from ptrport.report.expectations import NOW_PASSES, Expectations
from ptrport.report.markup import markdown_text
from ptrport.report.platform_report import INTERRUPTED, load_reports, write_report
from ptrport.report.records import Outcome, Result

SUBJECTS = ("uint64/torch", "int64-bitcast/torch")
CHECKS = tuple(f"table_round_trip::test_property_{i}" for i in range(10))
CONTROL_CHECK = "table_round_trip::test_the_control_overflows"
FIRST = (CHECKS[0], "uint64/torch", "cpu")

BASELINE = (
    *(result(c, Outcome.PASSED, subject=s) for c in CHECKS for s in SUBJECTS),
    result(CONTROL_CHECK, Outcome.XFAILED, subject="int64/torch", message="OverflowError"),
)
"""20 passed results and a control caught: 21 executed."""


def _changed(key: tuple[str, str | None, str], outcome: Outcome, message: str = "") -> list[Result]:
    """The baseline results with the one under ``key`` given a new outcome."""
    return [
        Result(
            check=r.check,
            scenario=r.scenario,
            subject=r.subject,
            backend=r.backend,
            outcome=outcome,
            message=message or None,
            nodeid=r.nodeid,
        )
        if r.key == key
        else r
        for r in BASELINE
    ]


def _diff(
    current: list[Result] | tuple[Result, ...],
    expectations: Expectations | None = None,
    **changes: Unpack[ReportParts],
) -> Diff:
    """The diff of one platform, ``lab-1``, against the baseline results."""
    return diff_reports(
        [unwritten_report("lab-1", BASELINE)],
        [unwritten_report("lab-1", current, **changes)],
        expectations=expectations or Expectations.none(),
    )


class TestRegressions:
    def test_the_same_results_again_are_no_regression(self) -> None:
        diff = _diff(BASELINE)
        assert diff.regressions == 0
        assert diff.regressed is False
        (platform,) = diff.platforms
        assert (platform.new_failures, platform.known, platform.fixed) == ((), (), ())
        assert (platform.appeared, platform.disappeared) == ((), ())
        assert platform.versions_changed == {}

    @pytest.mark.parametrize("outcome", [Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED])
    def test_a_passed_result_that_is_bad_now_is_one_regression(self, outcome: Outcome) -> None:
        diff = _diff(_changed(FIRST, outcome, "AssertionError: bits differ"))
        assert diff.regressed is True
        assert diff.regressions == 1
        (failure,) = diff.platforms[0].new_failures
        assert failure.now.key == FIRST
        assert (failure.was.outcome, failure.now.outcome) == (Outcome.PASSED, outcome)

    def test_a_control_that_stops_failing_is_a_regression(self) -> None:
        key = (CONTROL_CHECK, "int64/torch", "cpu")
        diff = _diff(_changed(key, Outcome.XPASSED))
        assert diff.regressions == 1
        assert diff.platforms[0].new_failures[0].now.outcome is Outcome.XPASSED

    def test_a_new_failure_an_expectation_names_is_known_and_not_a_regression(
        self, tmp_path: Path
    ) -> None:
        expectations = expectations_file(
            tmp_path,
            f'[[known]]\ncheck = "{CHECKS[0]}"\nsubjects = ["uint64/torch"]\n'
            'platforms = ["lab-1"]\nreason = "uint64 copy_ is missing"\n',
        )
        diff = _diff(_changed(FIRST, Outcome.FAILED), expectations)
        assert diff.regressions == 0
        (platform,) = diff.platforms
        assert platform.new_failures == ()
        ((change, expectation),) = platform.known
        assert change.now.key == FIRST
        assert expectation is expectations.entries[0]

    def test_an_expectation_cannot_excuse_a_control_that_went_blind(self, tmp_path: Path) -> None:
        expectations = expectations_file(
            tmp_path, f'[[known]]\ncheck = "{CONTROL_CHECK}"\nreason = "flaky"\n'
        )
        diff = _diff(_changed((CONTROL_CHECK, "int64/torch", "cpu"), Outcome.XPASSED), expectations)
        assert diff.regressions == 1

    def test_a_bad_result_that_is_good_again_is_fixed(self) -> None:
        diff = diff_reports(
            [unwritten_report("lab-1", _changed(FIRST, Outcome.FAILED))],
            [unwritten_report("lab-1", BASELINE)],
            expectations=Expectations.none(),
        )
        assert diff.regressions == 0
        (fixed,) = diff.platforms[0].fixed
        assert (fixed.was.outcome, fixed.now.outcome) == (Outcome.FAILED, Outcome.PASSED)

    def test_results_on_one_side_only_have_appeared_or_disappeared(self) -> None:
        extra = result("table_round_trip::test_a_new_property", Outcome.FAILED)
        diff = _diff([*BASELINE[1:], extra])
        (platform,) = diff.platforms
        assert platform.disappeared == (BASELINE[0],)
        assert platform.appeared == (extra,)
        assert diff.regressions == 0

    @pytest.mark.parametrize(
        ("skipped", "lost"),
        [(1, False), (2, True)],
        ids=["a drop of 5 percent is allowed", "a drop of 10 percent is a regression"],
    )
    def test_executed_results_may_drop_by_the_threshold_and_no_more(
        self, skipped: int, lost: bool
    ) -> None:
        # Of the 20 passed results (the control stays), ``skipped`` no longer run.
        baseline = BASELINE[:20]
        current = [
            result(r.check, Outcome.SKIPPED, subject=r.subject) if i < skipped else r
            for i, r in enumerate(baseline)
        ]
        diff = diff_reports(
            [unwritten_report("lab-1", baseline)],
            [unwritten_report("lab-1", current)],
            expectations=Expectations.none(),
        )
        (platform,) = diff.platforms
        assert (platform.executed_before, platform.executed_after) == (20, 20 - skipped)
        assert platform.coverage_lost is lost
        assert diff.regressions == int(lost)

    def test_an_invalid_coverage_drop_is_refused(self) -> None:
        with pytest.raises(ValueError, match=r"coverage_drop=1\.5 must be in \[0, 1\)"):
            diff_reports([], [], expectations=Expectations.none(), coverage_drop=1.5)

    def test_versions_that_changed_appeared_or_went_are_listed_with_both_sides(self) -> None:
        software = {"torch": "2.14.0+cpu", "triton": "3.9.0", "ipex": "2.5.0"}
        current = unwritten_report("lab-1", BASELINE, software=software)
        baseline = unwritten_report(
            "lab-1", BASELINE, software={"torch": "2.13.0+cpu", "numpy": "2.4.6"}
        )
        diff = diff_reports([baseline], [current], expectations=Expectations.none())
        assert diff.platforms[0].versions_changed == {
            "torch": ("2.13.0+cpu", "2.14.0+cpu"),
            "numpy": ("2.4.6", None),
            "triton": (None, "3.9.0"),
            "ipex": (None, "2.5.0"),
        }
        assert diff.regressions == 0

    def test_a_platform_with_no_current_report_is_a_regression(self) -> None:
        diff = diff_reports(
            [unwritten_report("lab-1", BASELINE), unwritten_report("lab-2", BASELINE)],
            [unwritten_report("lab-1", BASELINE)],
            expectations=Expectations.none(),
        )
        assert [r.platform_id for r in diff.missing] == ["lab-2"]
        assert diff.regressions == 1

    def test_a_platform_with_no_baseline_is_new_and_not_a_regression(self) -> None:
        current = [
            unwritten_report("lab-1", BASELINE),
            unwritten_report("lab-2", _changed(FIRST, Outcome.FAILED)),
        ]
        diff = diff_reports(
            [unwritten_report("lab-1", BASELINE)], current, expectations=Expectations.none()
        )
        assert [r.platform_id for r in diff.new] == ["lab-2"]
        assert [p.platform_id for p in diff.platforms] == ["lab-1"]
        assert diff.regressed is False

    def test_only_the_named_platform_is_compared_and_the_others_are_left_out(self) -> None:
        diff = diff_reports(
            [unwritten_report("lab-1", BASELINE), unwritten_report("lab-2", BASELINE)],
            [
                unwritten_report("lab-1", _changed(FIRST, Outcome.FAILED)),
                unwritten_report("lab-3", BASELINE),
            ],
            expectations=Expectations.none(),
            only=["lab-1"],
        )
        assert [p.platform_id for p in diff.platforms] == ["lab-1"]
        assert (diff.missing, diff.new) == ((), ())
        assert diff.left_out == ("lab-2", "lab-3")
        assert diff.regressions == 1
        assert diff.platforms[0].new_failures[0].now.key == FIRST

    def test_a_named_platform_with_nothing_to_compare_is_refused(self) -> None:
        baseline = [unwritten_report("cpu", BASELINE), unwritten_report("ipex", BASELINE)]
        current = [unwritten_report("cpu-x86-64", BASELINE)]
        with pytest.raises(PlatformNotCompared, match=r"^platform 'cpu' has no current report"):
            diff_reports(baseline, current, expectations=Expectations.none(), only=["cpu"])
        with pytest.raises(
            PlatformNotCompared,
            match=r"^platform 'cpu-x86-64' is not in the baseline \(its platforms: cpu, ipex\)$",
        ):
            diff_reports(baseline, current, expectations=Expectations.none(), only=["cpu-x86-64"])

    def test_an_incomplete_current_report_is_flagged(self) -> None:
        assert _diff(BASELINE[:5], status=INTERRUPTED).platforms[0].incomplete is True
        assert _diff(BASELINE).platforms[0].incomplete is False

    def test_stale_expectations_come_from_the_current_reports(self, tmp_path: Path) -> None:
        expectations = expectations_file(
            tmp_path, f'[[known]]\ncheck = "{CHECKS[0]}"\nreason = "was broken"\n'
        )
        diff = _diff(BASELINE, expectations)
        assert diff.stale == ((expectations.entries[0], NOW_PASSES),)
        assert diff.regressions == 0

    def test_reports_written_and_loaded_back_diff_as_built(self, tmp_path: Path) -> None:
        before = write_report(document("lab-1", BASELINE), tmp_path / "baseline")
        write_report(document("lab-1", _changed(FIRST, Outcome.FAILED)), tmp_path / "current")
        diff = diff_reports(
            load_reports([before]),
            load_reports([tmp_path / "current"]),
            expectations=Expectations.none(),
        )
        assert diff.regressions == 1
        assert diff.platforms[0].new_failures[0].now.key == FIRST


UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


class TestMarkdown:
    @pytest.mark.parametrize(
        ("failed", "verdict"),
        [(0, "no regressions"), (1, "1 regression"), (2, "2 regressions")],
    )
    def test_the_summary_starts_with_the_verdict(self, failed: int, verdict: str) -> None:
        current = [
            result(r.check, Outcome.FAILED, subject=r.subject) if i < failed else r
            for i, r in enumerate(BASELINE)
        ]
        text = to_markdown(_diff(current))
        assert text.splitlines()[0] == f"## ptrport diff: {verdict}"

    def test_a_message_from_a_report_is_escaped_and_stays_in_its_cell(self) -> None:
        message = "<script>alert(1)</script> | x\n`y` *z*"
        text = to_markdown(_diff(_changed(FIRST, Outcome.FAILED, message)))
        assert "<script>" not in text
        (row,) = [line for line in text.splitlines() if "alert" in line]
        assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| x \\`y\\` \\*z\\*" in row
        assert len(UNESCAPED_PIPE.findall(row)) == 7
        assert row.startswith(f"| {markdown_text(CHECKS[0])} | uint64/torch | cpu | passed |")

    def test_changed_versions_show_old_and_new_beside_the_platform(self) -> None:
        current = unwritten_report(
            "lab-1", BASELINE, software={"torch": "2.14.0+cpu", "triton": "3.9.0"}
        )
        diff = diff_reports(
            [unwritten_report("lab-1", BASELINE)], [current], expectations=Expectations.none()
        )
        old, new = markdown_text("2.13.0+cpu"), markdown_text("2.14.0+cpu")
        assert f"### lab-1 (torch {old} → {new})" in to_markdown(diff).splitlines()

    def test_known_failures_show_their_reason_and_issue(self, tmp_path: Path) -> None:
        expectations = expectations_file(
            tmp_path,
            f'[[known]]\ncheck = "{CHECKS[0]}"\nreason = "uint64 <b>copy_</b> is missing"\n'
            'issue = "https://github.com/pytorch/pytorch/issues/12345"\n',
        )
        text = to_markdown(_diff(_changed(FIRST, Outcome.FAILED), expectations))
        assert text.splitlines()[0] == "## ptrport diff: no regressions"
        assert "**Known failures (1)**" in text
        assert "uint64 &lt;b&gt;copy_&lt;/b&gt; is missing" in text
        assert (
            "[github.com/pytorch/pytorch/issues/12345](https://github.com/pytorch/pytorch/issues/12345)"
            in text
        )
        assert "<b>" not in text

    def test_fixed_appeared_and_disappeared_results_are_tabled(self) -> None:
        extra = result("table_round_trip::test_a_new_property", Outcome.PASSED)
        diff = diff_reports(
            [unwritten_report("lab-1", _changed(FIRST, Outcome.CRASHED))],
            [unwritten_report("lab-1", [*BASELINE[:-1], extra])],
            expectations=Expectations.none(),
        )
        text = to_markdown(diff)
        assert "**Fixed (1)**" in text
        assert "**Disappeared (1)**, in the baseline, not now" in text
        assert f"| {markdown_text(CONTROL_CHECK)} | int64/torch | cpu | xfailed |" in text
        assert "**Appeared (1)**, not in the baseline" in text

    def test_many_appeared_results_are_counted_not_listed(self) -> None:
        many = [result(f"new::test_{i}", Outcome.PASSED) for i in range(21)]
        text = to_markdown(_diff([*BASELINE, *many]))
        assert "**Appeared (21)**" in text
        assert "Too many to list here (more than 20)." in text
        assert "new::test_0 " not in text and "new::test_0|" not in text

    def test_coverage_shows_before_and_after_and_is_flagged_when_lost(self) -> None:
        text = to_markdown(_diff(BASELINE[:10]))
        assert "Coverage: 21 → 10 results executed (-52.4%): **coverage lost**" in text
        assert "Coverage: 21 → 21 results executed (+0.0%)." in to_markdown(_diff(BASELINE))

    def test_an_incomplete_report_is_warned_about(self) -> None:
        text = to_markdown(_diff(BASELINE, status=INTERRUPTED))
        assert "> **Warning:** the current report is incomplete" in text

    def test_the_platforms_left_out_are_named_under_the_summary(self) -> None:
        diff = diff_reports(
            [unwritten_report("lab-1", BASELINE), unwritten_report("lab_2", BASELINE)],
            [unwritten_report("lab-1", BASELINE)],
            expectations=Expectations.none(),
            only=["lab-1"],
        )
        lines = to_markdown(diff).splitlines()
        assert lines[:5] == [
            "## ptrport diff: no regressions",
            "",
            "platforms compared: 1.",
            "",
            f"Not compared (only the platforms named were): {markdown_text('lab_2')}.",
        ]

    def test_missing_and_new_platforms_and_stale_expectations_have_sections(
        self, tmp_path: Path
    ) -> None:
        expectations = expectations_file(
            tmp_path,
            '[[known]]\ncheck = "gone::test_x"\nreason = "removed | <i>"\n'
            f'[[known]]\ncheck = "{CHECKS[0]}"\nreason = "r"\nplatforms = ["lab-2", "lab_4"]\n',
        )
        diff = diff_reports(
            [unwritten_report("lab-1", BASELINE), unwritten_report("lab-2", BASELINE)],
            [unwritten_report("lab-1", BASELINE), unwritten_report("lab-3", BASELINE)],
            expectations=expectations,
        )
        text = to_markdown(diff)
        assert text.splitlines()[0] == "## ptrport diff: 1 regression"
        assert "### Missing platforms" in text
        assert "| lab-2 | 21 |" in text
        assert "### New platforms" in text
        assert "| lab-3 | 21 |" in text
        assert "### Stale expectations" in text
        assert "| known\\[0\\] | gone::test_x | matches no result | removed \\| &lt;i&gt; |" in text
        assert "stale expectations: 1; expectations not checked: 1." in text
        unchecked = text[text.index("### Expectations not checked") :]
        assert f"| known\\[1\\] | {markdown_text(CHECKS[0])} | lab-2, lab_4 |" in unchecked
