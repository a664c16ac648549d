"""Hypothesis strategies for addresses, allocations and copy batches.

Every strategy validates its keyword-only arguments when it is called and raises
:class:`hypothesis.errors.InvalidArgument` with a one-line reason. The draws never depend on
the backend: the same seed gives the same synthetic addresses, sizes, dtypes and offsets on
every backend; only the addresses of real allocations differ.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

import torch
from hypothesis import currently_in_test_context, event
from hypothesis import strategies as st
from hypothesis.control import cleanup
from hypothesis.errors import InvalidArgument

from ptrport.addresses import (
    ADDRESS_CLASSES,
    BOUNDARIES,
    HIGH_HALF,
    INT64_MAX,
    MAX_ADDRESS,
    AddressRange,
)
from ptrport.check.batches import Batch, Entry
from ptrport.check.placements import Layout, check_alignment, free_spot, placements
from ptrport.check.tables import ENCODINGS, UINT64, PointerTable
from ptrport.device.allocations import DEFAULT_GUARD_NBYTES, Allocation, allocate, release
from ptrport.device.backends import Backend, current

T = TypeVar("T")

UNIFORM = "uniform"
BOUNDARY = "boundary"
CLASS_NAMES: tuple[str, ...] = (UNIFORM, BOUNDARY, *ADDRESS_CLASSES)
"""Names ``addresses(classes=...)`` accepts: the whole range, the boundaries, and the
platform-shaped classes of :data:`ptrport.addresses.ADDRESS_CLASSES`."""

DEFAULT_DTYPES: tuple[torch.dtype, ...] = (
    torch.uint8,
    torch.float32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.int32,
    torch.int16,
    torch.float64,
)


def _check_bounds(name: str, low: int, high: int, *, floor: int = 0) -> None:
    for label, value in ((f"min_{name}", low), (f"max_{name}", high)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidArgument(f"Cannot have {label}={value!r}: it must be an int")
    if low < floor:
        raise InvalidArgument(f"Cannot have min_{name}={low} < {floor}")
    if low > high:
        raise InvalidArgument(f"Cannot have min_{name}={low} > max_{name}={high}")


def _check_max_nbytes(max_nbytes: object) -> None:
    if not isinstance(max_nbytes, int) or isinstance(max_nbytes, bool) or max_nbytes < 0:
        raise InvalidArgument(f"Cannot have max_nbytes={max_nbytes!r}: it must be an int >= 0")


DENSE_SPAN = 1 << 32
"""Ranges wider than this also get addresses with every bit drawn (see :func:`_aligned_in`)."""


def _aligned_in(low: int, high: int, step: int) -> st.SearchStrategy[int] | None:
    """Multiples of ``step`` in ``[low, high]``, shrinking towards the lowest; None if empty.

    The drawn choice is the address itself, rounded down afterwards, so that when the shrinker
    moves an example to an earlier branch of :func:`addresses` the address carries over.

    Hypothesis draws wide integer ranges mostly near their ends, so addresses from it have
    their low bits zero; in ranges wider than 32 bits a second branch draws every bit at random,
    the shape of real addresses, whose low bits are what float64 storage loses."""
    first = -(-low // step) * step
    if first > high:
        return None
    near_ends = st.integers(first, high)
    span = high - first + 1
    if span > DENSE_SPAN:
        dense = st.binary(min_size=8, max_size=8).map(
            lambda raw: first + int.from_bytes(raw, "little") % span
        )
        return (near_ends | dense).map(lambda a: a - a % step)
    return near_ends.map(lambda a: a - a % step)


def _in_range(r: AddressRange, alignment: int) -> st.SearchStrategy[int] | None:
    return _aligned_in(r.low, r.high, max(r.granule, alignment))


def _aligned_boundaries(alignment: int, *, low: int = 0) -> list[int]:
    rounded = (b - b % alignment for b in BOUNDARIES if b >= low)
    return list(dict.fromkeys(b for b in rounded if b >= low))


def _one_of(parts: Sequence[st.SearchStrategy[int] | None]) -> st.SearchStrategy[int]:
    present = [p for p in parts if p is not None]
    if not present:
        raise InvalidArgument("Cannot generate any address under these arguments")
    return st.one_of(present)


def _class_strategy(name: str, alignment: int) -> st.SearchStrategy[int] | None:
    if name == UNIFORM:
        return _aligned_in(0, MAX_ADDRESS, alignment)
    if name == BOUNDARY:
        return st.sampled_from(_aligned_boundaries(alignment))
    ranges = [_in_range(r, alignment) for r in ADDRESS_CLASSES[name].ranges]
    present = [r for r in ranges if r is not None]
    return st.one_of(present) if present else None


def addresses(
    *, alignment: int = 1, classes: Collection[str] | None = None
) -> st.SearchStrategy[int]:
    """Addresses in ``[0, 2**64)``, every one a multiple of ``alignment``.

    ``classes`` picks where they come from (default: all of :data:`CLASS_NAMES`):
    ``uniform`` (anywhere in the range), ``boundary`` (0, the int32, uint32 and float64-mantissa
    limits, ``2**63-1``, ``2**63``, ``2**63+1``, ``2**64-1`` and the page-aligned tops of both
    halves, rounded down to ``alignment``), ``user-space`` (ordinary lower-half addresses),
    ``level-zero-usm`` (Intel GPU device allocations), ``arm-tagged`` (top-byte-tagged ARM64
    pointers) and ``x86-kernel`` (the canonical upper half).

    Shrinks towards the first class given and, within it, towards the lowest address of its
    first range; with the default classes a failure that needs an address above the int64
    range shrinks to ``2**63``.
    """
    alignment = check_alignment(alignment)
    if classes is None:
        names: tuple[str, ...] = CLASS_NAMES
    else:
        if isinstance(classes, str):
            raise InvalidArgument(f"Cannot have classes={classes!r}: pass a list of names")
        names = tuple(classes)
        if not names:
            raise InvalidArgument("Cannot have classes=[]: name at least one class")
        for name in names:
            if name not in CLASS_NAMES:
                raise InvalidArgument(
                    f"Unknown address class {name!r}; known: {', '.join(CLASS_NAMES)}"
                )
    return _addresses(alignment, names)


# Strategies are immutable, so each is built once per set of arguments: scenarios ask for them
# inside st.data() draws, once per example.
@functools.cache
def _addresses(alignment: int, names: tuple[str, ...]) -> st.SearchStrategy[int]:
    return _one_of([_class_strategy(name, alignment) for name in names])


def high_addresses(*, alignment: int = 1) -> st.SearchStrategy[int]:
    """Addresses ``>= 2**63``, the ones ``int64`` cannot hold, multiples of ``alignment``:
    anywhere in the upper half, its boundaries, Intel Level Zero USM and x86 kernel-half
    addresses, and ARM pointers with a tag byte of 0x80 or more. Shrinks towards ``2**63``."""
    return _high_addresses(check_alignment(alignment))


@functools.cache
def _high_addresses(alignment: int) -> st.SearchStrategy[int]:
    high_ranges = [r for c in ADDRESS_CLASSES.values() for r in c.ranges if r.low >= HIGH_HALF]
    return _one_of(
        [
            _aligned_in(HIGH_HALF, MAX_ADDRESS, alignment),
            st.sampled_from(_aligned_boundaries(alignment, low=HIGH_HALF)),
            *(_in_range(r, alignment) for r in high_ranges),
        ]
    )


def _on(
    backend: Backend | None, build: Callable[[Backend], st.SearchStrategy[T]]
) -> st.SearchStrategy[T]:
    """``build(backend)``; with no backend, built when drawn, on the backend whose scope the
    draw runs in: a test marked ``@pytest.mark.ptrport``, a scenario, ``Backend.running()``."""
    if backend is not None:
        return build(_check_backend(backend))
    return _on_current(build)


@st.composite
def _on_current(draw: st.DrawFn, build: Callable[[Backend], st.SearchStrategy[T]]) -> T:
    running = current()
    if running is None:
        raise InvalidArgument(
            "Cannot make real memory with backend=None outside a backend's scope: pass a "
            "backend, or draw in a test marked @pytest.mark.ptrport"
        )
    return draw(build(_check_backend(running)))


def _check_backend(backend: object) -> Backend:
    if not isinstance(backend, Backend):
        raise InvalidArgument(f"Cannot have backend={backend!r}: it must be a harness Backend")
    if not backend.is_available():
        raise InvalidArgument(
            f"Cannot allocate on backend {backend.name}: {backend.unavailable_reason}"
        )
    return backend


def allocations(
    backend: Backend | None = None,
    *,
    dtypes: Sequence[torch.dtype] = DEFAULT_DTYPES,
    min_numel: int = 0,
    max_numel: int = 256,
    max_offset: int = 8,
    alignment: int = 1,
) -> st.SearchStrategy[Allocation]:
    """Allocations of real memory on ``backend`` (default: the backend of the running test), as
    :class:`~ptrport.device.allocations.Allocation` values, not tensors: ``.tensor`` is the
    tensor (a dtype from ``dtypes``, ``min_numel`` to ``max_numel`` elements, filled with bytes
    from a drawn seed), ``.address`` the address of its first byte (also for an empty one, whose
    ``data_ptr()`` is 0). Each starts 0 to ``max_offset`` elements into its storage after a
    guard band, with a guard band after it too.

    On a backend that places allocations (``cpu-placed``) each is presented where a drawn
    :func:`~ptrport.check.placements.placements` puts it (a multiple of its dtype's size and
    of ``alignment``), for the rest of the example. The placement is drawn on every backend,
    so that the same seed gives the same draws everywhere.

    Shrinks towards the first dtype, fewer elements, no offset, and a placement across
    ``2**63`` that starts one element below it.
    """
    dtypes = tuple(dtypes)
    if not dtypes:
        raise InvalidArgument("Cannot have dtypes=(): name at least one dtype")
    for dtype in dtypes:
        if not isinstance(dtype, torch.dtype):
            raise InvalidArgument(f"Cannot have dtype {dtype!r}: it must be a torch.dtype")
    _check_bounds("numel", min_numel, max_numel)
    _check_bounds("offset", 0, max_offset)
    alignment = check_alignment(alignment)
    return _on(
        backend,
        lambda on: _allocations(on, dtypes, min_numel, max_numel, max_offset, alignment),
    )


@functools.cache
@st.composite
def _allocations(
    draw: st.DrawFn,
    backend: Backend,
    dtypes: tuple[torch.dtype, ...],
    min_numel: int,
    max_numel: int,
    max_offset: int,
    alignment: int,
) -> Allocation:
    dtype = draw(st.sampled_from(dtypes))
    numel = draw(st.integers(min_numel, max_numel))
    offset = draw(st.integers(0, max_offset))
    fill_seed = draw(st.integers(0, 2**32 - 1))
    layout = Layout(dtype.itemsize * numel, dtype.itemsize, DEFAULT_GUARD_NBYTES)
    placement = draw(placements(layout, alignment=max(alignment, dtype.itemsize)))
    made = functools.partial(
        allocate,
        backend,
        dtype=dtype,
        numel=numel,
        offset=offset,
        guard_nbytes=DEFAULT_GUARD_NBYTES,
        fill_seed=fill_seed,
    )
    if not backend.places_allocations:
        return made()
    front = DEFAULT_GUARD_NBYTES + offset * dtype.itemsize
    at, kind = free_spot(placement, front + layout.nbytes + placement.guard_after, front)
    allocation = made(at=at, placed=kind, guard_after=placement.guard_after)
    event(f"placed {allocation.placed}")
    if currently_in_test_context():
        cleanup(functools.partial(release, allocation))
    return allocation


@st.composite
def _real_entry(
    draw: st.DrawFn, payloads: st.SearchStrategy[Allocation], max_nbytes: int, alignment: int
) -> Entry:
    src = draw(payloads)
    dst = draw(payloads)
    src_offset = draw(_aligned_offset(src, alignment))
    dst_offset = draw(_aligned_offset(dst, alignment))
    room = min(src.nbytes - src_offset, dst.nbytes - dst_offset, max_nbytes)
    # All the room as often as any other size: a copy to the end of a payload is what meets a
    # boundary inside it, or the top of the address space.
    nbytes = draw(st.integers(0, room) | st.just(room))
    return Entry(src.address + src_offset, dst.address + dst_offset, nbytes, src, dst)


def _aligned_offset(allocation: Allocation, alignment: int) -> st.SearchStrategy[int]:
    """Byte offsets into ``allocation`` whose address is a multiple of ``alignment``."""
    first = -allocation.address % alignment
    if first >= allocation.nbytes:
        # Only where the backend places allocations less aligned than a contract may ask
        # (MAX_ALIGNMENT): no offset fits this one, so the example is dropped.
        return st.nothing()
    return st.integers(0, (allocation.nbytes - 1 - first) // alignment).map(
        lambda k: first + k * alignment
    )


def _synthetic_entries(executed: bool, max_nbytes: int, alignment: int) -> st.SearchStrategy[Entry]:
    return st.builds(
        Entry,
        src=high_addresses(alignment=alignment),
        dst=high_addresses(alignment=alignment),
        nbytes=st.just(0) if executed else st.integers(0, max_nbytes),
    )


def entries(
    backend: Backend | None = None,
    *,
    real: bool = True,
    synthetic: bool = True,
    executed: bool = True,
    max_nbytes: int = INT64_MAX,
    alignment: int = 1,
) -> st.SearchStrategy[Entry]:
    """Copy entries ``(src, dst, nbytes)``, every size at most ``max_nbytes`` and every address a
    multiple of ``alignment`` (a subject's contract, :mod:`ptrport.check.contracts`).

    A real entry copies between two fresh allocations on ``backend`` (default: the backend of
    the running test), at byte offsets inside each, ``nbytes`` fitting both; on ``cpu-placed``
    they are placed where :func:`allocations` says. A synthetic entry carries addresses from
    :func:`high_addresses`: if it will be ``executed`` its ``nbytes`` is 0, a no-op every engine
    must tolerate without dereferencing, otherwise any size up to ``max_nbytes``.

    Shrinks to the synthetic entry at ``2**63`` with size 0 (it takes fewer choices than a real
    one) unless the failure needs a real entry, which then shrinks towards the start of small
    allocations.
    """
    if not (real or synthetic):
        raise InvalidArgument("Cannot have real=False and synthetic=False: nothing to generate")
    _check_max_nbytes(max_nbytes)
    alignment = check_alignment(alignment)
    return _on(backend, lambda on: _entries(on, real, synthetic, executed, max_nbytes, alignment))


@functools.cache
def _entries(
    backend: Backend,
    real: bool,
    synthetic: bool,
    executed: bool,
    max_nbytes: int,
    alignment: int,
) -> st.SearchStrategy[Entry]:
    parts: list[st.SearchStrategy[Entry]] = []
    if real:
        # With an alignment, allocations start at their buffer's aligned front guard band.
        payloads = allocations(
            backend, min_numel=1, max_offset=8 if alignment == 1 else 0, alignment=alignment
        )
        parts.append(_real_entry(payloads, max_nbytes, alignment))
    if synthetic:
        parts.append(_synthetic_entries(executed, max_nbytes, alignment))
    return st.one_of(parts)


def copy_batches(
    backend: Backend | None = None,
    *,
    min_entries: int = 0,
    max_entries: int = 8,
    real: bool = True,
    synthetic: bool = True,
    executed: bool = True,
    max_nbytes: int = INT64_MAX,
    alignment: int = 1,
) -> st.SearchStrategy[Batch]:
    """Batches of ``min_entries`` to ``max_entries`` :func:`entries` (the same arguments);
    real entries of one batch copy between fresh allocations, so no two of them overlap.

    Shrinks towards fewer entries, sizes and offsets; a lone entry as :func:`entries` does.
    """
    _check_bounds("entries", min_entries, max_entries)
    found = entries(
        backend,
        real=real,
        synthetic=synthetic,
        executed=executed,
        max_nbytes=max_nbytes,
        alignment=alignment,
    )
    return st.lists(found, min_size=min_entries, max_size=max_entries).map(
        lambda drawn: Batch(tuple(drawn))
    )


def pointer_tables(
    backend: Backend | None = None,
    *,
    encoding: str = UINT64.name,
    min_capacity: int = 0,
    max_capacity: int = 64,
) -> st.SearchStrategy[PointerTable]:
    """Empty pointer tables on ``backend`` (default: the backend of the running test): ``src``,
    ``dst`` and ``sizes`` columns of ``min_capacity`` to ``max_capacity`` entries, each a host
    tensor (pinned where the backend can pin), its device mirror and a numpy view, addresses in
    ``encoding`` (``uint64``, ``int64-bitcast``, or the ``int64`` control). Shrinks towards
    ``min_capacity``."""
    if encoding not in ENCODINGS:
        known = ", ".join(ENCODINGS)
        raise InvalidArgument(f"Unknown encoding {encoding!r}; known: {known}")
    _check_bounds("capacity", min_capacity, max_capacity)
    chosen = ENCODINGS[encoding]
    return _on(
        backend,
        lambda on: st.integers(min_capacity, max_capacity).map(
            lambda capacity: PointerTable(capacity, chosen, on)
        ),
    )
