"""The harness's own errors: raised instead of touching memory, or instead of a traceback."""

from __future__ import annotations


class HarnessError(Exception):
    """Something the harness refused to do, with a one-line reason."""


class UnsafeDereference(HarnessError):
    """An engine was about to dereference memory that no live allocation owns."""


class CapacityExceeded(HarnessError):
    """A pointer table was asked to stage or transfer more entries than it holds."""


class UnknownName(HarnessError):
    """A backend, subject or engine name that the harness does not know."""
