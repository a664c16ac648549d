"""The Triton batch copy kernel: one program per table entry, like the batch_memcpy kernels of
inference engines; the same copy through a 48-bit address field, for the control that only
upper-half addresses expose; and one that masks its lanes against an end pointer, for the
control that only an allocation ending at ``2**64`` exposes. Plain ``@triton.jit`` kernels,
launched with :func:`ptrport.device.triton_cpu.launch`: compiled for GPU tensors, run by the
interpreter for CPU tensors. Imported only where Triton is installed."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit  # type: ignore[untyped-decorator]
def batch_copy_kernel(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    entry = tl.program_id(0)
    nbytes = tl.load(sizes + entry)
    src_address = tl.load(src_ptrs + entry)
    dst_address = tl.load(dst_ptrs + entry)
    aligned = (src_address % 8 == 0) & (dst_address % 8 == 0) & (nbytes % 8 == 0)
    if aligned:
        src_words = src_address.to(tl.pointer_type(tl.uint64))
        dst_words = dst_address.to(tl.pointer_type(tl.uint64))
        nwords = nbytes // 8
        for start in range(0, nwords, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < nwords
            tl.store(dst_words + offsets, tl.load(src_words + offsets, mask=mask), mask=mask)
    else:
        src_bytes = src_address.to(tl.pointer_type(tl.uint8))
        dst_bytes = dst_address.to(tl.pointer_type(tl.uint8))
        for start in range(0, nbytes, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < nbytes
            tl.store(dst_bytes + offsets, tl.load(src_bytes + offsets, mask=mask), mask=mask)


ADDRESS_FIELD: tl.constexpr = tl.constexpr((1 << 48) - 1)
"""The 48-bit address field of :func:`batch_copy_48_bit_kernel`: right for lower-half user-space
and GPU addresses, which stay below ``2**47``; it drops the top 16 bits of every upper-half one."""


@triton.jit  # type: ignore[untyped-decorator]
def batch_copy_48_bit_kernel(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    entry = tl.program_id(0)
    nbytes = tl.load(sizes + entry)
    src_bytes = (tl.load(src_ptrs + entry) & ADDRESS_FIELD).to(tl.pointer_type(tl.uint8))
    dst_bytes = (tl.load(dst_ptrs + entry) & ADDRESS_FIELD).to(tl.pointer_type(tl.uint8))
    for start in range(0, nbytes, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < nbytes
        tl.store(dst_bytes + offsets, tl.load(src_bytes + offsets, mask=mask), mask=mask)


@triton.jit  # type: ignore[untyped-decorator]
def batch_copy_end_mask_kernel(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    entry = tl.program_id(0)
    nbytes = tl.load(sizes + entry)
    src_address = tl.load(src_ptrs + entry)
    dst_address = tl.load(dst_ptrs + entry)
    # The mistake: each lane is masked against an end pointer, which wraps to 0 for a copy that
    # ends at 2**64 (and so masks off every lane).
    src_end = src_address + nbytes
    src_bytes = src_address.to(tl.pointer_type(tl.uint8))
    dst_bytes = dst_address.to(tl.pointer_type(tl.uint8))
    for start in range(0, nbytes, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = src_address + offsets < src_end
        tl.store(dst_bytes + offsets, tl.load(src_bytes + offsets, mask=mask), mask=mask)
