"""Helpers that reinterpret a 64-bit device address as the int64 with the same bits, and back;
modelled on the shape of the small pointer-encoding helpers engines keep beside their int64
pointer tables. Some are right for every address, some only below 2**63."""

from __future__ import annotations

import array
import ctypes
import struct

import numpy as np
import torch

# Right for every address in [0, 2**64).


def to_int64_bits(address: int) -> int:
    return address - 2**64 if address >= 2**63 else address  # clean


def to_int64_bits_shift(address: int) -> int:
    return address - (1 << 64) if address > (1 << 63) - 1 else address  # clean


def to_int64_bits_hex(p: int) -> int:
    return p - 0x1_0000_0000_0000_0000 if p >= 0x8000_0000_0000_0000 else p  # clean


def to_int64_bits_xor(address: int) -> int:
    return (address ^ (1 << 63)) - (1 << 63)  # clean


def to_int64_bits_ctypes(address: int) -> int:
    return ctypes.c_int64(address).value  # clean


def to_int64_bits_struct(address: int) -> int:
    return struct.unpack("<q", struct.pack("<Q", address))[0]  # clean


def to_int64_bits_bytes(address: int) -> int:
    return int.from_bytes(address.to_bytes(8, "little"), "little", signed=True)  # clean


def to_int64_bits_in_place(address: int) -> int:
    if address >= 1 << 63:  # clean
        address -= 1 << 64  # clean
    return address


def to_int64_bits_centered(address: int) -> int:
    """Shift into [0, 2**64), wrap, shift back: the same two's-complement value."""
    return (address + 2**63) % 2**64 - 2**63  # clean


def from_int64_bits(value: int) -> int:
    return value & 0xFFFF_FFFF_FFFF_FFFF  # clean


def from_int64_bits_mod(value: int) -> int:
    return value % 2**64  # clean


def from_int64_bits_cond(value: int) -> int:
    return value + 2**64 if value < 0 else value  # clean


# Wrong for some address in [0, 2**64): each was written to make the value "fit in int64".


def to_int64_shifted(address: int) -> int:
    """Moves the unsigned range down onto the signed one (every address changes)."""
    return address - 2**63  # expect: bad-bitcast


def to_int64_masked(address: int) -> int:
    """Clears the bit that overflows (upper-half addresses lose it for good)."""
    return address & 0x7FFF_FFFF_FFFF_FFFF  # expect: bad-bitcast


def to_int64_mod(address: int) -> int:
    return address % 2**63  # expect: bad-bitcast


def to_int64_wrapped(address: int) -> int:
    """Always wraps, so lower-half addresses come out below -2**63."""
    return address - 2**64  # expect: bad-bitcast


def to_int64_half(address: int) -> int:
    return address if address < 2**63 else address - 2**63  # expect: bad-bitcast


def to_int64_clamped(address: int) -> int:
    if address >= 1 << 63:
        address -= 1 << 63  # expect: bad-bitcast
    return address


def from_int64_half(value: int) -> int:
    """Reads a table entry back, adding half the range to negative values instead of all of it."""
    return value + 2**63 if value < 0 else value  # expect: bad-bitcast


# Whole tables at once.


def table_int64_bits(tensors: list[torch.Tensor]) -> np.ndarray:
    ptrs = np.array([t.data_ptr() for t in tensors], dtype=np.uint64)  # clean
    return ptrs.view(np.int64)  # clean


def table_int64_bits_torch(tensors: list[torch.Tensor]) -> torch.Tensor:
    ptrs = [t.data_ptr() for t in tensors]
    return torch.tensor(ptrs, dtype=torch.uint64).view(torch.int64)  # clean


def table_signed(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([to_int64_bits(t.data_ptr()) for t in tensors], dtype=torch.int64)  # clean


def table_signed_in_place(tensors: list[torch.Tensor]) -> torch.Tensor:
    signed = [to_int64_bits_in_place(t.data_ptr()) for t in tensors]
    return torch.tensor(signed, dtype=torch.int64)  # clean


def table_shifted(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Fits in int64 without an error, and every entry is the wrong address."""
    shifted = [to_int64_shifted(t.data_ptr()) for t in tensors]
    return torch.tensor(shifted, dtype=torch.int64)


def table_masked(tensors: list[torch.Tensor]) -> torch.Tensor:
    masked = [t.data_ptr() & 0x7FFF_FFFF_FFFF_FFFF for t in tensors]  # expect: bad-bitcast
    return torch.tensor(masked, dtype=torch.int64)


# The single-address helpers at their call sites: a right helper's result goes into int64
# storage as is; a wrong helper's result fits too, and is already wrong where it was computed.


def pointer_column(tensors: list[torch.Tensor]) -> np.ndarray:
    return np.array([to_int64_bits_xor(t.data_ptr()) for t in tensors], dtype=np.int64)  # clean


def pointer_column_cleared(tensors: list[torch.Tensor]) -> torch.Tensor:
    cleared = [to_int64_masked(t.data_ptr()) for t in tensors]
    return torch.tensor(cleared, dtype=torch.int64)


def pointer_column_mod(tensors: list[torch.Tensor]) -> np.ndarray:
    return np.array([to_int64_mod(t.data_ptr()) for t in tensors], dtype=np.int64)


def pointer_words(tensors: list[torch.Tensor]) -> array.array:
    return array.array("q", [to_int64_bits_ctypes(t.data_ptr()) for t in tensors])  # clean


def pointer_record(t: torch.Tensor) -> bytes:
    return struct.pack("<qq", to_int64_bits_struct(t.data_ptr()), t.nbytes)  # clean


def pointer_record_half(t: torch.Tensor) -> bytes:
    return struct.pack("<qq", to_int64_half(t.data_ptr()), t.nbytes)


def pointer_scalar(t: torch.Tensor) -> np.int64:
    return np.int64(to_int64_bits_bytes(t.data_ptr()))  # clean


def pointer_scalar_clamped(t: torch.Tensor) -> np.int64:
    return np.int64(to_int64_clamped(t.data_ptr()))


def broadcast_pointer(t: torch.Tensor, n: int) -> torch.Tensor:
    return torch.full((n,), to_int64_bits_hex(t.data_ptr()), dtype=torch.int64)  # clean


def fill_pointer(buf: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return buf.fill_(to_int64_bits_shift(t.data_ptr()))  # clean


def centered_table(tensors: list[torch.Tensor]) -> torch.Tensor:
    centered = [to_int64_bits_centered(t.data_ptr()) for t in tensors]
    return torch.tensor(centered, dtype=torch.int64)  # clean


def slot_by_key(tensors: list[torch.Tensor]) -> dict[int, int]:
    return {to_int64_wrapped(t.data_ptr()): i for i, t in enumerate(tensors)}


def read_back(tensors: list[torch.Tensor]) -> list[int]:
    table = table_signed(tensors)
    return [from_int64_half(v) for v in table.tolist()]


def read_back_fixed(tensors: list[torch.Tensor]) -> tuple[list[int], list[int], list[int]]:
    table = table_signed(tensors).tolist()
    masked = [from_int64_bits(v) for v in table]
    wrapped = [from_int64_bits_mod(v) for v in table]
    return masked, wrapped, [from_int64_bits_cond(v) for v in table]
