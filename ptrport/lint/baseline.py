"""A baseline: the findings a project accepts for now, written by ``--write-baseline``, so that a
run with ``--baseline`` fails only on new ones.

A finding matches an entry by rule, path (relative to the baseline's directory) and context: a
hash of the site's source, its lines, and the nearest line of code above them (its statement
before, or the header of its block), whitespace collapsed. Code moved within its file, and code
added around it, keep the entry; an edit of the site's lines or of that line above makes the
finding new. Identical sites are counted: a third where the baseline holds two is new. Entries
that nothing matches any more are stale."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ptrport.errors import HarnessError
from ptrport.lint.checker import LintRun
from ptrport.lint.rules import RULES, Finding

FORMAT = 1
"""The version of the baseline file's format, its ``ptrport-lint-baseline`` key."""
_CONTEXT_DIGITS = 16
_FIELDS = (
    ("rule", str, "a string"),
    ("path", str, "a string"),
    ("context", str, "a string"),
    ("line", int, "an integer"),
    ("message", str, "a string"),
)
"""Each key of an entry, its type, and the type as an error names it."""


@dataclass(frozen=True)
class Entry:
    rule: str
    path: str
    """POSIX, relative to the baseline's directory."""
    context: str
    line: int
    """Where it was when written: for the reader, not for matching."""
    message: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.rule, self.path, self.context)


@dataclass(frozen=True)
class Baseline:
    file: Path
    entries: list[Entry]

    @property
    def directory(self) -> Path:
        return Path(os.path.abspath(self.file)).parent

    def relative(self, path: str | Path) -> str:
        """``path`` (as the lint names a file) as the baseline names it."""
        absolute = os.path.abspath(path)
        try:
            return Path(os.path.relpath(absolute, self.directory)).as_posix()
        except ValueError:  # another drive
            return Path(absolute).as_posix()


@dataclass(frozen=True)
class Comparison:
    """A run against a baseline: the run of the new findings alone (with the accepted ones),
    how many findings the baseline holds, and its stale entries."""

    baseline: Baseline
    run: LintRun
    known: int
    stale: list[Entry]


def read_baseline(file: Path) -> Baseline:
    """The baseline in ``file``; a missing or malformed one is a :class:`HarnessError`."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessError(
            f"{file}: no such baseline (write one with --write-baseline {file})"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{file}: cannot read: {getattr(exc, 'strerror', exc)}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _malformed(file, f"not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(document, dict) or document.get("ptrport-lint-baseline") != FORMAT:
        raise _malformed(file, f'no "ptrport-lint-baseline": {FORMAT}')
    entries = document.get("findings")
    if not isinstance(entries, list):
        raise _malformed(file, "findings: expected a list")
    return Baseline(file, [_entry(file, index, item) for index, item in enumerate(entries)])


def _malformed(file: Path, reason: str) -> HarnessError:
    return HarnessError(f"{file}: malformed baseline: {reason}")


def _entry(file: Path, index: int, item: object) -> Entry:
    where = f"findings[{index}]"
    if not isinstance(item, dict):
        raise _malformed(file, f"{where}: expected an object")
    for key, kind, described in _FIELDS:
        value = item.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise _malformed(file, f"{where}.{key}: expected {described}")
    if item["rule"] not in RULES:
        raise _malformed(file, f"{where}.rule: unknown rule {item['rule']!r}")
    return Entry(item["rule"], item["path"], item["context"], item["line"], item["message"])


def write_baseline(file: Path, run: LintRun) -> int:
    """Every finding of ``run`` not accepted by a comment, as the baseline in ``file``; how many."""
    baseline = Baseline(file, [])
    entries = sorted(_entries(baseline, run.reported), key=lambda e: (e.path, e.line, e.key))
    document = {"ptrport-lint-baseline": FORMAT, "findings": [asdict(e) for e in entries]}
    try:
        file.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"{file}: cannot write: {exc.strerror}") from None
    return len(entries)


def compare(
    run: LintRun, baseline: Baseline, linted: Sequence[Path], rules: Iterable[str]
) -> Comparison:
    """``run`` less the findings ``baseline`` holds. An entry is stale where nothing matches
    it, its rule was reported, and its file was linted or is gone (a run of some files leaves
    the others' entries alone)."""
    remaining = Counter(entry.key for entry in baseline.entries)
    new: list[Finding] = []
    known = 0
    for finding, entry in zip(run.findings, _entries(baseline, run.findings), strict=True):
        if finding.suppressed is None and remaining[entry.key] > 0:
            remaining[entry.key] -= 1
            known += 1
        else:
            new.append(finding)
    linted_paths = {baseline.relative(path) for path in linted}
    reported = set(rules)
    stale: list[Entry] = []
    for entry in baseline.entries:
        if remaining[entry.key] == 0 or entry.rule not in reported:
            continue
        if entry.path in linted_paths or not (baseline.directory / entry.path).exists():
            remaining[entry.key] -= 1
            stale.append(entry)
    return Comparison(baseline, replace(run, findings=new), known, stale)


def _entries(baseline: Baseline, findings: Iterable[Finding]) -> list[Entry]:
    sources: dict[str, list[str]] = {}
    entries: list[Entry] = []
    for finding in findings:
        if finding.path not in sources:
            sources[finding.path] = _lines(finding.path)
        context = _context(finding, sources[finding.path])
        path = baseline.relative(finding.path)
        entries.append(Entry(finding.rule, path, context, finding.line, finding.message))
    return entries


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _context(finding: Finding, lines: list[str]) -> str:
    """The hash that, with rule and path, matches ``finding`` with its entry."""
    first, last = finding.line - 1, finding.end_line - 1
    site = lines[first : last + 1]
    if site:
        site[-1] = site[-1][: finding.end_column - 1]
        site[0] = site[0][finding.column - 1 :]
    above = next((line for line in reversed(lines[:first]) if _is_code(line)), "")
    parts = [finding.rule, *site, "", *lines[first : last + 1], "", above]
    text = "\n".join(" ".join(part.split()) for part in parts)
    import hashlib  # Here: OpenSSL's loading is slow, and a run without a baseline needs none.

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_CONTEXT_DIGITS]


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")
