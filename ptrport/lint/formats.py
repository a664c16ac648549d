"""A lint run as text (one finding per site, then a summary), as JSON, or as SARIF 2.1.0 for
GitHub code scanning."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ptrport import __version__
from ptrport.lint.checker import LintRun
from ptrport.lint.rules import RULES, Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def summary(run: LintRun) -> str:
    """One line: how many findings of which rules, in how many of the files read."""
    reported = run.reported
    files = "file" if run.files == 1 else "files"
    if reported:
        counts = Counter(finding.rule for finding in reported)
        rules = ", ".join(f"{rule} {count}" for rule, count in sorted(counts.items()))
        paths = len({finding.path for finding in reported})
        noun = "finding" if len(reported) == 1 else "findings"
        line = f"{len(reported)} {noun} ({rules}) in {paths} of {run.files} {files}"
    else:
        line = f"no findings in {run.files} {files}"
    if run.accepted:
        line += f"; {len(run.accepted)} accepted by ignore comments"
    if run.unparsed:
        line += f"; {len(run.unparsed)} not checked"
    return f"ptrport lint: {line}"


def text(run: LintRun) -> str:
    lines: list[str] = []
    for finding in run.reported:
        lines.append(f"{finding.location()}: {finding.rule} {finding.message}")
        lines.append(f"    fix: {finding.fix}")
    for unparsed in run.unparsed:
        lines.append(
            f"{unparsed.path}:{unparsed.line}:{unparsed.column}: not checked: {unparsed.reason}"
        )
    for path, line, rule in run.unknown_rules:
        lines.append(f"{path}:{line}: unknown rule {rule!r} in a ptrport: ignore comment")
    lines.append(summary(run))
    return "\n".join(lines) + "\n"


def as_json(run: LintRun) -> str:
    document = {
        "tool": "ptrport lint",
        "version": __version__,
        "files": run.files,
        "findings": [asdict(finding) for finding in run.findings],
        "unparsed": [
            {"path": u.path, "line": u.line, "column": u.column, "reason": u.reason}
            for u in run.unparsed
        ],
        "summary": summary(run),
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


def render(run: LintRun, format: str) -> str:
    if format == "json":
        return as_json(run)
    if format == "sarif":
        return sarif(run)
    return text(run)
