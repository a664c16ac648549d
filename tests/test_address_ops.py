"""Address arithmetic on int64 bits: order, range membership and high bits agree with Python's
unsigned ints everywhere in the 64-bit range, the sign boundary included."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ptrport.addresses import ADDRESS_LIMIT, HIGH_HALF, INT64_MAX, MAX_ADDRESS, to_signed
from ptrport.check import strategies as hst
from ptrport.device import address_ops

BOUNDARY = [INT64_MAX, HIGH_HALF, MAX_ADDRESS, 0, 0xFFFF85ABD4E00000]


def _bits(addresses: list[int]) -> torch.Tensor:
    return torch.tensor([to_signed(a) for a in addresses], dtype=torch.int64)


def test_the_boundary_values_sort_unsigned() -> None:
    assert address_ops.unsigned_order(_bits(BOUNDARY)) == [3, 0, 1, 4, 2]


def test_a_range_across_the_sign_boundary_holds_both_sides() -> None:
    inside = address_ops.unsigned_in_range(_bits(BOUNDARY), INT64_MAX, 2)
    assert inside == [True, True, False, False, False]


def test_a_range_to_the_top_of_the_address_space_holds_the_last_address() -> None:
    assert address_ops.unsigned_in_range(_bits([MAX_ADDRESS]), MAX_ADDRESS, 1) == [True]
    with pytest.raises(ValueError, match="past 2\\*\\*64"):
        address_ops.unsigned_in_range(_bits([MAX_ADDRESS]), MAX_ADDRESS, 2)


def test_high_bits_of_the_top_address_shift_in_zeros() -> None:
    assert address_ops.unsigned_high_bits(_bits([MAX_ADDRESS, HIGH_HALF]), 63) == [1, 1]
    assert address_ops.unsigned_high_bits(_bits([MAX_ADDRESS]), 0) == [MAX_ADDRESS]
    with pytest.raises(ValueError, match="shift=64"):
        address_ops.unsigned_high_bits(_bits([0]), 64)


def test_a_uint64_column_is_read_through_its_bits_and_another_dtype_is_cast() -> None:
    column = torch.tensor([HIGH_HALF], dtype=torch.uint64)
    assert address_ops.column_bits(column).tolist() == [-HIGH_HALF]
    assert address_ops.column_bits(torch.tensor([7.0], dtype=torch.float64)).tolist() == [7]


addresses = st.lists(hst.addresses(), min_size=1, max_size=12)


@given(addresses=addresses)
def test_order_is_the_unsigned_stable_sort(addresses: list[int]) -> None:
    expected = sorted(range(len(addresses)), key=lambda i: addresses[i])
    assert address_ops.unsigned_order(_bits(addresses)) == expected


@given(addresses=addresses, base=hst.addresses(), data=st.data())
def test_in_range_is_the_unsigned_comparison(
    addresses: list[int], base: int, data: st.DataObject
) -> None:
    nbytes = data.draw(st.integers(0, ADDRESS_LIMIT - base))
    expected = [base <= a < base + nbytes for a in addresses]
    assert address_ops.unsigned_in_range(_bits(addresses), base, nbytes) == expected


@given(addresses=addresses, shift=st.integers(0, 63))
def test_high_bits_are_the_unsigned_shift(addresses: list[int], shift: int) -> None:
    expected = [a >> shift for a in addresses]
    assert address_ops.unsigned_high_bits(_bits(addresses), shift) == expected
