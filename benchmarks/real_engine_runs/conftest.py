# What the corpus's tests of every engine share: where they place a row of tensors.

import pytest
import torch

TOP = 1 << 64
AT_2_63 = 1 << 63
GAP = 4096
"""Bytes left unmapped between two tensors of a row: a read past one's end finds no memory."""


def _nbytes(tensor):
    return tensor.untyped_storage().nbytes()


@pytest.fixture
def place_in_a_row(ptrport_device):
    """``place_in_a_row(tensors, where)`` places ``tensors`` one after another with ``GAP``
    bytes between them: ``"2**63"``, the first at 2**63 and the rest above it; ``"top"``, the
    last ending at 2**64 (give or take its 64-byte alignment) and the rest below it; any other
    ``where`` leaves them where the backend presents them."""

    def place(tensors, where):
        if where == "2**63":
            at = AT_2_63
            for tensor in tensors:
                ptrport_device.place(tensor, at=at)
                at += (_nbytes(tensor) + GAP) // 64 * 64
        elif where == "top":
            below = TOP
            for tensor in reversed(tensors):
                at = (below - _nbytes(tensor)) // 64 * 64
                ptrport_device.place(tensor, at=at)
                below = at - GAP

    return place


class _Memory:
    """Tensors looked up by address, as a DMA engine or a transfer agent sees the memory that
    was registered with it: a descriptor's bytes are found in the tensor whose storage holds
    them (never read at the address itself, which may be a placed one)."""

    def __init__(self, tensors):
        self.regions = [(t.untyped_storage().data_ptr(), _nbytes(t), t) for t in tensors]

    def bytes_at(self, address, length):
        for base, size, tensor in self.regions:
            if base <= address and address + length <= base + size:
                offset = address - base
                return tensor.view(-1).view(torch.uint8)[offset : offset + length]
        raise AssertionError(
            f"descriptor {address:#x}+{length} lies in no registered memory: "
            + ", ".join(f"[{b:#x}, {b + s:#x})" for b, s, _ in self.regions)
        )


@pytest.fixture
def memory_of():
    """``memory_of(tensors)``: those tensors as registered memory, with ``bytes_at(address,
    length)`` (a uint8 view of the bytes there) and ``regions`` (base, size, tensor)."""
    return _Memory
