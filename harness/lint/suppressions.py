"""``# ptrport: ignore[rule] reason``: a site the user has looked at and accepts."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
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
    for number, text in _comments(source):
        match = _IGNORE.match(text)
        if match is None:
            continue
        rules = frozenset(rule.strip() for rule in match.group(1).split(",") if rule.strip())
        found[number] = Ignore(number, rules, match.group(2).strip())
    return found


def _comments(source: str) -> Iterator[tuple[int, str]]:
    """Each comment and its line (the text of strings and docstrings is no comment)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string
    except (tokenize.TokenError, SyntaxError):
        return
