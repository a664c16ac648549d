"""Test-only subjects whose execute kills or hangs the process running it, for the isolation
tests: one dereferences a synthetic address through ctypes, one never returns. They keep their
table in Python lists; everything but ``execute`` behaves."""

from __future__ import annotations

import ctypes
import threading

from ptrport.addresses import HIGH_HALF
from ptrport.check.batches import Batch
from ptrport.device.backends import Backend

SYNTHETIC = HIGH_HALF
"""A non-canonical x86-64 address: reading it is a segmentation fault."""


class _ListTable:
    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[tuple[int, int, int]] = []
        self.device: list[tuple[int, int, int]] = []

    def create(self, capacity: int, backend: Backend) -> None:
        self.capacity, self.rows, self.device = capacity, [], []

    def stage(self, batch: Batch) -> None:
        if len(self.rows) + len(batch) > self.capacity:
            raise ValueError("over capacity")
        self.rows += [(e.src, e.dst, e.nbytes) for e in batch]

    def transfer(self, n: int) -> None:
        self.device = list(self.rows[:n])

    def read_back(self, n: int) -> list[tuple[int, int, int]]:
        return list(self.device[:n])


class Segfaulting(_ListTable):
    def execute(self, n: int) -> None:
        if n:
            ctypes.string_at(SYNTHETIC, 8)


class Hanging(_ListTable):
    def execute(self, n: int) -> None:
        if n:
            threading.Event().wait()


def segfaulting() -> Segfaulting:
    return Segfaulting("segfaulting")


def hanging() -> Hanging:
    return Hanging("hanging")
