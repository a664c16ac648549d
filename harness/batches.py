"""Entries and batches: the copy requests a pointer table carries to an engine."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.addresses import to_hex
from harness.allocations import Allocation, AllocationRegistry


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
        return {
            "src": to_hex(self.src),
            "dst": to_hex(self.dst),
            "nbytes": self.nbytes,
            "synthetic": self.synthetic,
        }

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

    def to_record(self) -> list[dict[str, Any]]:
        return [e.to_record() for e in self.entries]

    def __repr__(self) -> str:
        return f"Batch({list(self.entries)!r})"
