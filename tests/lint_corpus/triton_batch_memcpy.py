"""Triton copy kernels that dereference device addresses: a pointer-table memcpy, block copies
addressed from base addresses, a row gather; modelled on the shape of the batch-memcpy and
block-swap kernels inference engines launch for KV-cache and Mamba-state copies."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def batch_memcpy_kernel(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):
    """One program per entry of the (src, dst, size) table."""
    entry = tl.program_id(0)
    nbytes = tl.load(sizes + entry)
    src = tl.load(src_ptrs + entry).to(tl.pointer_type(tl.uint8))
    dst = tl.load(dst_ptrs + entry).to(tl.pointer_type(tl.uint8))
    for start in range(0, nbytes, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < nbytes
        tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


@triton.jit
def block_copy_kernel(
    src_base: tl.int64,
    dst_base: tl.int64,
    src_block_ids,
    dst_block_ids,
    block_bytes: tl.int64,
    BLOCK: tl.constexpr,
):
    """Copies block ``src_block_ids[i]`` of one cache to block ``dst_block_ids[i]`` of another."""
    pair = tl.program_id(0)
    src_block = tl.load(src_block_ids + pair).to(tl.int64)
    dst_block = tl.load(dst_block_ids + pair).to(tl.int64)
    src = (src_base + src_block * block_bytes).to(tl.pointer_type(tl.uint8))
    dst = (dst_base + dst_block * block_bytes).to(tl.pointer_type(tl.uint8))
    for start in range(0, block_bytes, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < block_bytes
        tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


@triton.jit
def gather_rows_kernel(base: tl.uint64, row_ids, out, row_bytes: tl.int32, BLOCK: tl.constexpr):
    """Gathers rows of a cache, addressed from its base address, into a contiguous buffer."""
    i = tl.program_id(0)
    row = tl.load(row_ids + i).to(tl.uint64)
    src = (base + row * row_bytes).to(tl.pointer_type(tl.uint8))
    dst = out.to(tl.pointer_type(tl.uint8)) + i * row_bytes
    for start in range(0, row_bytes, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < row_bytes
        tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


@triton.jit
def pool_copy_kernel(
    pool,
    src_offset: tl.int64,
    dst_offset: tl.int64,
    nbytes: tl.int32,
    BLOCK: tl.constexpr,
):
    """Copies within one uint8 pool tensor, between two byte offsets from its start."""
    start = tl.program_id(0) * BLOCK
    offsets = start + tl.arange(0, BLOCK)
    mask = offsets < nbytes
    values = tl.load(pool + src_offset + offsets, mask=mask)
    tl.store(pool + dst_offset + offsets, values, mask=mask)


@triton.jit
def copy_slot_kernel(
    cache_base: tl.int32, slot_ids, out, slot_bytes: tl.int32, BLOCK: tl.constexpr
):
    """Copies state slots out of a cache addressed from its base address."""
    i = tl.program_id(0)
    slot = tl.load(slot_ids + i)
    src = (cache_base + slot * slot_bytes).to(tl.pointer_type(tl.uint8))
    for start in range(0, slot_bytes, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < slot_bytes
        tl.store(out + i * slot_bytes + offsets, tl.load(src + offsets, mask=mask), mask=mask)


@triton.jit
def zero_blocks_kernel(cache_base, block_ids, block_bytes, BLOCK: tl.constexpr):
    """Zeroes whole blocks of a cache; ``cache_base`` is specialised by value (u64 above 2**63)."""
    i = tl.program_id(0)
    block = tl.load(block_ids + i).to(tl.int64)
    dst = (cache_base + block * block_bytes).to(tl.pointer_type(tl.uint8))
    for start in range(0, block_bytes, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        tl.store(dst + offsets, tl.zeros((BLOCK,), dtype=tl.uint8), mask=offsets < block_bytes)


def copy_blocks(
    src_cache: torch.Tensor,
    dst_cache: torch.Tensor,
    src_block_ids: torch.Tensor,
    dst_block_ids: torch.Tensor,
) -> None:
    """Block copy between two caches of the same layout, launched from their base addresses."""
    block_bytes = src_cache[0].nbytes
    block_copy_kernel[(src_block_ids.numel(),)](
        src_cache.data_ptr(),  # expect: triton-signed-param
        dst_cache.data_ptr(),  # expect: triton-signed-param
        src_block_ids,
        dst_block_ids,
        block_bytes,
        BLOCK=1024,
    )


def copy_table(src_ptrs: torch.Tensor, dst_ptrs: torch.Tensor, sizes: torch.Tensor) -> None:
    """The pointer-table copy: the addresses reach the kernel inside tensors."""
    batch_memcpy_kernel[(sizes.numel(),)](src_ptrs, dst_ptrs, sizes, BLOCK=1024)
