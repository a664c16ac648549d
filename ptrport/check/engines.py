"""Engines: what executes a batch from a device pointer table.

- ``triton``: a batch copy kernel that loads each pointer from the table itself; compiled on
  GPUs, run by the Triton interpreter on CPU tensors.
- ``torch``: one ``Tensor.copy_`` per entry, each address resolved through the allocation
  registry; runs on every backend.
- ``ctypes``: ``ctypes.memmove`` per entry, on CPU; on an upper-half CPU backend through the
  real addresses behind the presented ones (:mod:`ptrport.device.presentation`).

Before any engine runs, :func:`admit` reads the device table as the engine will see it and
checks every entry with a non-zero size against the live allocations. An entry that points
anywhere else raises :class:`~ptrport.errors.UnsafeDereference`: the harness never hands a
synthetic address to anything that would dereference it.
"""

from __future__ import annotations

import ctypes
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ptrport.addresses import to_hex
from ptrport.check.tables import PointerTable
from ptrport.device import presentation
from ptrport.device.allocations import Allocation, AllocationRegistry
from ptrport.device.backends import Backend
from ptrport.errors import exception_message

TRITON_BLOCK = 1024


@dataclass(frozen=True)
class AdmittedCopy:
    """A copy the guard let through: both ranges lie inside live allocations."""

    src: int
    dst: int
    nbytes: int
    src_allocation: Allocation
    src_offset: int
    dst_allocation: Allocation
    dst_offset: int

    def __repr__(self) -> str:
        return f"AdmittedCopy({to_hex(self.src)} -> {to_hex(self.dst)}, {self.nbytes} bytes)"


def admit(table: PointerTable, n: int, registry: AllocationRegistry) -> list[AdmittedCopy]:
    """Check the first ``n`` device-table entries against ``registry``; return the copies to
    make. Zero-size entries are no-ops and are left out; any other entry must lie inside live
    allocations at both ends, or :class:`~ptrport.errors.UnsafeDereference` is raised."""
    return admit_entries(table.device_entries(n), registry)


def admit_entries(
    rows: Iterable[tuple[int, int, int]], registry: AllocationRegistry
) -> list[AdmittedCopy]:
    """:func:`admit` for ``(src, dst, nbytes)`` rows read from anywhere, e.g. a user subject's
    own table as it reads it back."""
    # The live ranges, resolved once per batch rather than once per entry and side; a range
    # none of them holds is handed to the registry, which refuses it in its own words.
    spans = [(a.address, a.end, a) for a in registry]

    def find(address: int, nbytes: int) -> tuple[Allocation, int]:
        for start, end, allocation in spans:
            if start <= address and address + nbytes <= end:
                return allocation, address - start
        return registry.find(address, nbytes)

    admitted = []
    for src, dst, nbytes in rows:
        if nbytes == 0:
            continue
        src_allocation, src_offset = find(src, nbytes)
        dst_allocation, dst_offset = find(dst, nbytes)
        admitted.append(
            AdmittedCopy(src, dst, nbytes, src_allocation, src_offset, dst_allocation, dst_offset)
        )
    return admitted


class Engine(Protocol):
    """What an engine provides."""

    name: str

    def unavailable_reason(self, backend: Backend) -> str | None:
        """``None`` if the engine can run on ``backend``, else why not."""
        ...

    def execute(
        self, table: PointerTable, n: int, registry: AllocationRegistry
    ) -> list[AdmittedCopy]:
        """Copy the first ``n`` entries of the device table; return what it dereferenced."""
        ...


class TorchEngine:
    name = "torch"

    def unavailable_reason(self, backend: Backend) -> str | None:
        return None

    def execute(
        self, table: PointerTable, n: int, registry: AllocationRegistry
    ) -> list[AdmittedCopy]:
        copies = admit(table, n, registry)
        for c in copies:
            # One slice of each whole buffer (not of its payload view): the same bytes.
            src_at = c.src_allocation.start + c.src_offset
            dst_at = c.dst_allocation.start + c.dst_offset
            dst = c.dst_allocation.buffer[dst_at : dst_at + c.nbytes]
            dst.copy_(c.src_allocation.buffer[src_at : src_at + c.nbytes])
        return copies


class CtypesEngine:
    name = "ctypes"

    def unavailable_reason(self, backend: Backend) -> str | None:
        if backend.device.type != "cpu":
            return "ctypes dereferences host memory; it runs on cpu only"
        return None

    def execute(
        self, table: PointerTable, n: int, registry: AllocationRegistry
    ) -> list[AdmittedCopy]:
        copies = admit(table, n, registry)
        memory = presentation.active()
        for c in copies:
            if memory is None:
                ctypes.memmove(c.dst, c.src, c.nbytes)
            else:
                dst = memory.real_address(c.dst, c.nbytes, "store")
                ctypes.memmove(dst, memory.real_address(c.src, c.nbytes, "load"), c.nbytes)
        return copies


class TritonEngine:
    """Launches ``kernel``, a batch copy kernel of :mod:`ptrport.check.triton_copy` taking the three
    device columns and ``BLOCK``."""

    name = "triton"

    def __init__(self, kernel: str = "batch_copy_kernel") -> None:
        self.kernel = kernel

    def unavailable_reason(self, backend: Backend) -> str | None:
        if importlib.util.find_spec("triton") is None:
            return "triton is not installed (pip install 'ptrport[triton]')"
        try:
            from ptrport.check import triton_copy  # noqa: F401 (does it import here?)
            from ptrport.device import triton_cpu  # noqa: F401 (and here?)
        except Exception as exc:
            return f"triton failed to import: {exception_message(exc)}"
        if backend.device.type == "cpu":
            return None
        if not backend.addresses_are_device_pointers:
            return f"data_ptr() on {backend.name} is not a device address a kernel can use"
        try:
            target = backend.triton_driver()
        except Exception as exc:
            return f"triton has no driver here: {exception_message(exc)}"
        expected = {"cuda": ("cuda", "hip"), "xpu": ("xpu",)}.get(backend.device.type, ())
        if target not in expected:
            return f"triton's active driver is {target!r}, not one for {backend.name}"
        return None

    def execute(
        self, table: PointerTable, n: int, registry: AllocationRegistry
    ) -> list[AdmittedCopy]:
        from ptrport.check import triton_copy
        from ptrport.device import triton_cpu

        copies = admit(table, n, registry)
        if n == 0:
            return copies
        columns = (table.src.device, table.dst.device, table.sizes.device)
        kernel = getattr(triton_copy, self.kernel)
        triton_cpu.launch(kernel, (n,), *columns, BLOCK=TRITON_BLOCK)
        return copies


ENGINES: dict[str, Engine] = {e.name: e for e in (TritonEngine(), TorchEngine(), CtypesEngine())}
