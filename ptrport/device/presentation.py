"""Presented addresses: CPU memory shown to the code under test at the addresses an upper-half
device hands out, and the guard that keeps every access inside memory the check was given.

A :class:`Presentation` maps each real CPU address to the address code sees: ``AS_IS`` (the
``cpu`` backend), ``USM`` (real + ``0xffff_8000_0000_0000``, the shape of Intel Level Zero USM
device memory) and ``TBI`` (the top byte set to ``0xb4``, Android's tagged ARM64 heap).

Inside :func:`presenting` (one check on a CPU backend; restored on any exit), ``Tensor.data_ptr()``
and ``UntypedStorage.data_ptr()`` of a CPU tensor return its presented address, so code that
stages ``data_ptr()`` itself sees it. Every storage whose address was handed out becomes *device
memory* for the rest of the scope, and is kept alive until the scope ends, so an address taken
in the check never points at memory that was freed and reused. Whatever dereferences an address
(the Triton interpreter, :mod:`ptrport.device.triton_cpu`; the ``ctypes`` engine) asks
:class:`DeviceMemory` for the real address first: an address that is no presented address, or
lies outside every storage handed out, is a :class:`DeviceFault`, raised before anything is
touched. numpy views and torch operations are unaffected: they never see an address.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from ptrport.addresses import ADDRESS_LIMIT, to_hex
from ptrport.device.scoped_patch import ScopedPatch
from ptrport.errors import HarnessError

TAG_SHIFT = 56
_LOW_56 = (1 << TAG_SHIFT) - 1


class DeviceFault(HarnessError):
    """Code dereferenced an address that is no device memory of the check: the access was
    refused before it touched anything."""


@dataclass(frozen=True)
class Presentation:
    """How real CPU addresses are shown: plus ``offset``, or with the top byte set to ``tag``."""

    name: str
    description: str
    offset: int = 0
    tag: int | None = None

    @property
    def upper_half(self) -> bool:
        """Whether every presented address is ``>= 2**63``."""
        return self.offset >= 1 << 63 or (self.tag is not None and self.tag >= 0x80)

    @property
    def limit(self) -> int:
        """One past the largest real address this presentation can show."""
        return 1 << TAG_SHIFT if self.tag is not None else ADDRESS_LIMIT - self.offset

    def present(self, real: int) -> int:
        if not 0 <= real < self.limit:
            raise HarnessError(
                f"cannot present {to_hex(real)} as a {self.name} address: real addresses must "
                f"lie below {to_hex(self.limit)}"
            )
        if self.tag is not None:
            return real | self.tag << TAG_SHIFT
        return real + self.offset

    def real(self, presented: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For ``numpy.uint64`` presented addresses: the real ones, and which were presented
        addresses at all (where not, the real value is meaningless)."""
        if self.tag is not None:
            valid = (presented >> np.uint64(TAG_SHIFT)) == np.uint64(self.tag)
            return presented & np.uint64(_LOW_56), valid
        offset = np.uint64(self.offset)
        return presented - offset, presented >= offset


AS_IS = Presentation("cpu", "CPU addresses as they are")
USM = Presentation(
    "cpu-usm",
    "CPU memory presented at real + 0xffff800000000000, the shape of Intel Level Zero USM "
    "device memory (0xffffd5cfa155f640)",
    offset=0xFFFF_8000_0000_0000,
)
TBI = Presentation(
    "cpu-tbi",
    "CPU memory presented with the top byte set to 0xb4, the shape of Android's tagged ARM64 "
    "heap pointers (0xb400007757036010)",
    tag=0xB4,
)


class DeviceMemory:
    """The storages whose addresses were handed out in one scope, as real byte ranges."""

    def __init__(self, presentation: Presentation) -> None:
        self.presentation = presentation
        self._ranges: dict[int, tuple[int, torch.UntypedStorage]] = {}
        self._starts: np.ndarray | None = None
        self._ends = np.zeros(0, dtype=np.uint64)

    def hand_out(self, storage: torch.UntypedStorage, start: int) -> None:
        """Record ``storage`` (whose real first byte is ``start``) as device memory."""
        end = start + storage.nbytes()
        known = self._ranges.get(start)
        if known is None or known[0] != end:
            self._ranges[start] = (end, storage)
            self._starts = None

    def _sorted(self) -> tuple[np.ndarray, np.ndarray]:
        if self._starts is None:
            starts = sorted(self._ranges)
            self._starts = np.array(starts, dtype=np.uint64)
            self._ends = np.array([self._ranges[s][0] for s in starts], dtype=np.uint64)
        return self._starts, self._ends

    def real(self, presented: np.ndarray, nbytes: int, access: str) -> np.ndarray:
        """The real addresses of ``nbytes``-byte accesses at ``presented`` (``numpy.uint64``),
        or :class:`DeviceFault` for the first one that is not device memory."""
        real, valid = self.presentation.real(presented)
        starts, ends = self._sorted()
        if len(starts):
            index = np.searchsorted(starts, real, side="right").astype(np.int64) - 1
            found = np.maximum(index, 0)
            inside = valid & (index >= 0) & (real + np.uint64(nbytes) <= ends[found])
            for hit in np.unique(found[inside]).tolist():
                inside &= (found != hit) | self._still_there(int(starts[hit]))
        else:
            inside = np.zeros(real.shape, dtype=bool)
        faults = np.flatnonzero(~inside)
        if len(faults):
            bad = int(faults[0])
            more = f" (and {len(faults) - 1} more lanes)" if len(faults) > 1 else ""
            fault = self._fault(int(presented.flat[bad]), bool(valid.flat[bad]), nbytes, access)
            raise DeviceFault(fault + more)
        return real

    def _still_there(self, start: int) -> bool:
        """Whether the storage handed out at ``start`` still holds its range: one resized since
        (``resize_`` moves its bytes) is forgotten, and its old range is no memory any more."""
        end, storage = self._ranges[start]
        if _STORAGE_DATA_PTR(storage) == start and start + storage.nbytes() >= end:
            return True
        del self._ranges[start]
        self._starts = None
        return False

    def real_address(self, presented: int, nbytes: int, access: str) -> int:
        """:meth:`real` for one address."""
        return int(self.real(np.array([presented], dtype=np.uint64), nbytes, access)[0])

    def _fault(self, address: int, valid: bool, nbytes: int, access: str) -> str:
        name = self.presentation.name
        where = f"{access} of {nbytes} byte{'s' if nbytes != 1 else ''} at {to_hex(address)}"
        if not valid:
            return f"device fault on {name}: {where}, which is no {name} address"
        return f"device fault on {name}: {where}, where no memory of the check lies"


_TENSOR_DATA_PTR: Callable[[torch.Tensor], int] = torch._C.TensorBase.data_ptr
_STORAGE_DATA_PTR: Callable[[torch.UntypedStorage], int] = torch.UntypedStorage.data_ptr

_scopes: list[DeviceMemory] = []
"""The presentations entered and not yet left, innermost last. ``data_ptr`` is one attribute of
a class for the whole process, so which presentation it applies is process state too."""


def active() -> DeviceMemory | None:
    """The device memory of the innermost :func:`presenting` scope, if any."""
    return _scopes[-1] if _scopes else None


def _tensor_data_ptr(tensor: torch.Tensor) -> int:
    real = _TENSOR_DATA_PTR(tensor)
    memory = active()
    if memory is None or real == 0 or not tensor.is_cpu:
        return real
    storage = tensor.untyped_storage()
    memory.hand_out(storage, _STORAGE_DATA_PTR(storage))
    return memory.presentation.present(real)


def _storage_data_ptr(storage: torch.UntypedStorage) -> int:
    real = _STORAGE_DATA_PTR(storage)
    memory = active()
    if memory is None or real == 0 or storage.device.type != "cpu":
        return real
    memory.hand_out(storage, real)
    return memory.presentation.present(real)


_DATA_PTR = ScopedPatch(
    (torch.Tensor, "data_ptr", _tensor_data_ptr),
    (torch.UntypedStorage, "data_ptr", _storage_data_ptr),
)


@contextmanager
def presenting(presentation: Presentation) -> Iterator[DeviceMemory]:
    """Within, CPU tensors' ``data_ptr()`` is presented with ``presentation`` and every storage
    handed out is device memory; on leaving (exceptions included) both are undone."""
    memory = DeviceMemory(presentation)
    with _DATA_PTR.applied():
        _scopes.append(memory)
        try:
            yield memory
        finally:
            _scopes.remove(memory)
