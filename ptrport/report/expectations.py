"""Known failures: the checks expected to fail on some platforms, read from a TOML file
(``reports/expectations.toml``) so that a diff reports them as known instead of as regressions.

```toml
[[known]]
check = "table_round_trip::test_an_entry_reads_back_bit_exact"   # required
subjects = ["uint64/torch"]      # optional: only these subjects
backends = ["xpu"]               # optional: only on these backends
platforms = ["intel-max-1550"]   # optional: only on these platform ids
reason = "uint64 copy_ is not implemented on XPU in torch 2.5"   # required
issue = "https://github.com/pytorch/pytorch/issues/12345"         # optional
```

Pure: a file in, values out; no pytest.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptrport.errors import HarnessError
from ptrport.report.platform_report import PlatformReport
from ptrport.report.records import Outcome, Result
from ptrport.report.schema import short

KEYS = ("check", "subjects", "backends", "platforms", "reason", "issue")
KNOWN_OUTCOMES = frozenset({Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMED_OUT})
"""What an expectation can excuse; an xpassed control means the harness went blind, and no
file entry may hide that."""

MATCHES_NO_RESULT = "matches no result"
NOW_PASSES = "its check now passes on every platform it names"


class ExpectationsError(HarnessError):
    """An expectations file that cannot be used: ``<path>: <problem>``, one line."""


@dataclass(frozen=True, kw_only=True)
class Expectation:
    """One ``[[known]]`` entry: a check that fails, where, and why. Empty filters mean any."""

    check: str
    subjects: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    reason: str
    issue: str | None = None
    index: int = 0
    """Position in the file, as in ``known[index]``."""

    def names(self, platform_id: str, result: Result) -> bool:
        """Whether ``result`` on ``platform_id`` is within this entry's check and filters,
        whatever its outcome."""
        return (
            result.check == self.check
            and (not self.subjects or result.subject in self.subjects)
            and (not self.backends or result.backend in self.backends)
            and (not self.platforms or platform_id in self.platforms)
        )

    def matches(self, platform_id: str, result: Result) -> bool:
        """Whether this entry excuses ``result``: it names it and the result is a failure,
        an error or a crash."""
        return result.outcome in KNOWN_OUTCOMES and self.names(platform_id, result)


@dataclass(frozen=True)
class Expectations:
    """The entries of one expectations file, in file order; ``path`` is None for no file."""

    path: Path | None
    entries: tuple[Expectation, ...]

    @classmethod
    def none(cls) -> Expectations:
        """No known failures: what a diff uses when there is no expectations file."""
        return cls(path=None, entries=())

    def find(self, platform_id: str, result: Result) -> Expectation | None:
        """The first entry that excuses ``result`` on ``platform_id``, if any."""
        return next((e for e in self.entries if e.matches(platform_id, result)), None)

    def check_known_checks(self, reports: Sequence[PlatformReport]) -> None:
        """Refuse the file when an entry names a check that no result of ``reports`` has (a
        typo, or a check since removed), naming the first such entry."""
        present = {r.check for report in reports for r in report.results}
        unknown = [e for e in self.entries if e.check not in present]
        if not unknown:
            return
        first = unknown[0]
        close = difflib.get_close_matches(first.check, sorted(present), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        more = f" (and {len(unknown) - 1} more unknown checks)" if len(unknown) > 1 else ""
        raise ExpectationsError(
            f"{self.path}: known[{first.index}]: check {first.check!r} is in none of the "
            f"reports{hint}{more}"
        )

    def stale(self, reports: Sequence[PlatformReport]) -> list[tuple[Expectation, str]]:
        """Entries to remove, each with why: it names no result at all, or every result it
        names ran and none is bad. Results that did not run (skipped, unavailable) prove
        nothing, so an entry naming one of them is kept, and so is an entry :meth:`unchecked`
        by these reports."""
        unchecked = self.unchecked(reports)
        found = []
        for entry in self.entries:
            if entry in unchecked:
                continue
            named = [r for report in reports for r in _named(entry, report)]
            if not named:
                found.append((entry, MATCHES_NO_RESULT))
            elif all(r.outcome.executed and not r.outcome.bad for r in named):
                found.append((entry, NOW_PASSES))
        return found

    def unchecked(self, reports: Sequence[PlatformReport]) -> list[Expectation]:
        """Entries limited to platforms none of ``reports`` is from: a local matrix of some
        kinds, or a night a machine was away, cannot tell whether they still hold (or a
        platform id in them is a typo)."""
        present = {report.platform_id for report in reports}
        return [e for e in self.entries if e.platforms and not present & set(e.platforms)]


def _named(entry: Expectation, report: PlatformReport) -> Iterator[Result]:
    return (r for r in report.results if entry.names(report.platform_id, r))


def load_expectations(path: Path) -> Expectations:
    """Read and validate an expectations file; any problem is an :class:`ExpectationsError`
    naming the file, the entry and the key."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ExpectationsError(f"{path}: cannot read it: {exc}") from None
    try:
        document = tomllib.loads(text)
    except RecursionError:
        # tomllib parses nested arrays and inline tables by recursion.
        raise ExpectationsError(f"{path}: not valid TOML (nested too deeply)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ExpectationsError(f"{path}: not valid TOML ({_one_line(exc)})") from None
    except ValueError:
        # int() refuses a decimal integer of more digits than sys.get_int_max_str_digits().
        raise ExpectationsError(f"{path}: not valid TOML (an integer too long to read)") from None
    for key in document:
        if key != "known":
            raise ExpectationsError(
                f"{path}: unknown top-level key {short(key)}; the file holds only [[known]] entries"
            )
    known = document.get("known", [])
    if not isinstance(known, list) or not all(isinstance(t, dict) for t in known):
        raise ExpectationsError(f"{path}: 'known' must be an array of tables, [[known]]")
    return Expectations(
        path=path, entries=tuple(_entry(path, i, table) for i, table in enumerate(known))
    )


def _entry(path: Path, index: int, table: dict[str, Any]) -> Expectation:
    where = f"{path}: known[{index}]"
    for key in table:
        if key not in KEYS:
            raise ExpectationsError(
                f"{where}: unknown key {short(key)}; the keys are {', '.join(KEYS)}"
            )
    for key in ("check", "reason"):
        if key not in table:
            raise ExpectationsError(f"{where}: {key!r} is required")
        if not isinstance(table[key], str) or not table[key].strip():
            raise ExpectationsError(f"{where}.{key} must be a non-empty string")
    issue = table.get("issue")
    if issue is not None and not _is_url(issue):
        raise ExpectationsError(
            f"{where}.issue must be an http:// or https:// URL without spaces, not {short(issue)}"
        )
    return Expectation(
        check=table["check"],
        reason=table["reason"],
        subjects=_names(where, table, "subjects"),
        backends=_names(where, table, "backends"),
        platforms=_names(where, table, "platforms"),
        issue=issue,
        index=index,
    )


def _names(where: str, table: dict[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ExpectationsError(f"{where}.{key} must be a list of strings")
    if key in table and not value:
        # An empty list reads as "nowhere" but would mean "everywhere": make the author say so.
        raise ExpectationsError(f"{where}.{key} is empty; leave it out to mean any")
    return tuple(value)


def _is_url(value: object) -> bool:
    return (
        isinstance(value, str)
        and value.startswith(("http://", "https://"))
        and not any(c.isspace() for c in value)
    )


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
