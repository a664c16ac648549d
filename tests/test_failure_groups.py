"""Failures of one cause, on several backends of a platform, make one group on the page: one
check for one subject, one state, one message once its addresses are left out; and a
platform's headline speaks of what it ran, scenarios or marked tests or both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from sample_reports import OVERFLOW, document, report, result

from ptrport.addresses import to_hex
from ptrport.report import compat
from ptrport.report.matrix import CellState, Matrix, build_matrix
from ptrport.report.platform_report import load_report, write_report
from ptrport.report.records import OWN_TEST, Outcome, Result
from ptrport.report.render_html import to_html
from ptrport.report.render_markdown import to_markdown

BACKENDS = ("cpu", "cpu-usm", "cpu-tbi", "cpu-placed")
ADDRESSES = st.integers(min_value=0, max_value=2**64 - 1)
SHOWN: st.SearchStrategy[Callable[[int], str]] = st.sampled_from([to_hex, hex, lambda a: f"{a:#X}"])
"""The ways a message writes an address in hex."""
WORDS = st.text(st.characters(blacklist_categories=("Nd", "Cs")), min_size=1).map(str.strip)
"""Text with no digit in it, so nothing in it is taken for an address."""


def _own_test(
    backend: str, message: str, outcome: Outcome = Outcome.FAILED, check: str = "test_t.py::test_x"
) -> Result:
    return Result(
        check=check,
        scenario="test_t.py",
        subject=OWN_TEST,
        backend=backend,
        outcome=outcome,
        message=message,
        nodeid=f"{check}[{backend}]",
    )


def _matrix(directory: Path, results: list[Result]) -> Matrix:
    """Platform ``lab``'s run of ``results`` under the ``ci`` profile, seed 1234."""
    written = document("lab", results)
    written["run"]["seed"] = "1234"
    return build_matrix([load_report(write_report(written, directory))])


def _failure(message: str | None, **changes: Any) -> compat.Failure:
    found = compat.Failure(
        platform_id="lab",
        backend="cpu",
        scenario="a",
        check="a::test_x",
        subject="int64/torch",
        state=CellState.FAILED,
        first_line="",
        example=None,
        counterexample="",
        known=None,
        issue=None,
        repro=None,
        nodeid="",
        message=message,
    )
    return replace(found, **changes)


class TestCause:
    @given(
        st.lists(st.tuples(WORDS, ADDRESSES, ADDRESSES), min_size=1, max_size=5),
        SHOWN,
        SHOWN,
    )
    def test_one_message_with_other_addresses_has_one_cause(
        self,
        parts: list[tuple[str, int, int]],
        one: Callable[[int], str],
        other: Callable[[int], str],
    ) -> None:
        first = " ".join(f"{words} {one(a)}" for words, a, _ in parts)
        second = " ".join(f"{words} {other(b)}" for words, _, b in parts)
        assert compat.cause(first) == compat.cause(second)

    @given(WORDS)
    def test_a_message_without_addresses_is_its_own_cause(self, text: str) -> None:
        assert compat.cause(text) == text

    @given(WORDS, WORDS, ADDRESSES, ADDRESSES)
    def test_messages_that_differ_but_for_their_addresses_are_two_causes(
        self, one: str, other: str, a: int, b: int
    ) -> None:
        groups = compat.grouped(
            [_failure(f"{one} {to_hex(a)}"), _failure(f"{other} {to_hex(b)}", backend="cpu-usm")]
        )
        assert len(groups) == (1 if one == other else 2)

    def test_an_address_printed_as_a_decimal_int_is_an_address_and_a_small_number_is_not(
        self,
    ) -> None:
        upper = compat.cause(f"AssertionError: assert {2**64 - 2**47} < (2 ** 63)")
        assert upper == compat.cause(f"AssertionError: assert {2**63 + 4096} < (2 ** 63)")
        assert compat.cause("expected 42 entries") != compat.cause("expected 43 entries")

    def test_where_a_backend_held_a_marked_tests_memory_is_left_out(self) -> None:
        # As the run ends a marked test's failure: where it placed memory, and on an
        # upper-half backend, where the storages it took data_ptr() of last are presented.
        overflow = "ValueError: Overflow when unpacking long long"
        placed = "placed at 0x8000000000000000, 0x8000000000001000 and 2 more"
        held = [
            f"{overflow} ({placed})",
            f"{overflow} ({placed}; last presented at 0xffffd62276c125c0)",
            f"{overflow} (last presented at 0xb400562276c173c0, 0xb400562276c17400)",
            overflow,
        ]
        assert {compat.cause(m) for m in held} == {overflow}
        # Text in parentheses that the run does not add stays.
        assert compat.cause(f"{overflow} (at entry 3)") != compat.cause(overflow)


class TestGroups:
    def test_one_cause_on_four_backends_is_one_group_naming_them(self) -> None:
        found = [
            _failure(f"{OVERFLOW} ({to_hex(2**63 + i)})", backend=b) for i, b in enumerate(BACKENDS)
        ]
        (group,) = compat.grouped(found)
        assert group.backends == BACKENDS
        assert [f.message for f in group.failures] == [f.message for f in found]

    def test_another_check_subject_state_known_failure_or_platform_is_another_group(
        self,
    ) -> None:
        base = _failure(OVERFLOW)
        others = [
            replace(base, check="a::test_y"),
            replace(base, subject="int64/triton"),
            replace(base, state=CellState.CRASHED),
            replace(base, known="copy_ lacks uint64"),
            replace(base, platform_id="lab-2"),
        ]
        groups = compat.grouped([base, *[replace(o, backend="cpu-usm") for o in others]])
        assert [len(g.failures) for g in groups] == [1] * 6

    def test_groups_come_in_the_order_of_their_first_failure(self) -> None:
        a, b = _failure("A"), _failure("B")
        groups = compat.grouped([a, b, replace(a, backend="cpu-usm")])
        assert [(g.first.message, g.backends) for g in groups] == [
            ("A", ("cpu", "cpu-usm")),
            ("B", ("cpu",)),
        ]


class TestHeadline:
    def test_a_run_of_marked_tests_only_speaks_of_those_tests(self, tmp_path: Path) -> None:
        results = [_own_test(b, OVERFLOW) for b in BACKENDS]
        results.append(_own_test("cpu", "", Outcome.PASSED, check="test_t.py::test_y"))
        matrix = _matrix(tmp_path, results)
        (line,) = compat.headlines(matrix)
        assert line.uint64_tables is None and line.breaking_encodings == ()
        assert (line.own_tests, line.own_tests_failing) == (2, 1)
        assert line.own_tests_failing_on == BACKENDS
        headline = to_markdown(matrix).split("\n\n")[1]
        assert headline == (
            "- **lab**: 5 run, 1 pass, **4 new failures**, 0 known, 0 crashed; marked tests: "
            "**1 of 2 fails** (on cpu, cpu-usm, cpu-tbi, cpu-placed)"
        )
        page = to_html(matrix)
        assert "marked tests: 1 of 2 fails (on cpu, cpu-usm, cpu-tbi, cpu-placed)" in page
        for text in (headline, page):
            assert "uint64 pointer tables" not in text and "encodings that break" not in text

    def test_a_run_of_scenarios_keeps_its_verdict_and_says_nothing_of_marked_tests(
        self, tmp_path: Path
    ) -> None:
        results = [result("a::test_x"), result("a::test_x", Outcome.FAILED, subject="int64/torch")]
        headline = to_markdown(build_matrix([report(tmp_path, "lab", results)])).split("\n\n")[1]
        assert headline == (
            "- **lab**: 2 run, 1 pass, **1 new failures**, 0 known, 0 crashed; "
            "uint64 pointer tables: **work**; encodings that break: int64"
        )

    def test_a_mixed_run_says_both(self, tmp_path: Path) -> None:
        results = [
            result("a::test_x"),
            _own_test("cpu", "", Outcome.PASSED),
            _own_test("cpu", "", Outcome.SKIPPED, check="test_t.py::test_y"),
        ]
        headline = to_markdown(_matrix(tmp_path, results)).split("\n\n")[1]
        assert headline.endswith(
            "; uint64 pointer tables: **work**; marked tests: **0 of 1 fail**"
        ), headline

    def test_marked_tests_that_were_all_skipped_did_not_run(self, tmp_path: Path) -> None:
        results = [_own_test("cpu", "no GPU", Outcome.SKIPPED)]
        headline = to_markdown(_matrix(tmp_path, results)).split("\n\n")[1]
        assert headline.endswith("; marked tests: **not run**"), headline


class TestPage:
    def test_a_marked_test_failing_alike_on_four_backends_is_one_group_rerun_by_pytest(
        self, tmp_path: Path
    ) -> None:
        messages = {b: f"{OVERFLOW} (placed at {to_hex(2**63)})" for b in BACKENDS}
        messages["cpu-usm"] = f"{OVERFLOW} (placed at {to_hex(2**63)}; last presented at 0xffff1)"
        matrix = _matrix(tmp_path, [_own_test(b, messages[b]) for b in BACKENDS])
        markdown = to_markdown(matrix)
        failures = markdown.split("## Failures\n\n")[1].split("\n## ")[0]
        assert failures.count("### ") == 1
        assert failures.startswith(
            "### (1) **FAIL** test_t.py::test_x · own test · lab: cpu, cpu-usm, cpu-tbi, "
            "cpu-placed\n"
        ), failures
        for backend in BACKENDS:
            assert f"- {backend}: {messages[backend]}" in failures
            assert (
                f"HYPOTHESIS_PROFILE=ci pytest 'test_t.py::test_x[{backend}]' "
                f"--backend={backend} --platform-name=lab --hypothesis-seed=1234\n"
            ) in failures
        assert "ptrport report repro" not in markdown
        assert "| **FAIL** (1) | **FAIL** (1) | **FAIL** (1) | **FAIL** (1) |" in markdown
        page = to_html(matrix)
        section = page.split('id="failures"')[1].split('id="grid"')[0]
        assert "Failures: 4 new, 0 known, in one group" in section
        assert section.count('class="failure"') == 1
        assert "cpu, cpu-usm, cpu-tbi, cpu-placed · test_t.py::test_x · own test" in section
        assert section.count("pytest &#x27;test_t.py::test_x[") == 4

    def test_a_scenarios_counterexample_the_same_on_each_backend_is_shown_once(
        self, tmp_path: Path
    ) -> None:
        example = {"dst": to_hex(2**63)}
        results = [
            result("a::test_x", Outcome.FAILED, on=b, message=OVERFLOW, example=example)
            for b in BACKENDS[:2]
        ]
        markdown = to_markdown(build_matrix([report(tmp_path, "lab", results)]))
        assert markdown.count("Minimal counterexample:") == 1
        assert markdown.count(" -o repro.py\n") == 2
        assert "Message: " + OVERFLOW in markdown
