# What the corpus's tests of every engine share: where they place a row of tensors, and the
# memory a stand-in for a transfer engine looks descriptors up in.

import pytest
import torch

TOP = 1 << 64
AT_2_63 = 1 << 63
GAP = 4096
"""Bytes left unmapped between two tensors of a row: a read past one's end finds no memory."""


def _nbytes(tensor):
    return tensor.untyped_storage().nbytes()


def _addresses_in_a_row(sizes, where, *, align=64, gap=GAP):
    """Where storages of ``sizes`` bytes go one after another, each at a multiple of
    ``align``, at least ``gap`` bytes apart: ``"2**63"``, the first at 2**63; ``"across"``, the
    middle one (``len(sizes) // 2``) at 2**63, those before it below; ``"top"``, the last ending
    at 2**64 (its start rounded down to ``align``)."""
    starts, offset = [], 0
    for size in sizes:
        starts.append(offset)
        offset = -(-(offset + size + gap) // align) * align
    if where == "2**63":
        first = AT_2_63
    elif where == "across":
        first = AT_2_63 - starts[len(sizes) // 2]
    elif where == "top":
        first = (TOP - sizes[-1]) // align * align - starts[-1]
    else:
        raise ValueError(f"no row {where!r}: 2**63, across or top")
    return [first + start for start in starts]


@pytest.fixture
def addresses_in_a_row():
    """``addresses_in_a_row(sizes, where, align=64, gap=GAP)``: where storages of ``sizes``
    bytes go in a row from 2**63 (``"2**63"``), across it (``"across"``) or up to 2**64
    (``"top"``), for a test that places them itself."""
    return _addresses_in_a_row


@pytest.fixture
def place_in_a_row(ptrport_device):
    """``place_in_a_row(tensors, where)`` places ``tensors`` one after another as
    :func:`addresses_in_a_row` puts them; a ``where`` that names no row (``None``,
    ``"presented"``) leaves them where the backend presents them."""

    def place(tensors, where):
        if where not in ("2**63", "across", "top"):
            return
        sizes = [_nbytes(tensor) for tensor in tensors]
        for tensor, at in zip(tensors, _addresses_in_a_row(sizes, where), strict=True):
            ptrport_device.place(tensor, at=at)

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
