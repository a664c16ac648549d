"""A test-only subject whose plain ``@triton.jit`` kernel copies from the address numpy gives for
each source (``.ctypes.data``) instead of the one torch gives (``data_ptr()``): the same
address on ``cpu``, an address that is no device memory on an upper-half backend, where the
kernel's load is a device fault."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ptrport.check.batches import Batch, Entry
from ptrport.device.backends import Backend


@triton.jit  # type: ignore[untyped-decorator]
def copy_bytes(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    entry = tl.program_id(0)
    src = tl.load(src_ptrs + entry).to(tl.pointer_type(tl.uint8))
    dst = tl.load(dst_ptrs + entry).to(tl.pointer_type(tl.uint8))
    nbytes = tl.load(sizes + entry)
    for start in range(0, nbytes, BLOCK):
        lanes = start + tl.arange(0, BLOCK)
        tl.store(dst + lanes, tl.load(src + lanes, mask=lanes < nbytes), mask=lanes < nbytes)


class NumpyAddressCopy:
    name = "numpy-address-copy"

    def create(self, capacity: int, backend: Backend) -> None:
        self.capacity, self.entries, self.device = capacity, [], []
        self.backend = backend

    def stage(self, batch: Batch) -> None:
        if len(self.entries) + len(batch) > self.capacity:
            raise ValueError("over capacity")
        self.entries += list(batch)

    def transfer(self, n: int) -> None:
        self.device = list(self.entries[:n])

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        return [(e.src, e.dst, e.nbytes) for e in self.device[:n]]

    def execute(self, n: int) -> None:
        rows = [e for e in self.device[:n] if e.nbytes]
        if rows:
            columns = ([_numpy_address(e) for e in rows], [e.dst for e in rows])
            src, dst = (torch.tensor(c, dtype=torch.uint64) for c in columns)
            sizes = torch.tensor([e.nbytes for e in rows], dtype=torch.int64)
            copy_bytes[(len(rows),)](src, dst, sizes, BLOCK=64)


def _numpy_address(entry: Entry) -> int:
    allocation = entry.src_allocation
    if allocation is None:
        return entry.src
    offset = entry.src - allocation.address
    return int(allocation.payload.numpy().ctypes.data) + offset


def numpy_address_copy() -> NumpyAddressCopy:
    return NumpyAddressCopy()
