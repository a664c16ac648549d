"""A user's own subject: the batched-copy buffers of an inference engine, checked by ptrport.

Engines that copy many small blocks between steps (KV-cache blocks, recurrent state) keep three
buffers for one batched copy: source addresses, destination addresses and sizes. Each is a host
tensor (pinned where the device can pin), a device tensor, and a numpy view of the host tensor
that every step fills after the entries staged before it. The staged entries go to the device
with a ``non_blocking`` copy, and one Triton kernel copies them all, loading each address from
the device buffers itself.

- :func:`make_subject` stores the addresses as ``torch.uint64``: the fix.
- :func:`broken` is the same code with ``torch.int64`` pointer buffers filled from Python ints:
  the original bug. An address at or above ``2**63`` (Intel GPU device memory, Arm's tagged heap
  pointers) does not fit, and staging it raises ``OverflowError``; ptrport reports the minimal
  counterexample, ``0x8000000000000000``.

Run from the repository root (see examples/README.md)::

    pytest --backend=cpu --subject=examples.batched_copy_buffers:make_subject
    pytest --backend=cpu --subject=examples.batched_copy_buffers:broken
"""

from __future__ import annotations

import functools

import torch
import triton.language as tl

from harness.backends import Backend
from harness.batches import Batch
from harness.triton_copy import interpreted_on_cpu

BLOCK_SIZE = 1024


# @interpreted_on_cpu in place of @triton.jit: compiled for GPU tensors, and run by the Triton
# interpreter for CPU tensors, so the same kernel is checked on every backend.
@interpreted_on_cpu
def batch_memcpy_kernel(src_ptrs, dst_ptrs, sizes, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    """One program per entry: copy ``sizes[i]`` bytes from ``src_ptrs[i]`` to ``dst_ptrs[i]``."""
    entry = tl.program_id(0)
    src = tl.load(src_ptrs + entry).to(tl.pointer_type(tl.uint8))
    dst = tl.load(dst_ptrs + entry).to(tl.pointer_type(tl.uint8))
    nbytes = tl.load(sizes + entry)
    for start in range(0, nbytes, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < nbytes
        tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


class CpuGpuBuffer:
    """A host tensor, its device mirror, and a numpy view of the host tensor."""

    def __init__(
        self, size: int, *, dtype: torch.dtype, device: torch.device, pin_memory: bool
    ) -> None:
        self.cpu = torch.zeros(size, dtype=dtype, pin_memory=pin_memory)
        self.gpu = torch.zeros(size, dtype=dtype, device=device)
        self.np = self.cpu.numpy()

    def copy_to_gpu(self, n: int) -> None:
        self.gpu[:n].copy_(self.cpu[:n], non_blocking=True)


class BatchedCopyBuffers:
    """The subject: ``src_ptrs``/``dst_ptrs``/``sizes`` buffers with pointers in ``ptr_dtype``,
    filled per step at an offset and executed by :func:`batch_memcpy_kernel`."""

    def __init__(self, name: str, ptr_dtype: torch.dtype, description: str) -> None:
        self.name = name
        self.ptr_dtype = ptr_dtype
        self.description = description
        self.capacity = 0
        self.offset = 0
        """Entries staged since :meth:`create`: where the next step writes."""

    def unavailable_reason(self, backend: Backend) -> str | None:
        if not backend.addresses_are_device_pointers:
            return f"data_ptr() on {backend.name} is not an address a Triton kernel can load"
        return None

    def create(self, capacity: int, backend: Backend) -> BatchedCopyBuffers:
        buffer = functools.partial(
            CpuGpuBuffer, capacity, device=backend.device, pin_memory=backend.can_pin
        )
        self.src_ptrs = buffer(dtype=self.ptr_dtype)
        self.dst_ptrs = buffer(dtype=self.ptr_dtype)
        self.sizes = buffer(dtype=torch.int64)
        self.capacity = capacity
        self.offset = 0
        return self

    def stage(self, batch: Batch) -> None:
        entries = batch.entries
        start, end = self.offset, self.offset + len(entries)
        if end > self.capacity:
            # numpy would broadcast a short list into a short slice and drop the rest silently.
            raise ValueError(
                f"cannot stage {len(entries)} entries at offset {start}: "
                f"the capacity is {self.capacity}"
            )
        self.src_ptrs.np[start:end] = [e.src for e in entries]
        self.dst_ptrs.np[start:end] = [e.dst for e in entries]
        self.sizes.np[start:end] = [e.nbytes for e in entries]
        self.offset = end

    def transfer(self, n: int) -> None:
        for buffer in (self.src_ptrs, self.dst_ptrs, self.sizes):
            buffer.copy_to_gpu(n)

    def execute(self, n: int) -> None:
        if n == 0:
            return
        batch_memcpy_kernel[(n,)](
            self.src_ptrs.gpu, self.dst_ptrs.gpu, self.sizes.gpu, BLOCK_SIZE=BLOCK_SIZE
        )

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        columns = (b.gpu[:n].cpu().tolist() for b in (self.src_ptrs, self.dst_ptrs, self.sizes))
        return list(zip(*columns, strict=True))


def make_subject() -> BatchedCopyBuffers:
    """The fixed buffers: pointers as ``torch.uint64``."""
    return BatchedCopyBuffers(
        "batched-copy-buffers",
        torch.uint64,
        "an engine's batched-copy buffers, pointers in torch.uint64, copied by its Triton kernel",
    )


def broken() -> BatchedCopyBuffers:
    """The original code: pointers in ``torch.int64`` buffers filled from Python ints."""
    return BatchedCopyBuffers(
        "batched-copy-buffers-int64",
        torch.int64,
        "the same buffers with pointers in torch.int64 (the original bug)",
    )
