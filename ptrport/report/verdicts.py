"""The verdict by difference: each of a user's tests judged by its outcomes across the backends
of one run, against ``cpu`` (the reference: addresses as they are, low).

- *address-sensitive*: it does not fail on ``cpu``, and fails on an upper-half or placed
  backend. A finding, given with those backends, its message's first line and the deepest
  frame in the user's or the engine's code.
- *fails everywhere*: it fails on ``cpu`` too. It cannot run here; not a finding.
- *passes everywhere*: it fails nowhere.
- *skipped*: skipped (or unavailable) on ``cpu``, so that there is nothing to judge by.

A run is judged only where it has ``cpu``, an upper-half or placed backend, and a user's test
(:func:`judge`). Pure: results in, verdicts out.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ptrport.report.records import Outcome, Result

REFERENCE = "cpu"
"""The backend the others are judged against."""
FAILING = (Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMED_OUT)
"""The outcomes that count as failing: a control's ``xpassed`` is no user test's."""
NOT_RUN = (Outcome.SKIPPED, Outcome.UNAVAILABLE)


class Verdict(enum.StrEnum):
    """What one test's outcomes across the backends say."""

    ADDRESS_SENSITIVE = "address-sensitive"
    FAILS_EVERYWHERE = "fails everywhere"
    PASSES_EVERYWHERE = "passes everywhere"
    SKIPPED = "skipped"


COUNTED = {
    Verdict.ADDRESS_SENSITIVE: "address-sensitive",
    Verdict.FAILS_EVERYWHERE: "fail everywhere (cannot run here)",
    Verdict.PASSES_EVERYWHERE: "pass everywhere",
    Verdict.SKIPPED: "skipped",
}
"""How :meth:`Verdicts.counts_line` names each verdict after its count."""


@dataclass(frozen=True)
class CheckVerdict:
    """One test's verdict, and what it failed with."""

    check: str
    """The test's node id without the backend."""
    verdict: Verdict
    backends: tuple[str, ...] = ()
    """Where it failed: for an address-sensitive test the judged backends, for one that fails
    everywhere every backend; empty otherwise."""
    message: str | None = None
    """The first line of the message of its first failure shown (an address-sensitive test's
    first judged backend's; ``cpu``'s for the rest), or of ``cpu``'s skip."""
    where: str | None = None
    """That failure's deepest frame in the user's or the engine's code, ``file:line``."""

    def to_record(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict.value,
            "backends": list(self.backends),
            "message": self.message,
            "where": self.where,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> CheckVerdict:
        return cls(
            check=record["check"],
            verdict=Verdict(record["verdict"]),
            backends=tuple(record["backends"]),
            message=record["message"],
            where=record["where"],
        )

    def finding_line(self) -> str:
        """``ADDRESS-SENSITIVE <check> on <backends>: <first line> (<file:line>)``."""
        where = f" ({self.where})" if self.where else ""
        message = self.message or "failed"
        return f"ADDRESS-SENSITIVE {self.check} on {', '.join(self.backends)}: {message}{where}"


@dataclass(frozen=True)
class Verdicts:
    """A run's verdicts: every user test judged, in the order the results first name it."""

    judged: tuple[str, ...]
    """The upper-half and placed backends of the run, judged against :attr:`reference`."""
    checks: tuple[CheckVerdict, ...]
    reference: str = REFERENCE

    @property
    def findings(self) -> tuple[CheckVerdict, ...]:
        """The address-sensitive tests."""
        return tuple(c for c in self.checks if c.verdict is Verdict.ADDRESS_SENSITIVE)

    @property
    def counts(self) -> dict[Verdict, int]:
        """How many tests have each verdict, every verdict listed."""
        return {v: sum(c.verdict is v for c in self.checks) for v in Verdict}

    def counts_line(self) -> str:
        """``1 address-sensitive, 2 fail everywhere (cannot run here), 3 pass everywhere,
        0 skipped``."""
        return ", ".join(f"{n} {COUNTED[v]}" for v, n in self.counts.items())

    def to_record(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "judged": list(self.judged),
            "counts": {v.value: n for v, n in self.counts.items()},
            "checks": [c.to_record() for c in self.checks],
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Verdicts:
        """The inverse of :meth:`to_record`, for a record already validated (``counts`` is
        derived, and read from the checks)."""
        return cls(
            judged=tuple(record["judged"]),
            checks=tuple(CheckVerdict.from_record(c) for c in record["checks"]),
            reference=record["reference"],
        )


def judge(results: Iterable[Result], backends: Mapping[str, bool]) -> Verdicts | None:
    """The verdict on each user test among ``results``; ``backends`` are the run's, by name,
    each ``True`` where it is judged against ``cpu`` (an upper-half or placed backend:
    ``Backend.high_addresses``). ``None`` where there is nothing to judge: no ``cpu``, no
    judged backend or no user test. A test with no result on ``cpu`` has no verdict."""
    judged = tuple(name for name, high in backends.items() if high and name != REFERENCE)
    if REFERENCE not in backends or not judged:
        return None
    by_check: dict[str, dict[str, Result]] = {}
    for result in results:
        if result.own_test and result.backend in backends:
            by_check.setdefault(result.check, {})[result.backend] = result
    if not by_check:
        return None
    found = []
    for check, on in by_check.items():
        verdict = _verdict(check, on, judged, order=tuple(backends))
        if verdict is not None:
            found.append(verdict)
    return Verdicts(judged=judged, checks=tuple(found))


def _verdict(
    check: str, on: Mapping[str, Result], judged: tuple[str, ...], order: tuple[str, ...]
) -> CheckVerdict | None:
    reference = on.get(REFERENCE)
    if reference is None:
        return None
    if reference.outcome in NOT_RUN:
        return CheckVerdict(check, Verdict.SKIPPED, message=_first_line(reference.message))
    if reference.outcome in FAILING:
        everywhere = tuple(b for b in order if b in on and on[b].outcome in FAILING)
        return CheckVerdict(
            check,
            Verdict.FAILS_EVERYWHERE,
            backends=everywhere,
            message=_first_line(reference.message),
            where=reference.where,
        )
    failing = [on[b] for b in judged if b in on and on[b].outcome in FAILING]
    if not failing:
        return CheckVerdict(check, Verdict.PASSES_EVERYWHERE)
    return CheckVerdict(
        check,
        Verdict.ADDRESS_SENSITIVE,
        backends=tuple(r.backend for r in failing),
        message=_first_line(failing[0].message),
        where=failing[0].where,
    )


def _first_line(message: str | None) -> str | None:
    text = (message or "").strip()
    return text.splitlines()[0] if text else None
