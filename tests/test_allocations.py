"""Allocations: guard-banded payloads at real addresses, and the registry engines consult."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ptrport.addresses import MAX_ADDRESS, to_hex
from ptrport.device.allocations import (
    DEFAULT_GUARD_NBYTES,
    GUARD_BYTE,
    Allocation,
    AllocationRegistry,
    allocate,
)
from ptrport.device.backends import CpuBackend
from ptrport.errors import UnsafeDereference

CPU = CpuBackend()
INTEL_ADDRESS = 0xFFFF85ABD4E00000
NOT_GUARD = GUARD_BYTE ^ 0xFF
DTYPES = [torch.uint8, torch.int16, torch.float32, torch.int64, torch.float64]
SYNTHETIC_ADDRESSES = [INTEL_ADDRESS, MAX_ADDRESS - 4095, 1 << 63, 0xB400007757036010, 0]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("offset", [0, 3])
def test_the_payload_sits_between_two_guard_bands(dtype: torch.dtype, offset: int) -> None:
    itemsize = torch.empty((), dtype=dtype).element_size()
    allocation = allocate(CPU, dtype=dtype, numel=10, offset=offset)
    assert allocation.start == DEFAULT_GUARD_NBYTES + offset * itemsize
    assert allocation.nbytes == 10 * itemsize
    assert allocation.buffer.dtype == torch.uint8
    assert allocation.buffer.numel() == allocation.start + allocation.nbytes + DEFAULT_GUARD_NBYTES
    front = allocation.buffer[: allocation.start]
    back = allocation.buffer[allocation.start + allocation.nbytes :]
    assert back.numel() == DEFAULT_GUARD_NBYTES
    assert bool((front == GUARD_BYTE).all())
    assert bool((back == GUARD_BYTE).all())


def test_a_custom_guard_size_sets_both_bands() -> None:
    allocation = allocate(CPU, dtype=torch.int32, numel=4, guard_nbytes=16)
    assert allocation.start == 16
    assert allocation.buffer.numel() == 16 + 16 + 16


def test_a_guard_size_that_is_not_a_multiple_of_the_dtype_size_raises_value_error() -> None:
    with pytest.raises(ValueError, match="guard_nbytes=6"):
        allocate(CPU, dtype=torch.int32, numel=4, guard_nbytes=6)


@pytest.mark.parametrize(
    ("numel", "offset", "guard_nbytes"),
    [(4, -1, 64), (4, -16, 64), (-1, 0, 64), (4, 0, -8)],
    ids=["offset=-1", "offset=-16", "numel=-1", "guard_nbytes=-8"],
)
def test_a_negative_size_or_offset_raises_value_error(
    numel: int, offset: int, guard_nbytes: int
) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        allocate(CPU, numel=numel, offset=offset, guard_nbytes=guard_nbytes)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_address_is_the_buffers_data_ptr_plus_the_start(dtype: torch.dtype) -> None:
    allocation = allocate(CPU, dtype=dtype, numel=8, offset=1)
    assert allocation.address == allocation.buffer.data_ptr() + allocation.start
    assert allocation.address == allocation.tensor.data_ptr()
    assert allocation.address == allocation.payload.data_ptr()
    assert allocation.end == allocation.address + allocation.nbytes


def test_an_empty_allocation_still_has_an_address_inside_its_buffer() -> None:
    allocation = allocate(CPU, dtype=torch.float32, numel=0)
    assert allocation.nbytes == 0
    assert allocation.tensor.numel() == 0
    assert allocation.address == allocation.buffer.data_ptr() + DEFAULT_GUARD_NBYTES
    assert allocation.address != 0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_tensor_is_a_view_of_the_dtype_with_a_storage_offset(dtype: torch.dtype) -> None:
    allocation = allocate(CPU, dtype=dtype, numel=6, offset=2)
    tensor = allocation.tensor
    assert tensor.dtype == dtype
    assert tuple(tensor.shape) == (6,)
    assert tensor.device.type == "cpu"
    assert tensor.storage_offset() > 0
    assert tensor.storage_offset() * tensor.element_size() == allocation.start
    storage = allocation.buffer.untyped_storage().data_ptr()
    assert tensor.untyped_storage().data_ptr() == storage


def test_writing_through_the_tensor_changes_the_buffer() -> None:
    allocation = allocate(CPU, dtype=torch.int64, numel=2)
    allocation.tensor[1] = -1
    last_word = allocation.buffer[allocation.start + 8 : allocation.start + 16]
    assert bool((last_word == 0xFF).all())


def test_the_same_fill_seed_gives_the_same_payload() -> None:
    first = allocate(CPU, numel=256, fill_seed=7)
    second = allocate(CPU, numel=256, fill_seed=7)
    assert first.address != second.address
    assert torch.equal(first.snapshot(), second.snapshot())


def test_different_fill_seeds_give_different_payloads() -> None:
    first = allocate(CPU, numel=256, fill_seed=1)
    second = allocate(CPU, numel=256, fill_seed=2)
    assert not torch.equal(first.snapshot(), second.snapshot())


def test_the_fill_is_the_same_bytes_whatever_the_dtype() -> None:
    as_bytes = allocate(CPU, dtype=torch.uint8, numel=64, fill_seed=3)
    as_words = allocate(CPU, dtype=torch.int64, numel=8, fill_seed=3)
    assert torch.equal(as_bytes.snapshot(), as_words.snapshot())


def test_the_payload_is_not_the_guard_pattern() -> None:
    allocation = allocate(CPU, numel=256, fill_seed=0)
    assert not bool((allocation.payload == GUARD_BYTE).all())


def test_a_snapshot_is_a_copy_that_later_writes_do_not_change() -> None:
    allocation = allocate(CPU, numel=16, fill_seed=5)
    snapshot = allocation.snapshot()
    before = snapshot.clone()
    allocation.payload.fill_(0)
    assert torch.equal(snapshot, before)
    assert snapshot.data_ptr() != allocation.address


def test_a_fresh_allocation_has_its_guards_intact() -> None:
    assert allocate(CPU, dtype=torch.float32, numel=32, offset=1).guards_intact()


def test_overwriting_the_whole_payload_leaves_the_guards_intact() -> None:
    allocation = allocate(CPU, numel=32)
    allocation.payload.fill_(NOT_GUARD)
    assert allocation.guards_intact()


@pytest.mark.parametrize(
    "index_from_start",
    [-DEFAULT_GUARD_NBYTES, -1],
    ids=["first-byte-of-the-buffer", "byte-just-before-the-payload"],
)
def test_guards_intact_detects_a_write_in_the_front_guard_band(index_from_start: int) -> None:
    allocation = allocate(CPU, numel=32)
    allocation.buffer[allocation.start + index_from_start] = NOT_GUARD
    assert not allocation.guards_intact()


@pytest.mark.parametrize(
    "index_from_end",
    [0, DEFAULT_GUARD_NBYTES - 1],
    ids=["byte-just-after-the-payload", "last-byte-of-the-buffer"],
)
def test_guards_intact_detects_a_write_in_the_back_guard_band(index_from_end: int) -> None:
    allocation = allocate(CPU, numel=32)
    allocation.buffer[allocation.start + allocation.nbytes + index_from_end] = NOT_GUARD
    assert not allocation.guards_intact()


def test_guards_intact_detects_a_write_in_the_offset_before_the_payload() -> None:
    allocation = allocate(CPU, dtype=torch.int32, numel=4, offset=2)
    allocation.buffer[DEFAULT_GUARD_NBYTES + 4] = NOT_GUARD
    assert not allocation.guards_intact()


def test_the_record_and_repr_show_the_address_in_hex() -> None:
    allocation = allocate(CPU, dtype=torch.float32, numel=4, offset=2, fill_seed=7)
    record = allocation.to_record()
    assert record == {
        "type": "allocation",
        "address": to_hex(allocation.address),
        "nbytes": 16,
        "dtype": "float32",
        "numel": 4,
        "offset": 2,
        "fill_seed": 7,
        "guard_nbytes": DEFAULT_GUARD_NBYTES,
    }
    assert to_hex(allocation.address) in repr(allocation)
    assert "dtype=float32" in repr(allocation)


def _registry_of_two() -> tuple[AllocationRegistry, Allocation, Allocation]:
    first = allocate(CPU, numel=100, fill_seed=1)
    second = allocate(CPU, dtype=torch.int64, numel=16, fill_seed=2)
    return AllocationRegistry([first, second]), first, second


@pytest.mark.parametrize(
    ("offset", "nbytes"),
    [(0, 1), (0, 100), (5, 10), (99, 1), (100, 0)],
    ids=["first-byte", "whole-payload", "middle", "last-byte", "empty-range-at-the-end"],
)
def test_find_returns_the_allocation_and_the_offset_for_a_range_inside_a_payload(
    offset: int, nbytes: int
) -> None:
    registry, first, _ = _registry_of_two()
    found, found_offset = registry.find(first.address + offset, nbytes)
    assert found is first
    assert found_offset == offset


def test_find_tells_two_allocations_apart() -> None:
    registry, first, second = _registry_of_two()
    assert registry.find(second.address + 8, 8) == (second, 8)
    assert registry.find(first.address + 8, 8) == (first, 8)


@pytest.mark.parametrize(
    ("offset", "nbytes"),
    [(0, 101), (99, 2), (50, 51)],
    ids=["whole-payload-and-one", "last-byte-and-one", "middle-and-one"],
)
def test_find_refuses_a_range_that_starts_inside_but_runs_past_the_end(
    offset: int, nbytes: int
) -> None:
    registry, first, _ = _registry_of_two()
    address = first.address + offset
    with pytest.raises(UnsafeDereference, match=to_hex(address)):
        registry.find(address, nbytes)


@pytest.mark.parametrize(
    ("offset", "nbytes"),
    [
        (-DEFAULT_GUARD_NBYTES, 1),
        (-1, 1),
        (-1, 2),
        (-DEFAULT_GUARD_NBYTES, DEFAULT_GUARD_NBYTES),
        (100, 1),
        (100 + DEFAULT_GUARD_NBYTES - 1, 1),
    ],
    ids=[
        "front-band-first-byte",
        "front-band-last-byte",
        "front-band-into-the-payload",
        "whole-front-band",
        "back-band-first-byte",
        "back-band-last-byte",
    ],
)
def test_find_refuses_a_range_in_a_guard_band(offset: int, nbytes: int) -> None:
    registry, first, _ = _registry_of_two()
    address = first.address + offset
    with pytest.raises(UnsafeDereference, match=to_hex(address)):
        registry.find(address, nbytes)


@pytest.mark.parametrize("address", SYNTHETIC_ADDRESSES, ids=to_hex)
def test_find_refuses_a_synthetic_address_and_names_it_in_hex(address: int) -> None:
    registry, _, _ = _registry_of_two()
    with pytest.raises(UnsafeDereference) as raised:
        registry.find(address, 8)
    message = str(raised.value)
    assert to_hex(address) in message
    assert "8 bytes" in message


def test_the_message_for_the_intel_address_is_its_hex_form() -> None:
    with pytest.raises(UnsafeDereference, match="0xffff85abd4e00000"):
        AllocationRegistry().find(INTEL_ADDRESS, 1)


def test_an_empty_registry_refuses_a_real_address() -> None:
    allocation = allocate(CPU, numel=8)
    with pytest.raises(UnsafeDereference):
        AllocationRegistry().find(allocation.address, 1)


def test_the_registry_holds_each_allocation_once_in_order() -> None:
    first = allocate(CPU, numel=8)
    second = allocate(CPU, numel=8)
    registry = AllocationRegistry([first, second, first])
    registry.add(second)
    assert len(registry) == 2
    assert list(registry) == [first, second]


@settings(max_examples=200, deadline=None)
@given(
    offset=st.integers(-DEFAULT_GUARD_NBYTES - 8, 100 + DEFAULT_GUARD_NBYTES + 8),
    nbytes=st.integers(1, 120),
)
def test_find_accepts_exactly_the_ranges_inside_the_payload(offset: int, nbytes: int) -> None:
    allocation = allocate(CPU, numel=100)
    registry = AllocationRegistry([allocation])
    address = allocation.address + offset
    if offset >= 0 and offset + nbytes <= 100:
        assert registry.find(address, nbytes) == (allocation, offset)
    else:
        with pytest.raises(UnsafeDereference, match=to_hex(address)):
            registry.find(address, nbytes)
