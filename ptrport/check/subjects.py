"""Subjects: the code under test. It creates a pointer table, stages a batch into it, transfers
it, executes it with an engine and reads back what the device holds.

The built-in subjects are encoding x engine, named ``uint64/triton``, ``int64-bitcast/torch``,
``int64/ctypes`` and so on. Those on the ``int64`` encoding are controls: they carry a known bug,
and the scenarios in their ``exposed_by`` must catch it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from ptrport.check.batches import Batch
from ptrport.check.contracts import FULL_RANGE, Contract
from ptrport.check.engines import ENGINES, AdmittedCopy, Engine
from ptrport.check.tables import ENCODINGS, SIZES_DTYPE, Encoding, PointerTable
from ptrport.device import address_ops
from ptrport.device.allocations import AllocationRegistry
from ptrport.device.backends import Backend
from ptrport.errors import HarnessError


class Subject(Protocol):
    """What a subject provides. ``create`` starts afresh; the other steps act on what it made."""

    name: str
    description: str
    exposed_by: frozenset[str]
    """Scenarios that must catch this subject's bug; empty for a subject that should pass."""
    exposed_by_upper_half: frozenset[str]
    """Scenarios that must catch it too where real allocations lie at or above ``2**63``."""
    executes: bool
    """Whether :meth:`execute` runs batches; checks that copy are skipped for one that does not."""
    contract: Contract
    """What its columns hold by design; the scenarios draw within it."""

    def unavailable_reason(self, backend: Backend) -> str | None: ...

    def create(self, capacity: int, backend: Backend) -> object:
        """Make a pointer table of ``capacity`` entries. What it returns is inspected by the
        buffer checks if it is a :class:`PointerTable`, and ignored otherwise."""
        ...

    def stage(self, batch: Batch) -> None: ...

    def transfer(self, n: int) -> None: ...

    def execute(self, n: int) -> list[AdmittedCopy]:
        """Run the first ``n`` entries; return the copies that were dereferenced."""
        ...

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        """The first ``n`` ``(src, dst, nbytes)`` the device holds, as unsigned ints."""
        ...


@runtime_checkable
class AddressQueries(Protocol):
    """What a subject that computes with the addresses in its device table provides, for the
    ``address_arithmetic`` checks. Each answers for the ``src`` addresses of the first ``n``
    entries, as the subject's own code would."""

    def order(self, n: int) -> list[int]:
        """Indices that sort the entries by address (ties in staging order)."""
        ...

    def in_range(self, n: int, base: int, nbytes: int) -> list[bool]:
        """Whether each address lies in ``[base, base + nbytes)``."""
        ...

    def high_bits(self, n: int, shift: int) -> list[int]:
        """Each address shifted right by ``shift``."""
        ...


class TableSubject:
    """A :class:`PointerTable` in one encoding, executed by one engine."""

    def __init__(self, encoding: Encoding, engine: Engine) -> None:
        self.encoding = encoding
        self.engine = engine
        self.name = f"{encoding.name}/{engine.name}"
        self.description = f"{encoding.description}, executed by {engine.name}"
        self.exposed_by = encoding.exposed_by
        self.exposed_by_upper_half = encoding.exposed_by_upper_half
        self.exposing = encoding.exposing
        self.executes = True
        self.contract = FULL_RANGE
        self.sizes_dtype = SIZES_DTYPE
        self._table: PointerTable | None = None
        self._registry = AllocationRegistry()

    @property
    def table(self) -> PointerTable:
        if self._table is None:
            raise HarnessError(f"{self.name}: create() was not called")
        return self._table

    def unavailable_reason(self, backend: Backend) -> str | None:
        return self.engine.unavailable_reason(backend)

    def create(self, capacity: int, backend: Backend) -> PointerTable:
        self._table = PointerTable(capacity, self.encoding, backend, sizes_dtype=self.sizes_dtype)
        self._registry = AllocationRegistry()
        return self._table

    def stage(self, batch: Batch) -> None:
        self.table.stage(batch.entries)
        for allocation in batch.allocations:
            self._registry.add(allocation)

    def transfer(self, n: int) -> None:
        self.table.transfer(n)

    def execute(self, n: int) -> list[AdmittedCopy]:
        copies = self.engine.execute(self.table, n, self._registry)
        self.table.backend.synchronize()
        return copies

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        return self.table.read_back(n)

    def _src_bits(self, n: int) -> torch.Tensor:
        return address_ops.column_bits(self.table.src.device[:n])

    def order(self, n: int) -> list[int]:
        return address_ops.unsigned_order(self._src_bits(n))

    def in_range(self, n: int, base: int, nbytes: int) -> list[bool]:
        return address_ops.unsigned_in_range(self._src_bits(n), base, nbytes)

    def high_bits(self, n: int, shift: int) -> list[int]:
        return address_ops.unsigned_high_bits(self._src_bits(n), shift)

    def __repr__(self) -> str:
        return f"<subject {self.name}>"


def builtin_subjects() -> dict[str, TableSubject]:
    """Every encoding x engine, fresh instances, by name; fixes first, controls last."""
    ordered = sorted(ENCODINGS.values(), key=lambda e: e.control)
    subjects = (TableSubject(enc, eng) for enc in ordered for eng in ENGINES.values())
    return {s.name: s for s in subjects}
