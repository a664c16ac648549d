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

import bisect
import itertools
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from ptrport.addresses import ADDRESS_LIMIT, HIGH_HALF, to_hex
from ptrport.device.scoped_patch import ScopedPatch
from ptrport.errors import HarnessError, shown

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

    def present(self, address: int) -> int:
        """Where the real ``address`` is shown."""
        if not 0 <= address < self.limit:
            raise HarnessError(
                f"cannot present {to_hex(address)} as a {self.name} address: real addresses "
                f"must lie below {to_hex(self.limit)}"
            )
        if self.tag is not None:
            return address | self.tag << TAG_SHIFT
        return address + self.offset

    def unpresented(self, presented: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
PLACED = Presentation(
    "cpu-placed",
    "CPU memory placed where each check's Hypothesis draws put it: across 2**63, ending at "
    "2**64, across 2**32, 2**48 and 2**56, and in Intel USM, ARM TBI and x86 kernel-half shapes "
    "(other storages keep their CPU addresses)",
)


ALLOCATOR_ALIGNMENT = 64
"""What torch's CPU allocator guarantees of a storage's address: a placement keeps it."""


class PlacementError(HarnessError):
    """A placement the address space cannot take: misaligned, overlapping memory already
    there, or running past ``2**64``."""


@dataclass
class _Range:
    """Device memory: ``nbytes`` real bytes at ``real`` (in ``storage``, whose first byte is at
    ``storage_real``), seen at ``presented``."""

    presented: int
    real: int
    nbytes: int
    storage: torch.UntypedStorage
    storage_real: int
    placed: bool
    """Put there by :meth:`DeviceMemory.place`, not by the presentation."""
    asked: int | None = None
    """Where the tensor it was placed for was asked to be."""
    handed: int = 0
    """When its address was last handed out (a count of hand-outs in its scope)."""

    @property
    def end(self) -> int:
        return self.presented + self.nbytes

    @property
    def storage_presented(self) -> int:
        """Where the storage's first byte is presented (itself memory unless a window)."""
        return self.presented - (self.real - self.storage_real)


RECENT = 3
"""How many of the storages handed out last :meth:`DeviceMemory.presented_last` names."""


SPREAD_KINDS = ("across 2**63", "ending at 2**64", "at the top")
"""Where :class:`DeviceMemory` spreads the storages of a test that never places any (a
whole-suite run's test on ``cpu-placed``), in turn from a start its seed chooses: straddling
the int64 sign bit, with its end pointer at ``2**64`` (which wraps to 0), and at the top of the
address space, as Intel USM device memory is (real + ``0xffff_8000_0000_0000``)."""


class DeviceMemory:
    """The storages whose addresses were handed out in one scope: an interval map from the
    presented address space to real memory. A storage appears where the presentation puts it,
    or where :meth:`place` puts it; the ranges never overlap, and an access anywhere else is a
    :class:`DeviceFault`. With ``spread`` (a seed), each storage whose address is handed out
    is placed, in turn, where :data:`SPREAD_KINDS` says, as the seed chooses."""

    def __init__(self, presentation: Presentation, spread: int | None = None) -> None:
        self.presentation = presentation
        self._spread = random.Random(spread) if spread is not None else None
        self._spread_next = self._spread.randrange(len(SPREAD_KINDS)) if self._spread else 0
        self.spread_kinds: dict[int, str] = {}
        """Where each spread placement was put, by the address it was placed at."""
        self._by_storage: dict[int, _Range] = {}
        """By the real address of the storage's first byte, as ``data_ptr()`` finds them."""
        self._starts: list[int] = []
        """The presented first bytes, sorted: the ranges are disjoint, so each lies between
        its neighbours'."""
        self._by_start: dict[int, _Range] = {}
        self._table: tuple[list[_Range], np.ndarray, np.ndarray, np.ndarray] | None = None
        self._handed = itertools.count(1)
        self._released: list[int] | None = None
        """The placements as they were when the latest release after a placement began: what
        a Hypothesis example had placed, once its end released them."""

    def hand_out(self, storage: torch.UntypedStorage, start: int) -> int:
        """Record ``storage`` (whose real first byte is ``start``) as device memory; return the
        address its first byte is presented at."""
        nbytes = storage.nbytes()
        known = self._by_storage.get(start)
        if known is not None:
            if known.placed and self._kept_or_forgotten(known):
                return known.storage_presented
            if not known.placed and known.nbytes == nbytes:
                known.handed = next(self._handed)
                return known.presented
            if start in self._by_storage:
                self._remove(known)
        if self._spread is not None:
            return self._spread_out(storage, start, nbytes)
        presented = self.presentation.present(start)
        clash = self._overlapping(presented, presented + nbytes)
        if clash is not None:
            raise PlacementError(
                f"{self.presentation.name} presents a storage at {to_hex(presented)}, inside "
                f"the placement at {_span(clash)}: place it elsewhere"
            )
        handed = next(self._handed)
        self._add(_Range(presented, start, nbytes, storage, start, placed=False, handed=handed))
        return presented

    def _spread_out(self, storage: torch.UntypedStorage, start: int, nbytes: int) -> int:
        """Place a storage where the next of :data:`SPREAD_KINDS` says, at a start the seed
        chooses, keeping its real address's alignment; the nearest free place if another
        storage is there already."""
        assert self._spread is not None
        kind = SPREAD_KINDS[self._spread_next % len(SPREAD_KINDS)]
        self._spread_next += 1
        size = max(nbytes, 1)
        low = start % ALLOCATOR_ALIGNMENT
        if kind == "across 2**63":
            # At least one byte on either side of the sign bit where the storage has two.
            steps = max(1, -(-(size - 1) // ALLOCATOR_ALIGNMENT))
            wanted = HIGH_HALF - self._spread.randint(1, steps) * ALLOCATOR_ALIGNMENT + low
            if wanted + size <= HIGH_HALF:
                wanted += ALLOCATOR_ALIGNMENT
            if wanted >= HIGH_HALF:
                wanted -= ALLOCATOR_ALIGNMENT
        elif kind == "ending at 2**64":
            wanted = ADDRESS_LIMIT - size
            wanted -= (wanted - low) % ALLOCATOR_ALIGNMENT
        else:
            pages = self._spread.randrange(1 << 20)
            wanted = USM.offset + pages * 4096 + low
        at = self.free_near(wanted, size, step=ALLOCATOR_ALIGNMENT)
        if at is None:
            raise PlacementError(f"no room {kind} for a storage of {nbytes} bytes")
        handed = next(self._handed)
        self._add(_Range(at, start, nbytes, storage, start, placed=True, asked=at, handed=handed))
        self.spread_kinds[at] = kind
        self._released = None
        return at

    def presented_last(self) -> list[int]:
        """Where the last :data:`RECENT` storages whose addresses were handed out are
        presented, the newest last (placed ones aside: :meth:`placements` has them): what a
        failure that names no address was most likely about."""
        presented = [r for r in self._by_storage.values() if not r.placed]
        return [r.presented for r in sorted(presented, key=lambda r: r.handed)[-RECENT:]]

    def place(
        self,
        tensor: torch.Tensor,
        at: int,
        *,
        alignment: int = ALLOCATOR_ALIGNMENT,
        window: bool = False,
    ) -> None:
        """Present ``tensor`` at ``at`` (its ``data_ptr()`` from now on) and the rest of its
        storage around it, for the rest of the scope or until :meth:`release`. ``at`` must be
        congruent to the tensor's real address modulo ``alignment``, and the storage must fit
        in ``[0, 2**64)`` without overlapping memory handed out before; else
        :class:`PlacementError`, and nothing changes. With ``window``, only the tensor's own
        bytes are memory, not the rest of its storage."""
        if not isinstance(tensor, torch.Tensor):
            raise PlacementError(
                f"cannot place {type(tensor).__name__} {shown(tensor)}: place() takes a "
                "torch.Tensor"
            )
        if not tensor.is_cpu:
            raise PlacementError(f"cannot place a tensor on {tensor.device}: only CPU memory")
        storage = tensor.untyped_storage()
        storage_real = _STORAGE_DATA_PTR(storage)
        real = storage_real + _offset_bytes(tensor)
        if not 0 <= at < ADDRESS_LIMIT:
            raise PlacementError(f"cannot place a tensor at {at:#x}: not a 64-bit address")
        if (at - real) % alignment:
            raise PlacementError(
                f"cannot place a tensor at {to_hex(at)}: it must keep its real address's "
                f"alignment, {to_hex(at)} % {alignment} = {at % alignment} but the real "
                f"address % {alignment} = {real % alignment}"
            )
        if window:
            mapped_real, nbytes = real, tensor.numel() * tensor.element_size()
        else:
            mapped_real, nbytes = storage_real, storage.nbytes()
        presented = at - (real - mapped_real)
        end = presented + nbytes
        if presented < 0 or end > ADDRESS_LIMIT:
            raise PlacementError(
                f"cannot place a tensor at {to_hex(at)}: its {nbytes} bytes of storage would "
                f"run {'below 0' if presented < 0 else 'past 2**64'}"
            )
        known = self._by_storage.get(storage_real)
        if known is not None:
            self._remove(known)
        clash = self._overlapping(presented, end)
        if clash is not None:
            if known is not None:
                self._add(known)
            raise PlacementError(
                f"cannot place a tensor at {to_hex(at)}: its storage "
                f"[{to_hex(presented)}, {to_hex(end)}) overlaps memory at {_span(clash)}"
            )
        self._add(
            _Range(presented, mapped_real, nbytes, storage, storage_real, placed=True, asked=at)
        )
        self._released = None

    def placements(self) -> list[int]:
        """The addresses tensors were placed at in this scope and are still, in order."""
        return sorted(r.asked for r in self._by_storage.values() if r.asked is not None)

    def placed_lately(self) -> list[int]:
        """The placements; where there are none, those released last, together (a
        Hypothesis example's, which its end released before its failure is reported)."""
        return self.placements() or list(self._released or ())

    def release(self, tensor: torch.Tensor) -> None:
        """Forget the placement of ``tensor``'s storage: its range is no memory any more (and a
        later ``data_ptr()`` presents it as the presentation does)."""
        known = self._by_storage.get(_STORAGE_DATA_PTR(tensor.untyped_storage()))
        if known is not None and known.placed:
            if self._released is None:
                self._released = self.placements()
            self._remove(known)

    def free_near(self, presented: int, nbytes: int, *, step: int) -> int | None:
        """The first address at or above ``presented`` (else the first below it), in steps of
        ``step``, where ``nbytes`` fit in ``[0, 2**64)`` with at least one unmapped byte between
        them and memory handed out before; ``None`` if there is none."""
        candidate = presented
        while candidate + nbytes <= ADDRESS_LIMIT:
            clash = self._overlapping(candidate - 1, candidate + nbytes + 1)
            if clash is None:
                return candidate
            candidate += -(-(clash.end + 1 - candidate) // step) * step
        candidate = presented - step * -(-max(0, presented + nbytes - ADDRESS_LIMIT) // step)
        while candidate >= 0:
            clash = self._overlapping(candidate - 1, candidate + nbytes + 1)
            if clash is None:
                return candidate
            candidate -= -(-(candidate + nbytes + 1 - clash.presented) // step) * step
        return None

    def _add(self, found: _Range) -> None:
        self._by_storage[found.storage_real] = found
        self._by_start[found.presented] = found
        bisect.insort(self._starts, found.presented)
        self._table = None

    def _remove(self, found: _Range) -> None:
        del self._by_storage[found.storage_real]
        del self._by_start[found.presented]
        del self._starts[bisect.bisect_left(self._starts, found.presented)]
        self._table = None

    def _overlapping(self, low: int, high: int) -> _Range | None:
        """A range that meets ``[low, high)``, if any: the last one starting below ``high``
        does, if any does, since the ranges are disjoint."""
        index = bisect.bisect_left(self._starts, high) - 1
        if index < 0:
            return None
        found = self._by_start[self._starts[index]]
        return found if found.end > low else None

    def _sorted(self) -> tuple[list[_Range], np.ndarray, np.ndarray, np.ndarray]:
        if self._table is None:
            ranges = [self._by_start[start] for start in self._starts]
            self._table = (
                ranges,
                np.array([r.presented for r in ranges], dtype=np.uint64),
                np.array([r.nbytes for r in ranges], dtype=np.uint64),
                np.array([r.real for r in ranges], dtype=np.uint64),
            )
        return self._table

    def translate(self, presented: np.ndarray, nbytes: int, access: str) -> np.ndarray:
        """The real addresses of ``nbytes``-byte accesses at ``presented`` (``numpy.uint64``),
        or :class:`DeviceFault` for the first one that is not device memory."""
        ranges, starts, sizes, reals = self._sorted()
        need = np.uint64(nbytes)
        if len(starts):
            index = np.searchsorted(starts, presented, side="right").astype(np.int64) - 1
            found = np.maximum(index, 0)
            # Offsets from the range start, so that a range ending at 2**64 needs no end value.
            offset = presented - starts[found]
            size = sizes[found]
            inside = (index >= 0) & (size >= need) & (offset <= size - need)
            for hit in np.unique(found[inside]).tolist():
                inside &= (found != hit) | self._kept_or_forgotten(ranges[hit])
            real: np.ndarray = reals[found] + offset
        else:
            inside = np.zeros(presented.shape, dtype=bool)
            real = presented
        faults = np.flatnonzero(~inside)
        if len(faults):
            bad = int(faults[0])
            more = f" (and {len(faults) - 1} more lanes)" if len(faults) > 1 else ""
            raise DeviceFault(self._fault(int(presented.flat[bad]), nbytes, access) + more)
        return real

    def _kept_or_forgotten(self, found: _Range) -> bool:
        """Whether a storage handed out still holds its range: one resized since (``resize_``
        moves its bytes) is forgotten, and its old range is no memory any more."""
        storage = found.storage
        needed = found.real - found.storage_real + found.nbytes
        if _STORAGE_DATA_PTR(storage) == found.storage_real and storage.nbytes() >= needed:
            return True
        self._remove(found)
        return False

    def real_address(self, presented: int, nbytes: int, access: str) -> int:
        """:meth:`translate` for one address."""
        return int(self.translate(np.array([presented], dtype=np.uint64), nbytes, access)[0])

    def _fault(self, address: int, nbytes: int, access: str) -> str:
        name = self.presentation.name
        where = f"{access} of {nbytes} byte{'s' if nbytes != 1 else ''} at {to_hex(address)}"
        _, valid = self.presentation.unpresented(np.array([address], dtype=np.uint64))
        if not bool(valid[0]) and not any(r.placed for r in self._by_storage.values()):
            return f"device fault on {name}: {where}, which is no {name} address"
        return f"device fault on {name}: {where}, where no memory of the check lies"


def _span(found: _Range) -> str:
    return f"[{to_hex(found.presented)}, {to_hex(found.end)})"


def _offset_bytes(tensor: torch.Tensor) -> int:
    return int(tensor.storage_offset()) * tensor.element_size()


def real_data_ptr(tensor: torch.Tensor) -> int:
    """``tensor.data_ptr()`` as the CPU sees it, presented or not."""
    return int(_TENSOR_DATA_PTR(tensor))


_TENSOR_DATA_PTR: Callable[[torch.Tensor], int] = torch._C.TensorBase.data_ptr
_STORAGE_DATA_PTR: Callable[[torch.UntypedStorage], int] = torch.UntypedStorage.data_ptr
_MODE_ENABLED: Callable[[], bool] = torch._C._is_torch_function_mode_enabled

_scopes: list[DeviceMemory] = []
"""The presentations entered and not yet left, innermost last. ``data_ptr`` is one attribute of
a class for the whole process, so which presentation it applies is process state too."""


def active() -> DeviceMemory | None:
    """The device memory of the innermost :func:`presenting` scope, if any."""
    return _scopes[-1] if _scopes else None


def _tensor_data_ptr(tensor: torch.Tensor) -> int:
    __tracebackhide__ = True
    # Without torch functions where any could run: under a TorchFunctionMode (``with
    # torch.device(...)``, ``torch.set_default_device``, a user's own, the stand-in), or for a
    # tensor subclass with its own, the C method hands the call to it, which calls
    # ``Tensor.data_ptr`` (this function) again, and the address would be presented twice.
    if _MODE_ENABLED() or type(tensor) is not torch.Tensor:
        with torch._C.DisableTorchFunction():
            return _presented_tensor(tensor)
    return _presented_tensor(tensor)


def _presented_tensor(tensor: torch.Tensor) -> int:
    __tracebackhide__ = True
    real = _TENSOR_DATA_PTR(tensor)
    memory = active()
    if memory is None or real == 0 or not tensor.is_cpu:
        return real
    storage = tensor.untyped_storage()
    start = _STORAGE_DATA_PTR(storage)
    return _handed(memory.hand_out(storage, start) + (real - start))


def _storage_data_ptr(storage: torch.UntypedStorage) -> int:
    __tracebackhide__ = True
    real = _STORAGE_DATA_PTR(storage)  # a storage's methods are no torch functions
    memory = active()
    if memory is None or real == 0 or storage.device.type != "cpu":
        return real
    return _handed(memory.hand_out(storage, real))


def _handed(presented: int) -> int:
    """``presented``, which code is about to see as an address: a 64-bit one, or a harness
    error rather than a value no device could hand out."""
    if not 0 <= presented < ADDRESS_LIMIT:
        raise HarnessError(
            f"ptrport presented {presented:#x}, which is no 64-bit address: a bug of ptrport's"
        )
    return presented


_DATA_PTR = ScopedPatch(
    (torch.Tensor, "data_ptr", _tensor_data_ptr),
    (torch.UntypedStorage, "data_ptr", _storage_data_ptr),
)


@contextmanager
def presenting(presentation: Presentation, spread: int | None = None) -> Iterator[DeviceMemory]:
    """Within, CPU tensors' ``data_ptr()`` is presented with ``presentation`` (or, with
    ``spread``, placed as :class:`DeviceMemory` spreads them) and every storage handed out is
    device memory; on leaving (exceptions included) both are undone."""
    memory = DeviceMemory(presentation, spread)
    with _DATA_PTR.applied():
        _scopes.append(memory)
        try:
            yield memory
        finally:
            _scopes.remove(memory)
