"""Results: the outcome of one check for one subject on one backend, as plain data.

Nothing here knows about pytest; the plugin turns its reports into :class:`Result` values.
Reports are read where neither torch nor numpy is installed, so this imports neither.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ptrport.addresses import to_hex
from ptrport.dtype_names import dtype_name, is_dtype

OWN_TEST = "own test"
"""The subject of a user's own test marked ``@pytest.mark.ptrport``: the user's code, as the
test has it. Its check is the test's node id without the backend."""


class Outcome(enum.StrEnum):
    """What happened to one check for one subject on one backend."""

    PASSED = "passed"
    FAILED = "failed"
    XFAILED = "xfailed"
    """A control's bug was caught where it must be."""
    XPASSED = "xpassed"
    """A control passed where its bug must show: the harness has gone blind."""
    SKIPPED = "skipped"
    UNAVAILABLE = "unavailable"
    ERROR = "error"
    CRASHED = "crashed"
    """The process running the check died (a signal, an abort): see ``--isolate``."""
    TIMED_OUT = "timed out"
    """One example ran longer than ``--example-timeout``: a hang, in an isolated run."""

    @property
    def executed(self) -> bool:
        """Whether the check ran (as opposed to skipped or unavailable)."""
        return self not in (Outcome.SKIPPED, Outcome.UNAVAILABLE)

    @property
    def bad(self) -> bool:
        """Whether this outcome is red: a failure, or a control that went blind."""
        return self in (
            Outcome.FAILED,
            Outcome.ERROR,
            Outcome.CRASHED,
            Outcome.TIMED_OUT,
            Outcome.XPASSED,
        )


@dataclass(frozen=True)
class Result:
    check: str
    """The check's id without the backend or subject, e.g. ``table_round_trip::test_x``."""
    scenario: str
    subject: str | None
    backend: str
    outcome: Outcome
    message: str | None = None
    example: dict[str, Any] | None = None
    """The minimal falsifying example for failures, addresses in hex."""
    examples: int = 0
    """How many times Hypothesis ran the check's body (generation and shrinking)."""
    found_after: int | None = None
    """For failures: the example (counting from 1) that first failed, before shrinking."""
    duration_s: float = 0.0
    nodeid: str = ""
    body: str | None = None
    """``module:function`` of the check's body, which a repro script calls again."""
    copied: tuple[dict[str, Any], ...] = ()
    """For a passed check that copies: a few real entries (``src``, ``dst`` in hex,
    ``nbytes``) its examples copied and verified, highest source address first."""
    from_run: dict[str, str] | None = None
    """For a result a partial run kept from the report it merged into: the ``started``,
    ``hypothesis_profile`` and ``seed`` of the run that produced it; ``None`` for a result of
    the run that wrote the report."""
    where: str | None = None
    """For a user's test that failed with an exception: the deepest frame of its traceback in
    the user's or the engine's code, ``file:line`` (relative to the rootdir, or to the
    site-packages it is installed in)."""

    def to_record(self) -> dict[str, Any]:
        copied = {"copied": list(self.copied)} if self.copied else {}
        from_run = {"from_run": dict(self.from_run)} if self.from_run is not None else {}
        where = {"where": self.where} if self.where is not None else {}
        return {
            "check": self.check,
            "scenario": self.scenario,
            "subject": self.subject,
            "backend": self.backend,
            "outcome": self.outcome.value,
            "message": self.message,
            "example": self.example,
            "examples": self.examples,
            "found_after": self.found_after,
            "duration_s": round(self.duration_s, 6),
            "nodeid": self.nodeid,
            "body": self.body,
            **copied,
            **from_run,
            **where,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Result:
        """The inverse of :meth:`to_record`, for a record already validated."""
        return cls(
            check=record["check"],
            scenario=record["scenario"],
            subject=record["subject"],
            backend=record["backend"],
            outcome=Outcome(record["outcome"]),
            message=record["message"],
            example=record["example"],
            examples=record["examples"],
            found_after=record.get("found_after"),
            duration_s=record["duration_s"],
            nodeid=record["nodeid"],
            body=record["body"],
            copied=tuple(record.get("copied", ())),
            from_run=record.get("from_run"),
            where=record.get("where"),
        )

    @property
    def own_test(self) -> bool:
        """Whether this is a user's own test, rerun by its node id rather than a body."""
        return self.subject == OWN_TEST

    @property
    def key(self) -> tuple[str, str | None, str]:
        """What identifies a result within one platform's report."""
        return (self.check, self.subject, self.backend)


def _is_address_key(key: str) -> bool:
    lowered = key.lower()
    return "address" in lowered or lowered in ("src", "dst") or lowered.endswith("_ptr")


def describe(value: Any, key: str = "") -> Any:
    """``value`` as JSON-ready data: harness objects by their ``to_record()``, addresses (ints
    under a key that names an address) in hex, containers element by element."""
    to_record = getattr(value, "to_record", None)
    if callable(to_record):
        return to_record()
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return to_hex(value) if _is_address_key(key) and value >= 0 else value
    if is_dtype(value):
        return dtype_name(value)
    if isinstance(value, Mapping):
        return {str(k): describe(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [describe(v, key) for v in value]
    return repr(value)


def describe_example(values: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs of one Hypothesis example, by argument name."""
    return {name: describe(value, name) for name, value in values.items()}


def compact_example(example: dict[str, Any] | None, width: int | None = None) -> str:
    """A recorded example on one line, entries as ``src->dst:nbytes`` (``key=value, ...``),
    cut to ``width`` characters if given."""
    if not example:
        return ""
    text = ", ".join(f"{key}={_compact(value)}" for key, value in example.items())
    if width is not None and len(text) > width:
        text = text[: width - 3] + "..."
    return text


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "entry":
            return f"{value['src']}->{value['dst']}:{value['nbytes']}"
        if kind == "batch":
            return _compact(value["entries"])
        return "{" + ", ".join(f"{k}={_compact(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_compact(v) for v in value) + "]"
    return str(value)
