"""The controls catalogue: each control's bug is real on real tables, verdicts read results
right, and ``pytest --controls`` catches what it runs and reports what it does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from ptrport.addresses import HIGH_HALF, MAX_ADDRESS
from ptrport.check import controls
from ptrport.check.batches import Batch, Entry
from ptrport.check.subjects import AddressQueries, builtin_subjects
from ptrport.device.allocations import allocate
from ptrport.device.backends import (
    CpuBackend,
    CpuTbiBackend,
    CpuUsmBackend,
    CudaBackend,
    XpuBackend,
)
from ptrport.device.presentation import DeviceFault
from ptrport.errors import HarnessError, UnsafeDereference
from ptrport.report.records import Outcome, Result
from tests.scenario_runs import SCENARIOS, copy_scenarios, use_profile

CPU = CpuBackend()
USM = CpuUsmBackend()
TBI = CpuTbiBackend()


def _control(name: str) -> Any:
    return controls.catalogue()[name]


def _round_trip(subject: Any, entries: list[Entry]) -> list[tuple[int, int, int]]:
    subject.create(len(entries), CPU)
    subject.stage(Batch(tuple(entries)))
    subject.transfer(len(entries))
    rows: list[tuple[int, int, int]] = subject.read_back(len(entries))
    return rows


# -- the catalogue ----------------------------------------------------------------------------


def test_the_catalogue_holds_the_int64_controls_and_every_known_mistake() -> None:
    names = list(controls.catalogue())
    assert names[:3] == ["int64/triton", "int64/torch", "int64/ctypes"]
    assert set(names[3:]) == {
        "float64",
        "int32-truncated",
        "signed-order",
        "signed-range",
        "signed-shift",
        "int32-sizes",
        "unsynchronized-read",
        "stage-past-capacity",
        "transfer-n-plus-one",
        "fixed-block-copy",
        "48-bit-address",
        "end-mask-wrap",
        "signed-bounds",
    }


def test_every_control_says_what_it_gets_wrong_what_exposes_it_and_where() -> None:
    scenarios = {p.stem.removeprefix("test_") for p in SCENARIOS.glob("test_*.py")}
    for name, subject in controls.catalogue().items():
        assert subject.description and "\n" not in subject.description, name
        assert controls.exposing(subject), name
        assert subject.exposed_by, name
        for where in subject.exposed_by:
            assert where.split("::")[0] in scenarios, (name, where)


def test_catalogue_controls_are_not_run_by_default() -> None:
    default = builtin_subjects()
    extra = set(controls.catalogue()) - set(default)
    assert "float64" in extra and "int64/torch" not in extra


def test_a_check_exposes_a_control_by_scenario_or_by_check_id() -> None:
    exposed_by = frozenset({"table_round_trip", "buffer_creation::test_x"})
    assert controls.exposes(exposed_by, "table_round_trip", "table_round_trip::test_any")
    assert controls.exposes(exposed_by, "buffer_creation", "buffer_creation::test_x")
    assert not controls.exposes(exposed_by, "buffer_creation", "buffer_creation::test_y")


# -- each bug is real -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "address"), [("float64", (1 << 53) + 1), ("int32-truncated", 1 << 32)]
)
def test_storage_controls_lose_an_address_just_past_what_they_hold(name: str, address: int) -> None:
    subject = _control(name)
    fits = address - 1
    assert _round_trip(subject, [Entry(fits, fits, 0)]) == [(fits, fits, 0)]
    assert _round_trip(subject, [Entry(address, 0, 0)])[0][0] != address


def test_the_int64_control_refuses_the_first_high_address() -> None:
    subject = _control("int64/torch")
    assert _round_trip(subject, [Entry(HIGH_HALF - 1, 0, 0)]) == [(HIGH_HALF - 1, 0, 0)]
    with pytest.raises(OverflowError):
        _round_trip(subject, [Entry(HIGH_HALF, 0, 0)])


def test_int32_sizes_cannot_describe_a_copy_of_2_gib_without_allocating_it() -> None:
    subject = _control("int32-sizes")
    table = subject.create(1, CPU)
    assert table.sizes.host.dtype == torch.int32
    assert _round_trip(subject, [Entry(0x1000, 0x2000, 2**31 - 1)])[0][2] == 2**31 - 1
    with pytest.raises(OverflowError):
        _round_trip(subject, [Entry(0x1000, 0x2000, 2**31)])


@pytest.mark.parametrize("name", ["signed-order", "signed-range", "signed-shift"])
def test_signed_controls_answer_right_below_2_63_and_wrong_above(name: str) -> None:
    subject = _control(name)
    assert isinstance(subject, AddressQueries)
    low, high = [0x1000, 0x7FFF_FFFF_FFFF_F000], [0x1000, HIGH_HALF, MAX_ADDRESS]

    def answers(addresses: list[int]) -> tuple[object, object]:
        _round_trip(subject, [Entry(a, 0, 0) for a in addresses])
        n = len(addresses)
        if name == "signed-order":
            return subject.order(n), sorted(range(n), key=lambda i: addresses[i])
        if name == "signed-range":
            base = addresses[-1]
            return subject.in_range(n, base, 1), [a == base for a in addresses]
        return subject.high_bits(n, 4), [a >> 4 for a in addresses]

    got, expected = answers(low)
    assert got == expected
    got, expected = answers(high)
    assert got != expected


def test_staging_past_the_capacity_is_silently_accepted_by_its_control() -> None:
    entries = [Entry(0x1000 * i, 0, 0) for i in range(1, 4)]
    subject = _control("stage-past-capacity")
    subject.create(2, CPU)
    subject.stage(Batch(tuple(entries)))
    fixed = builtin_subjects()["uint64/torch"]
    fixed.create(2, CPU)
    with pytest.raises(Exception, match="capacity is 2"):
        fixed.stage(Batch(tuple(entries)))


def test_transfer_n_plus_one_moves_one_entry_too_many() -> None:
    subject = _control("transfer-n-plus-one")
    table = subject.create(3, CPU)
    subject.stage(Batch(tuple(Entry(0x1000 * i, 0x10, 8) for i in range(1, 4))))
    subject.transfer(1)
    assert table.device_entries(3)[1] == (0x2000, 0x10, 8)


def test_a_fixed_block_copy_writes_past_a_short_entry_inside_its_payload() -> None:
    source = allocate(CPU, numel=128, fill_seed=3)
    target = allocate(CPU, numel=128, fill_seed=4)
    before = target.snapshot()
    subject = _control("fixed-block-copy")
    subject.create(1, CPU)
    subject.stage(Batch((Entry(source.address, target.address, 1, source, target),)))
    subject.transfer(1)
    subject.execute(1)
    after = target.snapshot()
    assert torch.equal(after[: controls.FIXED_BLOCK], source.snapshot()[: controls.FIXED_BLOCK])
    assert not torch.equal(after[1 : controls.FIXED_BLOCK], before[1 : controls.FIXED_BLOCK])
    assert torch.equal(after[controls.FIXED_BLOCK :], before[controls.FIXED_BLOCK :])
    assert target.guards_intact()


def test_the_unsynchronized_read_is_not_applicable_where_copies_are_synchronous() -> None:
    subject = _control("unsynchronized-read")
    reason = subject.not_applicable(CPU)
    assert reason is not None and "cpu" in reason
    assert subject.unavailable_reason(CPU) == f"not applicable: {reason}"
    assert subject.not_applicable(CudaBackend()) is None or not CudaBackend().can_pin


def _copy_one(subject: Any, backend: CpuBackend) -> tuple[Any, Any, Entry]:
    """Stage, transfer and execute one real entry of 24 bytes on ``backend``, in its scope."""
    with backend.running():
        source = allocate(backend, numel=64, fill_seed=5)
        target = allocate(backend, numel=64, fill_seed=6)
        entry = Entry(source.address + 8, target.address + 16, 24, source, target)
        subject.create(1, backend)
        subject.stage(Batch((entry,)))
        subject.transfer(1)
        subject.execute(1)
    return source, target, entry


def test_the_48_bit_address_copy_is_exact_for_lower_half_addresses() -> None:
    pytest.importorskip("triton")
    source, target, _ = _copy_one(_control("48-bit-address"), CPU)
    assert torch.equal(target.snapshot()[16:40], source.snapshot()[8:32])
    assert target.guards_intact()


# (Not named ``backend``: the plugin parametrizes arguments of that name.)
@pytest.mark.parametrize("upper", [USM, TBI], ids=lambda b: b.name)
def test_the_48_bit_address_copy_faults_at_the_address_it_made_from_an_upper_half_one(
    upper: CpuBackend,
) -> None:
    pytest.importorskip("triton")
    subject = _control("48-bit-address")
    with pytest.raises(DeviceFault, match=r"load of 1 byte at 0x0000[0-9a-f]{12}, which is no"):
        _copy_one(subject, upper)


def test_the_48_bit_address_control_applies_only_where_real_addresses_are_high() -> None:
    subject = _control("48-bit-address")
    assert "lie in the lower half" in (subject.not_applicable(CPU) or "")
    assert subject.not_applicable(CudaBackend()) is not None
    assert [subject.not_applicable(b) for b in (USM, TBI, XpuBackend())] == [None] * 3


def test_an_int64_control_must_also_fail_real_copies_in_the_upper_half() -> None:
    subject = _control("int64/torch")
    assert "batch_copy" not in controls.must_catch(subject, CPU)
    assert "batch_copy" in controls.must_catch(subject, USM)
    assert controls.must_catch(subject, USM) >= subject.exposed_by


# -- verdicts and the table -------------------------------------------------------------------


def _result(check: str, subject: str, outcome: Outcome, **more: Any) -> Result:
    scenario = check.split("::")[0]
    return Result(
        check=check, scenario=scenario, subject=subject, backend="cpu", outcome=outcome, **more
    )


def test_a_control_is_caught_by_the_exposing_check_that_needed_fewest_examples() -> None:
    subject = _control("transfer-n-plus-one")
    check = controls.OFFSETS
    results = [
        _result(check, subject.name, Outcome.XFAILED, found_after=7, examples=90, example={"n": 0}),
        _result("batch_copy::test_x", subject.name, Outcome.PASSED),
    ]
    verdict = controls.verdict(subject, CPU, results)
    assert verdict.state == controls.State.CAUGHT
    assert (verdict.check, verdict.found_after, verdict.counterexample) == (check, 7, {"n": 0})
    assert (verdict.caught_in, verdict.exposing_ran) == (1, 1)


def test_a_control_none_of_whose_exposing_checks_ran_is_missed() -> None:
    subject = _control("transfer-n-plus-one")
    other = _result("batch_copy::test_x", subject.name, Outcome.PASSED)
    verdict = controls.verdict(subject, CPU, [other])
    assert verdict.missed and "no check that catches it ran" in (verdict.reason or "")


def test_a_control_that_passed_where_it_must_fail_is_missed() -> None:
    subject = _control("transfer-n-plus-one")
    passed = _result(controls.OFFSETS, subject.name, Outcome.XPASSED)
    verdict = controls.verdict(subject, CPU, [passed])
    assert verdict.missed and "xpassed" in (verdict.reason or "")


def test_the_table_shows_caught_missed_and_not_applicable_rows() -> None:
    caught = controls.ControlVerdict(
        "a",
        "cpu",
        controls.State.CAUGHT,
        check="s::t",
        found_after=3,
        caught_in=1,
        exposing_ran=1,
        counterexample={
            "batch": {
                "type": "batch",
                "entries": [
                    {
                        "type": "entry",
                        "src": "0x8000000000000000",
                        "dst": "0x0000000000001000",
                        "nbytes": 0,
                    }
                ],
            }
        },
    )
    missed = controls.ControlVerdict("b", "cpu", controls.State.MISSED, "no check ran")
    na = controls.ControlVerdict(
        "c", "cpu", controls.State.NOT_APPLICABLE, "copies are synchronous"
    )
    lines = controls.table([caught, missed, na])
    assert lines[0].split()[:2] == ["control", "backend"]
    assert "caught (1 of 1 checks)" in lines[1] and " 3 " in lines[1]
    assert "batch=[0x8000000000000000->0x0000000000001000:0]" in lines[1]
    assert lines[2].split()[:3] == ["b", "cpu", "missed"] and "no check ran" in lines[2]
    assert "not applicable" in lines[3] and "copies are synchronous" in lines[3]


def test_a_long_counterexample_is_cut_to_one_line() -> None:
    shown = controls.show_counterexample({"addresses": [f"0x{i:016x}" for i in range(20)]})
    assert len(shown) == controls.COUNTEREXAMPLE_WIDTH and shown.endswith("...")


# -- pytest --controls end to end ------------------------------------------------------------


def _setup(pytester: pytest.Pytester, *scenarios: str) -> None:
    use_profile(pytester, max_examples=100)
    copy_scenarios(pytester, *scenarios)


def _controls_report(pytester: pytest.Pytester) -> dict[str, Any]:
    path = pytester.path / "reports" / "controls" / "test-platform.json"
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def test_controls_runs_each_control_only_where_it_must_fail_and_prints_the_table(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, "test_buffer_creation", "test_address_arithmetic")
    result = pytester.runpytest(
        "--backend=cpu",
        "--controls",
        "--subject=signed-shift,transfer-n-plus-one,unsynchronized-read",
        "--platform-name=test-platform",
    )
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(xfailed=2)
    result.stdout.fnmatch_lines(
        [
            "*ptrport controls*",
            "control*backend*result*examples to find*first caught by*minimal counterexample",
            "signed-shift*cpu*caught (1 of 1 checks)*test_high_bits_shift_in_zeros"
            "*addresses=[[]0x8000000000000000[]], shift=1",
            "transfer-n-plus-one*cpu*caught*n=0",
            "unsynchronized-read*cpu*not applicable*complete before transfer() returns*",
        ]
    )
    results = _controls_report(pytester)["results"]
    caught = [r for r in results if r["outcome"] == "xfailed"]
    assert {r["subject"] for r in caught} == {"signed-shift", "transfer-n-plus-one"}
    assert all(r["found_after"] >= 1 for r in caught)


def test_controls_with_the_exposing_check_deselected_reports_it_missed_and_fails(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, "test_buffer_creation")
    result = pytester.runpytest(
        "--backend=cpu",
        "--controls",
        "--subject=stage-past-capacity,transfer-n-plus-one",
        "--platform-name=test-platform",
        "-k",
        "not staging_offsets",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "stage-past-capacity*caught*",
            "transfer-n-plus-one*cpu*missed*no check that catches it ran*",
            "missed: transfer-n-plus-one on cpu",
        ]
    )


BROKEN_SHIFT = """

@pytest.fixture(autouse=True)
def _shift_broken_by_ptrport(monkeypatch):
    from ptrport.check import controls
    from ptrport.errors import HarnessError

    def high_bits(self, n, shift):
        raise {error}

    monkeypatch.setattr(controls.SignedShift, "high_bits", high_bits)
"""


@pytest.mark.parametrize(
    "error",
    ['KeyError("slot")', 'HarnessError("a bug of its own")'],
    ids=["KeyError", "HarnessError"],
)
def test_a_control_that_fails_with_no_catch_of_its_kind_fails_the_controls_run(
    pytester: pytest.Pytester, error: str
) -> None:
    """An error in the check that is none of a catch's kinds (a mismatch, an overflow, a device
    fault, an unsafe dereference) is a failure of the run, not the control caught."""
    _setup(pytester, "test_address_arithmetic")
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text() + BROKEN_SHIFT.format(error=error))
    result = pytester.runpytest(
        "--backend=cpu", "--controls", "--subject=signed-shift", "--platform-name=test-platform",
        "-k", "test_high_bits_shift_in_zeros",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"E *{error.split('(')[0]}: *",
            "signed-shift*cpu*missed*address_arithmetic::test_high_bits_shift_in_zeros failed",
            "missed: signed-shift on cpu",
        ]
    )


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (AssertionError("order [0, 1], expected [1, 0]"), "the verification's mismatch"),
        (OverflowError("Python int too large to convert to C long"), "the overflow"),
        (
            RuntimeError("value cannot be converted to type int64_t without overflow"),
            "the overflow",
        ),
        (ValueError("Overflow when unpacking long long"), "the overflow"),
        (DeviceFault("device fault on cpu-usm: load of 8 bytes"), "a device fault"),
        (UnsafeDereference("refusing to dereference 0x8000000000000000"), "an unsafe dereference"),
        (ExceptionGroup("two", [AssertionError(), OverflowError()]), "the verification's mismatch"),
        (KeyError("slot"), None),
        (HarnessError("a bug of ptrport's"), None),
        (ValueError("bad shape"), None),
        (ExceptionGroup("mixed", [AssertionError(), KeyError("slot")]), None),
    ],
    ids=repr,
)
def test_a_catch_is_one_of_the_named_kinds_and_a_group_is_judged_by_its_members(
    error: BaseException, kind: str | None
) -> None:
    assert controls.caught_as(error) == kind


def test_controls_refuses_subjects_that_are_not_controls(pytester: pytest.Pytester) -> None:
    _setup(pytester, "test_buffer_creation")
    result = pytester.runpytest("--backend=cpu", "--controls", "--subject=uint64/torch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--controls: none of the subjects 'uint64/torch' is a control*"])


def test_a_catalogue_control_runs_by_name_and_passes_where_it_is_not_exposed(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, "test_batch_copy", "test_address_arithmetic")
    result = pytester.runpytest("--backend=cpu", "--subject=signed-order", "--platform-name=x")
    result.assert_outcomes(passed=3, xfailed=1)


# -- ptrport controls -------------------------------------------------------------------------

REPO = SCENARIOS.parent


def _ptrport_controls(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``ptrport controls`` run where the user is: a directory with no scenarios of its own."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ptrport.cli",
            "controls",
            "--backend=cpu",
            *args,
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HYPOTHESIS_PROFILE": "ci"},
    )


def test_ptrport_controls_catches_a_control_and_exits_0(tmp_path: Path) -> None:
    done = _ptrport_controls(tmp_path, "--subject=stage-past-capacity")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "stage-past-capacity  cpu      caught (1 of 1 checks)" in done.stdout
    assert [p.name for p in (tmp_path / "reports" / "controls").glob("*.json")] == [
        "cpu-x86-64.json"
    ]


def test_ptrport_controls_with_the_catching_check_deselected_misses_it_and_fails(
    tmp_path: Path,
) -> None:
    done = _ptrport_controls(
        tmp_path, "--subject=stage-past-capacity", "-k", "not staging_past_the_capacity"
    )
    assert done.returncode == 1, done.stdout[-2000:]
    assert "missed: stage-past-capacity on cpu" in done.stdout
