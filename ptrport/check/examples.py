"""Hypothesis examples as reports need them: one seed per check, the same on every backend, the
inputs of the last example a check ran (after a failure, Hypothesis replays the minimal
example last, so that is the counterexample), and a few real entries that passing examples
copied."""

from __future__ import annotations

import functools
import hashlib
import secrets
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import seed
from hypothesis import strategies as st
from hypothesis.errors import UnsatisfiedAssumption

from ptrport.addresses import to_hex
from ptrport.check.batches import Batch, Entry
from ptrport.check.placements import PLACEMENT_KINDS, reaches_boundary

DERANDOMIZED = "derandomized"
COPIED_KEPT = 3
"""How many real entries of passing examples a result keeps as evidence."""


def run_seed(given: object | None, *, derandomize: bool) -> str:
    """The seed of a whole run: ``--hypothesis-seed`` if given, a fixed one for derandomized
    profiles, else a fresh random one (reported, so another platform can pass it back)."""
    if given is not None:
        return str(given)
    return DERANDOMIZED if derandomize else str(secrets.randbits(32))


def check_seed(run: str, check: str) -> int:
    """The seed for one check: from the run's seed and the check id, which names no backend."""
    digest = hashlib.sha256(f"{run}\0{check}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def is_hypothesis_test(function: object) -> bool:
    handle = getattr(function, "hypothesis", None)
    return handle is not None and hasattr(handle, "inner_test")


@dataclass
class ExampleLog:
    """How many times a check's body ran, and the inputs of the last run."""

    count: int = 0
    found_after: int | None = None
    """The count at the first example whose body raised (before any shrinking)."""
    last: dict[str, Any] | None = None
    body: str | None = None
    """``module:function`` of the body Hypothesis calls, for repro scripts."""
    on_progress: Callable[[ExampleLog, dict[str, Any]], None] | None = None
    """Called with the inputs so far when an example starts and after each draw (an isolated
    child tells its parent where it is, in case it dies there)."""
    copied: list[tuple[int, int, int]] = field(default_factory=list)
    """The real entries with the highest source addresses among the examples that passed,
    ``(src, dst, nbytes)``; only copy checks have real entries among their inputs."""
    placed: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Per placement of a source allocation (``across 2**63``), a real entry copied from one so
    placed in an example that passed: one that reaches the boundary (crosses it, or ends at
    ``2**64``) if any did, else the largest."""

    def progress(self, inputs: dict[str, Any]) -> None:
        if self.on_progress is not None:
            self.on_progress(self, inputs)

    def passed(self, inputs: dict[str, Any]) -> None:
        """Keep the real entries of an example that passed, as :attr:`copied` and
        :attr:`placed` allow."""
        entries = [e for e in _real_entries(inputs.values()) if e.nbytes]
        found = {(e.src, e.dst, e.nbytes) for e in entries}
        if found:
            kept = set(self.copied) | found
            self.copied = sorted(kept, reverse=True)[:COPIED_KEPT]
        for entry in entries:
            kind = entry.src_allocation.placed if entry.src_allocation is not None else None
            if kind is None or kind not in PLACEMENT_KINDS:  # moved beside another: not kept
                continue
            best = self.placed.get(kind)
            if best is None or _evidence(kind, entry) > _evidence(kind, Entry(*best)):
                self.placed[kind] = (entry.src, entry.dst, entry.nbytes)

    def copied_records(self) -> tuple[dict[str, Any], ...]:
        """The entries kept, as a report's ``copied`` holds them: the highest sources first,
        then one per placement."""
        highest = [(src, dst, nbytes, None) for src, dst, nbytes in self.copied]
        placed = [(*entry, kind) for kind, entry in sorted(self.placed.items())]
        return tuple(
            {"src": to_hex(src), "dst": to_hex(dst), "nbytes": nbytes}
            | ({"placed": kind} if kind is not None else {})
            for src, dst, nbytes, kind in highest + placed
        )


def _evidence(kind: str, entry: Entry) -> tuple[bool, int]:
    """How well an entry shows its source's placement: reaching its boundary first, then
    size."""
    return reaches_boundary(kind, entry.src, entry.nbytes), entry.nbytes


def _real_entries(values: Iterable[Any]) -> Iterator[Entry]:
    for value in values:
        if isinstance(value, Batch):
            yield from value.real
        elif isinstance(value, Entry) and not value.synthetic:
            yield value
        elif isinstance(value, list | tuple):
            yield from _real_entries(value)


class _RecordingData:
    """Stands in for Hypothesis's ``st.data()`` object and remembers what was drawn."""

    def __init__(
        self, data: st.DataObject, draws: dict[str, Any], progress: Callable[[], None]
    ) -> None:
        self._data = data
        self._draws = draws
        self._progress = progress

    def draw(self, strategy: st.SearchStrategy[Any], label: Any = None) -> Any:
        value = self._data.draw(strategy, label)
        self._draws[str(label) if label is not None else f"draw_{len(self._draws) + 1}"] = value
        self._progress()
        return value

    def __repr__(self) -> str:
        return repr(self._data)


def prepare(test: Any, *, seed_value: int, log: ExampleLog, fixtures: Collection[str]) -> None:
    """Seed the Hypothesis ``test`` and have each example's generated inputs (arguments not in
    ``fixtures``, and ``st.data()`` draws by label) recorded in ``log``.

    Hypothesis would otherwise derive a parametrized test's seed from its pytest node id, which
    names the backend. Replacing ``test.hypothesis.inner_test`` is Hypothesis's documented way
    to wrap the body it calls per example."""
    seed(seed_value)(test)
    handle = test.hypothesis
    inner = getattr(handle.inner_test, "__ptrport_unwrapped__", handle.inner_test)
    log.body = f"{inner.__module__}:{inner.__qualname__}"

    @functools.wraps(inner)
    def recording(*args: Any, **kwargs: Any) -> Any:
        log.count += 1
        generated: dict[str, Any] = {}
        draws: dict[str, Any] = {}

        def progress() -> None:
            log.progress({**generated, **draws})

        for name, value in kwargs.items():
            if name in fixtures:
                continue
            if isinstance(value, st.DataObject):
                kwargs[name] = _RecordingData(value, draws, progress)
            else:
                generated[name] = value
        log.last = generated
        progress()
        try:
            returned = inner(*args, **kwargs)
        except UnsatisfiedAssumption:
            raise
        except Exception:
            if log.found_after is None:
                log.found_after = log.count
            raise
        finally:
            generated.update(draws)
        log.passed(generated)
        return returned

    recording.__ptrport_unwrapped__ = inner  # type: ignore[attr-defined]
    handle.inner_test = recording
