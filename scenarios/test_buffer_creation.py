"""Buffer creation: a pointer table has the capacity, dtypes and placement asked for, pins its
host side where the backend can, stages through a numpy view that shares the host tensor's
memory, accumulates staging offsets, and transfers only the entries asked for.

Addresses here stay in the lower half: these checks are about the buffers, not the encoding,
so a control passes them like any other subject."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import strategies as hst
from harness import verify
from harness.addresses import INT64_MAX
from harness.backends import Backend
from harness.batches import Batch, Entry
from harness.subjects import Subject

low_entries = st.builds(
    Entry,
    src=hst.addresses(classes=["user-space"]),
    dst=hst.addresses(classes=["user-space"]),
    nbytes=st.integers(0, 2**40),
)


@given(capacity=st.integers(0, 4096))
def test_columns_have_the_capacity_dtype_and_placement_asked_for(
    backend: Backend, subject: Subject, capacity: int
) -> None:
    table = subject.create(capacity, backend)
    if table is None:
        pytest.skip(f"{subject.name} does not expose a PointerTable")
    verify.assert_table_layout(table, capacity, backend)


@given(capacity=st.integers(1, 256), data=st.data())
def test_the_numpy_view_shares_the_host_tensor_memory(
    backend: Backend, subject: Subject, capacity: int, data: st.DataObject
) -> None:
    table = subject.create(capacity, backend)
    if table is None:
        pytest.skip(f"{subject.name} does not expose a PointerTable")
    index = data.draw(st.integers(0, capacity - 1), label="index")
    value = data.draw(st.integers(0, INT64_MAX), label="value")
    verify.assert_view_writes_through(table, index, value)


@given(steps=st.lists(st.lists(low_entries, max_size=6), min_size=1, max_size=4), data=st.data())
def test_staging_offsets_accumulate_and_only_n_entries_transfer(
    backend: Backend, subject: Subject, steps: list[list[Entry]], data: st.DataObject
) -> None:
    staged = [e for step in steps for e in step]
    spare = data.draw(st.integers(0, 4), label="spare")
    table = subject.create(len(staged) + spare, backend)
    if table is None:
        pytest.skip(f"{subject.name} does not expose a PointerTable")
    offsets = []
    for step in steps:
        subject.stage(Batch(tuple(step)))
        offsets.append(table.staged)
    n = data.draw(st.integers(0, len(staged)), label="n")
    subject.transfer(n)
    verify.assert_offsets_accumulate(offsets, [len(step) for step in steps])
    verify.assert_only_first_n_transferred(table, staged, n)
    table.reset()
    assert table.staged == 0, f"reset() left the staging offset at {table.staged}"
