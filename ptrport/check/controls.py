"""The controls catalogue: subjects with a known pointer bug, each a small mistake real code has
made. A control must fail in the checks named in its ``exposed_by`` (scenario names, or
``scenario::check`` ids), with a shrunk counterexample; if it passes there, the harness has gone
blind to that bug and the run fails. Everywhere else it must pass like a fix.

The ``int64`` encoding's subjects (built in, run by default) are the first controls; the rest
run with ``pytest --controls`` (or ``ptrport controls``), or by name with ``--subject``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from ptrport.addresses import ADDRESS_LIMIT, to_signed, to_unsigned
from ptrport.check.batches import Batch
from ptrport.check.engines import AdmittedCopy, TorchEngine, TritonEngine, admit
from ptrport.check.subjects import Subject, TableSubject, builtin_subjects
from ptrport.check.tables import INT64_BITCAST, UINT64, Encoding
from ptrport.device.backends import Backend
from ptrport.device.presentation import DeviceFault
from ptrport.errors import CapacityExceeded, UnsafeDereference
from ptrport.report.records import Outcome, Result, compact_example


def caught_as(error: BaseException) -> str | None:
    """What a control's failure with ``error`` shows, where it is a catch: the verification's
    mismatch (an assertion, or pytest's ``fail``), the overflow (``OverflowError``, or torch's
    and numpy's errors that say overflow), a device fault, or an unsafe dereference of a
    synthetic address. ``None`` for anything else, an error in ptrport's own code or an
    unrelated one: that is no catch, and the controls run fails. An exception group (Hypothesis
    raises one for several distinct failures) is a catch where each of its members is."""
    if isinstance(error, BaseExceptionGroup):
        kinds = [caught_as(member) for member in error.exceptions]
        return kinds[0] if kinds and all(kinds) else None
    if isinstance(error, DeviceFault):
        return "a device fault"
    if isinstance(error, UnsafeDereference):
        return "an unsafe dereference"
    if isinstance(error, OverflowError) or (
        isinstance(error, RuntimeError | ValueError) and "overflow" in str(error).lower()
    ):
        return "the overflow"
    if isinstance(error, AssertionError | pytest.fail.Exception):
        return "the verification's mismatch"
    return None


ROUND_TRIP = "table_round_trip"
MIXED = "mixed_batches"
ARITHMETIC = "address_arithmetic"
LAYOUT = "buffer_creation::test_columns_have_the_capacity_dtype_and_placement_asked_for"
OFFSETS = "buffer_creation::test_staging_offsets_accumulate_and_only_n_entries_transfer"
CAPACITY = "buffer_creation::test_staging_past_the_capacity_is_refused"
COPY = "batch_copy"
SORT = f"{ARITHMETIC}::test_entries_sort_by_unsigned_address"
RANGE = f"{ARITHMETIC}::test_range_checks_compare_unsigned"
SHIFT = f"{ARITHMETIC}::test_high_bits_shift_in_zeros"

REAL_MEMORY_SCENARIOS = frozenset({COPY, MIXED})
"""The scenarios marked ``real_memory``: the only ones a backend that places allocations
runs."""

FIXED_BLOCK = 64
"""Bytes the fixed-block control copies per entry, whatever the entry's size."""


def _low32(address: int) -> int:
    """The int32 with the low 32 bits of ``address``."""
    low = address & 0xFFFF_FFFF
    return low - (1 << 32) if low >= 1 << 31 else low


_FLOAT64 = Encoding(
    "float64",
    torch.float64,
    "control: addresses stored as float64, which holds 53 bits exactly",
    store=float,
    load=lambda value: to_unsigned(int(value)),
)
_INT32_TRUNCATED = Encoding(
    "int32-truncated",
    torch.int32,
    "control: addresses truncated to their low 32 bits in an int32 table",
    store=_low32,
    load=lambda value: value & 0xFFFF_FFFF,
)


class ControlSubject(TableSubject):
    """A pointer table with one known bug, executed by the torch engine unless said otherwise.
    ``exposing`` says what kind of address or size makes the bug show."""

    def __init__(
        self,
        name: str,
        description: str,
        *,
        exposing: str,
        exposed_by: Sequence[str],
        exposed_by_upper_half: Sequence[str] = (),
        encoding: Encoding = UINT64,
        sizes_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(encoding, TorchEngine())
        self.name = name
        self.description = description
        self.exposing = exposing
        self.exposed_by = frozenset(exposed_by)
        self.exposed_by_upper_half = frozenset(exposed_by_upper_half)
        if sizes_dtype is not None:
            self.sizes_dtype = sizes_dtype

    def unavailable_reason(self, backend: Backend) -> str | None:
        reason = self.not_applicable(backend)
        return f"not applicable: {reason}" if reason else super().unavailable_reason(backend)

    def not_applicable(self, backend: Backend) -> str | None:
        """Why this bug cannot show on ``backend``, if it cannot (``None``: it can)."""
        return None


class SignedOrder(ControlSubject):
    """Sorts an int64-bitcast column as it is: signed."""

    def order(self, n: int) -> list[int]:
        return [int(i) for i in torch.argsort(self._src_bits(n), stable=True).tolist()]


class SignedRange(ControlSubject):
    """Compares signed read-back values with the unsigned bounds of a ``data_ptr()``."""

    def in_range(self, n: int, base: int, nbytes: int) -> list[bool]:
        values = self._src_bits(n).tolist()
        return [base <= p < base + nbytes for p in values]


class SignedShift(ControlSubject):
    """Shifts an int64 column right, which copies the sign bit in from the top."""

    def high_bits(self, n: int, shift: int) -> list[int]:
        return [to_unsigned(v) for v in (self._src_bits(n) >> shift).tolist()]


class UnsynchronizedRead(ControlSubject):
    """Reads the device table on another stream right after a ``non_blocking`` copy, without
    waiting for it. Only CUDA (and ROCm) copies from pinned memory are asynchronous here, and
    the copy is held back on its stream so that the race is lost every time."""

    DELAY_CYCLES = 50_000_000

    def not_applicable(self, backend: Backend) -> str | None:
        if backend.device.type != "cuda":
            return (
                f"host-to-device copies on {backend.name} complete before transfer() returns, "
                "so a read that skips synchronization still sees them"
            )
        if not backend.can_pin:
            return f"no pinned memory on {backend.name}, so host-to-device copies are synchronous"
        return None

    def transfer(self, n: int) -> None:
        table = self.table
        if not 0 <= n <= table.staged:
            raise CapacityExceeded(f"cannot transfer {n} entries: {table.staged} are staged")
        torch.cuda._sleep(self.DELAY_CYCLES)  # type: ignore[no-untyped-call]
        for column in table.columns:
            column.transfer(n, non_blocking=True)

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        side = torch.cuda.Stream(device=self.table.backend.device)  # type: ignore[no-untyped-call]
        with torch.cuda.stream(side):
            return self.table.read_back(n)


class StagePastCapacity(ControlSubject):
    """Stages through numpy slices without a bounds check: what does not fit is dropped."""

    def stage(self, batch: Batch) -> None:
        table = self.table
        start = table.staged
        fits = list(batch.entries[: max(0, table.capacity - start)])
        table.stage(fits)
        table.staged = start + len(batch.entries)
        for allocation in batch.allocations:
            self._registry.add(allocation)

    def transfer(self, n: int) -> None:
        table = self.table
        for column in table.columns:
            column.transfer(min(n, table.capacity), non_blocking=table.pinned)


class TransferOneMore(ControlSubject):
    """Transfers ``n + 1`` entries (an inclusive bound where an exclusive one was meant)."""

    def transfer(self, n: int) -> None:
        table = self.table
        if not 0 <= n <= table.staged:
            raise CapacityExceeded(f"cannot transfer {n} entries: {table.staged} are staged")
        for column in table.columns:
            column.transfer(n + 1, non_blocking=table.pinned)


class FixedBlockCopy(ControlSubject):
    """Copies ``FIXED_BLOCK`` bytes per entry, whatever its size, like a kernel without a mask
    (clamped to the two payloads, so it never leaves memory the harness owns)."""

    def execute(self, n: int) -> list[AdmittedCopy]:
        copies = admit(self.table, n, self._registry)
        for c in copies:
            length = min(
                FIXED_BLOCK,
                c.src_allocation.nbytes - c.src_offset,
                c.dst_allocation.nbytes - c.dst_offset,
            )
            dst = c.dst_allocation.payload[c.dst_offset : c.dst_offset + length]
            dst.copy_(c.src_allocation.payload[c.src_offset : c.src_offset + length])
        self.table.backend.synchronize()
        return copies


class FortyEightBitCopy(ControlSubject):
    """Copies with a Triton kernel that keeps each address in a 48-bit field, as code written
    for 48-bit virtual addresses does: exact below ``2**47``, where CPU and GPU allocations lie
    on most platforms, and a dereference of another address for every upper-half one (a device
    fault on the upper-half CPU backends). Only a real copy at a high address shows it."""

    def __init__(self, name: str, description: str, **kwargs: Any) -> None:
        super().__init__(name, description, **kwargs)
        self.engine = TritonEngine("batch_copy_48_bit_kernel")

    def not_applicable(self, backend: Backend) -> str | None:
        if not backend.high_addresses:
            return (
                f"real allocations on {backend.name} lie in the lower half, where a 48-bit "
                "field holds their addresses whole"
            )
        return None


class PlacedOnly(ControlSubject):
    """A control whose bug only an allocation at a boundary shows: across ``2**63``, or ending
    at ``2**64``. Elsewhere (fixed offsets, a device's own addresses) it runs, and must pass."""

    def cannot_show(self, backend: Backend) -> str | None:
        """Why its bug cannot show on ``backend`` although it runs there (it must pass there);
        ``None`` where it must be caught."""
        if backend.places_allocations:
            return None
        return (
            f"no allocation on {backend.name} lies across 2**63 or ends at 2**64; only where "
            "allocations are placed (cpu-placed)"
        )


class EndMaskCopy(PlacedOnly):
    """Copies with a Triton kernel that masks each lane against ``src + nbytes``, computed in
    the table's uint64: for a copy that ends at ``2**64`` the end wraps to 0 and every lane is
    masked off, so nothing is copied."""

    def __init__(self, name: str, description: str, **kwargs: Any) -> None:
        super().__init__(name, description, **kwargs)
        self.engine = TritonEngine("batch_copy_end_mask_kernel")


class SignedBounds(PlacedOnly):
    """Admits each copy only if it lies inside its source allocation, comparing int64 bit casts
    of the addresses (``base <= src`` and ``src + n <= base + size``), and skips the others. For
    an allocation across ``2**63`` the end's bit cast is negative, so every copy from it is
    skipped; where all addresses lie on one side of ``2**63`` the comparisons hold."""

    def execute(self, n: int) -> list[AdmittedCopy]:
        copies = admit(self.table, n, self._registry)
        for c in copies:
            base = to_signed(c.src_allocation.address)
            end = to_signed((c.src_allocation.address + c.src_allocation.nbytes) % ADDRESS_LIMIT)
            if not (
                base <= to_signed(c.src) and to_signed((c.src + c.nbytes) % ADDRESS_LIMIT) <= end
            ):
                continue
            dst = c.dst_allocation.payload[c.dst_offset : c.dst_offset + c.nbytes]
            dst.copy_(c.src_allocation.payload[c.src_offset : c.src_offset + c.nbytes])
        self.table.backend.synchronize()
        return copies


_CATALOGUE: tuple[Callable[[], Subject], ...] = (
    lambda: ControlSubject(
        "float64",
        _FLOAT64.description,
        exposing="addresses above 2**53, whose low bits a float64 cannot hold",
        exposed_by=(ROUND_TRIP, MIXED, ARITHMETIC),
        encoding=_FLOAT64,
    ),
    lambda: ControlSubject(
        "int32-truncated",
        _INT32_TRUNCATED.description,
        exposing="addresses above 2**32: every real 64-bit allocation",
        exposed_by=(ROUND_TRIP, MIXED, ARITHMETIC, COPY, OFFSETS, CAPACITY),
        encoding=_INT32_TRUNCATED,
    ),
    lambda: SignedOrder(
        "signed-order",
        "control: entries sorted by address as signed int64 (an int64-bitcast table)",
        exposing="addresses on both sides of 2**63",
        exposed_by=(SORT,),
        encoding=INT64_BITCAST,
    ),
    lambda: SignedRange(
        "signed-range",
        "control: base <= p < base + n with p read back signed from an int64-bitcast table",
        exposing="an address at or above 2**63 inside the range",
        exposed_by=(RANGE,),
        encoding=INT64_BITCAST,
    ),
    lambda: SignedShift(
        "signed-shift",
        "control: high bits taken with >> on an int64-bitcast table, which sign-extends",
        exposing="addresses at or above 2**63",
        exposed_by=(SHIFT,),
        encoding=INT64_BITCAST,
    ),
    lambda: ControlSubject(
        "int32-sizes",
        "control: the sizes column is int32, so a copy of 2 GiB or more cannot be described",
        exposing="sizes of 2**31 bytes and more (on the table alone, nothing allocated)",
        exposed_by=(ROUND_TRIP, LAYOUT, OFFSETS, CAPACITY),
        sizes_dtype=torch.int32,
    ),
    lambda: UnsynchronizedRead(
        "unsynchronized-read",
        "control: the device table is read right after a non_blocking copy, without waiting",
        exposing="any entry, where host-to-device copies are asynchronous",
        exposed_by=(ROUND_TRIP, MIXED),
    ),
    lambda: StagePastCapacity(
        "stage-past-capacity",
        "control: staging past the capacity drops the entries that do not fit, silently",
        exposing="a batch larger than the room left in the table",
        exposed_by=(CAPACITY,),
    ),
    lambda: TransferOneMore(
        "transfer-n-plus-one",
        "control: transfer(n) copies n + 1 entries (off by one)",
        exposing="a transfer of fewer entries than are staged",
        exposed_by=(OFFSETS,),
    ),
    lambda: FortyEightBitCopy(
        "48-bit-address",
        "control: the copy kernel keeps each address in a 48-bit field, dropping the top 16 bits",
        exposing="a real entry at an upper-half address (cpu-usm, cpu-tbi, xpu)",
        exposed_by=(COPY, MIXED),
    ),
    lambda: EndMaskCopy(
        "end-mask-wrap",
        "control: the copy kernel masks each lane with src + offset < src + nbytes in uint64, "
        "and an end at 2**64 wraps to 0",
        exposing="a real copy that ends at 2**64 (placed allocations)",
        exposed_by=(COPY, MIXED),
    ),
    lambda: SignedBounds(
        "signed-bounds",
        "control: a copy is admitted only if base <= src and src + n <= base + size hold as "
        "int64 bit casts; others are skipped",
        exposing="a real copy from an allocation across 2**63 (placed allocations)",
        exposed_by=(COPY, MIXED),
    ),
    lambda: FixedBlockCopy(
        "fixed-block-copy",
        f"control: each entry is copied as a fixed {FIXED_BLOCK}-byte block, whatever its size",
        exposing=f"a real entry of other than {FIXED_BLOCK} bytes",
        exposed_by=(COPY, MIXED),
    ),
)


def catalogue() -> dict[str, Subject]:
    """Every control, fresh instances, by name: the built-in ``int64`` subjects first."""
    builtin = {name: s for name, s in builtin_subjects().items() if s.exposed_by}
    made = (make() for make in _CATALOGUE)
    return builtin | {s.name: s for s in made}


def exposing(subject: Subject) -> str:
    """What makes a control's bug show, in words."""
    return str(getattr(subject, "exposing", ""))


def cannot_show(subject: Subject, backend: Backend) -> str | None:
    """Why ``subject``'s bug cannot show on ``backend``, where it runs and must pass."""
    method = getattr(subject, "cannot_show", None)
    return str(method(backend)) if callable(method) and method(backend) else None


def must_catch(subject: Subject, backend: Backend) -> frozenset[str]:
    """The scenarios and checks that must catch ``subject``'s bug on ``backend``."""
    if cannot_show(subject, backend):
        return frozenset()
    if backend.high_addresses:
        return subject.exposed_by | subject.exposed_by_upper_half
    return subject.exposed_by


def exposes(exposed_by: frozenset[str], scenario: str, check: str) -> bool:
    """Whether a check (``scenario::function``, no parameters) is one that must catch a control
    declaring ``exposed_by``."""
    return scenario in exposed_by or check in exposed_by


class State(enum.StrEnum):
    CAUGHT = "caught"
    MISSED = "missed"
    PASSES_HERE = "passes here"
    """Its bug cannot show on the backend, and it passed there, as it must."""
    FAILED_HERE = "failed here"
    """Its bug cannot show on the backend, yet it failed there: the harness is wrong."""
    NOT_APPLICABLE = "not applicable"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class ControlVerdict:
    """Whether a run caught one control on one backend, and with what."""

    control: str
    backend: str
    state: State
    reason: str | None = None
    """Why it was missed, not applicable or unavailable."""
    check: str | None = None
    """The check that caught it in the fewest examples."""
    caught_in: int = 0
    """How many of the checks that ran and must catch it did."""
    exposing_ran: int = 0
    found_after: int | None = None
    counterexample: dict[str, Any] | None = None

    @property
    def missed(self) -> bool:
        return self.state in (State.MISSED, State.FAILED_HERE)


def _function(check: str) -> str:
    return check.split("[", 1)[0]


def verdict(subject: Subject, backend: Backend, results: Iterable[Result]) -> ControlVerdict:
    """What ``results`` say about the control ``subject`` on ``backend``: caught if a check that
    must catch it failed as expected, missed if none did."""
    name = subject.name
    if not backend.is_available():
        return ControlVerdict(name, backend.name, State.UNAVAILABLE, backend.unavailable_reason)
    not_applicable = getattr(subject, "not_applicable", None)
    reason = not_applicable(backend) if callable(not_applicable) else None
    if reason:
        return ControlVerdict(name, backend.name, State.NOT_APPLICABLE, str(reason))
    reason = subject.unavailable_reason(backend)
    if reason:
        return ControlVerdict(name, backend.name, State.UNAVAILABLE, reason)
    if backend.places_allocations and not any(
        exposes(REAL_MEMORY_SCENARIOS, check.split("::", 1)[0], check)
        for check in must_catch(subject, backend)
    ):
        return ControlVerdict(
            name,
            backend.name,
            State.NOT_APPLICABLE,
            f"{backend.name} runs only the scenarios that copy real allocations "
            f"({', '.join(sorted(REAL_MEMORY_SCENARIOS))}), and none of them shows it",
        )
    cannot = cannot_show(subject, backend)
    exposing = subject.exposed_by if cannot else must_catch(subject, backend)
    mine = [
        r
        for r in results
        if r.subject == name
        and r.backend == backend.name
        and exposes(exposing, r.scenario, _function(r.check))
    ]
    if cannot and mine:
        bad = [r for r in mine if r.outcome.bad]
        if bad:
            shown = "; ".join(f"{r.check} {r.outcome.value}" for r in bad)
            return ControlVerdict(name, backend.name, State.FAILED_HERE, shown)
        return ControlVerdict(name, backend.name, State.PASSES_HERE, cannot, exposing_ran=len(mine))
    caught = [r for r in mine if r.outcome == Outcome.XFAILED]
    if caught:
        best = min(caught, key=lambda r: (r.found_after or r.examples, r.examples))
        return ControlVerdict(
            name,
            backend.name,
            State.CAUGHT,
            check=best.check,
            caught_in=len(caught),
            exposing_ran=len(mine),
            found_after=best.found_after,
            counterexample=best.example,
        )
    if not mine:
        wanted = ", ".join(sorted(exposing))
        return ControlVerdict(
            name, backend.name, State.MISSED, f"no check that catches it ran ({wanted})"
        )
    shown = "; ".join(f"{r.check} {r.outcome.value}" for r in mine)
    return ControlVerdict(name, backend.name, State.MISSED, shown)


def verdicts(
    subjects: Iterable[Subject], backends: Sequence[Backend], results: Sequence[Result]
) -> list[ControlVerdict]:
    """A verdict for every control among ``subjects`` on every backend."""
    return [verdict(s, b, results) for s in subjects if s.exposed_by for b in backends]


COUNTEREXAMPLE_WIDTH = 72


def show_counterexample(example: dict[str, Any] | None) -> str:
    """A one-line rendering of a recorded example (entries as ``src->dst:nbytes``), cut to
    :data:`COUNTEREXAMPLE_WIDTH`."""
    return compact_example(example, width=COUNTEREXAMPLE_WIDTH)


def table(verdicts: Sequence[ControlVerdict]) -> list[str]:
    """The controls table: control, backend, caught or missed (or why not applicable),
    examples needed to find it, the check that caught it and the minimal counterexample."""
    rows = [
        [
            "control",
            "backend",
            "result",
            "examples to find",
            "first caught by",
            "minimal counterexample",
        ]
    ]
    for v in verdicts:
        if v.state == State.CAUGHT:
            result = f"caught ({v.caught_in} of {v.exposing_ran} checks)"
            detail = show_counterexample(v.counterexample)
        elif v.state == State.PASSES_HERE:
            result, detail = f"passes here ({v.exposing_ran} checks)", v.reason or ""
        else:
            result, detail = v.state.value, v.reason or ""
        rows.append(
            [
                v.control,
                v.backend,
                result,
                str(v.found_after) if v.found_after is not None else "",
                v.check or "",
                detail,
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
