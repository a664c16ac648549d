"""The acceptance cases of `ptrport lint` as engine code: each flagged site beside its clean fix."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def to_int64_bits(p: int) -> int:
    """The int64 whose two's-complement bits are the unsigned 64-bit address ``p``."""
    return p - 2**64 if p >= 2**63 else p


class Int64PointerBuffers:
    def __init__(self, n: int) -> None:
        self.src_ptrs = torch.zeros(n, dtype=torch.int64)
        self.src_ptrs_np = self.src_ptrs.numpy()

    def stage(self, tensors: Sequence[torch.Tensor]) -> None:
        for i, t in enumerate(tensors):
            self.src_ptrs_np[i] = t.data_ptr()  # expect: signed-storage


class Uint64PointerBuffers:
    def __init__(self, n: int) -> None:
        self.src_ptrs = torch.zeros(n, dtype=torch.uint64)
        self.src_ptrs_np = self.src_ptrs.numpy()

    def stage(self, tensors: Sequence[torch.Tensor]) -> None:
        for i, t in enumerate(tensors):
            self.src_ptrs_np[i] = t.data_ptr()  # clean


class BitcastPointerBuffers:
    def __init__(self, n: int) -> None:
        self.src_ptrs = torch.zeros(n, dtype=torch.int64)
        self.src_ptrs_np = self.src_ptrs.numpy()

    def stage(self, tensors: Sequence[torch.Tensor]) -> None:
        for i, t in enumerate(tensors):
            self.src_ptrs_np[i] = to_int64_bits(t.data_ptr())  # clean


def int64_pointer_table(ts: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)  # expect: signed-storage


def uint64_pointer_table(ts: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)  # clean


def bitcast_pointer_table(ts: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64).view(torch.int64)  # clean


def block_addresses_signed(
    base_tensor: torch.Tensor, block_ids: Sequence[int], block_bytes: int
) -> np.ndarray:
    base = np.uint64(base_tensor.data_ptr())
    idx = np.asarray(block_ids, dtype=np.int64)
    return base + idx * block_bytes  # expect: mixed-sign-numpy


def block_addresses_unsigned(
    base_tensor: torch.Tensor, block_ids: Sequence[int], block_bytes: int
) -> np.ndarray:
    base = np.uint64(base_tensor.data_ptr())
    idx = np.asarray(block_ids, dtype=np.uint64)
    return base + idx * block_bytes  # clean
