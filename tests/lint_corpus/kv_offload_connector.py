"""Swapping KV-cache blocks between GPU layers and pinned CPU blocks; modelled on the shape of the
CPU-offload connectors that build per-transfer source and destination address lists for a
batched copy."""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger(__name__)


def to_int64_bits(address: int) -> int:
    return (address ^ (1 << 63)) - (1 << 63)  # clean


def layer_ptrs_legacy(ts: list[torch.Tensor]) -> torch.Tensor:
    """Per-layer base addresses, as the CUDA-only code stored them."""
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)  # expect: signed-storage


def layer_ptrs(ts: list[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)  # clean


def layer_ptrs_int64_bits(ts: list[torch.Tensor]) -> torch.Tensor:
    """The same bits in an int64 tensor, for kernels whose table parameter is int64."""
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64).view(torch.int64)  # clean


def layer_ptrs_signed(ts: list[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([to_int64_bits(t.data_ptr()) for t in ts], dtype=torch.int64)  # clean


class CpuOffloadHandler:
    """Moves blocks of every layer between the GPU caches and pinned CPU caches of one layout."""

    def __init__(self, gpu_caches: list[torch.Tensor], cpu_caches: list[torch.Tensor]) -> None:
        self.gpu_bases = [t.data_ptr() for t in gpu_caches]
        self.cpu_bases = [t.data_ptr() for t in cpu_caches]
        self.block_bytes = gpu_caches[0][0].nbytes
        storages = [t.untyped_storage() for t in gpu_caches]
        self.layer_of = {s.data_ptr(): i for i, s in enumerate(storages)}  # clean
        for base in self.gpu_bases + self.cpu_bases:
            if base % 256 != 0:  # clean
                raise ValueError(f"KV cache at {base:#x} is not 256-byte aligned")  # clean
        logger.debug("offload handler: first GPU layer at %s", hex(self.gpu_bases[0]))  # clean

    def swap_out_legacy(
        self, gpu_blocks: list[int], cpu_blocks: list[int]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        src = []
        dst = []
        for gpu_base, cpu_base in zip(self.gpu_bases, self.cpu_bases, strict=True):
            for g, c in zip(gpu_blocks, cpu_blocks, strict=True):
                src.append(gpu_base + g * self.block_bytes)
                dst.append(cpu_base + c * self.block_bytes)
        sizes = torch.full((len(src),), self.block_bytes, dtype=torch.int64)  # clean
        src_ptrs = torch.tensor(src, dtype=torch.int64)  # expect: signed-storage
        dst_ptrs = torch.as_tensor(dst)  # expect: inferred-int64
        return src_ptrs, dst_ptrs, sizes

    def swap_in(
        self, cpu_blocks: list[int], gpu_blocks: list[int]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        src = []
        dst = []
        for gpu_base, cpu_base in zip(self.gpu_bases, self.cpu_bases, strict=True):
            for c, g in zip(cpu_blocks, gpu_blocks, strict=True):
                src.append(cpu_base + c * self.block_bytes)
                dst.append(gpu_base + g * self.block_bytes)
        sizes = torch.full((len(src),), self.block_bytes, dtype=torch.int64)  # clean
        src_ptrs = torch.tensor(src, dtype=torch.uint64)  # clean
        dst_ptrs = torch.tensor(dst, dtype=torch.uint64)  # clean
        return src_ptrs, dst_ptrs, sizes

    def swap_in_legacy(
        self, cpu_blocks: list[int], gpu_blocks: list[int]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        pairs = [
            (cpu_base + c * self.block_bytes, gpu_base + g * self.block_bytes)
            for gpu_base, cpu_base in zip(self.gpu_bases, self.cpu_bases, strict=True)
            for c, g in zip(cpu_blocks, gpu_blocks, strict=True)
        ]
        table = torch.tensor(pairs)  # expect: inferred-int64
        return table[:, 0], table[:, 1]

    def layer_of_view(self, view: torch.Tensor) -> int:
        """Which layer a block view belongs to, by its storage's address."""
        return self.layer_of[view.untyped_storage().data_ptr()]  # clean

    def same_storage(self, a: torch.Tensor, b: torch.Tensor) -> bool:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()  # clean


def cpu_layer_offsets(cpu_caches: list[torch.Tensor], pool: torch.Tensor) -> torch.Tensor:
    """Byte offsets of each layer's CPU cache inside one pinned pool: int64 holds them."""
    pool_base = pool.data_ptr()
    offsets = [t.data_ptr() - pool_base for t in cpu_caches]
    return torch.tensor(offsets, dtype=torch.int64)  # clean


def block_ranges(cache: torch.Tensor, blocks: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(start, end) byte ranges of blocks relative to the cache: ids and offsets, no address."""
    block_bytes = cache[0].nbytes
    ids = torch.tensor(blocks, dtype=torch.int64)
    starts = ids * block_bytes
    return starts, starts + block_bytes
