"""The bodies of the scenarios' checks: one function per property, over a subject on a backend.

Scenarios (``scenarios/test_*.py``) give each of these its Hypothesis strategies with ``given``.
The bodies live in the library so that a repro script, which needs only the installed harness
and torch, can run the very check that failed with the example a report recorded. Draws from
``st.data()`` carry labels; a repro replays them by label.
"""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from harness import strategies as hst
from harness import verify
from harness.addresses import INT64_MAX
from harness.backends import Backend
from harness.batches import Batch, Entry
from harness.subjects import Subject
from harness.tables import PointerTable


def _inspectable(table: object, subject: Subject) -> PointerTable:
    if not isinstance(table, PointerTable):
        pytest.skip(f"{subject.name} does not expose a PointerTable")
    return table


def _executing(subject: Subject) -> Subject:
    if not subject.executes:
        pytest.skip(f"{subject.name} does not execute batches")
    return subject


# -- table round trip -------------------------------------------------------------------------


def an_entry_reads_back_bit_exact(
    backend: Backend, subject: Subject, src: int, dst: int, nbytes: int
) -> None:
    """One entry staged on the host and transferred reads back from the device bit-exact."""
    entry = Entry(src, dst, nbytes)
    subject.create(1, backend)
    subject.stage(Batch((entry,)))
    subject.transfer(1)
    verify.assert_table_holds(subject.read_back(1), [entry])


def batches_staged_step_by_step_read_back_bit_exact(
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
    """Batches of synthetic entries (any size) staged one after another, as an engine fills its
    table per step, read back bit-exact once transferred together."""
    steps = data.draw(
        st.lists(
            hst.copy_batches(backend, real=False, executed=False, max_entries=6),
            min_size=1,
            max_size=3,
        ),
        label="steps",
    )
    entries = [e for step in steps for e in step]
    subject.create(len(entries), backend)
    for step in steps:
        subject.stage(step)
    subject.transfer(len(entries))
    verify.assert_table_holds(subject.read_back(len(entries)), entries)


# -- buffer creation --------------------------------------------------------------------------

low_entries = st.builds(
    Entry,
    src=hst.addresses(classes=["user-space"]),
    dst=hst.addresses(classes=["user-space"]),
    nbytes=st.integers(0, 2**40),
)
"""Lower-half entries: the buffer checks are about buffers, not encodings."""


def columns_have_the_capacity_dtype_and_placement_asked_for(
    backend: Backend, subject: Subject, capacity: int
) -> None:
    """Host, device and numpy view of each column hold ``capacity`` entries of the column's
    dtype, on the host (pinned where the backend can pin) and on the backend's device."""
    table = _inspectable(subject.create(capacity, backend), subject)
    verify.assert_table_layout(table, capacity, backend)


def the_numpy_view_shares_the_host_tensor_memory(
    backend: Backend, subject: Subject, capacity: int, data: st.DataObject
) -> None:
    """A write through the numpy view is seen by the host tensor."""
    table = _inspectable(subject.create(capacity, backend), subject)
    index = data.draw(st.integers(0, capacity - 1), label="index")
    value = data.draw(st.integers(0, INT64_MAX), label="value")
    verify.assert_view_writes_through(table, index, value)


def staging_offsets_accumulate_and_only_n_entries_transfer(
    backend: Backend, subject: Subject, steps: list[list[Entry]], data: st.DataObject
) -> None:
    """Each stage writes after the last; a transfer of ``n`` moves the first ``n`` rows only;
    ``reset`` starts the next step at offset 0."""
    staged = [e for step in steps for e in step]
    spare = data.draw(st.integers(0, 4), label="spare")
    table = _inspectable(subject.create(len(staged) + spare, backend), subject)
    offsets = []
    for step in steps:
        subject.stage(Batch(tuple(step)))
        offsets.append(table.staged)
    n = data.draw(st.integers(0, len(staged)), label="n")
    subject.transfer(n)
    verify.assert_offsets_accumulate(offsets, [len(step) for step in steps])
    verify.assert_only_first_n_transferred(table, staged, n)
    table.reset()
    if table.staged != 0:
        raise AssertionError(f"reset() left the staging offset at {table.staged}")


# -- batch copy and mixed batches -------------------------------------------------------------


def real_entries_are_copied_exactly(
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
    """Every destination holds its source's bytes; nothing else changed; guards intact."""
    _executing(subject)
    batch = data.draw(hst.copy_batches(backend, synthetic=False), label="batch")
    snapshot = verify.Snapshot(batch.allocations)
    subject.create(len(batch), backend)
    subject.stage(batch)
    subject.transfer(len(batch))
    copies = subject.execute(len(batch))
    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)


def a_mixed_batch_is_held_exactly_and_only_real_entries_are_copied(
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
    """Synthetic high addresses beside real allocations: the table holds every address, the
    real entries are copied exactly, and no synthetic address is dereferenced."""
    _executing(subject)
    batch = data.draw(hst.copy_batches(backend, min_entries=1), label="batch")
    snapshot = verify.Snapshot(batch.allocations)
    subject.create(len(batch), backend)
    subject.stage(batch)
    subject.transfer(len(batch))
    verify.assert_table_holds(subject.read_back(len(batch)), batch.entries)
    copies = subject.execute(len(batch))
    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)
