"""Pointer tables: how addresses are encoded in tensors and carried from host to device.

A :class:`PointerTable` holds three columns, ``src``, ``dst`` and ``sizes``. Each column is a
host tensor (pinned where the backend can pin), its device mirror, and a numpy view of the host
tensor through which entries are staged, the way inference engines fill them step by step. The
capacity is fixed at creation; staging appends at an offset until :meth:`PointerTable.reset`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ptrport.addresses import to_signed, to_unsigned
from ptrport.check.batches import Entry
from ptrport.device.backends import Backend
from ptrport.errors import CapacityExceeded


def _same(value: int) -> int:
    return value


def _same_array(values: np.ndarray) -> np.ndarray:
    return values


def _bitcast_array(values: np.ndarray) -> np.ndarray:
    return values.view(np.int64)


@dataclass(frozen=True)
class Encoding:
    """How an address is stored in a tensor: its dtype, the Python value written through the
    numpy view for an address (``store``), and the address a read-back value stands for
    (``load``)."""

    name: str
    dtype: torch.dtype
    description: str
    store: Callable[[int], int | float]
    load: Callable[[Any], int]
    exposed_by: frozenset[str] = frozenset()
    """For controls: the scenarios (or ``scenario::check`` ids) that must catch this encoding's
    bug."""
    exposing: str = ""
    """For controls: what kind of address makes the bug show."""
    exposed_by_upper_half: frozenset[str] = frozenset()
    """For controls: where the bug must show too on a backend whose real allocations lie in the
    upper half (``cpu-usm``, ``cpu-tbi``, ``xpu``): there every real copy meets it."""
    store_array: Callable[[np.ndarray], np.ndarray] | None = None
    """``store`` for a whole ``numpy.uint64`` array at once, giving an array of the column's
    dtype, where one exists that means the same as ``store`` value by value;
    :meth:`PointerTable.stage_arrays` uses it, else it falls back to ``store`` per value."""

    @property
    def control(self) -> bool:
        return bool(self.exposed_by)


UINT64 = Encoding(
    "uint64",
    torch.uint64,
    "addresses as torch.uint64 (the fix)",
    store=_same,
    load=_same,
    store_array=_same_array,
)
INT64_BITCAST = Encoding(
    "int64-bitcast",
    torch.int64,
    "addresses reinterpreted as two's-complement int64: the same bits in a signed tensor",
    store=to_signed,
    load=to_unsigned,
    store_array=_bitcast_array,
)
INT64 = Encoding(
    "int64",
    torch.int64,
    "control: Python ints written into an int64 table, which overflows at 2**63",
    store=_same,
    load=to_unsigned,
    exposed_by=frozenset({"table_round_trip", "mixed_batches", "address_arithmetic"}),
    exposing="addresses at or above 2**63",
    exposed_by_upper_half=frozenset({"batch_copy"}),
)
ENCODINGS: dict[str, Encoding] = {e.name: e for e in (UINT64, INT64_BITCAST, INT64)}

SIZES_DTYPE = torch.int64


@dataclass(frozen=True)
class MirroredColumn:
    """One column of a pointer table: host tensor, device mirror, numpy view of the host."""

    host: torch.Tensor
    device: torch.Tensor
    view: np.ndarray

    @classmethod
    def create(cls, capacity: int, dtype: torch.dtype, backend: Backend) -> MirroredColumn:
        host = torch.zeros(capacity, dtype=dtype, pin_memory=backend.can_pin)
        device = torch.zeros(capacity, dtype=dtype, device=backend.device)
        return cls(host=host, device=device, view=host.numpy())

    def transfer(self, n: int, non_blocking: bool) -> None:
        self.device[:n].copy_(self.host[:n], non_blocking=non_blocking)

    def device_bits(self, n: int) -> list[int]:
        """The first ``n`` device values as the unsigned 64-bit ints a kernel loading them as
        pointers sees. A 64-bit integer column is read through an int64 view, so the read works
        wherever int64 does, whatever the column's own dtype supports; any other dtype (a
        control's float64 or int32) is converted value by value, as a kernel's cast would."""
        values = self.device[:n]
        if values.dtype in (torch.int64, torch.uint64):
            return [to_unsigned(v) for v in values.view(torch.int64).to("cpu").tolist()]
        return [to_unsigned(int(v)) for v in values.to("cpu").tolist()]


class PointerTable:
    """``src``/``dst``/``sizes`` columns of ``capacity`` entries for ``backend``."""

    def __init__(
        self,
        capacity: int,
        encoding: Encoding,
        backend: Backend,
        *,
        sizes_dtype: torch.dtype = SIZES_DTYPE,
    ) -> None:
        if capacity < 0:
            raise ValueError(f"capacity={capacity} must be >= 0")
        self.capacity = capacity
        self.encoding = encoding
        self.backend = backend
        self.pinned = backend.can_pin
        self.src = MirroredColumn.create(capacity, encoding.dtype, backend)
        self.dst = MirroredColumn.create(capacity, encoding.dtype, backend)
        self.sizes = MirroredColumn.create(capacity, sizes_dtype, backend)
        self.staged = 0
        """How many entries are staged on the host: the offset the next stage writes at."""

    @property
    def columns(self) -> tuple[MirroredColumn, MirroredColumn, MirroredColumn]:
        return (self.src, self.dst, self.sizes)

    def stage(self, entries: Sequence[Entry]) -> None:
        """Write ``entries`` at the staging offset through the numpy views, and advance it."""
        start, end = self.staged, self.staged + len(entries)
        if end > self.capacity:
            raise CapacityExceeded(
                f"cannot stage {len(entries)} entries at offset {start}: "
                f"capacity is {self.capacity}"
            )
        store = self.encoding.store
        self.src.view[start:end] = [store(e.src) for e in entries]
        self.dst.view[start:end] = [store(e.dst) for e in entries]
        self.sizes.view[start:end] = [e.nbytes for e in entries]
        self.staged = end

    def stage_arrays(self, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray) -> None:
        """:meth:`stage` for entries given as three numpy arrays of one length (addresses as
        ``numpy.uint64``), the way engines fill a table from their own arrays: each column is
        written with one ``numpy.copyto`` through its view where the encoding has an array form
        for the input's dtype, else value by value through ``store`` exactly as :meth:`stage`
        writes Python ints (so a control's overflow or lost bits show the same way)."""
        count = len(src)
        if not len(dst) == len(nbytes) == count:
            raise ValueError(
                f"src, dst and nbytes have {len(src)}, {len(dst)} and {len(nbytes)} entries"
            )
        start, end = self.staged, self.staged + count
        if end > self.capacity:
            raise CapacityExceeded(
                f"cannot stage {count} entries at offset {start}: capacity is {self.capacity}"
            )
        for column, values in ((self.src, src), (self.dst, dst)):
            _write(column.view[start:end], values, self.encoding)
        _write(self.sizes.view[start:end], nbytes, None)
        self.staged = end

    def reset(self) -> None:
        """Start the next step: staging writes from offset 0 again."""
        self.staged = 0

    def transfer(self, n: int) -> None:
        """Copy the first ``n`` staged entries to the device (``non_blocking`` where pinned)."""
        if not 0 <= n <= self.staged:
            raise CapacityExceeded(f"cannot transfer {n} entries: {self.staged} are staged")
        for column in self.columns:
            column.transfer(n, non_blocking=self.pinned)

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        """The first ``n`` ``(src, dst, nbytes)`` the device holds, addresses as unsigned ints,
        read through the encoding's own dtype."""
        if not 0 <= n <= self.capacity:
            raise CapacityExceeded(f"cannot read {n} entries: capacity is {self.capacity}")
        load = self.encoding.load
        src = [load(v) for v in self.src.device[:n].to("cpu").tolist()]
        dst = [load(v) for v in self.dst.device[:n].to("cpu").tolist()]
        sizes = self.sizes.device[:n].to("cpu").tolist()
        return list(zip(src, dst, sizes, strict=True))

    def device_entries(self, n: int) -> list[tuple[int, int, int]]:
        """What an engine reading the device table sees in its first ``n`` rows (bit-level)."""
        if not 0 <= n <= self.capacity:
            raise CapacityExceeded(f"cannot read {n} entries: capacity is {self.capacity}")
        rows = zip(
            self.src.device_bits(n), self.dst.device_bits(n), self.sizes.device_bits(n), strict=True
        )
        return list(rows)


def _write(view: np.ndarray, values: np.ndarray, encoding: Encoding | None) -> None:
    """Write ``values`` into ``view``: one copy where the stored form is an array of the
    view's own dtype, else value by value through the encoding's ``store`` (sizes, with no
    encoding, as the ints they are), which raises where a Python int does not fit."""
    stored = values
    if encoding is not None and encoding.store_array is not None and values.dtype == np.uint64:
        stored = encoding.store_array(values)
    if stored.dtype == view.dtype and (encoding is None or encoding.store_array is not None):
        np.copyto(view, stored, casting="no")
        return
    store = _same if encoding is None else encoding.store
    view[:] = [store(int(v)) for v in values.tolist()]
