"""Placements: where a real allocation is presented on a backend that places them
(``cpu-placed``), drawn by Hypothesis: across ``2**63``, ``2**48``, ``2**56`` and ``2**32``,
ending at ``2**64`` or one guard band below it, or in the Intel USM, ARM TBI and x86 kernel-half
shapes; and where one goes when an earlier allocation of the example took its range."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ptrport.addresses import ADDRESS_CLASSES, ADDRESS_LIMIT, HIGH_HALF, PAGE_SIZE, to_hex
from ptrport.device import presentation
from ptrport.device.presentation import PlacementError


@dataclass(frozen=True)
class Layout:
    """What a placement needs to know of an allocation: payload bytes, element size, guard."""

    nbytes: int
    itemsize: int
    guard_nbytes: int


@dataclass(frozen=True)
class Placement:
    """Where an allocation's payload is presented, and why there."""

    kind: str
    at: int
    guard_after: int


ACROSS = {
    "across 2**63": HIGH_HALF,
    "across 2**48": 1 << 48,
    "across 2**56": 1 << 56,
    "across 2**32": 1 << 32,
}
"""Boundaries a payload is placed across: the int64 sign bit, the top of 48-bit and 56-bit
virtual addresses (a mask or a tag strip cuts there), and 32-bit offsets."""
ENDING_AT_TOP = "ending at 2**64"
GUARD_BELOW_TOP = "one guard band below 2**64"
SHAPES = ("level-zero-usm", "arm-tagged", "x86-kernel")
PLACEMENT_KINDS: tuple[str, ...] = (
    "across 2**63",
    ENDING_AT_TOP,
    GUARD_BELOW_TOP,
    "across 2**48",
    "across 2**56",
    "across 2**32",
    *SHAPES,
)
"""What :func:`placements` draws from, in the order it shrinks: the first boundary that breaks
is the one a counterexample names."""


def reaches_boundary(kind: str, start: int, nbytes: int) -> bool:
    """Whether ``nbytes`` at ``start`` meet what a placement of ``kind`` is about: cross its
    boundary, or end at ``2**64``."""
    if kind in ACROSS:
        return start < ACROSS[kind] < start + nbytes
    return kind == ENDING_AT_TOP and start + nbytes == ADDRESS_LIMIT


def placements(layout: Layout, *, alignment: int = 1) -> st.SearchStrategy[Placement]:
    """Where to present a payload of ``layout``, as a :class:`Placement`: across ``2**63``,
    ``2**48``, ``2**56`` or ``2**32`` (starting 1 to n-1 steps of ``alignment`` below the
    boundary, so that it lies inside; shrinking towards one step below it), ending exactly at
    ``2**64`` (no guard band after it: there is no address there) or one guard band below it,
    or in the Intel USM, ARM TBI or x86 kernel-half shape. Every ``at`` is a multiple of
    ``alignment``, and the payload with its guard bands fits in ``[0, 2**64)``. Shrinks towards
    the earlier kinds of :data:`PLACEMENT_KINDS`."""
    alignment = check_alignment(alignment)
    return _placements(layout, alignment)


@functools.cache
def _placements(layout: Layout, alignment: int) -> st.SearchStrategy[Placement]:
    nbytes, guard = layout.nbytes, layout.guard_nbytes
    steps = max(0, nbytes - 1) // alignment

    def across(kind: str) -> st.SearchStrategy[Placement]:
        # k steps below the boundary, which then lies inside the payload (for a payload of one
        # step, at its first byte).
        boundary = ACROSS[kind]
        return st.integers(min(1, steps), steps).map(
            lambda k: Placement(kind, boundary - k * alignment, guard)
        )

    def top(kind: str, below: int) -> st.SearchStrategy[Placement]:
        at = _round_down(ADDRESS_LIMIT - below - nbytes, alignment)
        # An exact end, even where alignment leaves a few bytes after the payload.
        return st.just(Placement(kind, at, ADDRESS_LIMIT - at - nbytes))

    def shaped(kind: str) -> st.SearchStrategy[Placement]:
        # Anywhere in the class's ranges, on its granule, where the guard bands fit too.
        highest = _round_down(ADDRESS_LIMIT - nbytes - guard, alignment)
        ranges = []
        for found in ADDRESS_CLASSES[kind].ranges:
            step = max(found.granule, alignment)
            low = -(-max(found.low, PAGE_SIZE * 2) // step) * step
            high = min(_round_down(found.high, step), highest)
            if low <= high:
                ranges.append(st.integers(0, (high - low) // step).map(_stepping(low, step)))
        return st.one_of(ranges).map(lambda at: Placement(kind, at, guard))

    choices = {
        **{kind: across(kind) for kind in ACROSS},
        ENDING_AT_TOP: top(ENDING_AT_TOP, 0),
        GUARD_BELOW_TOP: top(GUARD_BELOW_TOP, guard),
        **{kind: shaped(kind) for kind in SHAPES},
    }
    # Kinds first, each as likely as another (one_of would flatten their own alternatives).
    return st.sampled_from(PLACEMENT_KINDS).flatmap(choices.__getitem__)


def _stepping(low: int, step: int) -> Callable[[int], int]:
    return lambda k: low + k * step


def _round_down(value: int, step: int) -> int:
    return value - value % step


def free_spot(placement: Placement, window: int, front: int) -> tuple[int, str]:
    """Where ``placement`` can go in the active scope: where it asks, or, where an earlier
    allocation of the example took that range, the nearest free range in page steps."""
    memory = presentation.active()
    if memory is None:
        raise InvalidArgument("Cannot place allocations outside the backend's scope (running())")
    found = memory.free_near(placement.at - front, window, step=PAGE_SIZE)
    if found is None:
        raise PlacementError(f"no room for {window} bytes near {to_hex(placement.at)}")
    if found == placement.at - front:
        return placement.at, placement.kind
    return found + front, f"{placement.kind}, moved beside another"


def check_alignment(alignment: object) -> int:
    """``alignment`` if it is a power of two from 1 to ``2**63``, else InvalidArgument."""
    if not isinstance(alignment, int) or isinstance(alignment, bool):
        raise InvalidArgument(f"Cannot have alignment={alignment!r}: it must be an int")
    if alignment < 1 or alignment & (alignment - 1) or alignment > HIGH_HALF:
        raise InvalidArgument(
            f"Cannot have alignment={alignment}: it must be a power of two from 1 to 2**63"
        )
    return alignment
