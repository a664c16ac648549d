"""Launch sites of the copy kernels in triton_batch_memcpy: KV block swaps, per-layer copies,
state-slot reads and block zeroing; modelled on the shape of a model runner's swap and
cache-maintenance paths that hand base addresses straight to Triton."""

from __future__ import annotations

import torch
import triton
from triton_batch_memcpy import (
    batch_memcpy_kernel,
    block_copy_kernel,
    copy_slot_kernel,
    gather_rows_kernel,
    pool_copy_kernel,
    zero_blocks_kernel,
)

COPY_BLOCK = 1024


def to_int64_bits(address: int) -> int:
    """The int64 whose two's-complement bits are ``address``."""
    return address - 2**64 if address >= 2**63 else address  # clean


def swap_blocks(src_cache: torch.Tensor, dst_cache: torch.Tensor, mapping: torch.Tensor) -> None:
    """Copies block ``mapping[0, i]`` of one cache to block ``mapping[1, i]`` of the other."""
    block_bytes = src_cache[0].nbytes
    block_copy_kernel[(mapping.shape[1],)](
        src_cache.data_ptr(),  # expect: triton-signed-param
        dst_cache.data_ptr(),  # expect: triton-signed-param
        mapping[0],
        mapping[1],
        block_bytes,
        BLOCK=COPY_BLOCK,
    )


def swap_blocks_bitcast(
    src_cache: torch.Tensor, dst_cache: torch.Tensor, mapping: torch.Tensor
) -> None:
    """The same launch with each base reinterpreted as the int64 the parameter holds."""
    block_bytes = src_cache[0].nbytes
    block_copy_kernel[(mapping.shape[1],)](
        to_int64_bits(src_cache.data_ptr()),  # clean
        to_int64_bits(dst_cache.data_ptr()),  # clean
        mapping[0],
        mapping[1],
        block_bytes,
        BLOCK=COPY_BLOCK,
    )


def swap_layers(
    src_layers: list[torch.Tensor], dst_layers: list[torch.Tensor], mapping: torch.Tensor
) -> None:
    """One launch per layer; the bases are taken from the storages, as the offload path does."""
    for src, dst in zip(src_layers, dst_layers, strict=True):
        src_base = src.untyped_storage().data_ptr() + src.storage_offset() * src.element_size()
        dst_base = int(dst.untyped_storage().data_ptr())
        block_copy_kernel[(mapping.shape[1],)](
            src_base=src_base,  # expect: triton-signed-param
            dst_base=dst_base,  # expect: triton-signed-param
            src_block_ids=mapping[0],
            dst_block_ids=mapping[1],
            block_bytes=src[0].nbytes,
            BLOCK=COPY_BLOCK,
        )


def gather_rows(cache: torch.Tensor, row_ids: torch.Tensor) -> torch.Tensor:
    row_bytes = cache[0].nbytes
    out = torch.empty((row_ids.numel(), row_bytes), dtype=torch.uint8, device=cache.device)
    gather_rows_kernel[(row_ids.numel(),)](
        cache.data_ptr(),  # clean
        row_ids,
        out,
        row_bytes,  # clean
        BLOCK=COPY_BLOCK,
    )
    return out


def move_within_pool(pool: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> None:
    """Both views live in one byte pool; the kernel takes their offsets from its start."""
    pool_base = pool.data_ptr()
    grid = (triton.cdiv(src.nbytes, COPY_BLOCK),)
    pool_copy_kernel[grid](
        pool,
        src.data_ptr() - pool_base,  # clean
        dst.data_ptr() - pool_base,  # clean
        src.nbytes,
        BLOCK=COPY_BLOCK,
    )


def move_within_pool_legacy(pool: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> None:
    """An older caller that passes the absolute addresses where offsets are expected."""
    grid = (triton.cdiv(src.nbytes, COPY_BLOCK),)
    pool_copy_kernel[grid](
        pool,
        src.data_ptr(),  # expect: triton-signed-param
        dst.data_ptr(),  # expect: triton-signed-param
        src.nbytes,
        BLOCK=COPY_BLOCK,
    )


def read_state_slots(state: torch.Tensor, slot_ids: torch.Tensor) -> torch.Tensor:
    slot_bytes = state[0].nbytes
    out = torch.empty(slot_ids.numel() * slot_bytes, dtype=torch.uint8, device=state.device)
    copy_slot_kernel[(slot_ids.numel(),)](
        state.data_ptr(),  # expect: triton-signed-param
        slot_ids,
        out,
        slot_bytes,
        BLOCK=COPY_BLOCK,
    )
    return out


def zero_blocks(cache: torch.Tensor, block_ids: torch.Tensor) -> None:
    zero_blocks_kernel[(block_ids.numel(),)](
        cache.data_ptr(),  # clean
        block_ids,
        cache[0].nbytes,
        BLOCK=COPY_BLOCK,
    )


def run_copy_table(src_ptrs: torch.Tensor, dst_ptrs: torch.Tensor, sizes: torch.Tensor) -> None:
    batch_memcpy_kernel[(sizes.numel(),)](
        src_ptrs,  # clean
        dst_ptrs,  # clean
        sizes,
        BLOCK=COPY_BLOCK,
    )
