"""Table round trip: any 64-bit address staged on the host and transferred reads back from the
device bit-exact, as an unsigned int, whatever the encoding."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness import strategies as hst
from harness import verify
from harness.addresses import INT64_MAX
from harness.backends import Backend
from harness.batches import Batch, Entry
from harness.subjects import Subject


@given(src=hst.addresses(), dst=hst.addresses(), nbytes=st.integers(0, INT64_MAX))
def test_an_entry_reads_back_bit_exact(
    backend: Backend, subject: Subject, src: int, dst: int, nbytes: int
) -> None:
    entry = Entry(src, dst, nbytes)
    subject.create(1, backend)
    subject.stage(Batch((entry,)))
    subject.transfer(1)
    verify.assert_table_holds(subject.read_back(1), [entry])


@given(data=st.data())
def test_batches_staged_step_by_step_read_back_bit_exact(
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
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
