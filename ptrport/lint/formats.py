"""A lint run as text (one finding per site, then a summary), as JSON, as SARIF 2.1.0 for
GitHub code scanning, or as GitHub workflow annotations. Against a baseline, a run's findings
are the new ones; the summary counts the known ones and lists the stale entries."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ptrport import __version__
from ptrport.lint.baseline import Comparison
from ptrport.lint.checker import LintRun
from ptrport.lint.rules import RULES, Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def summary(run: LintRun, comparison: Comparison | None = None) -> str:
    """One line: how many findings (new ones, against a baseline) of which rules, in how many
    of the files read."""
    reported = run.reported
    files = "file" if run.files == 1 else "files"
    new = "new " if comparison is not None else ""
    if reported:
        counts = Counter(finding.rule for finding in reported)
        rules = ", ".join(f"{rule} {count}" for rule, count in sorted(counts.items()))
        paths = len({finding.path for finding in reported})
        noun = "finding" if len(reported) == 1 else "findings"
        line = f"{len(reported)} {new}{noun} ({rules}) in {paths} of {run.files} {files}"
    else:
        line = f"no {new}findings in {run.files} {files}"
    if comparison is not None:
        line += f"; {comparison.known} in the baseline {comparison.baseline.file}"
        if comparison.stale:
            line += f", {len(comparison.stale)} of its entries no longer found"
    if run.accepted:
        line += f"; {len(run.accepted)} accepted by ignore comments"
    if run.unparsed:
        line += f"; {len(run.unparsed)} not checked"
    return f"ptrport lint: {line}"


@dataclass(frozen=True)
class Note:
    """A line of a run that is no finding: a file or statement not checked, an unknown rule in
    an ignore comment, a stale baseline entry."""

    level: str
    """As a GitHub annotation: warning or notice."""
    kind: str
    path: str
    line: int
    column: int | None
    text: str

    def location(self) -> str:
        column = f":{self.column}" if self.column is not None else ""
        return f"{self.path}:{self.line}{column}"


def notes(run: LintRun, comparison: Comparison | None) -> list[Note]:
    """What a run says besides its findings, in the order the text lists it."""
    found = [
        Note("warning", "not checked", u.path, u.line, u.column, f"not checked: {u.reason}")
        for u in run.unparsed
    ]
    found.extend(
        Note(
            "warning",
            "unknown rule",
            path,
            line,
            None,
            f"unknown rule {rule!r} in a ptrport: ignore comment",
        )
        for path, line, rule in run.unknown_rules
    )
    if comparison is not None:
        directory = comparison.baseline.directory
        for entry in comparison.stale:
            where = Path(os.path.relpath(directory / entry.path)).as_posix()
            text = f"no longer found, stale in the baseline: {entry.rule} {entry.message}"
            found.append(Note("notice", "stale baseline entry", where, entry.line, None, text))
    return found


def text(run: LintRun, comparison: Comparison | None = None) -> str:
    lines: list[str] = []
    for finding in run.reported:
        lines.append(f"{finding.location()}: {finding.rule} {finding.message}")
        lines.append(f"    fix: {finding.fix}")
    lines.extend(f"{note.location()}: {note.text}" for note in notes(run, comparison))
    lines.append(summary(run, comparison))
    return "\n".join(lines) + "\n"


def as_json(run: LintRun, comparison: Comparison | None = None) -> str:
    document = {
        "tool": "ptrport lint",
        "version": __version__,
        "files": run.files,
        "findings": [asdict(finding) for finding in run.findings],
        "unparsed": [
            {"path": u.path, "line": u.line, "column": u.column, "reason": u.reason}
            for u in run.unparsed
        ],
        "summary": summary(run, comparison),
    }
    if comparison is not None:
        document["baseline"] = {
            "file": str(comparison.baseline.file),
            "known": comparison.known,
            "stale": [asdict(entry) for entry in comparison.stale],
        }
    return json.dumps(document, indent=2) + "\n"


def _rule_json(rule_id: str) -> dict[str, Any]:
    rule = RULES[rule_id]
    return {
        "id": rule.id,
        "name": "".join(part.capitalize() for part in rule.id.split("-")),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary}. {rule.why}"},
        "help": {"text": rule.why},
        "defaultConfiguration": {"level": "error"},
    }


def _artifact(path: str) -> dict[str, str]:
    """A relative path is relative to the source root (GitHub's repository root); an absolute
    one below the working directory is made relative to it, any other is a file URI."""
    where = Path(path)
    if where.is_absolute():
        try:
            where = where.relative_to(Path.cwd())
        except ValueError:
            return {"uri": where.as_uri()}
    return {"uri": quote(where.as_posix()), "uriBaseId": "%SRCROOT%"}


def _location(path: str, **region: int) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": _artifact(path), "region": region}}


def _result_json(finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": index[finding.rule],
        "level": "error",
        "message": {"text": f"{finding.message}. Fix: {finding.fix}."},
        "locations": [
            _location(
                finding.path,
                startLine=finding.line,
                startColumn=finding.column,
                endLine=finding.end_line,
                endColumn=finding.end_column,
            )
        ],
    }
    if finding.suppressed is not None:
        result["suppressions"] = [{"kind": "inSource", "justification": finding.suppressed}]
    return result


def sarif(run: LintRun) -> str:
    """SARIF 2.1.0: one run, every rule described, paths relative to the working directory
    (GitHub resolves them against the repository root)."""
    index = {rule_id: number for number, rule_id in enumerate(RULES)}
    notifications = [
        {
            "level": "warning",
            "message": {"text": f"not checked: {u.reason}"},
            "locations": [
                _location(u.path, startLine=max(u.line, 1), startColumn=max(u.column, 1))
            ],
        }
        for u in run.unparsed
    ]
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ptrport",
                        "version": __version__,
                        "rules": [_rule_json(rule_id) for rule_id in RULES],
                    }
                },
                "invocations": [
                    {"executionSuccessful": True, "toolExecutionNotifications": notifications}
                ],
                "columnKind": "unicodeCodePoints",
                "results": [_result_json(finding, index) for finding in run.findings],
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def escaped_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit escapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escaped_property(text: str) -> str:
    """A workflow command's property value: its message's escapes, and ``:`` and ``,``."""
    return escaped_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(level: str, title: str, path: str, message: str, **position: int) -> str:
    """``::level title=..,file=..,line=..::message``: ``file`` absolute, as ruff writes it
    (the runner makes it relative to the repository)."""
    properties = {"title": title, "file": os.path.abspath(path)}
    properties.update((name, str(value)) for name, value in position.items())
    joined = ",".join(f"{name}={escaped_property(value)}" for name, value in properties.items())
    return f"::{level} {joined}::{escaped_data(message)}"


def github(run: LintRun, comparison: Comparison | None = None) -> str:
    """GitHub workflow annotations: an error per finding, a warning or notice per note; then
    the summary."""
    lines = [
        _annotation(
            "error",
            f"ptrport ({finding.rule})",
            finding.path,
            f"{finding.location()}: {finding.rule} {finding.message}\n  fix: {finding.fix}",
            line=finding.line,
            col=finding.column,
            endLine=finding.end_line,
            endColumn=finding.end_column,
        )
        for finding in run.reported
    ]
    for note in notes(run, comparison):
        column = {"col": note.column} if note.column is not None else {}
        message = f"{note.location()}: {note.text}"
        title = f"ptrport ({note.kind})"
        lines.append(_annotation(note.level, title, note.path, message, line=note.line, **column))
    lines.append(summary(run, comparison))
    return "\n".join(lines) + "\n"


def render(run: LintRun, format: str, comparison: Comparison | None = None) -> str:
    """``run`` in ``format`` (one of :data:`ptrport.lint.FORMATS`); SARIF leaves the baseline
    out (its results are the new findings)."""
    if format == "json":
        return as_json(run, comparison)
    if format == "sarif":
        return sarif(run)
    if format == "github":
        return github(run, comparison)
    return text(run, comparison)
