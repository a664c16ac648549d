"""Repro scripts: one standalone Python file per failure that rebuilds the minimal failing
example from a report and runs the failing check again on the same backend; for a user's own
test, the pytest command that reruns it (node id, backend, Hypothesis profile and seed).

A script needs only the installed harness and torch. It calls
:func:`ptrport.check.replay.run_check` with the check's body (``module:function``, recorded in the
report), the subject, the backend and the example. Writing scripts is pure: it reads a report
where torch is not installed.
"""

from __future__ import annotations

import pprint
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from ptrport.errors import HarnessError
from ptrport.report.platform_report import PlatformReport
from ptrport.report.records import Outcome, Result

REPRODUCIBLE = (Outcome.FAILED, Outcome.XFAILED, Outcome.ERROR, Outcome.CRASHED)
_LISTED = 5
"""The most check ids a message lists where the check named is not among them."""


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
    specs = report.run.get("subject_specs") or {}
    spec = specs.get(result.subject) if result.subject is not None else None
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
            subject_spec={spec!r},
        )
    )
"""


def command(result: Result, report: PlatformReport) -> str:
    """The command that reruns a user's own test on the backend it failed on, with the
    Hypothesis profile and seed of the run that found it (so the same examples come), from the
    directory the run was started in, into the same platform's report (a partial run merges)."""
    if result.nodeid is None:
        raise ReproError(f"{report.path}: {result.check} on {result.backend} has no node id")
    found_by = result.from_run or report.run
    profile = str(found_by.get("hypothesis_profile") or "")
    seed = str(found_by.get("seed") or "")
    words = [
        "pytest",
        result.nodeid,
        f"--backend={result.backend}",
        f"--platform-name={report.platform_id}",
    ]
    if seed and seed not in ("derandomized", "none"):
        words.append(f"--hypothesis-seed={seed}")
    prefix = f"HYPOTHESIS_PROFILE={shlex.quote(profile)} " if profile and profile != "none" else ""
    return prefix + shlex.join(words)


def shell_script(result: Result, report: PlatformReport) -> str:
    """:func:`command` as a script, with what it reruns in its comments."""
    return f"""#!/bin/sh
# Reruns a failure of a test of yours on ptrport's {_comment(result.backend)} backend. Run it
# from the directory the run started in.
#
# platform  {_comment(report.platform_id)}
# test      {_comment(result.check)} on backend {_comment(result.backend)}
# reported  {_comment(result.outcome.value)}: {_comment(result.message or "")}
exec env {command(result, report)}
"""


def failures(report: PlatformReport) -> list[Result]:
    """The results a repro can be written for: a failure with a recorded example, or any
    failure of a user's own test (it reruns by node id)."""
    return [
        r
        for r in report.results
        if r.outcome in REPRODUCIBLE and (r.example is not None or r.own_test)
    ]


def select(
    report: PlatformReport, *, check: str, subject: str | None = None, backend: str | None = None
) -> Result:
    """The one failure of ``check`` (narrowed by subject and backend) in ``report``. ``check``
    is a check's id or its pytest node id, or a parametrized check's id without its parameters
    where the failures narrowed to are of one parameter id alone."""
    narrowed = [
        r
        for r in failures(report)
        if (subject is None or r.subject == subject) and (backend is None or r.backend == backend)
    ]
    found = [r for r in narrowed if check in (r.check, r.nodeid)]
    if not found and "[" not in check:
        found = [r for r in narrowed if r.check.partition("[")[0] == check]
        ids = list(dict.fromkeys(r.check for r in found))
        if len(ids) > 1:
            raise ReproError(
                f"{report.path}: {check!r} failed as {', '.join(ids)}; name one with --check"
            )
    if not found:
        ids = list(dict.fromkeys(r.check for r in narrowed))
        more = f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else ""
        there = f"; its failures: {', '.join(ids[:_LISTED])}{more}" if ids else ""
        raise ReproError(f"{report.path}: no failure with an example for check {check!r}{there}")
    if len(found) > 1:
        choices = ", ".join(f"{r.subject} on {r.backend}" for r in found)
        raise ReproError(
            f"{report.path}: check {found[0].check!r} failed for {choices}; name one with "
            "--subject and --backend"
        )
    return found[0]


def file_name(result: Result) -> str:
    parts = [result.check.replace("::", "-"), result.subject or "", result.backend]
    suffix = ".sh" if result.own_test else ".py"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(p for p in parts if p)) + suffix


def write_scripts(report: PlatformReport, directory: Path) -> Sequence[Path]:
    """One script per failure under ``directory`` (a shell script for a user's own test);
    return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for result in failures(report):
        path = directory / file_name(result)
        text = shell_script(result, report) if result.own_test else script(result, report)
        path.write_text(text)
        written.append(path)
    return written
