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


def exception_message(exc: BaseException) -> str:
    """``Type: first line`` of an exception; for a group, of its first leaf and how many more."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = _leaves(exc)
        more = f" (and {len(leaves) - 1} more distinct failures)" if len(leaves) > 1 else ""
        return exception_message(leaves[0]) + more
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def shown(value: object, width: int = 40) -> str:
    """``value`` as a one-line message quotes it: its ``repr``'s first line, cut to ``width``
    characters."""
    text = (repr(value).splitlines() or [""])[0]
    return text if len(text) <= width else f"{text[: width - 3]}..."


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found
