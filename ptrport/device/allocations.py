"""Allocations: real tensors on a backend with guard bands, and the registry engines consult.

An allocation is one ``uint8`` buffer laid out as ``guard | payload | guard``. The payload is
exposed as a tensor of the requested dtype, a view with a non-zero storage offset, so its
``data_ptr()`` is a real address inside a larger block. The guard bands hold a fixed pattern; a
copy that writes past its entry's range changes them, and :meth:`Allocation.guards_intact` says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from ptrport.addresses import to_hex
from ptrport.device.backends import Backend
from ptrport.dtype_names import dtype_name
from ptrport.errors import UnsafeDereference

GUARD_BYTE = 0xA5
DEFAULT_GUARD_NBYTES = 64
"""Guard band size; a multiple of every dtype's size, so the payload view is always aligned."""


@dataclass(eq=False)
class Allocation:
    """A live payload of ``nbytes`` at byte ``start`` of ``buffer``, guarded on both sides.
    ``offset`` and ``fill_seed`` are what :func:`allocate` was given, so the allocation can be
    made again from its record."""

    buffer: torch.Tensor
    start: int
    nbytes: int
    dtype: torch.dtype
    offset: int = 0
    fill_seed: int = 0
    guard_nbytes: int = DEFAULT_GUARD_NBYTES
    base: int = field(init=False)
    """The buffer's ``data_ptr()`` when it was made: on an upper-half backend the presented
    address, which stays the allocation's address when it is described after the check."""

    def __post_init__(self) -> None:
        self.base = int(self.buffer.data_ptr())

    @property
    def address(self) -> int:
        """The payload's first byte. (An empty tensor's ``data_ptr()`` is 0, so it is derived.)"""
        return self.base + self.start

    @property
    def end(self) -> int:
        return self.address + self.nbytes

    @property
    def payload(self) -> torch.Tensor:
        """The payload as raw bytes (a view)."""
        return self.buffer[self.start : self.start + self.nbytes]

    @property
    def tensor(self) -> torch.Tensor:
        """The payload as a tensor of ``dtype`` (a view with a storage offset)."""
        return self.payload.view(self.dtype)

    def contains(self, address: int, nbytes: int) -> bool:
        """Whether ``[address, address + nbytes)`` lies inside the payload."""
        return self.address <= address and address + nbytes <= self.end

    def snapshot(self) -> torch.Tensor:
        """A host copy of the payload bytes."""
        return self.payload.to("cpu", copy=True)

    def guards_intact(self) -> bool:
        before = self.buffer[: self.start]
        after = self.buffer[self.start + self.nbytes :]
        return bool((before == GUARD_BYTE).all()) and bool((after == GUARD_BYTE).all())

    @property
    def numel(self) -> int:
        return self.nbytes // self.dtype.itemsize

    def to_record(self) -> dict[str, Any]:
        """The allocation as reports show it, with what :func:`allocation_from_record` needs."""
        return {
            "type": "allocation",
            "address": to_hex(self.address),
            "nbytes": self.nbytes,
            "dtype": dtype_name(self.dtype),
            "numel": self.numel,
            "offset": self.offset,
            "fill_seed": self.fill_seed,
            "guard_nbytes": self.guard_nbytes,
        }

    def __repr__(self) -> str:
        dtype = dtype_name(self.dtype)
        return f"Allocation({to_hex(self.address)}, nbytes={self.nbytes}, dtype={dtype})"


def dtype_from_name(name: str) -> torch.dtype:
    found = getattr(torch, name, None)
    if not isinstance(found, torch.dtype):
        raise ValueError(f"{name!r} is not a torch dtype")
    return found


def allocate(
    backend: Backend,
    *,
    dtype: torch.dtype = torch.uint8,
    numel: int = 0,
    offset: int = 0,
    guard_nbytes: int = DEFAULT_GUARD_NBYTES,
    fill_seed: int = 0,
) -> Allocation:
    """Allocate ``numel`` elements of ``dtype`` on ``backend``, starting ``offset`` elements
    after the front guard band, filled with bytes derived from ``fill_seed``."""
    for name, value in (("numel", numel), ("offset", offset), ("guard_nbytes", guard_nbytes)):
        if value < 0:
            raise ValueError(f"{name}={value} must be >= 0")
    itemsize = dtype.itemsize
    if guard_nbytes % itemsize:
        raise ValueError(f"guard_nbytes={guard_nbytes} is not a multiple of {dtype}'s size")
    start = guard_nbytes + offset * itemsize
    nbytes = numel * itemsize
    host = torch.full((start + nbytes + guard_nbytes,), GUARD_BYTE, dtype=torch.uint8)
    generator = torch.Generator().manual_seed(fill_seed)
    host[start : start + nbytes] = torch.randint(
        0, 256, (nbytes,), dtype=torch.uint8, generator=generator
    )
    buffer = host if backend.device.type == "cpu" else host.to(backend.device)
    return Allocation(
        buffer=buffer,
        start=start,
        nbytes=nbytes,
        dtype=dtype,
        offset=offset,
        fill_seed=fill_seed,
        guard_nbytes=guard_nbytes,
    )


def allocation_from_record(record: Mapping[str, Any], backend: Backend) -> Allocation:
    """Allocate again what :meth:`Allocation.to_record` describes: same dtype, size, offset
    and bytes; the address is wherever the backend puts it now."""
    return allocate(
        backend,
        dtype=dtype_from_name(str(record["dtype"])),
        numel=int(record["numel"]),
        offset=int(record["offset"]),
        guard_nbytes=int(record["guard_nbytes"]),
        fill_seed=int(record["fill_seed"]),
    )


class AllocationRegistry:
    """The live allocations an engine may touch; everything else it must refuse."""

    def __init__(self, allocations: Iterable[Allocation] = ()) -> None:
        self._allocations: list[Allocation] = []
        for allocation in allocations:
            self.add(allocation)

    def add(self, allocation: Allocation) -> None:
        if not any(a is allocation for a in self._allocations):
            self._allocations.append(allocation)

    def __iter__(self) -> Iterator[Allocation]:
        return iter(self._allocations)

    def __len__(self) -> int:
        return len(self._allocations)

    def find(self, address: int, nbytes: int) -> tuple[Allocation, int]:
        """The allocation holding ``[address, address + nbytes)`` and the byte offset into its
        payload; raises :class:`UnsafeDereference` if no live allocation holds all of it."""
        for allocation in self._allocations:
            if allocation.contains(address, nbytes):
                return allocation, address - allocation.address
        raise UnsafeDereference(
            f"refusing to dereference {to_hex(address)} ({nbytes} bytes): "
            "no live allocation holds that range"
        )
