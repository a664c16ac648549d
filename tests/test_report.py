"""Results and platform reports: records in, JSON out, validated on the way back in."""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
from sample_reports import HIGH_ADDRESS, OVERFLOW, document, result, run_info

from ptrport.check.batches import Batch, Entry
from ptrport.errors import exception_message
from ptrport.report import schema
from ptrport.report.platform_report import (
    FINISHED,
    INTERRUPTED,
    RUNNING,
    SCHEMA,
    PlatformReport,
    ReportError,
    ReportWriter,
    journal_path,
    kept_results,
    load_report,
    rewrite_report,
    totals,
    write_json_atomically,
    write_report,
)
from ptrport.report.records import Outcome, Result, describe, describe_example

BODY = "ptrport.check.checks:an_entry_reads_back_bit_exact"
RESULTS = [
    result("table_round_trip::x", body=BODY),
    result(
        "table_round_trip::x",
        Outcome.XFAILED,
        subject="int64/torch",
        message=OVERFLOW,
        example=HIGH_ADDRESS,
        body=BODY,
    ),
]


EARLIER = tuple(
    result("table_round_trip::x", on=on, subject=subject)
    for on in ("cpu", "cpu-usm")
    for subject in ("uint64/torch", "int64/torch")
)
"""A report's results, as a partial run finds them."""
RERUN = replace(EARLIER[2], outcome=Outcome.FAILED, message=OVERFLOW)
"""The partial run's result of one of them: ``uint64/torch`` on ``cpu-usm``, failing now."""


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


def _written(directory: Path) -> Path:
    """The finished report of ``RESULTS`` on ``lab-1``, written to ``directory``."""
    return write_report(document("lab-1", RESULTS), directory)


class TestRecords:
    @pytest.mark.parametrize(
        ("key", "value", "expected"),
        [
            ("address", 2**63, "0x8000000000000000"),
            ("src", 2**64 - 1, "0xffffffffffffffff"),
            ("dst", 2**63 - 1, "0x7fffffffffffffff"),
            ("base_ptr", 0xFFFF85ABD4E00000, "0xffff85abd4e00000"),
            ("nbytes", 2**63, 2**63),
            ("capacity", 0, 0),
            ("flag", True, True),
            ("dtype", torch.float16, "float16"),
        ],
    )
    def test_describe_shows_addresses_in_hex_and_other_values_as_they_are(
        self, key: str, value: object, expected: object
    ) -> None:
        assert describe(value, key) == expected

    def test_describe_example_renders_batches_entry_by_entry(self) -> None:
        batch = Batch((Entry(2**63, 2**64 - 4096, 0),))
        assert describe_example({"batch": batch, "addresses": [1, 2**63]}) == {
            "batch": {
                "type": "batch",
                "entries": [
                    {
                        "type": "entry",
                        "src": "0x8000000000000000",
                        "dst": "0xfffffffffffff000",
                        "nbytes": 0,
                        "synthetic": True,
                    }
                ],
            },
            "addresses": ["0x0000000000000001", "0x8000000000000000"],
        }

    def test_exception_message_is_the_type_and_first_line(self) -> None:
        assert exception_message(OverflowError("too large\nmore")) == "OverflowError: too large"
        assert exception_message(AssertionError()) == "AssertionError"
        group = ExceptionGroup("two", [ValueError("a"), ExceptionGroup("in", [KeyError("b")])])
        assert exception_message(group) == "ValueError: a (and 1 more distinct failures)"

    def test_a_result_survives_its_record(self) -> None:
        for original in RESULTS:
            assert Result.from_record(original.to_record()) == original

    def test_totals_list_every_outcome(self) -> None:
        assert totals(RESULTS) == {o.value: 0 for o in Outcome} | {"passed": 1, "xfailed": 1}


class TestSchema:
    def test_the_schema_file_is_valid_json_schema(self) -> None:
        jsonschema.Draft202012Validator.check_schema(schema.load_schema("report-2"))

    def test_a_written_report_is_valid_for_the_reference_validator_too(
        self, tmp_path: Path
    ) -> None:
        document = json.loads(_written(tmp_path).read_text())
        jsonschema.Draft202012Validator(schema.load_schema("report-2")).validate(document)
        assert schema.errors(document, schema.load_schema("report-2")) == []

    @pytest.mark.parametrize(
        ("change", "problem"),
        [
            (lambda d: d.pop("results"), "(top level): 'results' is missing"),
            (lambda d: d.update(extra=1), "(top level): 'extra' is not allowed"),
            (
                lambda d: d["results"][1].update(outcome="bogus"),
                "results[1].outcome: 'bogus' is not one of passed, failed",
            ),
            (
                lambda d: d["results"][0].update(examples=-1),
                "results[0].examples: -1 is less than 0",
            ),
            (
                lambda d: d["results"][0].update(examples=True),
                "results[0].examples: true is not of type integer",
            ),
            (
                lambda d: d["platform"].update(id="../x"),
                "platform.id: '../x' does not match",
            ),
            (
                lambda d: d["execution_target"].update(kind="tpu"),
                "execution_target.kind: 'tpu' is not one of cpu, gpu, other",
            ),
        ],
    )
    def test_the_validator_names_the_first_problem_and_where_it_is(
        self, tmp_path: Path, change: Any, problem: str
    ) -> None:
        document = json.loads(_written(tmp_path).read_text())
        change(document)
        found = schema.errors(document, schema.load_schema("report-2"))
        assert found and found[0].startswith(problem)
        reference = jsonschema.Draft202012Validator(schema.load_schema("report-2"))
        assert not reference.is_valid(document)


class TestWriting:
    def test_a_report_is_written_atomically_under_its_platform_id(self, tmp_path: Path) -> None:
        path = _written(tmp_path / "reports")
        assert path == tmp_path / "reports" / "lab-1.json"
        written = json.loads(path.read_text())
        assert written["schema"] == SCHEMA
        assert written["complete"] is True
        assert written["totals"]["xfailed"] == 1
        assert list((tmp_path / "reports").iterdir()) == [path]

    def test_the_writer_keeps_an_incomplete_report_and_a_journal_until_it_finishes(
        self, tmp_path: Path
    ) -> None:
        writer = ReportWriter(tmp_path, document("lab-1", [], status=RUNNING))
        writer.add(RESULTS[0])
        during = load_report(writer.path)
        assert during.complete is False
        assert during.results == (RESULTS[0],)
        assert journal_path(writer.path).exists()
        writer.add(RESULTS[1])
        path = writer.finish(run_info())
        after = load_report(path)
        assert after.complete is True
        assert after.results == tuple(RESULTS)
        assert after.run["status"] == FINISHED
        assert not journal_path(path).exists()

    def test_an_interrupted_run_keeps_its_results_marked_incomplete(self, tmp_path: Path) -> None:
        writer = ReportWriter(tmp_path, document("lab-1", [], status=RUNNING))
        writer.add(RESULTS[0])
        interrupted = run_info(
            INTERRUPTED,
            seed="1",
            subjects=(),
            finished="2026-12-02T00:00:30+00:00",
            duration_s=30.0,
        )
        report = load_report(writer.finish(interrupted))
        assert report.complete is False
        assert report.run["status"] == INTERRUPTED
        assert report.results == (RESULTS[0],)

    def test_a_journal_line_cut_off_mid_write_is_left_out(self, tmp_path: Path) -> None:
        writer = ReportWriter(tmp_path, document("lab-1", [], status=RUNNING))
        writer.add(RESULTS[0])
        writer.add(RESULTS[1])
        journal = journal_path(writer.path)
        text = journal.read_text()
        journal.write_text(text[: len(text) - 40])
        assert load_report(writer.path).results == (RESULTS[0],)

    @pytest.mark.parametrize("umask", [0o022, 0o077, 0o002], ids=oct)
    def test_a_report_and_its_journal_have_the_permissions_of_a_plain_open(
        self, tmp_path: Path, umask: int
    ) -> None:
        previous = os.umask(umask)
        try:
            writer = ReportWriter(tmp_path, document("lab-1", [], status=RUNNING))
            writer.add(RESULTS[0])
            journal = journal_path(writer.path)
            during = _mode(writer.path), _mode(journal)
            path = writer.finish(run_info())
        finally:
            os.umask(previous)
        wanted = oct(0o666 & ~umask)
        assert during == (wanted, wanted)
        assert _mode(path) == wanted
        assert [p.name for p in tmp_path.iterdir()] == ["lab-1.json"]


class TestPartialRuns:
    """A partial run's writer: the results it keeps from the report it found are in the file
    from its first write on, and its own replace those of the same checks."""

    def _earlier(self, directory: Path) -> PlatformReport:
        return load_report(write_report(document("lab-1", EARLIER), directory))

    def test_the_kept_results_name_the_run_they_came_from_and_keep_an_older_origin(
        self, tmp_path: Path
    ) -> None:
        older = {"started": "2026-11-30T00:00:00+00:00", "hypothesis_profile": "dev", "seed": "7"}
        earlier = self._earlier(tmp_path)
        earlier = replace(
            earlier, results=(replace(earlier.results[0], from_run=older), *earlier.results[1:])
        )
        kept = kept_results(earlier)
        run = {
            "started": earlier.run["started"],
            "hypothesis_profile": "ci",
            "seed": "derandomized",
        }
        assert [r.from_run for r in kept] == [older, run, run, run]
        assert tuple(replace(r, from_run=None) for r in kept) == EARLIER

    def test_the_kept_results_are_written_first_and_a_new_one_replaces_its_check_in_place(
        self, tmp_path: Path
    ) -> None:
        kept = kept_results(self._earlier(tmp_path))
        writer = ReportWriter(tmp_path, document("lab-1", [], status=RUNNING), kept)
        assert load_report(writer.path).results == kept
        writer.add(RERUN)
        during = load_report(writer.path)
        assert during.results == (*kept[:2], RERUN, kept[3])
        after = load_report(writer.finish(run_info()))
        assert after.results == during.results
        assert after.totals["failed"] == 1 and after.complete is True
        written = json.loads(writer.path.read_text())
        assert ["from_run" in r for r in written["results"]] == [True, True, False, True]
        jsonschema.Draft202012Validator(schema.load_schema("report-2")).validate(written)

    def test_a_killed_partial_run_is_read_with_its_journal_in_place_of_the_kept_results(
        self, tmp_path: Path
    ) -> None:
        kept = kept_results(self._earlier(tmp_path))
        writer = ReportWriter(tmp_path, document("lab-1", [], status=RUNNING), kept)
        new_check = result("table_round_trip::y", on="cpu")
        writer.add(RERUN)
        writer.add(new_check)
        del writer  # killed: no finish()
        in_the_file = json.loads((tmp_path / "lab-1.json").read_text())["results"]
        assert [Result.from_record(r) for r in in_the_file] == list(kept)
        read = load_report(tmp_path / "lab-1.json")
        assert read.complete is False
        assert read.results == (*kept[:2], RERUN, kept[3], new_check)

    def test_a_new_check_of_a_partial_run_follows_the_kept_ones(self, tmp_path: Path) -> None:
        kept = kept_results(self._earlier(tmp_path))
        writer = ReportWriter(tmp_path, document("lab-1", [], status=RUNNING), kept)
        new_check = result("table_round_trip::y", on="cpu")
        writer.add(new_check)
        assert load_report(writer.finish(run_info())).results == (*kept, new_check)


class TestRewriting:
    def _killed(self, path: Path) -> Path:
        """A report of ``lab-1`` killed after its first result, at ``path`` (named otherwise
        than by its platform id), the second result in its journal."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomically(path, document("lab-1", RESULTS[:1], status=RUNNING))
        journal_path(path).write_text(json.dumps(RESULTS[1].to_record()) + "\n")
        return path

    def test_it_writes_the_path_given_and_folds_the_journal_in(self, tmp_path: Path) -> None:
        path = self._killed(tmp_path / "night" / "copied.json")
        seen: list[tuple[Result, ...]] = []

        def change(report: PlatformReport) -> PlatformReport:
            seen.append(report.results)
            return replace(report, benchmarks=None, results=report.results[::-1])

        written = rewrite_report(path, change)
        assert seen == [tuple(RESULTS)]
        assert sorted(p.name for p in path.parent.iterdir()) == ["copied.json"]
        assert load_report(path) == written
        assert written.results == tuple(RESULTS[::-1])
        assert written.complete is False

    def test_a_change_that_does_not_fit_the_schema_leaves_file_and_journal(
        self, tmp_path: Path
    ) -> None:
        path = self._killed(tmp_path / "copied.json")
        before = path.read_bytes(), journal_path(path).read_bytes()
        with pytest.raises(ReportError, match=r"copied.json: .*benchmarks"):
            rewrite_report(path, lambda report: replace(report, benchmarks={"measured": 1}))
        assert (path.read_bytes(), journal_path(path).read_bytes()) == before


class TestRefusals:
    def test_a_report_truncated_in_the_middle_is_refused_in_one_line(self, tmp_path: Path) -> None:
        path = _written(tmp_path)
        text = path.read_text()
        path.write_text(text[: len(text) // 2])
        with pytest.raises(ReportError) as refused:
            load_report(path)
        message = str(refused.value)
        assert message.startswith(f"{path}: not valid JSON (")
        assert "truncated or corrupted" in message
        assert "\n" not in message

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ("[]", "not a ptrport report (no 'schema' field)"),
            ('{"schema": "ptrport.report/0"}', "schema 'ptrport.report/0' is not supported"),
            ('{"schema": "ptrport.report/1"}', "(top level): 'complete' is missing"),
            ("", "not valid JSON"),
        ],
    )
    def test_a_file_that_is_not_a_v1_report_is_refused_naming_the_file(
        self, tmp_path: Path, text: str, problem: str
    ) -> None:
        path = tmp_path / "bad.json"
        path.write_text(text)
        with pytest.raises(ReportError, match=f"^{re.escape(str(path))}: ") as refused:
            load_report(path)
        assert problem in str(refused.value)

    def test_a_missing_file_is_refused_naming_it(self, tmp_path: Path) -> None:
        with pytest.raises(ReportError, match=re.escape("missing.json: cannot read it")):
            load_report(tmp_path / "missing.json")

    def test_a_corrupted_journal_line_before_the_last_is_refused(self, tmp_path: Path) -> None:
        writer = ReportWriter(tmp_path, document("lab-1", [], status=RUNNING))
        writer.add(RESULTS[0])
        writer.add(RESULTS[1])
        journal = journal_path(writer.path)
        lines = journal.read_text().splitlines()
        journal.write_text("\n".join(["{oops", *lines[1:]]) + "\n")
        with pytest.raises(ReportError, match=re.escape("results.jsonl: line 1 is not valid JSON")):
            load_report(writer.path)
