"""Operation support: what probing one torch operation on uint64 tensors found, and how a
:class:`~ptrport.report.records.Result` of the ``uint64_operations`` scenario records it.

An operation *works* (its result is bit-exact), *raises* (the platform lacks it, which code
can work around), or is *wrong* (a silently wrong result, the worst). Results record these
as passed, skipped with the message ``raises <Type>: <first line>``, and failed. The probing
itself is :mod:`ptrport.check.probe`; this module is the vocabulary the report tooling shares.
"""

from __future__ import annotations

import enum
import re

from ptrport.report.records import Outcome, Result

SCENARIO = "uint64_operations"
TITLE = "uint64 operations"
"""How the compatibility matrix titles the scenario's section."""
TEST_NAME = "test_operation"
RAISES_PREFIX = "raises "

_CHECK = re.compile(rf"{SCENARIO}::{TEST_NAME}\[(?P<operation>.+)\]")
_TYPE = re.compile(r"[A-Za-z_][\w.]*")


class OperationVerdict(enum.StrEnum):
    """What a probe of one operation found, best first."""

    WORKS = "works"
    RAISES = "raises"
    WRONG = "wrong"

    @property
    def rank(self) -> int:
        """Higher is better: works 2, raises 1, wrong 0."""
        return {OperationVerdict.WORKS: 2, OperationVerdict.RAISES: 1, OperationVerdict.WRONG: 0}[
            self
        ]


OUTCOMES: dict[OperationVerdict, Outcome] = {
    OperationVerdict.WORKS: Outcome.PASSED,
    OperationVerdict.RAISES: Outcome.SKIPPED,
    OperationVerdict.WRONG: Outcome.FAILED,
}
"""The outcome a result records for each verdict."""


def check_id(operation: str) -> str:
    """The check id of the probe of ``operation``, as the scenario's results have it."""
    return f"{SCENARIO}::{TEST_NAME}[{operation}]"


def operation_of(check: str) -> str | None:
    """The operation id in a probe's check id, or ``None`` for any other check."""
    found = _CHECK.fullmatch(check)
    return found["operation"] if found else None


def raises_message(exception: str) -> str:
    """A skip message for an operation that raised ``exception`` (``Type: first line``)."""
    return RAISES_PREFIX + exception


def raised_type(message: str | None) -> str | None:
    """The exception type a ``raises <Type>: ...`` message names, or ``None``."""
    if message is None or not message.startswith(RAISES_PREFIX):
        return None
    found = _TYPE.match(message.removeprefix(RAISES_PREFIX))
    return found[0] if found else None


def verdict(scenario: str, outcome: Outcome, message: str | None) -> OperationVerdict | None:
    """What a result of ``scenario`` says about its operation; ``None`` outside the
    ``uint64_operations`` scenario and for outcomes that are not a verdict (an error in the
    harness, an unavailable backend, a skip for another reason)."""
    if scenario != SCENARIO:
        return None
    if outcome is Outcome.PASSED:
        return OperationVerdict.WORKS
    if outcome is Outcome.FAILED:
        return OperationVerdict.WRONG
    if outcome is Outcome.SKIPPED and raised_type(message) is not None:
        return OperationVerdict.RAISES
    return None


def verdict_of(result: Result) -> OperationVerdict | None:
    """:func:`verdict` of one result."""
    return verdict(result.scenario, result.outcome, result.message)


def label(found: OperationVerdict, message: str | None) -> str:
    """How a table shows a verdict: ``works``, ``raises NotImplementedError``, ``wrong``."""
    if found is OperationVerdict.RAISES:
        return f"{RAISES_PREFIX}{raised_type(message) or 'an exception'}"
    return found.value
