"""Device addresses as Python ints: the 64-bit range, its boundaries and platform-shaped classes.

An address is a Python int in ``[0, 2**64)``. This module holds the facts about them (where
the signed range ends, what Intel, ARM and x86 addresses look like) and the conversions between
the unsigned value and the bits an ``int64`` tensor holds. It imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass

ADDRESS_BITS = 64
ADDRESS_LIMIT = 1 << ADDRESS_BITS
"""One past the largest address."""
MAX_ADDRESS = ADDRESS_LIMIT - 1
INT64_MAX = (1 << 63) - 1
HIGH_HALF = 1 << 63
"""The first address that does not fit in ``int64``."""
PAGE_SIZE = 4096

_MASK = MAX_ADDRESS


def to_hex(address: int) -> str:
    """Render an address the way reports and messages show it: ``0x`` and 16 hex digits."""
    return f"0x{address:016x}"


def to_signed(address: int) -> int:
    """The int64 value with the same bits as ``address`` (two's complement)."""
    if not 0 <= address <= MAX_ADDRESS:
        raise ValueError(f"address {address} is outside [0, 2**64)")
    return address - ADDRESS_LIMIT if address >= HIGH_HALF else address


def to_unsigned(value: int) -> int:
    """The address whose bits an int64 (or any 64-bit) ``value`` holds."""
    return value & _MASK


def is_high(address: int) -> bool:
    """True for addresses that ``int64`` cannot hold (``>= 2**63``)."""
    return address >= HIGH_HALF


@dataclass(frozen=True)
class AddressRange:
    """Addresses ``low <= a <= high`` whose low bits are zero below ``granule``."""

    low: int
    high: int
    granule: int = 1

    def __contains__(self, address: object) -> bool:
        return (
            isinstance(address, int)
            and self.low <= address <= self.high
            and address % self.granule == 0
        )


@dataclass(frozen=True)
class AddressClass:
    """A named, platform-shaped set of addresses, with addresses seen in public bug reports."""

    name: str
    description: str
    ranges: tuple[AddressRange, ...]
    observed: tuple[int, ...] = ()

    def __contains__(self, address: object) -> bool:
        return any(address in r for r in self.ranges)


BOUNDARIES: tuple[int, ...] = (
    0,
    (1 << 31) - 1,
    1 << 31,
    (1 << 32) - 1,
    1 << 32,
    1 << 53,
    (1 << 53) + 1,
    HIGH_HALF - PAGE_SIZE,
    INT64_MAX,
    HIGH_HALF,
    HIGH_HALF + 1,
    HIGH_HALF + PAGE_SIZE,
    ADDRESS_LIMIT - PAGE_SIZE,
    MAX_ADDRESS,
)
"""Values where some encoding of an address stops working: int32, uint32, the float64 mantissa,
the int64 sign bit, and the top of the range (with the page-aligned tops of both halves)."""

USER_SPACE = AddressClass(
    "user-space",
    "ordinary lower-half addresses: x86-64 and ARM64 user space, CUDA and ROCm device memory",
    (AddressRange(PAGE_SIZE, (1 << 47) - 1),),
    observed=(0x76719EC00000, 0x5CCB85231CC0, 0x1000001C500),
)
LEVEL_ZERO_USM = AddressClass(
    "level-zero-usm",
    "Intel GPU device allocations (Level Zero USM): upper half, 2 MiB granules at 0xffff8000... "
    "and up, and pages in the 0xff00... region",
    (
        AddressRange(0xFFFF_8000_0000_0000, 0xFFFF_FFFF_FFE0_0000, 1 << 21),
        AddressRange(0xFF00_0000_0000_0000, 0xFF00_FFFF_FFFF_F000, PAGE_SIZE),
    ),
    observed=(0xFFFF85ABD4E00000, 0xFFFFD556B6400000, 0xFFFFEAAB54E00000, 0xFF00000B65BA2000),
)
ARM_TAGS: tuple[int, ...] = (0xB4, 0x0F, 0xF0, 0x01, 0xFF)
"""Top-byte tags that real ARM64 systems set: Android's heap tag first, then MTE-style tags."""

ARM_TAGGED = AddressClass(
    "arm-tagged",
    "ARM64 top-byte-tagged pointers (TBI; Android heap tag 0xb4, MTE tags in bits 56-59): "
    "a tag byte over a 48-bit user-space address",
    tuple(AddressRange(tag << 56, (tag << 56) | ((1 << 48) - 1)) for tag in ARM_TAGS),
    observed=(0xB400007757036010, 0xB40000700179C830),
)
X86_KERNEL = AddressClass(
    "x86-kernel",
    "x86-64 canonical kernel-half addresses (bits 47-63 all set)",
    (AddressRange(0xFFFF_8000_0000_0000, MAX_ADDRESS),),
)

ADDRESS_CLASSES: dict[str, AddressClass] = {
    c.name: c for c in (USER_SPACE, LEVEL_ZERO_USM, ARM_TAGGED, X86_KERNEL)
}
"""The named classes by name."""
