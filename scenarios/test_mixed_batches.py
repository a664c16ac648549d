"""Mixed batches: synthetic high addresses beside real allocations in one executed batch. The
table holds every address exactly, the real entries are copied exactly, and no synthetic
address is dereferenced."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness import strategies as hst
from harness import verify
from harness.backends import Backend
from harness.subjects import Subject


@given(data=st.data())
def test_a_mixed_batch_is_held_exactly_and_only_real_entries_are_copied(
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
    batch = data.draw(hst.copy_batches(backend, min_entries=1), label="batch")
    snapshot = verify.Snapshot(batch.allocations)
    subject.create(len(batch), backend)
    subject.stage(batch)
    subject.transfer(len(batch))
    verify.assert_table_holds(subject.read_back(len(batch)), batch.entries)
    copies = subject.execute(len(batch))
    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)
