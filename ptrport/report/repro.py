"""Repro scripts: one standalone Python file per failure that rebuilds the minimal failing
example from a report and runs the failing check again on the same backend.

A script needs only the installed harness and torch. It calls
:func:`ptrport.check.replay.run_check` with the check's body (``module:function``, recorded in the
report), the subject, the backend and the example. Writing scripts is pure: it reads a report
where torch is not installed.
"""

from __future__ import annotations

import pprint
import re
from collections.abc import Sequence
from pathlib import Path

from ptrport.errors import HarnessError
from ptrport.report.platform_report import PlatformReport
from ptrport.report.records import Outcome, Result

REPRODUCIBLE = (Outcome.FAILED, Outcome.XFAILED, Outcome.ERROR, Outcome.CRASHED)


class ReproError(HarnessError):
    """A repro that cannot be written or run, with a one-line reason."""


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

from ptrport.check.replay import run_check

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
