"""Entries and batches: the copy requests a pointer table carries to an engine."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ptrport.addresses import to_hex
from ptrport.device.allocations import Allocation, AllocationRegistry, allocation_from_record
from ptrport.device.backends import Backend


@dataclass(frozen=True)
class Entry:
    """Copy ``nbytes`` from ``src`` to ``dst``. Real entries name the allocations their
    addresses point into; synthetic ones name none and must never be dereferenced."""

    src: int
    dst: int
    nbytes: int
    src_allocation: Allocation | None = field(default=None, compare=False)
    dst_allocation: Allocation | None = field(default=None, compare=False)

    @property
    def synthetic(self) -> bool:
        return self.src_allocation is None or self.dst_allocation is None

    def to_record(self) -> dict[str, Any]:
        """The entry as reports show it; a real one with its allocations and the offsets into
        them, so :func:`entry_from_record` can make it again."""
        record: dict[str, Any] = {
            "type": "entry",
            "src": to_hex(self.src),
            "dst": to_hex(self.dst),
            "nbytes": self.nbytes,
            "synthetic": self.synthetic,
        }
        if self.src_allocation is not None and self.dst_allocation is not None:
            record["src_allocation"] = self.src_allocation.to_record()
            record["src_offset"] = self.src - self.src_allocation.address
            record["dst_allocation"] = self.dst_allocation.to_record()
            record["dst_offset"] = self.dst - self.dst_allocation.address
        return record

    def __repr__(self) -> str:
        kind = "synthetic" if self.synthetic else "real"
        src, dst = to_hex(self.src), to_hex(self.dst)
        return f"Entry({kind}, src={src}, dst={dst}, nbytes={self.nbytes})"


@dataclass(frozen=True)
class Batch:
    """A list of entries, real and synthetic mixed, and the allocations the real ones use."""

    entries: tuple[Entry, ...]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    @property
    def real(self) -> list[Entry]:
        return [e for e in self.entries if not e.synthetic]

    @property
    def synthetic(self) -> list[Entry]:
        return [e for e in self.entries if e.synthetic]

    @property
    def allocations(self) -> list[Allocation]:
        """Every allocation the real entries use, each once, in order."""
        seen: dict[int, Allocation] = {}
        for entry in self.real:
            for allocation in (entry.src_allocation, entry.dst_allocation):
                if allocation is not None:
                    seen.setdefault(id(allocation), allocation)
        return list(seen.values())

    def registry(self) -> AllocationRegistry:
        return AllocationRegistry(self.allocations)

    def to_record(self) -> dict[str, Any]:
        return {"type": "batch", "entries": [e.to_record() for e in self.entries]}

    def __repr__(self) -> str:
        return f"Batch({list(self.entries)!r})"


def entry_from_record(record: Mapping[str, Any], backend: Backend) -> Entry:
    """Make the entry :meth:`Entry.to_record` describes again; a real one gets fresh
    allocations with the same contents at the same offsets."""
    if record["synthetic"]:
        return Entry(int(record["src"], 16), int(record["dst"], 16), int(record["nbytes"]))
    src = allocation_from_record(record["src_allocation"], backend)
    dst = allocation_from_record(record["dst_allocation"], backend)
    return Entry(
        src.address + int(record["src_offset"]),
        dst.address + int(record["dst_offset"]),
        int(record["nbytes"]),
        src,
        dst,
    )


def batch_from_record(record: Mapping[str, Any], backend: Backend) -> Batch:
    return Batch(tuple(entry_from_record(e, backend) for e in record["entries"]))
