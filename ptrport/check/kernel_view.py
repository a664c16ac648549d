"""What a Triton kernel sees when it loads addresses from a pointer table: each entry as staged,
and the entry plus an offset, both an offset loaded from an int32 or uint32 tensor and one the
kernel computes from its own indices. Pointer arithmetic in kernels mixes widths and
signedness; above ``2**63`` a promotion that goes through a signed or narrower type shows here.

A plain ``@triton.jit`` kernel: interpreted on CPU tensors, compiled on GPU ones
(:func:`ptrport.device.triton_cpu.launch`). Imported only where Triton is installed. Nothing here is
dereferenced: the kernel moves address values, never the memory they point at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from ptrport.addresses import to_unsigned
from ptrport.device.triton_cpu import launch

BLOCK = 16
STRIDE = 8
"""Bytes per index in the offset the kernel computes (``entry + index * STRIDE``)."""


@triton.jit  # type: ignore[untyped-decorator]
def _load_entries(  # type: ignore[no-untyped-def]
    table, offsets, seen, plus_loaded, plus_computed, n, BLOCK: tl.constexpr, STRIDE: tl.constexpr
):
    index = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = index < n
    entry = tl.load(table + index, mask=mask)
    tl.store(seen + index, entry, mask=mask)
    tl.store(plus_loaded + index, entry + tl.load(offsets + index, mask=mask), mask=mask)
    tl.store(plus_computed + index, entry + index * STRIDE, mask=mask)


@dataclass(frozen=True)
class KernelView:
    """What the kernel stored, as unsigned 64-bit ints."""

    seen: list[int]
    plus_loaded: list[int]
    """Each entry plus its offset from the offsets tensor."""
    plus_computed: list[int]
    """Each entry plus ``index * STRIDE``, computed in the kernel."""


def _bits(tensor: torch.Tensor) -> list[int]:
    return [to_unsigned(v) for v in tensor.view(torch.int64).to("cpu").tolist()]


def load_entries(column: torch.Tensor, offsets: torch.Tensor) -> KernelView:
    """Run the kernel over a device column of addresses and an offsets tensor beside it."""
    n = column.numel()
    outputs: list[Any] = [torch.zeros_like(column) for _ in range(3)]
    grid = (max(1, -(-n // BLOCK)),)
    launch(_load_entries, grid, column, offsets, *outputs, n, BLOCK=BLOCK, STRIDE=STRIDE)
    return KernelView(*(_bits(o) for o in outputs))
