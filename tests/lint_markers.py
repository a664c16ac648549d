"""The markers of labelled lint sources (``# expect: RULE``, ``# clean``), and how a lint run
compares with them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ptrport.lint.checker import LintRun

_EXPECT = re.compile(r"#\s*expect:\s*([\w\-, ]+?)\s*$")
_CLEAN = re.compile(r"#\s*clean\s*$")
_IGNORED = re.compile(r"#\s*ptrport:\s*ignore\[([^\]]*)\]")

Site = tuple[str, int, str]
"""(path, line, rule)."""


@dataclass
class Labels:
    expected: set[Site]
    ignored: set[Site]
    clean: set[tuple[str, int]]


def labels(files: list[Path]) -> Labels:
    found = Labels(set(), set(), set())
    for path in files:
        name = path.as_posix()
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if match := _EXPECT.search(text):
                found.expected.update((name, number, r.strip()) for r in match.group(1).split(","))
            elif _CLEAN.search(text):
                found.clean.add((name, number))
            elif match := _IGNORED.search(text):
                found.ignored.update((name, number, r.strip()) for r in match.group(1).split(","))
    return found


@dataclass
class Comparison:
    found: set[Site]
    accepted: set[Site]
    expected: Labels

    @property
    def missing(self) -> set[Site]:
        return self.expected.expected - self.found

    @property
    def unexpected(self) -> set[Site]:
        return self.found - self.expected.expected

    @property
    def true_positives(self) -> int:
        return len(self.found & self.expected.expected)

    @property
    def precision(self) -> float:
        return self.true_positives / len(self.found) if self.found else 1.0

    @property
    def recall(self) -> float:
        expected = self.expected.expected
        return self.true_positives / len(expected) if expected else 1.0


def compare(run: LintRun, expected: Labels) -> Comparison:
    found = {(f.path, f.line, f.rule) for f in run.reported}
    accepted = {(f.path, f.line, f.rule) for f in run.accepted}
    return Comparison(found, accepted, expected)


def describe(run: LintRun, sites: set[Site]) -> str:
    """The findings (or bare sites) of ``sites``, one per line, for an assertion message."""
    lines = []
    for path, line, rule in sorted(sites):
        messages = [
            f.message for f in run.findings if (f.path, f.line, f.rule) == (path, line, rule)
        ]
        lines.append(f"{path}:{line}: {rule} {messages[0] if messages else ''}".rstrip())
    return "\n".join(lines)
