"""Benchmarks: how fast the harness's own address paths are on a backend, each against the
floor the hardware sets for the same bytes (``ptrport bench``).

Each benchmark makes a :class:`~ptrport.report.measurements.Measurement`: the median and spread of
repeated runs after warm-up, and a ``ratio`` against a baseline that moves the same bytes the
plainest way. Timed runs alternate between the baseline (each after an untimed one, so it starts
warm) and the benchmark, so drift on a busy machine hits both alike.

- ``staging.numpy``: :meth:`PointerTable.stage_arrays` of ``numpy.uint64`` arrays into a
  uint64 table, against ``numpy.copyto`` of the same three arrays into the same views.
- ``staging.python_ints``: :meth:`PointerTable.stage` called once per entry with one
  :class:`Entry` of Python ints (a step of one entry, as the checks stage them), in entries per
  second, against the plain per-entry store an engine writes without a table,
  ``view[i] = p`` in each of the three columns.
- ``transfer``: :meth:`PointerTable.transfer` of a full table, against one ``Tensor.copy_`` of
  a ``uint8`` host tensor of the same bytes (pinned, and ``non_blocking``, where the table is).
- ``execute.<engine>``: each engine available on the backend copying a batch of few large and
  of many small entries between two real allocations, through a real uint64 table, guard check
  (:func:`ptrport.check.engines.admit`) included, against one ``Tensor.copy_`` of the whole payload
  (the copy roofline). Every engine's copy is checked once to be exact before it is timed.

Host-only work is timed with ``time.perf_counter``; anything that touches a CUDA or XPU device
with device events, after a synchronize, ending with one. Triton on CPU runs in its interpreter,
which is slow: it gets at most :data:`~ptrport.report.defaults.INTERPRETED_REPEAT` repeats after
one warm-up run.

The measurements go into the platform report as its optional ``benchmarks`` section
(:func:`section`, :func:`ptrport.report.measurements.record`); ``ptrport report diff``
compares their ratios (:func:`ptrport.report.measurements.measurements_of`).
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ptrport.check.batches import Entry
from ptrport.check.engines import ENGINES, Engine
from ptrport.check.tables import UINT64, PointerTable
from ptrport.device.allocations import Allocation, AllocationRegistry, allocate
from ptrport.device.backends import Backend
from ptrport.errors import HarnessError, exception_message
from ptrport.report.defaults import DEFAULT_REPEAT, INTERPRETED_REPEAT, WARMUP
from ptrport.report.measurements import ENTRIES_PER_S, GBPS, Measurement

GB = 1e9
MIB = 1 << 20

Work = Callable[[], object]


@dataclass(frozen=True)
class Sizes:
    """How much each benchmark moves."""

    table_entries: int = 1_000_000
    """Entries of the table staged from numpy arrays and transferred."""
    int_entries: int = 100_000
    """Entries staged one at a time from Python ints."""
    batches: tuple[tuple[int, int], ...] = ((4, 4 * MIB), (4096, 256))
    """``(count, nbytes)`` of each batch the engines execute: few large, many small entries."""


FULL = Sizes()
QUICK = Sizes(table_entries=100_000, int_entries=10_000, batches=((4, MIB), (256, 256)))


# Timing


class Timer:
    """Seconds one call of some work takes; ``time.perf_counter``, synchronizing the backend
    before and after, so queued device work is counted where it belongs."""

    name = "time.perf_counter"

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __call__(self, work: Work) -> float:
        self.backend.synchronize()
        start = time.perf_counter()
        work()
        self.backend.synchronize()
        return time.perf_counter() - start


class EventTimer(Timer):
    """Device events (``torch.cuda.Event`` / ``torch.xpu.Event`` with timing) around the
    work, after a synchronize; the end event is waited for."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self._module: Any = getattr(torch, backend.device.type)
        self.name = f"torch.{backend.device.type}.Event"

    def __call__(self, work: Work) -> float:
        start = self._module.Event(enable_timing=True)
        end = self._module.Event(enable_timing=True)
        self.backend.synchronize()
        start.record()
        work()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3


def device_timer(backend: Backend) -> Timer:
    """Events on CUDA (and ROCm) and XPU devices, else the wall clock."""
    if backend.device.type in ("cuda", "xpu"):
        return EventTimer(backend)
    return Timer(backend)


@dataclass(frozen=True)
class _Plan:
    """One benchmark before it runs: the work and its baseline, and how much they move."""

    name: str
    size: str
    unit: str
    amount: float
    """Bytes (``GB/s``) or entries (``entries/s``) one run moves."""
    work: Work
    baseline: str
    baseline_work: Work
    on_device: bool
    interpreted: bool = False
    check: Callable[[], None] | None = None
    """Run after the first warm-up run of ``work`` alone: raises if it did the wrong thing."""


def _run(plan: _Plan, backend: Backend, repeat: int) -> Measurement:
    timer = device_timer(backend) if plan.on_device else Timer(backend)
    warmup, repeats = (1, min(repeat, INTERPRETED_REPEAT)) if plan.interpreted else (WARMUP, repeat)
    for i in range(warmup):
        plan.work()
        if i == 0 and plan.check is not None:
            backend.synchronize()
            plan.check()
        plan.baseline_work()
    times: list[float] = []
    baseline_times: list[float] = []
    for _ in range(repeats):
        # An untimed baseline run first, so the timed one starts warm (caches, a thread pool
        # woken) whatever ran before it: after Triton's interpreter, a first copy_ takes many
        # times longer. The work then runs right after a warm baseline.
        plan.baseline_work()
        baseline_times.append(timer(plan.baseline_work))
        times.append(timer(plan.work))
    scale = plan.amount / (GB if plan.unit == GBPS else 1)
    median = statistics.median(times)
    baseline_median = statistics.median(baseline_times)
    return Measurement(
        name=plan.name,
        backend=backend.name,
        size=plan.size,
        unit=plan.unit,
        median=scale / _positive(median),
        low=scale / _positive(max(times)),
        high=scale / _positive(min(times)),
        ratio=_positive(baseline_median) / _positive(median),
        baseline=plan.baseline,
        baseline_median=scale / _positive(baseline_median),
        repeats=repeats,
        timer=timer.name,
    )


def _positive(seconds: float) -> float:
    """A time, at least a nanosecond: a clock too coarse for the work must not divide by 0."""
    return max(seconds, 1e-9)


# The benchmarks


def _entries(count: int) -> str:
    return f"{count} entries"


def _batch_size(count: int, nbytes: int) -> str:
    if nbytes >= MIB and nbytes % MIB == 0:
        return f"{count} x {nbytes // MIB} MiB"
    return f"{count} x {nbytes} B"


def _addresses(count: int, seed: int) -> np.ndarray:
    """``count`` addresses spread over the whole 64-bit range, high half included."""
    generator = np.random.default_rng(seed)
    return generator.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False)


def staging_from_numpy(backend: Backend, entries: int) -> _Plan:
    table = PointerTable(entries, UINT64, backend)
    src, dst = _addresses(entries, 1), _addresses(entries, 2)
    nbytes = np.arange(entries, dtype=np.int64)
    columns = [(table.src.view, src), (table.dst.view, dst), (table.sizes.view, nbytes)]

    def stage() -> None:
        table.reset()
        table.stage_arrays(src, dst, nbytes)

    def copyto() -> None:
        for view, values in columns:
            np.copyto(view, values)

    return _Plan(
        name="staging.numpy",
        size=_entries(entries),
        unit=GBPS,
        amount=float(src.nbytes + dst.nbytes + nbytes.nbytes),
        work=stage,
        baseline="numpy.copyto",
        baseline_work=copyto,
        on_device=False,
    )


def staging_from_ints(backend: Backend, entries: int) -> _Plan:
    table = PointerTable(entries, UINT64, backend)
    src = _addresses(entries, 3).tolist()
    dst = _addresses(entries, 4).tolist()
    sizes = list(range(entries))
    steps = [(Entry(s, d, n),) for s, d, n in zip(src, dst, sizes, strict=True)]
    views = (table.src.view, table.dst.view, table.sizes.view)

    def stage() -> None:
        table.reset()
        for step in steps:
            table.stage(step)

    def setitem() -> None:
        src_view, dst_view, sizes_view = views
        for i in range(entries):
            src_view[i] = src[i]
            dst_view[i] = dst[i]
            sizes_view[i] = sizes[i]

    return _Plan(
        name="staging.python_ints",
        size=_entries(entries),
        unit=ENTRIES_PER_S,
        amount=float(entries),
        work=stage,
        baseline="view[i] = p",
        baseline_work=setitem,
        on_device=False,
    )


def transfer(backend: Backend, entries: int) -> _Plan:
    table = PointerTable(entries, UINT64, backend)
    table.stage_arrays(_addresses(entries, 5), _addresses(entries, 6), np.ones(entries, np.int64))
    amount = sum(c.host.nbytes for c in table.columns)
    host = torch.zeros(amount, dtype=torch.uint8, pin_memory=table.pinned)
    device = torch.zeros(amount, dtype=torch.uint8, device=backend.device)

    def copy() -> None:
        device.copy_(host, non_blocking=table.pinned)

    def check() -> None:
        for column in table.columns:
            on_device = column.device.view(torch.int64).to("cpu")
            if not torch.equal(on_device, column.host.view(torch.int64)):
                raise HarnessError(f"transfer on {backend.name}: the device table differs")

    return _Plan(
        name="transfer",
        size=_entries(entries),
        unit=GBPS,
        amount=float(amount),
        work=lambda: table.transfer(entries),
        baseline="Tensor.copy_",
        baseline_work=copy,
        on_device=True,
        check=check,
    )


def _check_copy(engine: Engine, src: Allocation, dst: Allocation, backend: Backend) -> None:
    if not (torch.equal(src.payload, dst.payload) and dst.guards_intact()):
        raise HarnessError(f"the {engine.name} engine on {backend.name} did not copy exactly")


def execute(backend: Backend, engine: Engine, count: int, nbytes: int) -> _Plan:
    """``engine`` copying ``count`` entries of ``nbytes`` each, back to back, from one real
    allocation to another, through a uint64 table."""
    total = count * nbytes
    src = allocate(backend, numel=total, fill_seed=1)
    dst = allocate(backend, numel=total, fill_seed=2)
    registry = AllocationRegistry([src, dst])
    table = PointerTable(count, UINT64, backend)
    table.stage(
        [
            Entry(src.address + i * nbytes, dst.address + i * nbytes, nbytes, src, dst)
            for i in range(count)
        ]
    )
    table.transfer(count)
    backend.synchronize()
    src_payload, dst_payload = src.payload, dst.payload
    interpreted = engine.name == "triton" and backend.device.type == "cpu"
    return _Plan(
        name=f"execute.{engine.name}",
        size=_batch_size(count, nbytes),
        unit=GBPS,
        amount=float(total),
        work=lambda: engine.execute(table, count, registry),
        baseline="Tensor.copy_",
        baseline_work=lambda: dst_payload.copy_(src_payload),
        on_device=True,
        interpreted=interpreted,
        check=lambda: _check_copy(engine, src, dst, backend),
    )


def engines_for(backend: Backend) -> list[Engine]:
    return [e for e in ENGINES.values() if e.unavailable_reason(backend) is None]


def plans(backend: Backend, sizes: Sizes) -> Iterable[tuple[str, str, Callable[[], _Plan]]]:
    """Each benchmark for ``backend`` as ``(name, size, make)``, made only when it is about
    to run (so that only one benchmark's buffers are alive at a time)."""
    yield (
        "staging.numpy",
        _entries(sizes.table_entries),
        lambda: staging_from_numpy(backend, sizes.table_entries),
    )
    yield (
        "staging.python_ints",
        _entries(sizes.int_entries),
        lambda: staging_from_ints(backend, sizes.int_entries),
    )
    yield "transfer", _entries(sizes.table_entries), lambda: transfer(backend, sizes.table_entries)
    for engine in engines_for(backend):
        for count, nbytes in sizes.batches:
            make = functools.partial(execute, backend, engine, count, nbytes)
            yield f"execute.{engine.name}", _batch_size(count, nbytes), make


@dataclass(frozen=True)
class Failure:
    """A benchmark that could not be measured: making it, running it or checking its work
    raised."""

    name: str
    backend: str
    size: str
    error: str
    """The exception's type and the first line of its message."""

    def describe(self) -> str:
        return f"{self.name} {self.size} on {self.backend}: not measured: {self.error}"


def measure(
    backend: Backend,
    *,
    sizes: Sizes = FULL,
    repeat: int = DEFAULT_REPEAT,
    progress: Callable[[Measurement], None] | None = None,
    failed: Callable[[Failure], None] | None = None,
) -> list[Measurement]:
    """Every benchmark on ``backend`` (available), each run ``repeat`` times after warm-up;
    ``progress`` is called with each measurement as it is made. A benchmark that raises
    (an engine broken on this platform, say) is handed to ``failed`` and the others still
    run; without ``failed`` the exception propagates."""
    if repeat < 1:
        raise ValueError(f"repeat={repeat} must be >= 1")
    found = []
    for name, size, make in plans(backend, sizes):
        try:
            measurement = _run(make(), backend, repeat)
        except Exception as exc:
            if failed is None:
                raise
            failed(Failure(name, backend.name, size, exception_message(exc)))
            continue
        found.append(measurement)
        if progress is not None:
            progress(measurement)
    return found


# The table


def _number(value: float, unit: str) -> str:
    return f"{value / 1e6:.3g}" if unit == ENTRIES_PER_S else f"{value:.3g}"


def _quantity(value: float, unit: str) -> str:
    prefix = "M" if unit == ENTRIES_PER_S else ""
    return f"{_number(value, unit)} {prefix}{unit}"


HEADER = ("measurement", "size", "median", "min .. max", "ratio", "against (median)")
WIDTHS = (19, 15, 19, 21, 8)


def table_row(cells: Sequence[str]) -> str:
    padded = [f"{c:<{w}}" for c, w in zip(cells, WIDTHS, strict=False)]
    return "  ".join([*padded, *cells[len(WIDTHS) :]]).rstrip()


def format_measurement(m: Measurement) -> str:
    spread = f"{_number(m.low, m.unit)} .. {_number(m.high, m.unit)}"
    against = f"{m.baseline} ({_quantity(m.baseline_median, m.unit)})"
    return table_row(
        [m.name, m.size, _quantity(m.median, m.unit), spread, f"{m.ratio:.3g}", against]
    )


def notes(backend: Backend, repeat: int) -> list[str]:
    """What the table's reader needs to know about how it was measured."""
    found = [
        "ratio = baseline median time / median time (1.0: as fast as the baseline); "
        "min .. max: the slowest and fastest run",
        "staging.numpy: PointerTable.stage_arrays of numpy.uint64 arrays (3 columns)",
        "staging.python_ints: PointerTable.stage of one Entry of Python ints per call",
        "execute: the engine (guard check included) copying the batch between two real "
        "allocations; the baseline is one copy_ of the whole payload",
    ]
    if backend.device.type == "cpu" and hasattr(os, "getloadavg"):
        found.append(
            f"cpu: torch runs {torch.get_num_threads()} threads on {os.cpu_count()} cores, "
            f"1-minute load average {os.getloadavg()[0]:.2f}; other processes on these cores "
            "slow torch's multi-threaded copy_ (baselines, transfer, execute) most"
        )
    if any(e.name == "triton" for e in engines_for(backend)) and backend.device.type == "cpu":
        found.append(
            "execute.triton: Triton's interpreter on CPU (slow, not a compiled kernel): "
            f"{min(repeat, INTERPRETED_REPEAT)} repeats after 1 warm-up run"
        )
    return found


# The report's section


def section(
    measurements: Sequence[Measurement], *, started: str, argv: Sequence[str], quick: bool
) -> dict[str, Any]:
    """The ``benchmarks`` section of a platform report."""
    return {
        "measured": started,
        "torch": str(torch.__version__),
        "quick": quick,
        "argv": list(argv),
        "measurements": [m.to_record() for m in measurements],
    }
