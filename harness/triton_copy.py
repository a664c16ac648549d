"""The Triton batch copy kernel: one program per table entry, like the batch_memcpy kernels of
inference engines. Imported only where Triton is installed."""

from __future__ import annotations

import functools
import os
from typing import Any

import triton
import triton.language as tl

INTERPRET_ENV = "TRITON_INTERPRET"


def _batch_copy(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
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


@functools.cache
def batch_copy_kernel(interpret: bool) -> Any:
    """The kernel, interpreted (CPU tensors) or compiled (GPU tensors).

    Triton reads ``TRITON_INTERPRET`` when a function is decorated, so each variant is decorated
    under the setting it needs and one process can run both.
    """
    saved = os.environ.get(INTERPRET_ENV)
    os.environ[INTERPRET_ENV] = "1" if interpret else "0"
    try:
        return triton.jit(_batch_copy)
    finally:
        if saved is None:
            del os.environ[INTERPRET_ENV]
        else:
            os.environ[INTERPRET_ENV] = saved


def driver_backend() -> str:
    """The device kind Triton's active driver compiles for (``cuda``, ``hip``, ``xpu``)."""
    return str(triton.runtime.driver.active.get_current_target().backend)
