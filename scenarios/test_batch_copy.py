"""Batch copy of real allocations: every destination holds its source's bytes afterwards,
nothing else in any payload changed, and every guard band is intact."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness import strategies as hst
from harness import verify
from harness.backends import Backend
from harness.subjects import Subject


@given(data=st.data())
def test_real_entries_are_copied_exactly(
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
    batch = data.draw(hst.copy_batches(backend, synthetic=False), label="batch")
    snapshot = verify.Snapshot(batch.allocations)
    subject.create(len(batch), backend)
    subject.stage(batch)
    subject.transfer(len(batch))
    copies = subject.execute(len(batch))
    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)
