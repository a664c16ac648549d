"""Subjects: the built-in encoding x engine pairs, one run end to end, and ``--subject`` parsing."""

from __future__ import annotations

import pytest
import torch

from ptrport.addresses import to_hex
from ptrport.check import verify
from ptrport.check.batches import Batch, Entry
from ptrport.check.engines import ENGINES
from ptrport.check.subjects import TableSubject, builtin_subjects
from ptrport.check.tables import ENCODINGS, INT64, UINT64, PointerTable
from ptrport.device.allocations import allocate
from ptrport.device.backends import CpuBackend, CudaBackend
from ptrport.errors import HarnessError, UnsafeDereference

CPU = CpuBackend()
INTEL_ADDRESS = 0xFFFF85ABD4E00000
CONTROL_SCENARIOS = {"table_round_trip", "mixed_batches", "address_arithmetic"}
ALL_NAMES = [f"{encoding}/{engine}" for encoding in ENCODINGS for engine in ENGINES]
FIX_NAMES = [name for name in ALL_NAMES if not name.startswith("int64/")]


def _real_batch(*, synthetic: int | None = None) -> Batch:
    """Two real entries between fresh allocations, and a zero-size synthetic one if asked."""
    source = allocate(CPU, numel=96, fill_seed=11)
    target = allocate(CPU, numel=96, fill_seed=12)
    entries = [
        Entry(source.address, target.address + 8, 40, source, target),
        Entry(source.address + 41, target.address + 50, 45, source, target),
    ]
    if synthetic is not None:
        entries.insert(1, Entry(synthetic, synthetic, 0))
    return Batch(tuple(entries))


def test_builtin_subjects_are_every_encoding_with_every_engine() -> None:
    subjects = builtin_subjects()
    assert sorted(subjects) == sorted(ALL_NAMES)
    for name, found in subjects.items():
        encoding, engine = name.split("/")
        assert found.name == name
        assert found.encoding is ENCODINGS[encoding]
        assert found.engine is ENGINES[engine]
        assert engine in found.description


def test_builtin_subjects_list_fixes_before_controls() -> None:
    controls = [bool(s.exposed_by) for s in builtin_subjects().values()]
    assert controls == sorted(controls)
    assert controls.count(True) == len(ENGINES)


def test_the_builtin_controls_are_the_int64_subjects() -> None:
    subjects = builtin_subjects()
    controls = {name for name, s in subjects.items() if s.exposed_by}
    assert controls == {f"int64/{engine}" for engine in ENGINES}
    for name in controls:
        assert subjects[name].exposed_by == CONTROL_SCENARIOS
    for name in FIX_NAMES:
        assert subjects[name].exposed_by == frozenset()


def test_builtin_subjects_are_fresh_instances_on_every_call() -> None:
    first, second = builtin_subjects(), builtin_subjects()
    assert all(first[name] is not second[name] for name in first)


def test_a_subject_used_before_create_raises_a_harness_error() -> None:
    fresh = builtin_subjects()["uint64/torch"]
    with pytest.raises(HarnessError, match=r"uint64/torch: create\(\) was not called"):
        fresh.transfer(0)


@pytest.mark.parametrize("subject_name", ALL_NAMES)
def test_a_table_subject_runs_create_stage_transfer_execute_read_back_end_to_end(
    subject_name: str,
) -> None:
    under_test = builtin_subjects()[subject_name]
    batch = _real_batch(synthetic=0x7000_0000_0000)
    snapshot = verify.Snapshot(batch.allocations)

    table = under_test.create(len(batch), CPU)
    assert isinstance(table, PointerTable)
    assert table.capacity == len(batch)
    assert table.encoding is under_test.encoding
    under_test.stage(batch)
    assert table.staged == len(batch)
    under_test.transfer(len(batch))
    copies = under_test.execute(len(batch))
    rows = under_test.read_back(len(batch))

    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)
    verify.assert_table_holds(rows, list(batch))


@pytest.mark.parametrize("subject_name", FIX_NAMES)
def test_a_fix_subject_carries_a_zero_size_intel_address_through_a_run(subject_name: str) -> None:
    under_test = builtin_subjects()[subject_name]
    batch = _real_batch(synthetic=INTEL_ADDRESS)
    snapshot = verify.Snapshot(batch.allocations)
    under_test.create(len(batch), CPU)
    under_test.stage(batch)
    under_test.transfer(len(batch))
    copies = under_test.execute(len(batch))
    assert under_test.read_back(len(batch))[1] == (INTEL_ADDRESS, INTEL_ADDRESS, 0)
    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)


def test_an_int64_control_cannot_stage_an_intel_address() -> None:
    control = TableSubject(INT64, ENGINES["torch"])
    control.create(3, CPU)
    with pytest.raises(OverflowError):
        control.stage(_real_batch(synthetic=INTEL_ADDRESS))


def test_create_forgets_the_allocations_of_earlier_batches() -> None:
    under_test = TableSubject(UINT64, ENGINES["torch"])
    batch = _real_batch()
    first = batch.entries[0]
    # The same addresses, but naming no allocation: only an earlier batch registered them.
    unnamed = Batch((Entry(first.src, first.dst, first.nbytes),))

    under_test.create(3, CPU)
    under_test.stage(batch)
    under_test.stage(unnamed)
    under_test.transfer(3)
    assert len(under_test.execute(3)) == 3

    under_test.create(1, CPU)
    under_test.stage(unnamed)
    under_test.transfer(1)
    with pytest.raises(UnsafeDereference, match=to_hex(first.src)):
        under_test.execute(1)


def test_a_subject_is_unavailable_where_its_engine_is() -> None:
    ctypes_subject = builtin_subjects()["uint64/ctypes"]
    assert ctypes_subject.unavailable_reason(CPU) is None
    reason = ctypes_subject.unavailable_reason(CudaBackend())
    assert reason == ENGINES["ctypes"].unavailable_reason(CudaBackend())
    assert reason is not None


def test_a_subjects_repr_names_it() -> None:
    assert repr(builtin_subjects()["int64-bitcast/triton"]) == "<subject int64-bitcast/triton>"


def test_executing_through_a_subject_copies_float_payloads_bit_for_bit() -> None:
    source = allocate(CPU, dtype=torch.float64, numel=20, fill_seed=3)
    target = allocate(CPU, dtype=torch.float64, numel=20, fill_seed=4)
    batch = Batch((Entry(source.address, target.address, source.nbytes, source, target),))
    under_test = builtin_subjects()["int64-bitcast/triton"]
    under_test.create(1, CPU)
    under_test.stage(batch)
    under_test.transfer(1)
    under_test.execute(1)
    assert torch.equal(source.snapshot(), target.snapshot())
