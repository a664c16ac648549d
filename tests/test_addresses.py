"""Addresses: the hex form, the int64 bit conversions, and the platform-shaped classes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptrport.addresses import (
    ADDRESS_CLASSES,
    ADDRESS_LIMIT,
    HIGH_HALF,
    INT64_MAX,
    LEVEL_ZERO_USM,
    MAX_ADDRESS,
    PAGE_SIZE,
    AddressClass,
    AddressRange,
    is_high,
    to_hex,
    to_signed,
    to_unsigned,
)

HEX_FORM = re.compile(r"0x[0-9a-f]{16}")
ANY_ADDRESS = st.integers(0, MAX_ADDRESS)
ANY_INT64 = st.integers(-HIGH_HALF, INT64_MAX)
OBSERVED = [
    pytest.param(c, address, id=f"{name}-{to_hex(address)}")
    for name, c in ADDRESS_CLASSES.items()
    for address in c.observed
]
PAGE_RANGE = AddressRange(PAGE_SIZE, 4 * PAGE_SIZE, PAGE_SIZE)


@pytest.mark.parametrize(
    ("address", "text"),
    [
        (0, "0x0000000000000000"),
        (0x76719EC00000, "0x000076719ec00000"),
        (HIGH_HALF, "0x8000000000000000"),
        (0xFFFF85ABD4E00000, "0xffff85abd4e00000"),
        (MAX_ADDRESS, "0xffffffffffffffff"),
    ],
)
def test_to_hex_writes_0x_and_sixteen_lowercase_digits(address: int, text: str) -> None:
    assert to_hex(address) == text


@settings(max_examples=200)
@given(ANY_ADDRESS)
def test_to_hex_of_any_address_is_sixteen_digits_that_read_back_as_it(address: int) -> None:
    text = to_hex(address)
    assert HEX_FORM.fullmatch(text), text
    assert int(text, 16) == address


@settings(max_examples=200)
@given(ANY_ADDRESS)
def test_to_unsigned_undoes_to_signed_for_every_address(address: int) -> None:
    value = to_signed(address)
    assert -HIGH_HALF <= value <= INT64_MAX
    assert to_unsigned(value) == address


@settings(max_examples=200)
@given(ANY_INT64)
def test_to_signed_undoes_to_unsigned_for_every_int64(value: int) -> None:
    address = to_unsigned(value)
    assert 0 <= address <= MAX_ADDRESS
    assert to_signed(address) == value


@pytest.mark.parametrize(
    ("address", "value"),
    [
        (0, 0),
        (INT64_MAX, INT64_MAX),
        (HIGH_HALF, -HIGH_HALF),
        (HIGH_HALF + 1, -HIGH_HALF + 1),
        (0xFFFF85ABD4E00000, 0xFFFF85ABD4E00000 - ADDRESS_LIMIT),
        (MAX_ADDRESS, -1),
    ],
)
def test_to_signed_gives_the_twos_complement_value_at_the_boundaries(
    address: int, value: int
) -> None:
    assert to_signed(address) == value
    assert to_unsigned(value) == address


@pytest.mark.parametrize("address", [-1, ADDRESS_LIMIT, -HIGH_HALF, 2 * ADDRESS_LIMIT])
def test_to_signed_rejects_a_value_outside_the_address_range(address: int) -> None:
    with pytest.raises(ValueError, match=rf"address {address} is outside \[0, 2\*\*64\)"):
        to_signed(address)


@pytest.mark.parametrize(
    ("address", "high"),
    [(0, False), (INT64_MAX, False), (HIGH_HALF, True), (MAX_ADDRESS, True)],
)
def test_is_high_is_true_exactly_from_two_to_the_63(address: int, high: bool) -> None:
    assert is_high(address) is high


@pytest.mark.parametrize(
    ("address", "inside"),
    [
        (PAGE_SIZE, True),
        (2 * PAGE_SIZE, True),
        (4 * PAGE_SIZE, True),
        (PAGE_SIZE - 1, False),
        (0, False),
        (PAGE_SIZE + 8, False),
        (4 * PAGE_SIZE + 1, False),
        (5 * PAGE_SIZE, False),
    ],
)
def test_an_address_range_holds_granule_multiples_between_its_bounds_inclusive(
    address: int, inside: bool
) -> None:
    assert (address in PAGE_RANGE) is inside


@pytest.mark.parametrize("thing", [str(PAGE_SIZE), float(PAGE_SIZE), None])
def test_an_address_range_holds_no_value_that_is_not_an_int(thing: object) -> None:
    assert thing not in PAGE_RANGE


def test_an_address_class_holds_the_addresses_of_any_of_its_ranges() -> None:
    two = AddressClass(
        "two",
        "two disjoint ranges",
        (AddressRange(0x1000, 0x1FFF), AddressRange(HIGH_HALF, MAX_ADDRESS, PAGE_SIZE)),
    )
    assert 0x1000 in two
    assert 0x1FFF in two
    assert HIGH_HALF + PAGE_SIZE in two
    assert 0x2000 not in two
    assert HIGH_HALF + 1 not in two
    assert "0x1000" not in two


@pytest.mark.parametrize(
    ("address", "inside"),
    [
        (0xFFFF_8000_0000_0000, True),
        (0xFFFF_8000_0020_0000, True),
        (0xFFFF_FFFF_FFE0_0000, True),
        (0xFFFF_8000_0000_1000, False),
        (0xFF00_0000_0000_0000, True),
        (0xFF00_0000_0000_1000, True),
        (0xFF00_FFFF_FFFF_F000, True),
        (0xFF00_0000_0000_0008, False),
        (0xFF01_0000_0000_0000, False),
        (0x0000_7FFF_FFE0_0000, False),
    ],
)
def test_level_zero_usm_holds_2mib_granules_high_up_and_pages_in_the_ff00_region(
    address: int, inside: bool
) -> None:
    assert (address in LEVEL_ZERO_USM) is inside


@pytest.mark.parametrize(("address_class", "address"), OBSERVED)
def test_every_address_seen_in_a_bug_report_belongs_to_its_class(
    address_class: AddressClass, address: int
) -> None:
    assert address in address_class


def test_every_class_is_filed_under_its_own_name() -> None:
    assert ADDRESS_CLASSES
    for name, address_class in ADDRESS_CLASSES.items():
        assert address_class.name == name
        assert address_class.ranges
