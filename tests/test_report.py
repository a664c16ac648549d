"""Results and platform reports: plain data in, JSON out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.batches import Batch, Entry
from harness.records import Outcome, Result, describe, describe_example, exception_message
from harness.report import SCHEMA, RunInfo, build_report, totals, write_report

RUN = RunInfo(
    started="2026-12-02T00:00:00+00:00",
    finished="2026-12-02T00:01:00+00:00",
    duration_s=60.0,
    hypothesis_profile="ci",
    seed="derandomized",
    backend_spec="cpu",
    subjects=("uint64/torch",),
)


def _result(outcome: Outcome, subject: str = "uint64/torch") -> Result:
    return Result(
        check="table_round_trip::test_x",
        scenario="table_round_trip",
        subject=subject,
        backend="cpu",
        outcome=outcome,
    )


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
    key: str, value: object, expected: object
) -> None:
    assert describe(value, key) == expected


def test_describe_example_renders_batches_entry_by_entry() -> None:
    batch = Batch((Entry(2**63, 2**64 - 4096, 0),))
    assert describe_example({"batch": batch, "addresses": [1, 2**63]}) == {
        "batch": [
            {
                "src": "0x8000000000000000",
                "dst": "0xfffffffffffff000",
                "nbytes": 0,
                "synthetic": True,
            }
        ],
        "addresses": ["0x0000000000000001", "0x8000000000000000"],
    }


def test_exception_message_is_the_type_and_first_line() -> None:
    assert exception_message(OverflowError("too large\nmore")) == "OverflowError: too large"
    assert exception_message(AssertionError()) == "AssertionError"
    group = ExceptionGroup("two", [ValueError("a"), ExceptionGroup("inner", [KeyError("b")])])
    assert exception_message(group) == "ValueError: a (and 1 more distinct failures)"


def test_totals_list_every_outcome() -> None:
    counted = totals([_result(Outcome.PASSED), _result(Outcome.XFAILED, "int64/torch")])
    assert counted == {o.value: 0 for o in Outcome} | {"passed": 1, "xfailed": 1}


def test_a_report_is_written_atomically_under_its_platform_id(tmp_path: Path) -> None:
    results = [_result(Outcome.PASSED), _result(Outcome.XFAILED, "int64/torch")]
    report = build_report(
        platform_id="lab-1", fingerprint={"software": {}}, run=RUN, results=results
    )
    path = write_report(report, tmp_path / "reports")
    assert path == tmp_path / "reports" / "lab-1.json"
    written = json.loads(path.read_text())
    assert written["schema"] == SCHEMA
    assert written["platform"]["id"] == "lab-1"
    assert written["totals"]["xfailed"] == 1
    assert [r["subject"] for r in written["results"]] == ["uint64/torch", "int64/torch"]
    assert list((tmp_path / "reports").iterdir()) == [path]
