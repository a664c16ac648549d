"""The lint's worker pool: work split across processes kept for the whole run (on a large
tree), in chunks of about as many bytes of their files, and the garbage collector's settings
while the files are analysed."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

_T = TypeVar("_T")
_I = TypeVar("_I")
_PARALLEL_FROM = 200
"""Files in a run from which it is split across processes."""
_COLLECT_EVERY = 50_000
"""Allocations between two runs of the cyclic garbage collector while files are linted."""


def process_count(files: int, jobs: int | None) -> int:
    """How many processes lint ``files`` files: ``jobs`` (default: one per CPU), or this one
    alone for a small tree."""
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    return workers if files >= _PARALLEL_FROM else 1


class WorkerPool:
    """Work split across ``count`` processes (kept for the whole run), or done here for one."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.pool = ProcessPoolExecutor(max_workers=count) if count > 1 else None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def map(
        self,
        work: Callable[..., list[_T]],
        items: list[_I],
        *shared: object,
        path: Callable[[_I], str] | None = None,
    ) -> list[_T]:
        """``work(chunk, *shared)`` over ``items`` in ``count`` chunks, the results in one list
        (in the order of ``items`` unless ``path`` names each item's file: then the chunks
        take the largest files first, each to the chunk with the fewest bytes so far).
        ``work`` is a module-level function: it and what it takes and gives are pickled."""
        if self.pool is None or not items:
            return work(items, *shared)
        if path is None:
            chunks = [items[start :: self.count] for start in range(self.count)]
        else:
            chunks = _balanced(items, path, self.count)
        parts = self.pool.map(work, chunks, *([value] * len(chunks) for value in shared))
        return [result for part in parts for result in part]


def _balanced(items: list[_I], path: Callable[[_I], str], count: int) -> list[list[_I]]:
    """``items`` in ``count`` chunks of about as many bytes of their files: a few files
    analysed again (a round, of a large file or two) would otherwise keep one process busy
    while the others wait."""
    sizes = {id(item): _file_size(path(item)) for item in items}
    chunks: list[list[_I]] = [[] for _ in range(count)]
    loads = [0] * count
    for item in sorted(items, key=lambda item: -sizes[id(item)]):
        lightest = loads.index(min(loads))
        chunks[lightest].append(item)
        loads[lightest] += sizes[id(item)]
    return [chunk for chunk in chunks if chunk]


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


@contextmanager
def fewer_collections() -> Iterator[None]:
    """A parsed module is thousands of objects that live until its file is done and hold no
    cycles: the cyclic collector, run every 700 allocations, spends a sixth of the time looking
    at them. Every 50,000 it costs little (benchmarks/lint_tree.py)."""
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], _COLLECT_EVERY), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
