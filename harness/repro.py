"""Repro scripts: one standalone Python file per failure that rebuilds the minimal failing
example from a report and runs the failing check again on the same backend.

A script needs only the installed harness and torch. It calls :func:`run_check` with the
check's body (``module:function``, recorded in the report), the subject, the backend and the
example; real allocations are made again with the same dtype, size, offset and contents, and
synthetic addresses are used as reported.
"""

from __future__ import annotations

import importlib
import inspect
import pprint
import re
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.allocations import allocation_from_record
from harness.backends import Backend, load_backends
from harness.batches import batch_from_record, entry_from_record
from harness.controls import catalogue
from harness.errors import HarnessError, exception_message
from harness.records import Outcome, Result, describe_example
from harness.report import PlatformReport
from harness.subjects import builtin_subjects

REPRODUCIBLE = (Outcome.FAILED, Outcome.XFAILED, Outcome.ERROR, Outcome.CRASHED)
_HEX = re.compile(r"0x[0-9a-f]{16}")


class ReproError(HarnessError):
    """A repro that cannot be written or run, with a one-line reason."""


def rebuild(value: Any, backend: Backend) -> Any:
    """The inputs a report recorded, as objects again: allocations, entries and batches made
    anew on ``backend``, hex addresses as ints."""
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind == "allocation":
            return allocation_from_record(value, backend)
        if kind == "entry":
            return entry_from_record(value, backend)
        if kind == "batch":
            return batch_from_record(value, backend)
        return {k: rebuild(v, backend) for k, v in value.items()}
    if isinstance(value, list):
        return [rebuild(v, backend) for v in value]
    if isinstance(value, str) and _HEX.fullmatch(value):
        return int(value, 16)
    return value


class ReplayData:
    """Stands in for Hypothesis's ``st.data()``: each draw returns what the report recorded
    under the same label."""

    def __init__(self, draws: Mapping[str, Any]) -> None:
        self._draws = draws
        self._count = 0

    def draw(self, strategy: object, label: object = None) -> Any:
        self._count += 1
        key = str(label) if label is not None else f"draw_{self._count}"
        if key not in self._draws:
            raise ReproError(f"the report recorded no draw labelled {key!r}")
        return self._draws[key]


def _import_body(body: str) -> Callable[..., Any]:
    module_name, _, name = body.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in name.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ReproError(f"cannot import the check body {body}: {exc}") from None
    if not callable(target):
        raise ReproError(f"the check body {body} is not a function")
    return target  # type: ignore[no-any-return]


def _arguments(
    function: Callable[..., Any], backend: Backend, subject: object, values: dict[str, Any]
) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    parameters = inspect.signature(function).parameters
    for name in parameters:
        if name == "backend":
            arguments[name] = backend
        elif name == "subject":
            arguments[name] = subject
        elif name in values:
            arguments[name] = values.pop(name)
    if "data" in parameters:
        arguments["data"] = ReplayData(values)
    return arguments


def run_check(
    *,
    body: str,
    backend: str,
    subject: str | None,
    example: Mapping[str, Any],
    reported: str | None = None,
) -> int:
    """Run one check on one example and print what happened; return 1 if it failed, 0 if it
    passed, 2 if it could not run here. It runs in the backend's scope, as the check did (on
    an upper-half backend the rebuilt allocations get presented addresses)."""
    found = load_backends().get(backend)
    if found is None:
        print(f"ptrport repro: this machine has no backend named {backend!r}")
        return 2
    if not found.is_available():
        print(f"ptrport repro: backend {backend} is not available: {found.unavailable_reason}")
        return 2
    with found.running():
        return _replay(found, body=body, subject=subject, example=example, reported=reported)


def _replay(
    found: Backend,
    *,
    body: str,
    subject: str | None,
    example: Mapping[str, Any],
    reported: str | None,
) -> int:
    backend = found.name
    try:
        subjects = builtin_subjects() | catalogue()
        if subject is not None and subject not in subjects:
            raise ReproError(f"unknown subject {subject!r}")
        function = _import_body(body)
        values = rebuild(dict(example), found)
        arguments = _arguments(
            function, found, subjects[subject] if subject else None, dict(values)
        )
    except HarnessError as exc:
        print(f"ptrport repro: {exc}")
        return 2
    print(f"ptrport repro: {body} for {subject or '(no subject)'} on {backend}")
    print("example, as reported:")
    print(pprint.pformat(dict(example), width=96, sort_dicts=False))
    print("example, as rebuilt here (real allocations get new addresses):")
    print(pprint.pformat(describe_example(values), width=96, sort_dicts=False))
    try:
        function(**arguments)
    except Exception as exc:
        traceback.print_exc()
        message = exception_message(exc)
        print(f"FAILED: {message}")
        if reported is not None:
            same = reported.startswith(message)
            print("the same failure as reported" if same else f"reported was: {reported}")
        return 1
    print("passed: the failure did not reproduce here")
    return 0


def _comment(text: str) -> str:
    return " ".join(str(text).split())


def script(result: Result, report: PlatformReport) -> str:
    """The text of a standalone script that reproduces ``result``."""
    if result.example is None or result.body is None:
        raise ReproError(
            f"{report.path}: {result.check} for {result.subject} on {result.backend} has no "
            "recorded example to reproduce"
        )
    versions = ", ".join(f"{k} {v}" for k, v in report.versions().items())
    example = pprint.pformat(result.example, width=92, sort_dicts=False)
    return f"""#!/usr/bin/env python3
# Reproduces a ptrport failure. Run it with: python <this file>
# It needs only the installed harness (ptrport) and torch.
#
# platform  {_comment(report.platform_id)} ({_comment(versions)})
# check     {_comment(result.check)}
# subject   {_comment(result.subject or "(none)")} on backend {_comment(result.backend)}
# reported  {_comment(result.outcome.value)}: {_comment(result.message or "")}

import sys

from harness.repro import run_check

EXAMPLE = {example}

if __name__ == "__main__":
    sys.exit(
        run_check(
            body={result.body!r},
            backend={result.backend!r},
            subject={result.subject!r},
            example=EXAMPLE,
            reported={result.message!r},
        )
    )
"""


def failures(report: PlatformReport) -> list[Result]:
    """The results a repro can be written for."""
    return [r for r in report.results if r.outcome in REPRODUCIBLE and r.example is not None]


def select(
    report: PlatformReport, *, check: str, subject: str | None = None, backend: str | None = None
) -> Result:
    """The one failure of ``check`` (narrowed by subject and backend) in ``report``."""
    found = [
        r
        for r in failures(report)
        if r.check == check
        and (subject is None or r.subject == subject)
        and (backend is None or r.backend == backend)
    ]
    if not found:
        raise ReproError(f"{report.path}: no failure with an example for check {check!r}")
    if len(found) > 1:
        choices = ", ".join(f"{r.subject} on {r.backend}" for r in found)
        raise ReproError(
            f"{report.path}: check {check!r} failed for {choices}; name one with --subject "
            "and --backend"
        )
    return found[0]


def file_name(result: Result) -> str:
    parts = [result.check.replace("::", "-"), result.subject or "", result.backend]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(p for p in parts if p)) + ".py"


def write_scripts(report: PlatformReport, directory: Path) -> Sequence[Path]:
    """One script per failure under ``directory``; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for result in failures(report):
        path = directory / file_name(result)
        path.write_text(script(result, report))
        written.append(path)
    return written
