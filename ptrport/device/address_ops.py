"""Arithmetic on a device column of addresses, done right for addresses above ``2**63``.

Pointer code does more than copy addresses: it sorts entries by address to coalesce
neighbours, checks ``base <= p < base + n`` to find the allocation an address lies in, and
extracts high bits with ``>>`` (a page or region number). On an int64 column (or one viewed as
int64, since torch 2.13 has no ``lt`` or ``>>`` for uint64) each of these is signed and goes
wrong in the upper half. The functions here work on the int64 bits and stay unsigned: order and
bounds compare values with the sign bit flipped, and shifts mask away the sign extension. They
use only int64 operations, which every backend has.
"""

from __future__ import annotations

import torch

from ptrport.addresses import ADDRESS_BITS, ADDRESS_LIMIT, HIGH_HALF, to_signed, to_unsigned

_SIGN = -HIGH_HALF
"""The int64 with only the sign bit set."""


def column_bits(column: torch.Tensor) -> torch.Tensor:
    """An int64 tensor with the bits a kernel reads from ``column`` as pointers: a view for a
    64-bit integer column, a converting cast for any other dtype."""
    if column.dtype in (torch.int64, torch.uint64):
        return column.view(torch.int64)
    return column.to(torch.int64)


def _biased(value: int) -> int:
    """The signed int whose order among biased values is ``value``'s unsigned order."""
    return to_signed(value) ^ _SIGN


def unsigned_order(bits: torch.Tensor) -> list[int]:
    """Indices that sort ``bits`` by unsigned address, ties in their original order."""
    return [int(i) for i in torch.argsort(bits ^ _SIGN, stable=True).tolist()]


def unsigned_in_range(bits: torch.Tensor, base: int, nbytes: int) -> list[bool]:
    """For each address, whether ``base <= address < base + nbytes`` (with ``base + nbytes <=
    2**64``), as unsigned ints."""
    if nbytes <= 0:
        return [False] * bits.numel()
    if base + nbytes > ADDRESS_LIMIT:
        raise ValueError(f"range [{base:#x}, {base + nbytes:#x}) ends past 2**64")
    offsets = bits - to_signed(base)
    inside = (offsets ^ _SIGN) <= _biased(nbytes - 1)
    return [bool(v) for v in inside.tolist()]


def unsigned_high_bits(bits: torch.Tensor, shift: int) -> list[int]:
    """``address >> shift`` for each address, shifting zeros in from the top."""
    if not 0 <= shift < ADDRESS_BITS:
        raise ValueError(f"shift={shift} must be in [0, {ADDRESS_BITS})")
    if shift == 0:
        return [to_unsigned(v) for v in bits.tolist()]
    mask = (1 << (ADDRESS_BITS - shift)) - 1
    return [int(v) for v in ((bits >> shift) & mask).tolist()]
