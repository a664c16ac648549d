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

from ptrport.addresses import PAGE_SIZE, to_hex
from ptrport.device import presentation
from ptrport.device.backends import Backend
from ptrport.device.presentation import PlacementError, real_data_ptr
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
    placed: str | None = None
    """Where it was placed (``across 2**63``), if at an address the check chose."""
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

    @property
    def guard_after(self) -> int:
        """Bytes of guard band after the payload: none where the payload ends at ``2**64``."""
        return self.buffer.numel() - self.start - self.nbytes

    def to_record(self) -> dict[str, Any]:
        """The allocation as reports show it, with what :func:`allocation_from_record` needs
        (for a placed one, where it was placed and its guard band after)."""
        record = {
            "type": "allocation",
            "address": to_hex(self.address),
            "nbytes": self.nbytes,
            "dtype": dtype_name(self.dtype),
            "numel": self.numel,
            "offset": self.offset,
            "fill_seed": self.fill_seed,
            "guard_nbytes": self.guard_nbytes,
        }
        if self.placed is not None:
            record |= {"placed": self.placed, "guard_after": self.guard_after}
        return record

    def __repr__(self) -> str:
        dtype = dtype_name(self.dtype)
        placed = f", placed {self.placed}" if self.placed is not None else ""
        return f"Allocation({to_hex(self.address)}, nbytes={self.nbytes}, dtype={dtype}{placed})"


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
    at: int | None = None,
    placed: str = "where asked",
    guard_after: int | None = None,
) -> Allocation:
    """Allocate ``numel`` elements of ``dtype`` on ``backend``, starting ``offset`` elements
    after the front guard band, filled with bytes derived from ``fill_seed``.

    With ``at``, in a CPU backend's scope (:meth:`Backend.running`): the payload is presented at
    ``at`` (a multiple of ``dtype``'s size), in real memory at the same offset within its 4 KiB
    page, so that alignment-dependent code takes the branch it takes there; ``placed`` says why
    there, for reports. ``guard_after`` (default ``guard_nbytes``) may be 0 for a payload
    ending at ``2**64``, past which there is no address. Only the guard bands and the payload
    are memory; :class:`~ptrport.device.presentation.PlacementError` if the range is taken."""
    after = guard_nbytes if guard_after is None else guard_after
    for name, value in (
        ("numel", numel),
        ("offset", offset),
        ("guard_nbytes", guard_nbytes),
        ("guard_after", after),
    ):
        if value < 0:
            raise ValueError(f"{name}={value} must be >= 0")
    itemsize = dtype.itemsize
    if guard_nbytes % itemsize:
        raise ValueError(f"guard_nbytes={guard_nbytes} is not a multiple of {dtype}'s size")
    if at is not None and at % itemsize:
        raise ValueError(f"at={to_hex(at)} is not a multiple of {dtype}'s size")
    front = guard_nbytes + offset * itemsize
    nbytes = numel * itemsize
    slack = PAGE_SIZE if at is not None else 0
    host = torch.full((slack + front + nbytes + after,), GUARD_BYTE, dtype=torch.uint8)
    if at is not None:
        # The payload's real address gets the page offset of ``at``: front slack, as guard.
        slack = (at - front - real_data_ptr(host)) % PAGE_SIZE
        host = host[: slack + front + nbytes + after]
    start = slack + front
    generator = torch.Generator().manual_seed(fill_seed)
    host[start : start + nbytes] = torch.randint(
        0, 256, (nbytes,), dtype=torch.uint8, generator=generator
    )
    if at is not None:
        _place(backend, host[slack:], at - front)
    buffer = host if backend.device.type == "cpu" else host.to(backend.device)
    return Allocation(
        buffer=buffer,
        start=start,
        nbytes=nbytes,
        dtype=dtype,
        offset=offset,
        fill_seed=fill_seed,
        guard_nbytes=guard_nbytes,
        placed=placed if at is not None else None,
    )


def _place(backend: Backend, window: torch.Tensor, at: int) -> None:
    memory = presentation.active()
    if backend.device.type != "cpu" or memory is None:
        raise PlacementError(
            f"cannot place an allocation on {backend.name}: only CPU memory, in a CPU "
            "backend's scope (Backend.running()), can be placed"
        )
    memory.place(window, at, alignment=PAGE_SIZE, window=True)


def release(allocation: Allocation) -> None:
    """Forget where a placed allocation was presented: its range is no memory any more."""
    memory = presentation.active()
    if allocation.placed is not None and memory is not None:
        memory.release(allocation.buffer)


def allocation_from_record(record: Mapping[str, Any], backend: Backend) -> Allocation:
    """Allocate again what :meth:`Allocation.to_record` describes: same dtype, size, offset
    and bytes; a placed one at the same address, any other wherever the backend puts it now."""
    placed = record.get("placed")
    return allocate(
        backend,
        dtype=dtype_from_name(str(record["dtype"])),
        numel=int(record["numel"]),
        offset=int(record["offset"]),
        guard_nbytes=int(record["guard_nbytes"]),
        fill_seed=int(record["fill_seed"]),
        at=None if placed is None else int(str(record["address"]), 16),
        placed=str(placed),
        guard_after=None if placed is None else int(record["guard_after"]),
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
