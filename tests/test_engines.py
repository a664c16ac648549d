"""Engines on the CPU backend: exact copies of real entries from a uint64 pointer table, and
the guard that refuses every address no live allocation owns, before anything is touched."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ptrport.addresses import MAX_ADDRESS, to_hex
from ptrport.check import verify
from ptrport.check.batches import Batch, Entry
from ptrport.check.engines import ENGINES, TRITON_BLOCK, AdmittedCopy, admit
from ptrport.check.tables import UINT64, PointerTable
from ptrport.device.allocations import (
    DEFAULT_GUARD_NBYTES,
    Allocation,
    AllocationRegistry,
    allocate,
)
from ptrport.device.backends import Backend, CpuBackend, CudaBackend, MpsBackend, XpuBackend
from ptrport.errors import UnsafeDereference

CPU = CpuBackend()
INTEL_ADDRESS = 0xFFFF85ABD4E00000
TOP_PAGE = MAX_ADDRESS + 1 - 4096
SYNTHETIC_ADDRESSES = [INTEL_ADDRESS, TOP_PAGE]
EVERY_ENGINE = pytest.mark.parametrize("engine_name", list(ENGINES))
SIDES = pytest.mark.parametrize("side", ["src", "dst"])


def _table(entries: list[Entry]) -> PointerTable:
    """A uint64 table holding ``entries``, staged and transferred."""
    table = PointerTable(len(entries), UINT64, CPU)
    table.stage(entries)
    table.transfer(len(entries))
    return table


def _real(src: Allocation, src_offset: int, dst: Allocation, dst_offset: int, n: int) -> Entry:
    return Entry(src.address + src_offset, dst.address + dst_offset, n, src, dst)


def _registry_for(entries: list[Entry]) -> AllocationRegistry:
    """The allocations the real ``entries`` name, as the subjects register them."""
    return Batch(tuple(entries)).registry()


def _buffers(*allocations: Allocation) -> list[torch.Tensor]:
    """Whole buffers, guard bands included, copied to compare before and after."""
    return [a.buffer.clone() for a in allocations]


def test_the_engines_are_triton_torch_and_ctypes_by_name() -> None:
    assert list(ENGINES) == ["triton", "torch", "ctypes"]
    assert all(engine.name == name for name, engine in ENGINES.items())


@EVERY_ENGINE
def test_every_engine_copies_real_entries_exactly(engine_name: str) -> None:
    source = allocate(CPU, numel=256, fill_seed=1)
    first = allocate(CPU, numel=256, fill_seed=2)
    second = allocate(CPU, dtype=torch.int32, numel=64, fill_seed=3)
    entries = [
        _real(source, 0, first, 0, 64),
        _real(source, 13, first, 100, 29),
        _real(source, 200, second, 8, 56),
    ]
    source_before = source.snapshot()
    first_before, second_before = first.snapshot(), second.snapshot()

    copies = ENGINES[engine_name].execute(_table(entries), 3, _registry_for(entries))

    expected_first = first_before.clone()
    expected_first[0:64] = source_before[0:64]
    expected_first[100:129] = source_before[13:42]
    expected_second = second_before.clone()
    expected_second[8:64] = source_before[200:256]
    assert torch.equal(first.snapshot(), expected_first)
    assert torch.equal(second.snapshot(), expected_second)
    assert torch.equal(source.snapshot(), source_before)
    assert all(a.guards_intact() for a in (source, first, second))
    assert [(c.src, c.dst, c.nbytes) for c in copies] == [(e.src, e.dst, e.nbytes) for e in entries]


@EVERY_ENGINE
def test_every_engine_reports_each_copy_with_its_allocations_and_offsets(engine_name: str) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    entries = [_real(source, 3, target, 40, 20)]
    copies = ENGINES[engine_name].execute(_table(entries), 1, _registry_for(entries))
    assert copies == [
        AdmittedCopy(source.address + 3, target.address + 40, 20, source, 3, target, 40)
    ]


@EVERY_ENGINE
def test_every_engine_copies_a_whole_float_tensor(engine_name: str) -> None:
    source = allocate(CPU, dtype=torch.float32, numel=300, fill_seed=4)
    target = allocate(CPU, dtype=torch.float32, numel=300, fill_seed=5)
    assert not torch.equal(source.snapshot(), target.snapshot())
    entries = [_real(source, 0, target, 0, source.nbytes)]
    ENGINES[engine_name].execute(_table(entries), 1, _registry_for(entries))
    assert torch.equal(source.tensor, target.tensor)
    assert target.guards_intact()


@EVERY_ENGINE
def test_every_engine_skips_zero_size_synthetic_entries_beside_real_ones(engine_name: str) -> None:
    source = allocate(CPU, numel=128, fill_seed=1)
    target = allocate(CPU, numel=128, fill_seed=2)
    batch = Batch(
        (
            Entry(INTEL_ADDRESS, TOP_PAGE, 0),
            _real(source, 0, target, 0, 32),
            Entry(TOP_PAGE, INTEL_ADDRESS, 0),
            _real(source, 33, target, 64, 31),
            Entry(INTEL_ADDRESS, INTEL_ADDRESS, 0),
        )
    )
    snapshot = verify.Snapshot(batch.allocations)

    copies = ENGINES[engine_name].execute(_table(list(batch)), len(batch), batch.registry())

    assert [(c.src, c.dst, c.nbytes) for c in copies] == [
        (source.address, target.address, 32),
        (source.address + 33, target.address + 64, 31),
    ]
    assert not {INTEL_ADDRESS, TOP_PAGE} & {a for c in copies for a in (c.src, c.dst)}
    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)


@EVERY_ENGINE
def test_every_engine_accepts_a_batch_of_only_zero_size_synthetic_entries(
    engine_name: str,
) -> None:
    entries = [Entry(INTEL_ADDRESS, TOP_PAGE, 0), Entry(TOP_PAGE, MAX_ADDRESS, 0)]
    assert ENGINES[engine_name].execute(_table(entries), 2, AllocationRegistry()) == []


@EVERY_ENGINE
@SIDES
@pytest.mark.parametrize("address", SYNTHETIC_ADDRESSES, ids=to_hex)
def test_every_engine_refuses_a_synthetic_address_with_a_size(
    engine_name: str, side: str, address: int
) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    bad = (
        Entry(address, target.address + 32, 16, None, target)
        if side == "src"
        else Entry(source.address + 32, address, 16, source, None)
    )
    entries = [_real(source, 0, target, 0, 16), bad]
    before = _buffers(source, target)

    with pytest.raises(UnsafeDereference, match=to_hex(address)):
        ENGINES[engine_name].execute(_table(entries), 2, AllocationRegistry([source, target]))

    # Refused before any copy: not even the real entry ahead of it ran.
    assert all(torch.equal(a.buffer, b) for a, b in zip((source, target), before, strict=True))
    # The process survived, and the engine still works.
    good = [_real(source, 0, target, 0, 16)]
    ENGINES[engine_name].execute(_table(good), 1, AllocationRegistry([source, target]))
    assert torch.equal(target.payload[:16], source.payload[:16])


def test_a_synthetic_address_with_a_size_is_refused_without_killing_the_process() -> None:
    """The same refusal in a fresh interpreter, so a dereference would show as a signal here
    rather than take the test run down with it."""
    code = textwrap.dedent(
        f"""
        from ptrport.device.allocations import AllocationRegistry, allocate
        from ptrport.device.backends import CpuBackend
        from ptrport.check.batches import Entry
        from ptrport.check.engines import ENGINES
        from ptrport.errors import UnsafeDereference
        from ptrport.check.tables import UINT64, PointerTable

        cpu = CpuBackend()
        real = allocate(cpu, numel=64)
        for name, engine in ENGINES.items():
            for entry in (
                Entry({INTEL_ADDRESS}, real.address, 8),
                Entry(real.address, {TOP_PAGE}, 8),
            ):
                table = PointerTable(1, UINT64, cpu)
                table.stage([entry])
                table.transfer(1)
                try:
                    engine.execute(table, 1, AllocationRegistry([real]))
                except UnsafeDereference:
                    print("refused", name)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == [
        f"refused {name}" for name in ENGINES for _side in ("src", "dst")
    ]


@EVERY_ENGINE
@SIDES
def test_every_engine_refuses_an_entry_running_one_byte_past_its_allocation(
    engine_name: str, side: str
) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    # The side under test runs one byte past its payload's end; the other ends inside.
    src_offset, dst_offset = (32, 0) if side == "src" else (0, 32)
    entry = _real(source, src_offset, target, dst_offset, 33)
    over = (source if side == "src" else target).address + 32
    before = _buffers(source, target)

    with pytest.raises(UnsafeDereference, match=to_hex(over)):
        ENGINES[engine_name].execute(_table([entry]), 1, AllocationRegistry([source, target]))

    assert all(torch.equal(a.buffer, b) for a, b in zip((source, target), before, strict=True))


@EVERY_ENGINE
def test_every_engine_copies_an_entry_ending_exactly_at_its_allocation(engine_name: str) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    entries = [_real(source, 32, target, 31, 32), _real(source, 31, target, 0, 31)]
    ENGINES[engine_name].execute(_table(entries), 2, _registry_for(entries))
    assert torch.equal(target.payload[31:63], source.payload[32:64])
    assert torch.equal(target.payload[0:31], source.payload[31:62])
    assert target.guards_intact()


@EVERY_ENGINE
@SIDES
def test_every_engine_refuses_an_entry_in_a_guard_band(engine_name: str, side: str) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    band = -DEFAULT_GUARD_NBYTES
    src_offset, dst_offset = (band, 0) if side == "src" else (0, band)
    entry = _real(source, src_offset, target, dst_offset, 8)
    before = _buffers(source, target)
    with pytest.raises(UnsafeDereference):
        ENGINES[engine_name].execute(_table([entry]), 1, AllocationRegistry([source, target]))
    assert all(torch.equal(a.buffer, b) for a, b in zip((source, target), before, strict=True))


@EVERY_ENGINE
def test_every_engine_refuses_a_negative_size_instead_of_reading_it_as_a_no_op(
    engine_name: str,
) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    entries = [_real(source, 0, target, 0, -1)]
    before = _buffers(source, target)
    with pytest.raises(UnsafeDereference, match=f"{MAX_ADDRESS} bytes"):
        ENGINES[engine_name].execute(_table(entries), 1, _registry_for(entries))
    assert all(torch.equal(a.buffer, b) for a, b in zip((source, target), before, strict=True))


@EVERY_ENGINE
def test_every_engine_refuses_a_real_address_missing_from_the_registry(engine_name: str) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    entries = [_real(source, 0, target, 0, 8)]
    before = target.buffer.clone()
    with pytest.raises(UnsafeDereference, match=to_hex(target.address)):
        ENGINES[engine_name].execute(_table(entries), 1, AllocationRegistry([source]))
    assert torch.equal(target.buffer, before)


@EVERY_ENGINE
@pytest.mark.parametrize(
    ("src_offset", "dst_offset", "nbytes", "word_path"),
    [
        (0, 8, 64, True),
        (8, 16, 8 * (TRITON_BLOCK + 76), True),
        (1, 8, 64, False),
        (0, 3, 64, False),
        (0, 8, 63, False),
        (3, 5, TRITON_BLOCK * 2 + 452, False),
        (7, 9, 1, False),
    ],
    ids=[
        "words",
        "words-over-more-than-one-block",
        "odd-src",
        "odd-dst",
        "odd-size",
        "bytes-over-more-than-two-blocks",
        "one-byte",
    ],
)
def test_every_engine_copies_unaligned_and_word_aligned_entries_exactly(
    engine_name: str, src_offset: int, dst_offset: int, nbytes: int, word_path: bool
) -> None:
    source = allocate(CPU, numel=9000, fill_seed=1)
    target = allocate(CPU, numel=9000, fill_seed=2)
    entry = _real(source, src_offset, target, dst_offset, nbytes)
    aligned = entry.src % 8 == 0 and entry.dst % 8 == 0 and nbytes % 8 == 0
    assert aligned == word_path, "the case does not take the kernel path it names"
    batch = Batch((entry,))
    snapshot = verify.Snapshot(batch.allocations)
    ENGINES[engine_name].execute(_table([entry]), 1, batch.registry())
    verify.assert_copied(batch, snapshot)


@EVERY_ENGINE
def test_n_zero_is_a_no_op(engine_name: str) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    entries = [_real(source, 0, target, 0, 64)]
    before = _buffers(source, target)
    assert ENGINES[engine_name].execute(_table(entries), 0, _registry_for(entries)) == []
    assert all(torch.equal(a.buffer, b) for a, b in zip((source, target), before, strict=True))


@EVERY_ENGINE
def test_n_zero_on_an_empty_table_is_a_no_op(engine_name: str) -> None:
    assert ENGINES[engine_name].execute(_table([]), 0, AllocationRegistry()) == []


@EVERY_ENGINE
def test_rows_past_n_are_not_copied(engine_name: str) -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    # Row 1 is real and admissible, so an engine that ran past n would copy it, never crash.
    entries = [_real(source, 0, target, 0, 16), _real(source, 32, target, 16, 48)]
    before = target.snapshot()
    copies = ENGINES[engine_name].execute(_table(entries), 1, _registry_for(entries))
    assert [(c.src, c.dst, c.nbytes) for c in copies] == [(source.address, target.address, 16)]
    assert torch.equal(target.payload[:16], source.payload[:16])
    assert torch.equal(target.snapshot()[16:], before[16:])


@EVERY_ENGINE
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_engine_copies_any_range_inside_its_allocations(
    engine_name: str, data: st.DataObject
) -> None:
    source = allocate(CPU, numel=512, fill_seed=data.draw(st.integers(0, 2**16), label="seed"))
    target = allocate(CPU, numel=512, fill_seed=1)
    nbytes = data.draw(st.integers(0, 512), label="nbytes")
    src_offset = data.draw(st.integers(0, 512 - nbytes), label="src_offset")
    dst_offset = data.draw(st.integers(0, 512 - nbytes), label="dst_offset")
    batch = Batch((_real(source, src_offset, target, dst_offset, nbytes),))
    snapshot = verify.Snapshot(batch.allocations)
    copies = ENGINES[engine_name].execute(_table(list(batch)), 1, batch.registry())
    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)


def test_admit_reads_what_the_device_holds_not_what_the_host_staged() -> None:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    table = _table([_real(source, 0, target, 0, 8)])
    table.src.view[0] = INTEL_ADDRESS  # staged on the host after the transfer
    copies = admit(table, 1, AllocationRegistry([source, target]))
    assert [(c.src, c.dst, c.nbytes) for c in copies] == [(source.address, target.address, 8)]


class _MetaBackend(Backend):
    """A real, non-cpu torch device kind: the ``meta`` device, which every torch build has."""

    name = "meta"
    device_type = "meta"

    def _unavailable_reason(self) -> str | None:
        return None


@pytest.mark.parametrize(
    "other", [CudaBackend(), XpuBackend(), MpsBackend(), _MetaBackend()], ids=repr
)
def test_ctypes_refuses_a_backend_that_is_not_cpu(other: Backend) -> None:
    assert other.device.type != "cpu"
    reason = ENGINES["ctypes"].unavailable_reason(other)
    assert reason is not None
    assert "cpu only" in reason


def test_ctypes_runs_on_cpu() -> None:
    assert ENGINES["ctypes"].unavailable_reason(CPU) is None


@pytest.mark.parametrize(
    "other", [CPU, CudaBackend(), XpuBackend(), MpsBackend(), _MetaBackend()], ids=repr
)
def test_the_torch_engine_is_always_available(other: Backend) -> None:
    assert ENGINES["torch"].unavailable_reason(other) is None


def test_triton_is_available_on_cpu_here() -> None:
    assert ENGINES["triton"].unavailable_reason(CPU) is None


def test_triton_refuses_mps_whose_data_ptr_is_not_a_device_address() -> None:
    reason = ENGINES["triton"].unavailable_reason(MpsBackend())
    assert reason is not None
    assert "not a device address" in reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present here")
def test_triton_without_a_gpu_driver_gives_a_one_line_reason_for_cuda() -> None:
    reason = ENGINES["triton"].unavailable_reason(CudaBackend())
    assert reason
    assert "\n" not in reason


def test_a_copy_of_a_synthetic_entry_is_caught_and_a_real_one_sharing_its_address_is_not() -> None:
    src = allocate(CPU, numel=8)
    dst = allocate(CPU, numel=8)
    real = Entry(src.address, dst.address, 8, src, dst)
    synthetic = Entry(src.address, 2**63, 0)
    batch = Batch((real, synthetic))
    ok = AdmittedCopy(src.address, dst.address, 8, src, 0, dst, 0)
    verify.assert_only_real_dereferenced([ok], batch)
    stray = AdmittedCopy(src.address, 2**63, 8, src, 0, dst, 0)
    with pytest.raises(AssertionError, match="synthetic address dereferenced"):
        verify.assert_only_real_dereferenced([stray], batch)
