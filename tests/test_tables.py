"""Pointer tables: columns, staging, transfer, and how each encoding carries a 64-bit address."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ptrport.addresses import INT64_MAX, MAX_ADDRESS, to_signed
from ptrport.check.batches import Entry
from ptrport.check.tables import (
    ENCODINGS,
    INT64,
    INT64_BITCAST,
    SIZES_DTYPE,
    UINT64,
    Encoding,
    PointerTable,
)
from ptrport.device.backends import CpuBackend
from ptrport.errors import CapacityExceeded

CPU = CpuBackend()
INTEL_ADDRESS = 0xFFFF85ABD4E00000
HIGH_HALF = 1 << 63
BOUNDARY_ADDRESSES = [0, INT64_MAX, HIGH_HALF, MAX_ADDRESS, INTEL_ADDRESS]
ALL_ENCODINGS = pytest.mark.parametrize("encoding", list(ENCODINGS.values()), ids=list(ENCODINGS))
FIXES = [UINT64, INT64_BITCAST]
FIX_ENCODINGS = pytest.mark.parametrize("encoding", FIXES, ids=[e.name for e in FIXES])
NUMPY_DTYPES = {torch.uint64: np.uint64, torch.int64: np.int64}

low_entries = st.builds(
    Entry,
    src=st.integers(0, INT64_MAX),
    dst=st.integers(0, INT64_MAX),
    nbytes=st.integers(0, 2**40),
)


def _low(count: int, base: int = 0x1000) -> list[Entry]:
    """``count`` entries in the lower half, each with distinct values in every column."""
    return [Entry(base + 16 * i, base + 16 * i + 8, i + 1) for i in range(count)]


def _host_rows(table: PointerTable) -> list[tuple[int, int, int]]:
    columns = [c.host.view(torch.int64).tolist() for c in table.columns]
    return list(zip(*columns, strict=True))


@ALL_ENCODINGS
def test_a_table_of_capacity_zero_stages_transfers_and_reads_nothing(encoding: Encoding) -> None:
    table = PointerTable(0, encoding, CPU)
    table.stage([])
    table.transfer(0)
    assert table.staged == 0
    assert table.read_back(0) == []
    assert table.device_entries(0) == []
    with pytest.raises(CapacityExceeded):
        table.stage(_low(1))


def test_a_negative_capacity_raises_value_error() -> None:
    with pytest.raises(ValueError, match="capacity=-1"):
        PointerTable(-1, UINT64, CPU)


@ALL_ENCODINGS
@pytest.mark.parametrize("capacity", [0, 1, 7])
def test_every_column_has_the_capacity_and_dtype_on_host_device_and_view(
    encoding: Encoding, capacity: int
) -> None:
    table = PointerTable(capacity, encoding, CPU)
    dtypes = (encoding.dtype, encoding.dtype, SIZES_DTYPE)
    for column, dtype in zip(table.columns, dtypes, strict=True):
        assert tuple(column.host.shape) == (capacity,)
        assert tuple(column.device.shape) == (capacity,)
        assert column.view.shape == (capacity,)
        assert column.host.dtype == dtype
        assert column.device.dtype == dtype
        assert column.view.dtype == NUMPY_DTYPES[dtype]
        assert column.host.device.type == "cpu"
        assert column.device.device == CPU.device
    assert table.staged == 0
    assert table.pinned is False


@ALL_ENCODINGS
def test_the_host_and_device_columns_are_separate_tensors(encoding: Encoding) -> None:
    table = PointerTable(2, encoding, CPU)
    for column in table.columns:
        assert column.host.data_ptr() != column.device.data_ptr()


@ALL_ENCODINGS
def test_the_numpy_view_shares_memory_with_the_host_tensor(encoding: Encoding) -> None:
    table = PointerTable(4, encoding, CPU)
    for column in table.columns:
        assert column.view.ctypes.data == column.host.data_ptr()
        column.view[2] = 12345
        assert int(column.host[2]) == 12345
        column.host[3] = 678
        assert int(column.view[3]) == 678


@ALL_ENCODINGS
def test_stage_writes_at_the_staging_offset_and_accumulates_it(encoding: Encoding) -> None:
    table = PointerTable(6, encoding, CPU)
    first, second = _low(2), _low(3, base=0x9000)
    table.stage(first)
    assert table.staged == 2
    table.stage(second)
    assert table.staged == 5
    expected = [(e.src, e.dst, e.nbytes) for e in first + second] + [(0, 0, 0)]
    assert _host_rows(table) == expected


@ALL_ENCODINGS
def test_staging_nothing_leaves_the_offset_where_it_was(encoding: Encoding) -> None:
    table = PointerTable(3, encoding, CPU)
    table.stage(_low(2))
    table.stage([])
    assert table.staged == 2


@ALL_ENCODINGS
def test_staging_up_to_capacity_exactly_succeeds(encoding: Encoding) -> None:
    table = PointerTable(3, encoding, CPU)
    table.stage(_low(1))
    table.stage(_low(2, base=0x8000))
    assert table.staged == 3


@ALL_ENCODINGS
def test_staging_past_capacity_raises_and_leaves_the_table_unchanged(encoding: Encoding) -> None:
    table = PointerTable(3, encoding, CPU)
    table.stage(_low(2))
    before = _host_rows(table)
    with pytest.raises(CapacityExceeded, match="capacity is 3"):
        table.stage(_low(2, base=0x8000))
    assert table.staged == 2
    assert _host_rows(table) == before


@ALL_ENCODINGS
def test_transferring_more_than_is_staged_raises(encoding: Encoding) -> None:
    table = PointerTable(4, encoding, CPU)
    table.stage(_low(2))
    for n in (3, 4, -1):
        with pytest.raises(CapacityExceeded, match="2 are staged"):
            table.transfer(n)
    assert table.device_entries(4) == [(0, 0, 0)] * 4


@ALL_ENCODINGS
def test_only_the_first_n_rows_reach_the_device(encoding: Encoding) -> None:
    table = PointerTable(5, encoding, CPU)
    entries = _low(4)
    table.stage(entries)
    table.transfer(2)
    staged = [(e.src, e.dst, e.nbytes) for e in entries]
    assert table.device_entries(5) == [*staged[:2], (0, 0, 0), (0, 0, 0), (0, 0, 0)]
    assert table.read_back(5) == [*staged[:2], (0, 0, 0), (0, 0, 0), (0, 0, 0)]


@ALL_ENCODINGS
def test_the_device_does_not_see_host_writes_until_a_transfer(encoding: Encoding) -> None:
    table = PointerTable(2, encoding, CPU)
    table.stage(_low(1))
    assert table.device_entries(1) == [(0, 0, 0)]
    table.transfer(1)
    entry = _low(1)[0]
    assert table.device_entries(1) == [(entry.src, entry.dst, entry.nbytes)]


@ALL_ENCODINGS
def test_reset_makes_the_next_stage_write_from_offset_zero(encoding: Encoding) -> None:
    table = PointerTable(3, encoding, CPU)
    table.stage(_low(3))
    table.reset()
    assert table.staged == 0
    replacement = Entry(0xABC0, 0xDEF0, 99)
    table.stage([replacement])
    assert table.staged == 1
    table.transfer(1)
    assert table.read_back(1) == [(0xABC0, 0xDEF0, 99)]
    with pytest.raises(CapacityExceeded):
        table.transfer(2)


@ALL_ENCODINGS
def test_reading_more_rows_than_the_capacity_raises(encoding: Encoding) -> None:
    table = PointerTable(2, encoding, CPU)
    with pytest.raises(CapacityExceeded, match="capacity is 2"):
        table.read_back(3)
    with pytest.raises(CapacityExceeded, match="capacity is 2"):
        table.device_entries(3)


@FIX_ENCODINGS
@pytest.mark.parametrize("address", BOUNDARY_ADDRESSES, ids=hex)
def test_fix_encodings_carry_boundary_addresses_bit_exact(encoding: Encoding, address: int) -> None:
    table = PointerTable(2, encoding, CPU)
    entries = [Entry(address, MAX_ADDRESS - address, 0), Entry(MAX_ADDRESS - address, address, 0)]
    table.stage(entries)
    table.transfer(2)
    expected = [(address, MAX_ADDRESS - address, 0), (MAX_ADDRESS - address, address, 0)]
    read_back, seen = table.read_back(2), table.device_entries(2)
    assert read_back == expected
    assert seen == expected
    for row in (*read_back, *seen):
        assert all(type(value) is int and 0 <= value <= MAX_ADDRESS for value in row)


@pytest.mark.parametrize("address", BOUNDARY_ADDRESSES, ids=hex)
def test_uint64_holds_the_address_itself_in_the_host_tensor(address: int) -> None:
    table = PointerTable(1, UINT64, CPU)
    table.stage([Entry(address, address, 0)])
    assert int(table.src.view[0]) == address
    assert int(table.src.host.view(torch.int64)[0]) == to_signed(address)


@pytest.mark.parametrize(
    ("address", "stored"),
    [
        (INT64_MAX, INT64_MAX),
        (HIGH_HALF, -(2**63)),
        (MAX_ADDRESS, -1),
        (INTEL_ADDRESS, INTEL_ADDRESS - 2**64),
    ],
    ids=hex,
)
def test_int64_bitcast_stores_the_high_half_as_negative_int64(address: int, stored: int) -> None:
    table = PointerTable(1, INT64_BITCAST, CPU)
    table.stage([Entry(address, address, 0)])
    assert table.src.host.dtype == torch.int64
    assert int(table.src.host[0]) == stored
    assert int(table.dst.host[0]) == stored


@pytest.mark.parametrize(
    ("src", "dst"), [(HIGH_HALF, 0x1000), (0x1000, HIGH_HALF)], ids=["src", "dst"]
)
def test_the_int64_control_overflows_when_staging_2_63(src: int, dst: int) -> None:
    table = PointerTable(1, INT64, CPU)
    with pytest.raises(OverflowError):
        table.stage([Entry(src, dst, 0)])
    assert table.staged == 0


def test_the_int64_control_carries_2_63_minus_1() -> None:
    table = PointerTable(1, INT64, CPU)
    table.stage([Entry(INT64_MAX, INT64_MAX, 0)])
    table.transfer(1)
    assert table.read_back(1) == [(INT64_MAX, INT64_MAX, 0)]
    assert table.device_entries(1) == [(INT64_MAX, INT64_MAX, 0)]


def test_only_the_int64_encoding_is_a_control() -> None:
    assert INT64.control
    assert INT64.exposed_by == {"table_round_trip", "mixed_batches", "address_arithmetic"}
    assert not UINT64.control
    assert not INT64_BITCAST.control
    assert list(ENCODINGS) == ["uint64", "int64-bitcast", "int64"]


@FIX_ENCODINGS
@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, MAX_ADDRESS), st.integers(0, MAX_ADDRESS), st.integers(0, INT64_MAX)
        ),
        max_size=8,
    )
)
def test_fix_encodings_round_trip_every_address(
    encoding: Encoding, rows: list[tuple[int, int, int]]
) -> None:
    table = PointerTable(len(rows), encoding, CPU)
    table.stage([Entry(src, dst, nbytes) for src, dst, nbytes in rows])
    table.transfer(len(rows))
    assert table.read_back(len(rows)) == rows
    assert table.device_entries(len(rows)) == rows


@ALL_ENCODINGS
@settings(max_examples=50, deadline=None)
@given(steps=st.lists(st.lists(low_entries, max_size=4), max_size=4))
def test_staging_offsets_accumulate_over_steps_in_the_lower_half(
    encoding: Encoding, steps: list[list[Entry]]
) -> None:
    capacity = sum(len(step) for step in steps)
    table = PointerTable(capacity, encoding, CPU)
    for step in steps:
        table.stage(step)
    everything = [e for step in steps for e in step]
    assert table.staged == capacity
    table.transfer(capacity)
    assert table.read_back(capacity) == [(e.src, e.dst, e.nbytes) for e in everything]


def _arrays(rows: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    src, dst, nbytes = zip(*rows, strict=True) if rows else ((), (), ())
    return (
        np.array(src, dtype=np.uint64),
        np.array(dst, dtype=np.uint64),
        np.array(nbytes, dtype=np.int64),
    )


@ALL_ENCODINGS
@settings(max_examples=50, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, INT64_MAX), st.integers(0, INT64_MAX), st.integers(0, INT64_MAX)),
        max_size=6,
    ),
    offset=st.integers(0, 3),
)
def test_staging_arrays_writes_the_bits_stage_writes_at_the_offset(
    encoding: Encoding, rows: list[tuple[int, int, int]], offset: int
) -> None:
    entries = [Entry(*row) for row in rows]
    by_entries = PointerTable(offset + len(rows), encoding, CPU)
    by_arrays = PointerTable(offset + len(rows), encoding, CPU)
    for table in (by_entries, by_arrays):
        table.stage(_low(offset))
    by_entries.stage(entries)
    by_arrays.stage_arrays(*_arrays(rows))
    assert by_arrays.staged == by_entries.staged == offset + len(rows)
    assert _host_rows(by_arrays) == _host_rows(by_entries)


@FIX_ENCODINGS
@pytest.mark.parametrize("address", BOUNDARY_ADDRESSES, ids=hex)
def test_fix_encodings_stage_arrays_of_any_address_bit_exact(
    encoding: Encoding, address: int
) -> None:
    table = PointerTable(2, encoding, CPU)
    table.stage_arrays(*_arrays([(address, MAX_ADDRESS - address, 8), (0, address, 0)]))
    table.transfer(2)
    assert table.read_back(2) == [(address, MAX_ADDRESS - address, 8), (0, address, 0)]


def test_the_int64_control_overflows_when_staging_an_array_holding_2_63() -> None:
    table = PointerTable(2, INT64, CPU)
    with pytest.raises(OverflowError):
        table.stage_arrays(*_arrays([(0x1000, 0x2000, 8), (HIGH_HALF, 0x1000, 0)]))
    assert table.staged == 0


@ALL_ENCODINGS
def test_staging_arrays_past_capacity_raises_and_leaves_the_table_unchanged(
    encoding: Encoding,
) -> None:
    table = PointerTable(3, encoding, CPU)
    table.stage(_low(2))
    before = _host_rows(table)
    rows = [(0x8000, 0x9000, 1), (0x8010, 0x9010, 2)]
    with pytest.raises(CapacityExceeded, match="capacity is 3"):
        table.stage_arrays(*_arrays(rows))
    assert table.staged == 2
    assert _host_rows(table) == before


def test_staging_arrays_of_different_lengths_raises_value_error() -> None:
    table = PointerTable(3, UINT64, CPU)
    src, dst, nbytes = _arrays([(1, 2, 3), (4, 5, 6)])
    with pytest.raises(ValueError, match="2, 1 and 2 entries"):
        table.stage_arrays(src, dst[:1], nbytes)
    assert table.staged == 0


def test_a_signed_address_array_is_refused_by_the_uint64_table_as_a_negative_int_is() -> None:
    table = PointerTable(1, UINT64, CPU)
    with pytest.raises(OverflowError):
        table.stage_arrays(np.array([-1]), np.array([0], np.uint64), np.array([0]))
