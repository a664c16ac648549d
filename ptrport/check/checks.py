"""The bodies of the scenarios' checks: one function per property, over a subject on a backend.

Scenarios (:mod:`ptrport.scenarios`) give each of these its Hypothesis strategies with ``given``.
The bodies live in the library so that a repro script, which needs only the installed harness
and torch, can run the very check that failed with the example a report recorded. Draws from
``st.data()`` carry labels; a repro replays them by label.
"""

from __future__ import annotations

import functools

import pytest
import torch
from hypothesis import strategies as st

from ptrport.addresses import ADDRESS_LIMIT, INT64_MAX, to_hex
from ptrport.check import strategies as hst
from ptrport.check import verify
from ptrport.check.batches import Batch, Entry
from ptrport.check.contracts import Contract
from ptrport.check.engines import TritonEngine
from ptrport.check.subjects import AddressQueries, Subject
from ptrport.check.tables import ENCODINGS, PointerTable
from ptrport.device.backends import Backend


def _inspectable(table: object, subject: Subject) -> PointerTable:
    if not isinstance(table, PointerTable):
        pytest.skip(f"{subject.name} does not expose a PointerTable")
    return table


def _executing(subject: Subject) -> Subject:
    if not subject.executes:
        pytest.skip(f"{subject.name} does not execute batches")
    return subject


# -- table round trip -------------------------------------------------------------------------


def an_entry_reads_back_bit_exact(backend: Backend, subject: Subject, data: st.DataObject) -> None:
    """One entry staged on the host and transferred reads back from the device bit-exact."""
    contract = subject.contract
    src = data.draw(hst.addresses(alignment=contract.alignment), label="src")
    dst = data.draw(hst.addresses(alignment=contract.alignment), label="dst")
    nbytes = data.draw(st.integers(0, contract.max_nbytes), label="nbytes")
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
    contract = subject.contract
    batches = hst.copy_batches(
        backend,
        real=False,
        executed=False,
        max_entries=6,
        max_nbytes=contract.max_nbytes,
        alignment=contract.alignment,
    )
    steps = data.draw(st.lists(batches, min_size=1, max_size=3), label="steps")
    entries = [e for step in steps for e in step]
    subject.create(len(entries), backend)
    for step in steps:
        subject.stage(step)
    subject.transfer(len(entries))
    verify.assert_table_holds(subject.read_back(len(entries)), entries)


# -- buffer creation --------------------------------------------------------------------------

LOW_NBYTES = 2**40


@functools.cache
def low_entries(contract: Contract) -> st.SearchStrategy[Entry]:
    """Lower-half entries within ``contract``: the buffer checks are about buffers, not
    encodings."""
    lower = hst.addresses(alignment=contract.alignment, classes=["user-space"])
    nbytes = st.integers(0, min(LOW_NBYTES, contract.max_nbytes))
    return st.builds(Entry, src=lower, dst=lower, nbytes=nbytes)


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
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
    """Each stage writes after the last; a transfer of ``n`` moves the first ``n`` rows only;
    ``reset`` starts the next step at offset 0."""
    one_step = st.lists(low_entries(subject.contract), max_size=6)
    steps = data.draw(st.lists(one_step, min_size=1, max_size=4), label="steps")
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


def staging_past_the_capacity_is_refused(
    backend: Backend, subject: Subject, capacity: int, data: st.DataObject
) -> None:
    """Staging more entries than the table has room for raises, and leaves what was staged
    before intact: a table that silently drops or wraps entries loses them."""
    entries = low_entries(subject.contract)
    first = data.draw(st.lists(entries, max_size=capacity), label="first")
    room = capacity - len(first)
    over = data.draw(st.lists(entries, min_size=room + 1, max_size=room + 4), label="over")
    subject.create(capacity, backend)
    subject.stage(Batch(tuple(first)))
    try:
        subject.stage(Batch(tuple(over)))
    except Exception:
        pass
    else:
        raise AssertionError(
            f"staging {len(over)} entries after {len(first)} into a table of capacity "
            f"{capacity} was accepted"
        )
    subject.transfer(len(first))
    verify.assert_table_holds(subject.read_back(len(first)), first)


# -- address arithmetic -----------------------------------------------------------------------


def _querying(subject: Subject) -> AddressQueries:
    if not isinstance(subject, AddressQueries):
        pytest.skip(f"{subject.name} does not compute with the addresses it holds")
    return subject


def _staged_addresses(backend: Backend, subject: Subject, data: st.DataObject) -> list[int]:
    """Draw up to 8 addresses within the subject's contract and stage them as entries."""
    aligned = hst.addresses(alignment=subject.contract.alignment)
    addresses: list[int] = data.draw(st.lists(aligned, min_size=1, max_size=8), label="addresses")
    entries = tuple(Entry(a, 0, 0) for a in addresses)
    subject.create(len(entries), backend)
    subject.stage(Batch(entries))
    subject.transfer(len(entries))
    return addresses


def entries_sort_by_unsigned_address(
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
    """Sorting the table's entries by address (to coalesce neighbours) orders them as unsigned
    ints, an upper-half address after every lower-half one."""
    queries = _querying(subject)
    addresses = _staged_addresses(backend, subject, data)
    expected = sorted(range(len(addresses)), key=lambda i: addresses[i])
    verify.assert_same_answers(
        "order by address", addresses, queries.order(len(addresses)), expected
    )


def range_checks_compare_unsigned(backend: Backend, subject: Subject, data: st.DataObject) -> None:
    """``base <= p < base + nbytes`` holds for exactly the addresses inside the range, for
    ranges anywhere in the 64-bit space, around the staged addresses or not."""
    queries = _querying(subject)
    addresses = _staged_addresses(backend, subject, data)
    anchor = data.draw(st.sampled_from(addresses) | hst.addresses(), label="anchor_address")
    below = data.draw(st.integers(0, anchor), label="below")
    above = data.draw(st.integers(1, ADDRESS_LIMIT - anchor), label="above")
    base, nbytes = anchor - below, below + above
    expected = [base <= a < base + nbytes for a in addresses]
    verify.assert_same_answers(
        f"in [{to_hex(base)}, +{nbytes:#x})",
        addresses,
        queries.in_range(len(addresses), base, nbytes),
        expected,
    )


def high_bits_shift_in_zeros(backend: Backend, subject: Subject, data: st.DataObject) -> None:
    """``p >> shift`` (a region or page number) is the unsigned shift: no sign extension."""
    queries = _querying(subject)
    addresses = _staged_addresses(backend, subject, data)
    shift = data.draw(st.integers(1, 63), label="shift")
    expected = [a >> shift for a in addresses]
    verify.assert_same_answers(
        f">> {shift}", addresses, queries.high_bits(len(addresses), shift), expected
    )


# -- triton kernel ---------------------------------------------------------------------------

OFFSET_DTYPES = {
    "int32": (torch.int32, -(2**31), 2**31 - 1),
    "uint32": (torch.uint32, 0, 2**32 - 1),
}
"""The offset dtypes a kernel adds to addresses, by name, with the values each holds."""


def a_kernel_sees_each_entry_and_the_entry_plus_an_offset(
    backend: Backend, encoding: str, offsets: str, addresses: list[int], data: st.DataObject
) -> None:
    """A Triton kernel that loads each entry of a table staged in ``encoding`` stores it
    bit-exact, and adds offsets (loaded ones of dtype ``offsets``, and ``index * STRIDE`` it
    computes) modulo ``2**64``, as unsigned pointer arithmetic does."""
    reason = TritonEngine().unavailable_reason(backend)
    if reason:
        pytest.skip(f"unavailable: {reason}")
    from ptrport.check import kernel_view

    offset_dtype, low, high = OFFSET_DTYPES[offsets]
    added = data.draw(
        st.lists(st.integers(low, high), min_size=len(addresses), max_size=len(addresses)),
        label="added",
    )
    table = PointerTable(len(addresses), ENCODINGS[encoding], backend)
    table.stage([Entry(a, 0, 0) for a in addresses])
    table.transfer(len(addresses))
    loaded = torch.tensor(added, dtype=torch.int64).to(offset_dtype).to(backend.device)
    view = kernel_view.load_entries(table.src.device, loaded)
    wrap = ADDRESS_LIMIT
    verify.assert_same_answers("the kernel loaded", addresses, view.seen, addresses)
    verify.assert_same_answers(
        f"entry + {offsets} offsets {added}",
        addresses,
        view.plus_loaded,
        [(a + o) % wrap for a, o in zip(addresses, added, strict=True)],
    )
    verify.assert_same_answers(
        f"entry + index * {kernel_view.STRIDE}",
        addresses,
        view.plus_computed,
        [(a + i * kernel_view.STRIDE) % wrap for i, a in enumerate(addresses)],
    )


# -- batch copy and mixed batches -------------------------------------------------------------


def _batches(
    backend: Backend, subject: Subject, *, min_entries: int = 0, synthetic: bool = True
) -> st.SearchStrategy[Batch]:
    contract = subject.contract
    return hst.copy_batches(
        backend,
        min_entries=min_entries,
        synthetic=synthetic,
        max_nbytes=contract.max_nbytes,
        alignment=contract.alignment,
    )


def real_entries_are_copied_exactly(
    backend: Backend, subject: Subject, data: st.DataObject
) -> None:
    """Every destination holds its source's bytes; nothing else changed; guards intact."""
    _executing(subject)
    batch = data.draw(_batches(backend, subject, synthetic=False), label="batch")
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
    batch = data.draw(_batches(backend, subject, min_entries=1), label="batch")
    snapshot = verify.Snapshot(batch.allocations)
    subject.create(len(batch), backend)
    subject.stage(batch)
    subject.transfer(len(batch))
    verify.assert_table_holds(subject.read_back(len(batch)), batch.entries)
    copies = subject.execute(len(batch))
    verify.assert_only_real_dereferenced(copies, batch)
    verify.assert_copied(batch, snapshot)
