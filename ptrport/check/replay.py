"""Replay: one check run again on the example a report recorded for it, as a repro script
(:mod:`ptrport.report.repro`) does.

Real allocations are made again with the same dtype, size, offset and contents (a placed one at
the address it was placed at), and synthetic addresses are used as reported.
"""

from __future__ import annotations

import inspect
import pprint
import re
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from ptrport import named
from ptrport.check.batches import batch_from_record, entry_from_record
from ptrport.check.controls import catalogue
from ptrport.check.subjects import builtin_subjects
from ptrport.check.user_subjects import select_subjects
from ptrport.device.allocations import allocation_from_record
from ptrport.device.backends import Backend, load_backends
from ptrport.errors import HarnessError, exception_message
from ptrport.report.records import describe_example
from ptrport.report.repro import ReproError

_HEX = re.compile(r"0x[0-9a-f]{16}")


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
    try:
        target = named.load(body, "check body")
    except named.LoadError as exc:
        raise ReproError(str(exc)) from None
    if not callable(target):
        raise ReproError(f"the check body {body!r} is not a function")
    return target


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
    subject_spec: str | None = None,
) -> int:
    """Run one check on one example and print what happened; return 1 if it failed, 0 if it
    passed, 2 if it could not run here. It runs in the backend's scope, as the check did (on
    an upper-half backend the rebuilt allocations get presented addresses). A user's subject
    is loaded again from ``subject_spec``, what ``--subject`` named it by."""
    found = load_backends().get(backend)
    if found is None:
        print(f"ptrport repro: this machine has no backend named {backend!r}")
        return 2
    if not found.is_available():
        print(f"ptrport repro: backend {backend} is not available: {found.unavailable_reason}")
        return 2
    with found.running():
        return _replay(
            found,
            body=body,
            subject=subject,
            subject_spec=subject_spec,
            example=example,
            reported=reported,
        )


def _replay(
    found: Backend,
    *,
    body: str,
    subject: str | None,
    subject_spec: str | None,
    example: Mapping[str, Any],
    reported: str | None,
) -> int:
    backend = found.name
    try:
        subjects = builtin_subjects() | catalogue()
        if subject is not None and subject not in subjects and subject_spec is not None:
            subjects |= select_subjects(subject_spec, subjects)
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
    print("example, as rebuilt here (real allocations get new addresses, placed ones theirs):")
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
