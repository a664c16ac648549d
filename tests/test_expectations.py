"""Known failures: the expectations file, where its entries match, and when they go stale."""

from __future__ import annotations

from pathlib import Path

import pytest
from sample_reports import expectations_file, result, unwritten_report

from ptrport.report.expectations import (
    MATCHES_NO_RESULT,
    NOW_PASSES,
    Expectation,
    Expectations,
    ExpectationsError,
    load_expectations,
)
from ptrport.report.records import Outcome

CHECK = "table_round_trip::test_an_entry_reads_back_bit_exact"
OTHER_CHECK = "batch_copy::test_every_real_entry_is_copied"
ENTRY = f'[[known]]\ncheck = "{CHECK}"\nreason = "uint64 copy_ is missing"\n'


class TestLoading:
    def test_an_entry_reads_back_with_every_field(self, tmp_path: Path) -> None:
        loaded = expectations_file(
            tmp_path,
            ENTRY + f'[[known]]\ncheck = "{OTHER_CHECK}"\nsubjects = ["uint64/torch"]\n'
            'backends = ["xpu"]\nplatforms = ["intel-max-1550"]\nreason = "r"\n'
            'issue = "https://github.com/pytorch/pytorch/issues/12345"\n',
        )
        assert loaded.path == tmp_path / "expectations.toml"
        assert loaded.entries == (
            Expectation(check=CHECK, reason="uint64 copy_ is missing", index=0),
            Expectation(
                check=OTHER_CHECK,
                subjects=("uint64/torch",),
                backends=("xpu",),
                platforms=("intel-max-1550",),
                reason="r",
                issue="https://github.com/pytorch/pytorch/issues/12345",
                index=1,
            ),
        )

    def test_an_empty_file_expects_nothing(self, tmp_path: Path) -> None:
        assert expectations_file(tmp_path, "# no known failures\n").entries == ()

    def test_no_file_means_no_expectations(self) -> None:
        none = Expectations.none()
        assert none.path is None
        assert none.entries == ()
        assert none.find("cpu-x86-64", result(CHECK, Outcome.FAILED, on="xpu")) is None

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ('[[known]\ncheck = "x"\n', "not valid TOML (Expected ']]' at the end"),
            ("[[known]]\nreason = 'r'\n", "known[0]: 'check' is required"),
            (ENTRY + f"[[known]]\ncheck = '{CHECK}'\n", "known[1]: 'reason' is required"),
            (f"[[known]]\ncheck = '{CHECK}'\nreason = ' '\n", "known[0].reason must be a non-"),
            ("[[known]]\ncheck = 3\nreason = 'r'\n", "known[0].check must be a non-empty string"),
            (ENTRY + "subjekt = ['uint64/torch']\n", "known[0]: unknown key 'subjekt'"),
            (ENTRY + "backends = 'xpu'\n", "known[0].backends must be a list of strings"),
            (ENTRY + "subjects = [1, 2]\n", "known[0].subjects must be a list of strings"),
            (ENTRY + "platforms = []\n", "known[0].platforms is empty; leave it out"),
            (ENTRY + "issue = 'javascript:alert(1)'\n", "known[0].issue must be an http://"),
            (ENTRY + "issue = 'https://x.org/a b'\n", "known[0].issue must be an http://"),
            (ENTRY + "issue = 12345\n", "known[0].issue must be an http:// or https:// URL"),
            ("[settings]\nstrict = true\n", "unknown top-level key 'settings'"),
            ("known = 'everything'\n", "'known' must be an array of tables"),
            ("known = [1, 2]\n", "'known' must be an array of tables"),
        ],
    )
    def test_a_bad_file_is_refused_in_one_line_naming_the_file_and_the_problem(
        self, tmp_path: Path, text: str, problem: str
    ) -> None:
        path = tmp_path / "expectations.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ExpectationsError) as refused:
            load_expectations(path)
        message = str(refused.value)
        assert message.startswith(f"{path}: ")
        assert problem in message
        assert "\n" not in message

    def test_a_file_that_cannot_be_read_is_refused_naming_it(self, tmp_path: Path) -> None:
        path = tmp_path / "expectations.toml"
        path.write_bytes(b"\xff\xfe[[known]]")
        with pytest.raises(ExpectationsError, match=r"expectations\.toml: cannot read it: "):
            load_expectations(path)
        with pytest.raises(ExpectationsError, match=r"missing\.toml: cannot read it: "):
            load_expectations(tmp_path / "missing.toml")


class TestMatching:
    def test_an_entry_without_filters_matches_its_check_everywhere(self, tmp_path: Path) -> None:
        (entry,) = expectations_file(tmp_path, ENTRY).entries
        assert entry.matches("cpu-x86-64", result(CHECK, Outcome.FAILED, on="cpu"))
        assert entry.matches("lab-2", result(CHECK, Outcome.ERROR, subject="int64/torch", on="xpu"))
        assert entry.matches("lab-3", result(CHECK, Outcome.CRASHED, subject=None, on="xpu"))
        assert not entry.matches("lab-1", result(OTHER_CHECK, Outcome.FAILED, on="xpu"))

    @pytest.mark.parametrize(
        ("platform_id", "subject_name", "backend_name", "matched"),
        [
            ("intel-max-1550", "uint64/torch", "xpu", True),
            ("intel-max-1550", "int64-bitcast/torch", "xpu", True),
            ("intel-max-1550", "int64/torch", "xpu", False),
            ("intel-max-1550", None, "xpu", False),
            ("intel-max-1550", "uint64/torch", "cpu", False),
            ("intel-arc-a770", "uint64/torch", "xpu", False),
        ],
    )
    def test_subject_backend_and_platform_filters_each_narrow_the_match(
        self,
        tmp_path: Path,
        platform_id: str,
        subject_name: str | None,
        backend_name: str,
        matched: bool,
    ) -> None:
        (entry,) = expectations_file(
            tmp_path,
            ENTRY + 'subjects = ["uint64/torch", "int64-bitcast/torch"]\n'
            'backends = ["xpu"]\nplatforms = ["intel-max-1550"]\n',
        ).entries
        failed = result(CHECK, Outcome.FAILED, subject=subject_name, on=backend_name)
        assert entry.matches(platform_id, failed) is matched

    @pytest.mark.parametrize("outcome", list(Outcome))
    def test_only_failures_errors_crashes_and_timeouts_can_be_known(
        self, tmp_path: Path, outcome: Outcome
    ) -> None:
        (entry,) = expectations_file(tmp_path, ENTRY).entries
        known = outcome in (Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMED_OUT)
        assert entry.matches("lab-1", result(CHECK, outcome, on="xpu")) is known

    def test_find_gives_the_first_entry_that_matches(self, tmp_path: Path) -> None:
        expectations = expectations_file(
            tmp_path,
            ENTRY.replace("[[known]]", "[[known]]\nbackends = ['cuda']") + ENTRY + ENTRY,
        )
        found = expectations.find("lab-1", result(CHECK, Outcome.FAILED, on="xpu"))
        assert found is not None
        assert found.index == 1
        assert expectations.find("lab-1", result(CHECK, Outcome.PASSED, on="xpu")) is None


class TestKnownChecks:
    def test_checks_that_some_report_has_are_accepted(self, tmp_path: Path) -> None:
        expectations = expectations_file(tmp_path, ENTRY)
        reports = [
            unwritten_report("lab-1", [result(OTHER_CHECK, Outcome.PASSED, on="xpu")]),
            unwritten_report("lab-2", [result(CHECK, Outcome.FAILED, on="xpu")]),
        ]
        expectations.check_known_checks(reports)

    def test_a_check_in_none_of_the_reports_is_refused_naming_the_entry(
        self, tmp_path: Path
    ) -> None:
        typo = CHECK.replace("bit_exact", "bitexact")
        expectations = expectations_file(tmp_path, ENTRY + ENTRY.replace(CHECK, typo))
        with pytest.raises(ExpectationsError) as refused:
            expectations.check_known_checks(
                [unwritten_report("lab-1", [result(CHECK, Outcome.PASSED, on="xpu")])]
            )
        assert str(refused.value) == (
            f"{expectations.path}: known[1]: check {typo!r} is in none of the reports; "
            f"did you mean {CHECK!r}?"
        )


class TestStale:
    def test_an_entry_that_names_no_result_is_stale(self, tmp_path: Path) -> None:
        expectations = expectations_file(
            tmp_path, ENTRY + "platforms = ['intel-arc-a770']\nbackends = ['cuda']\n"
        )
        reports = [unwritten_report("intel-arc-a770", [result(CHECK, Outcome.FAILED, on="xpu")])]
        assert expectations.stale(reports) == [(expectations.entries[0], MATCHES_NO_RESULT)]
        assert expectations.unchecked(reports) == []

    def test_an_entry_for_platforms_without_a_report_is_not_checked_rather_than_stale(
        self, tmp_path: Path
    ) -> None:
        # A local matrix of the CPU kinds says nothing about the ipex entries.
        expectations = expectations_file(
            tmp_path,
            ENTRY + "platforms = ['ipex', 'intel-max-1550']\n" + ENTRY + "platforms = ['lab-1']\n",
        )
        lab = [unwritten_report("lab-1", [result(CHECK, Outcome.PASSED, on="xpu")])]
        assert expectations.unchecked(lab) == [expectations.entries[0]]
        assert expectations.stale(lab) == [(expectations.entries[1], NOW_PASSES)]
        with_ipex = [*lab, unwritten_report("ipex", [result(CHECK, Outcome.FAILED, on="xpu")])]
        assert expectations.unchecked(with_ipex) == []
        assert expectations.stale(with_ipex) == [(expectations.entries[1], NOW_PASSES)]

    def test_an_entry_whose_check_now_passes_everywhere_it_names_is_stale(
        self, tmp_path: Path
    ) -> None:
        expectations = expectations_file(tmp_path, ENTRY + "backends = ['xpu']\n")
        reports = [
            unwritten_report(
                "lab-1",
                [result(CHECK, Outcome.PASSED, on="xpu"), result(CHECK, Outcome.XFAILED, on="xpu")],
            ),
            unwritten_report(
                "lab-2",
                [result(CHECK, Outcome.PASSED, on="xpu"), result(CHECK, Outcome.FAILED, on="cpu")],
            ),
        ]
        assert expectations.stale(reports) == [(expectations.entries[0], NOW_PASSES)]

    def test_an_entry_still_failing_on_one_platform_is_kept(self, tmp_path: Path) -> None:
        expectations = expectations_file(tmp_path, ENTRY)
        reports = [
            unwritten_report("lab-1", [result(CHECK, Outcome.PASSED, on="xpu")]),
            unwritten_report("lab-2", [result(CHECK, Outcome.CRASHED, on="xpu")]),
        ]
        assert expectations.stale(reports) == []

    def test_an_entry_whose_results_did_not_run_is_kept(self, tmp_path: Path) -> None:
        expectations = expectations_file(tmp_path, ENTRY)
        reports = [
            unwritten_report("lab-1", [result(CHECK, Outcome.PASSED, on="xpu")]),
            unwritten_report("lab-2", [result(CHECK, Outcome.UNAVAILABLE, on="xpu")]),
        ]
        assert expectations.stale(reports) == []
