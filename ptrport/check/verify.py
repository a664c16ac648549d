"""Assertion helpers for scenarios. Each hides its own frame and says exactly what differed,
for which entry, with addresses in hex."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch

from ptrport.addresses import to_hex
from ptrport.check.batches import Batch, Entry
from ptrport.check.engines import AdmittedCopy
from ptrport.check.tables import SIZES_DTYPE, PointerTable
from ptrport.device.allocations import Allocation
from ptrport.device.backends import Backend

COLUMN_NAMES = ("src", "dst", "sizes")


def _row(src: int, dst: int, nbytes: int) -> str:
    return f"(src={to_hex(src)}, dst={to_hex(dst)}, nbytes={nbytes})"


def assert_table_holds(read_back: Sequence[tuple[int, int, int]], entries: Sequence[Entry]) -> None:
    """The device table reads back exactly the entries staged, bit for bit."""
    __tracebackhide__ = True
    if len(read_back) != len(entries):
        raise AssertionError(f"read back {len(read_back)} rows, staged {len(entries)}")
    for i, (row, entry) in enumerate(zip(read_back, entries, strict=True)):
        staged = (entry.src, entry.dst, entry.nbytes)
        if tuple(row) != staged:
            raise AssertionError(f"row {i}: device holds {_row(*row)}, staged {_row(*staged)}")


def assert_same_answers(
    question: str, addresses: Sequence[int], answers: Sequence[object], expected: Sequence[object]
) -> None:
    """A subject's answers to a question about its addresses are the unsigned ones."""
    __tracebackhide__ = True
    if list(answers) != list(expected):
        shown = ", ".join(to_hex(a) for a in addresses)
        raise AssertionError(
            f"{question} for [{shown}]: answered {_shown(answers)}, expected {_shown(expected)}"
        )


def _shown(values: Sequence[object]) -> str:
    return "[" + ", ".join(hex(v) if type(v) is int and v > 9 else str(v) for v in values) + "]"


class Snapshot:
    """Host copies of every allocation's payload, taken before a batch runs."""

    def __init__(self, allocations: Iterable[Allocation]) -> None:
        self.before = {id(a): (a, a.snapshot()) for a in allocations}

    def expected_after(self, entries: Iterable[Entry]) -> dict[int, torch.Tensor]:
        """What each payload must hold once the real entries have been copied."""
        expected = {key: data.clone() for key, (_, data) in self.before.items()}
        for e in entries:
            if e.synthetic or e.nbytes == 0:
                continue
            assert e.src_allocation is not None and e.dst_allocation is not None
            src_off = e.src - e.src_allocation.address
            dst_off = e.dst - e.dst_allocation.address
            source = self.before[id(e.src_allocation)][1][src_off : src_off + e.nbytes]
            expected[id(e.dst_allocation)][dst_off : dst_off + e.nbytes] = source
        return expected


def assert_copied(batch: Batch, snapshot: Snapshot) -> None:
    """Every real entry's destination holds its source's bytes; nothing else changed in any
    payload (sources included), and every guard band is intact."""
    __tracebackhide__ = True
    expected = snapshot.expected_after(batch.entries)
    for key, (allocation, _) in snapshot.before.items():
        actual = allocation.snapshot()
        if not torch.equal(actual, expected[key]):
            differs = (actual != expected[key]).nonzero().flatten().tolist()
            first = differs[0]
            raise AssertionError(
                f"{allocation!r}: {len(differs)} bytes differ from what the batch should leave, "
                f"first at {to_hex(allocation.address + first)} (offset {first}): "
                f"holds {int(actual[first])}, expected {int(expected[key][first])}"
            )
    assert_guards_intact(a for a, _ in snapshot.before.values())


def assert_guards_intact(allocations: Iterable[Allocation]) -> None:
    __tracebackhide__ = True
    for allocation in allocations:
        if not allocation.guards_intact():
            raise AssertionError(f"{allocation!r}: a guard band was overwritten")


def assert_only_real_dereferenced(copies: Sequence[AdmittedCopy], batch: Batch) -> None:
    """The engine dereferenced exactly the real entries with a size, and no synthetic address."""
    __tracebackhide__ = True
    # By (src, dst) pair, not by address: where allocations are placed at the boundaries that
    # synthetic addresses are drawn from too, a real entry may share an address with one.
    real = {(e.src, e.dst) for e in batch.real}
    synthetic = {(e.src, e.dst) for e in batch.synthetic} - real
    for c in copies:
        if (c.src, c.dst) in synthetic:
            raise AssertionError(f"synthetic address dereferenced: {c!r}")
    expected = [(e.src, e.dst, e.nbytes) for e in batch.real if e.nbytes]
    done = [(c.src, c.dst, c.nbytes) for c in copies]
    if done != expected:
        raise AssertionError(
            f"dereferenced {[_row(*d) for d in done]}, expected {[_row(*x) for x in expected]}"
        )


def assert_table_layout(table: PointerTable, capacity: int, backend: Backend) -> None:
    """Every column holds ``capacity`` entries of its dtype: on the host (pinned where the
    backend can pin), on the backend's device, and in a numpy view of the host tensor."""
    __tracebackhide__ = True
    dtypes = (table.encoding.dtype, table.encoding.dtype, SIZES_DTYPE)
    for name, column, dtype in zip(COLUMN_NAMES, table.columns, dtypes, strict=True):
        problems = []
        for side, tensor in (("host", column.host), ("device", column.device)):
            if tuple(tensor.shape) != (capacity,):
                problems.append(f"{side} shape {tuple(tensor.shape)}, expected ({capacity},)")
            if tensor.dtype != dtype:
                problems.append(f"{side} dtype {tensor.dtype}, expected {dtype}")
        if column.host.device.type != "cpu":
            problems.append(f"host tensor on {column.host.device}")
        if column.device.device.type != backend.device.type:
            problems.append(f"device tensor on {column.device.device}, expected {backend.device}")
        if column.host.is_pinned() != backend.can_pin:
            problems.append(f"host pinned={column.host.is_pinned()}, expected {backend.can_pin}")
        if column.view.shape != (capacity,) or column.view.itemsize != column.host.element_size():
            problems.append(f"numpy view {column.view.shape} of {column.view.dtype}")
        if problems:
            raise AssertionError(f"{name} column: " + "; ".join(problems))
    if table.staged != 0:
        raise AssertionError(f"a new table has staging offset {table.staged}, expected 0")


def assert_view_writes_through(table: PointerTable, index: int, value: int) -> None:
    """A write through each column's numpy view is seen by its host tensor: they share memory.
    ``value`` (non-zero) is written as each column's dtype can hold it."""
    __tracebackhide__ = True
    for name, column in zip(COLUMN_NAMES, table.columns, strict=True):
        # The view's address as torch presents it, like the host tensor's (on an upper-half
        # backend both are presented; numpy's own .ctypes.data is the real one).
        view_address = torch.from_numpy(column.view).data_ptr()
        if view_address != column.host.data_ptr():
            raise AssertionError(
                f"{name} column: numpy view at {to_hex(view_address)}, "
                f"host tensor at {to_hex(column.host.data_ptr())}"
            )
        written = representable(value, column.host.dtype)
        column.view[index] = written
        seen = column.host[index].item()
        if seen != written:
            raise AssertionError(
                f"{name} column: wrote {written} at {index} through the view, "
                f"the host tensor holds {seen}"
            )


def representable(value: int, dtype: torch.dtype) -> int | float:
    """``value`` reduced into what ``dtype`` holds exactly: the buffer checks are about memory,
    not about what an encoding can represent."""
    if dtype.is_floating_point:
        digits = 1 - int(math.log2(torch.finfo(dtype).eps))
        return float(value % (1 << digits)) or 1.0
    info = torch.iinfo(dtype)
    return value % (info.max + 1) or 1


def assert_offsets_accumulate(offsets: Sequence[int], step_sizes: Sequence[int]) -> None:
    __tracebackhide__ = True
    expected = [sum(step_sizes[: i + 1]) for i in range(len(step_sizes))]
    if list(offsets) != expected:
        raise AssertionError(f"staging offsets after each step {offsets}, expected {expected}")


def assert_only_first_n_transferred(table: PointerTable, staged: Sequence[Entry], n: int) -> None:
    """The device holds the first ``n`` staged entries and, past them, what it held at creation."""
    __tracebackhide__ = True
    rows = table.device_entries(table.capacity)
    for i, row in enumerate(rows):
        expected = (staged[i].src, staged[i].dst, staged[i].nbytes) if i < n else (0, 0, 0)
        if row != expected:
            what = "transferred" if i < n else "untouched"
            raise AssertionError(
                f"device row {i} of {table.capacity} (n={n}, expected {what}): holds "
                f"{_row(*row)}, expected {_row(*expected)}"
            )
