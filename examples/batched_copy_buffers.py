"""A user's own subject: the batched-copy buffers of an inference engine, checked by ptrport.

Engines that copy many small blocks between steps (KV-cache blocks, recurrent state) keep three
buffers for one batched copy: source addresses, destination addresses and sizes. Each is a host
tensor (pinned where the device can pin), a device tensor, and a numpy view of the host tensor
that each step fills one entry at a time, after the entries staged before it. The staged
entries go to the device with a ``non_blocking`` copy, and one Triton kernel, decorated with
plain ``@triton.jit``, copies them all, loading each address from the device buffers itself.
The sizes are ``int32`` by design: no single copy reaches 2 GiB. The subject says so in its
``contract``, and ptrport draws no larger size.

- :func:`make_subject` keeps the addresses in ``torch.uint64``: the fix.
- :func:`broken` is the same code with ``torch.int64`` pointer buffers: the original bug. An
  address at or above ``2**63`` (Intel GPU device memory, Arm's tagged heap pointers) does not
  fit, and staging it raises ``OverflowError``. On ``cpu`` only synthetic addresses are that
  high; on ``cpu-usm`` and ``cpu-tbi`` every real allocation is, so a plain copy of real
  tensors fails too, as it does on an Intel GPU.

Run from the repository root (see docs/subjects.md)::

    pytest --subject=examples.batched_copy_buffers:make_subject
    pytest --backend=cpu-usm --subject=examples.batched_copy_buffers:broken
"""

from __future__ import annotations

from typing import ClassVar

import torch
import triton
import triton.language as tl

from ptrport.check.batches import Batch
from ptrport.device.backends import Backend

BLOCK_SIZE = 1024


@triton.jit  # type: ignore[untyped-decorator]
def batch_memcpy_kernel(src_ptrs, dst_ptrs, sizes, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    """One program per entry: copy ``sizes[i]`` bytes from ``src_ptrs[i]`` to ``dst_ptrs[i]``."""
    pid = tl.program_id(0)
    src = tl.load(src_ptrs + pid)
    dst = tl.load(dst_ptrs + pid)
    nbytes = tl.load(sizes + pid)
    lanes = tl.arange(0, BLOCK_SIZE)
    for start in range(0, nbytes, BLOCK_SIZE):
        mask = start + lanes < nbytes
        src_bytes = (src + start + lanes).to(tl.pointer_type(tl.uint8))
        dst_bytes = (dst + start + lanes).to(tl.pointer_type(tl.uint8))
        tl.store(dst_bytes, tl.load(src_bytes, mask=mask), mask=mask)


class CpuGpuBuffer:
    """A host tensor, its device mirror, and a numpy view of the host tensor."""

    def __init__(
        self, size: int, *, dtype: torch.dtype, device: torch.device, pin_memory: bool
    ) -> None:
        self.cpu = torch.zeros(size, dtype=dtype, pin_memory=pin_memory)
        self.gpu = torch.zeros(size, dtype=dtype, device=device)
        self.np = self.cpu.numpy()

    def copy_to_gpu(self, n: int) -> torch.Tensor:
        return self.gpu[:n].copy_(self.cpu[:n], non_blocking=True)


class BatchedCopyBuffers:
    """The subject: ``src_ptrs``/``dst_ptrs`` buffers of ``ptr_dtype`` and an ``int32``
    ``sizes`` buffer, filled one entry at a time and executed by :func:`batch_memcpy_kernel`."""

    contract: ClassVar[dict[str, int]] = {"max_nbytes": 2**31 - 1}
    """What the ``int32`` sizes column holds: ptrport draws no size above it."""

    def __init__(self, name: str, ptr_dtype: torch.dtype, description: str) -> None:
        self.name = name
        self.ptr_dtype = ptr_dtype
        self.description = description
        self.offset = 0
        """Entries staged since :meth:`create`: where the next one goes."""

    def unavailable_reason(self, backend: Backend) -> str | None:
        if not backend.addresses_are_device_pointers:
            return f"data_ptr() on {backend.name} is not an address a Triton kernel can load"
        return None

    def create(self, capacity: int, backend: Backend) -> None:
        def buffer(dtype: torch.dtype) -> CpuGpuBuffer:
            return CpuGpuBuffer(
                capacity, dtype=dtype, device=backend.device, pin_memory=backend.can_pin
            )

        self.src_ptrs = buffer(self.ptr_dtype)
        self.dst_ptrs = buffer(self.ptr_dtype)
        self.sizes = buffer(torch.int32)
        self.offset = 0

    def stage(self, batch: Batch) -> None:
        """As an engine collects a step's copies: one entry at a time through the numpy views.
        An entry past the capacity raises ``IndexError``, and the offset stays where it was."""
        src_ptrs_np, dst_ptrs_np, sizes_np = self.src_ptrs.np, self.dst_ptrs.np, self.sizes.np
        offset = self.offset
        for entry in batch.entries:
            src_ptrs_np[offset] = entry.src
            dst_ptrs_np[offset] = entry.dst
            sizes_np[offset] = entry.nbytes
            offset += 1
        self.offset = offset

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
        "an engine's batched-copy buffers, pointers in torch.uint64, int32 sizes, copied by "
        "its Triton kernel",
    )


def broken() -> BatchedCopyBuffers:
    """The original code: pointers in ``torch.int64`` buffers filled from Python ints."""
    return BatchedCopyBuffers(
        "batched-copy-buffers-int64",
        torch.int64,
        "the same buffers with pointers in torch.int64 (the original bug)",
    )
