"""Class attributes replaced while at least one scope is open: set when the first scope opens,
restored when the last one closes, however it closes.

What ptrport patches this way (``data_ptr`` of CPU tensors in :mod:`~ptrport.device.presentation`,
Triton's launches and memory accesses in :mod:`~ptrport.device.triton_cpu`) is an attribute of a
class, so it is state of the whole process, and scopes nest: a check's presentation holds
kernel launches, each of which enters the Triton patches again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class ScopedPatch:
    """``setattr(cls, name, value)`` for each replacement, while :meth:`applied` is open."""

    def __init__(self, *replacements: tuple[type, str, object]) -> None:
        self._replacements = replacements
        self._depth = 0
        self._saved: list[tuple[type, str, object | None]] = []

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Within, the replacements are in place; nestable."""
        if self._depth == 0:
            # What the class itself held: an inherited attribute is deleted again, not copied.
            self._saved = [
                (cls, name, cls.__dict__.get(name)) for cls, name, _ in self._replacements
            ]
            for cls, name, value in self._replacements:
                setattr(cls, name, value)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                for cls, name, previous in self._saved:
                    if previous is None:
                        delattr(cls, name)
                    else:
                        setattr(cls, name, previous)
