"""Computing per-block and per-entry addresses with numpy before a batched copy; modelled on the
shape of the host-side staging of KV-transfer and prefix-cache swap paths, which vectorise
``base + index * stride`` over a whole batch."""

from __future__ import annotations

import numpy as np
import torch


def to_int64_bits(address: int) -> int:
    return address - 2**64 if address > 2**63 - 1 else address  # clean


def block_addresses_legacy(cache: torch.Tensor, block_ids: list[int]) -> np.ndarray:
    block_bytes = cache[0].nbytes
    base = np.uint64(cache.data_ptr())  # clean
    ids = np.asarray(block_ids, dtype=np.int64)
    return base + ids * block_bytes  # expect: mixed-sign-numpy


def block_addresses(cache: torch.Tensor, block_ids: list[int]) -> np.ndarray:
    block_bytes = cache[0].nbytes
    base = np.uint64(cache.data_ptr())  # clean
    ids = np.asarray(block_ids, dtype=np.uint64)
    return base + ids * block_bytes  # clean


def block_addresses_int64_bits(cache: torch.Tensor, block_ids: list[int]) -> np.ndarray:
    """Signed arithmetic on the bitcast base wraps to the same bits unsigned arithmetic gives."""
    block_bytes = cache[0].nbytes
    base = np.int64(to_int64_bits(cache.data_ptr()))  # clean
    ids = np.asarray(block_ids, dtype=np.int64)
    return (base + ids * block_bytes).view(np.uint64)  # clean


def contiguous_run(t: torch.Tensor, n: int, stride: int) -> np.ndarray:
    return np.uint64(t.data_ptr()) + np.arange(n) * stride  # expect: mixed-sign-numpy


def contiguous_run_u64(t: torch.Tensor, n: int, stride: int) -> np.ndarray:
    return np.uint64(t.data_ptr()) + np.arange(n, dtype=np.uint64) * stride  # clean


def contiguous_run_int(t: torch.Tensor, n: int, stride: int) -> list[int]:
    base = t.data_ptr()
    return [base + i * stride for i in range(n)]  # clean


def at_offset(t: torch.Tensor, offset: int) -> np.uint64:
    return np.uint64(t.data_ptr()) + np.int64(offset)  # expect: mixed-sign-numpy


def at_offset_u64(t: torch.Tensor, offset: int) -> np.uint64:
    """``offset`` is a non-negative Python int, so the sum stays uint64."""
    return np.uint64(t.data_ptr()) + offset  # clean


class SwapStaging:
    """Host pointer columns for a swap batch, staged through numpy views of torch buffers."""

    def __init__(self, max_entries: int) -> None:
        self.src_ptrs = torch.zeros(max_entries, dtype=torch.uint64)
        self.dst_ptrs = torch.zeros(max_entries, dtype=torch.uint64)
        self.sizes = torch.zeros(max_entries, dtype=torch.uint32)
        self.offsets = torch.zeros(max_entries, dtype=torch.int64)
        self.src_ptrs_np = self.src_ptrs.numpy()
        self.dst_ptrs_np = self.dst_ptrs.numpy()
        self.sizes_np = self.sizes.numpy()
        self.offsets_np = self.offsets.numpy()

    def stage_blocks(
        self, src_pool: torch.Tensor, dst_pool: torch.Tensor, block_ids: list[int]
    ) -> int:
        n = len(block_ids)
        block_bytes = src_pool[0].nbytes
        self.offsets_np[:n] = np.asarray(block_ids, dtype=np.int64) * block_bytes  # clean
        self.sizes_np[:n] = block_bytes  # clean
        src_base = np.uint64(src_pool.data_ptr())  # clean
        dst_base = np.uint64(dst_pool.data_ptr())  # clean
        self.src_ptrs_np[:n] = src_base + self.offsets_np[:n]  # expect: mixed-sign-numpy
        self.dst_ptrs_np[:n] = dst_base + self.offsets_np[:n].astype(np.uint64)  # clean
        return n

    def advance(self, n: int, copied: torch.Tensor) -> None:
        """Moves each source pointer past the bytes an interrupted copy already moved."""
        done = copied.to(torch.int64).numpy()
        self.src_ptrs_np[:n] = self.src_ptrs_np[:n] + done[:n]  # expect: mixed-sign-numpy

    def advance_u64(self, n: int, copied: torch.Tensor) -> None:
        done = copied.to(torch.int64).numpy()
        self.src_ptrs_np[:n] = self.src_ptrs_np[:n] + done[:n].view(np.uint64)  # clean

    def advance_by_sizes(self, n: int) -> None:
        """uint64 plus the uint32 sizes column stays uint64."""
        self.dst_ptrs_np[:n] = self.dst_ptrs_np[:n] + self.sizes_np[:n]  # clean

    def aligned(self, n: int) -> bool:
        return bool(np.all(self.src_ptrs_np[:n] % 256 == 0))  # clean

    def byte_spans(self, n: int) -> np.ndarray:
        """Distance of each destination from the first: an offset, stored as int64."""
        return (self.dst_ptrs_np[:n] - self.dst_ptrs_np[0]).astype(np.int64)  # clean
