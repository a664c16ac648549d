"""``# ptrport: ignore[rule] reason``: a site the user has looked at and accepts."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

_IGNORE = re.compile(r"#\s*ptrport:\s*ignore\[([^\]]*)\]\s*(.*)$")


@dataclass(frozen=True)
class Ignore:
    line: int
    rules: frozenset[str]
    reason: str


def ignores(source: str) -> dict[int, Ignore]:
    """The ignore comments of a file, by line."""
    if "ptrport:" not in source:
        return {}
    found: dict[int, Ignore] = {}
    for number, line in enumerate(source.splitlines(), start=1):
        if "ptrport:" not in line:
            continue
        comment = _comment(line)
        match = _IGNORE.match(comment) if comment else None
        if match is None:
            continue
        rules = frozenset(rule.strip() for rule in match.group(1).split(",") if rule.strip())
        found[number] = Ignore(number, rules, match.group(2).strip())
    return found


def _comment(line: str) -> str | None:
    """The comment that ends ``line``, the line read on its own: a ``#`` in a string on it is
    no comment. (Tokenizing only the lines that mention ``ptrport:`` keeps large files fast.)"""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return token.string
    except (tokenize.TokenError, SyntaxError):
        return None
    return None
