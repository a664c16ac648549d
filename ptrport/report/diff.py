"""Regressions: what got worse on each platform between a baseline and the current reports,
and the Markdown summary a CI job shows for it.

A regression is a result that passed (or, for a control, xfailed) in the baseline and is bad
now, unless an expectation names it as a known failure; a platform whose executed results
dropped by more than ``coverage_drop``; or a platform that has no current report at all. An
operation probe (the ``uint64_operations`` scenario) regresses when its verdict gets worse
(works, then raises, then wrong) and is fixed when it gets better; a probe that raised ran.

A **performance regression** is a benchmark (``ptrport bench``, the reports' ``benchmarks``
section) whose ratio to its baseline copy fell by more than ``perf_drop`` (default 20%) from the
baseline report's, for the same measurement, backend and size. Ratios, not absolute speeds, are
compared, so a busier or faster machine moves both sides alike; but not across device models
(ratios from other hardware are no baseline: Triton's interpreter against a memory-bound copy
moves with the CPU), where the diff says they were not compared. Performance regressions are
listed in a section of their own, apart from the correctness ones, and count as regressions:
``ptrport report diff`` exits 1 for them too.

A diff may be asked to **compare only some platforms** (``report diff --platform cpu``): a CI
machine that runs one platform kind diffs against a baseline of several, and the others are left
out, neither missing nor compared. A platform so named must be on both sides, else nothing would
be compared and the diff is refused (:class:`PlatformNotCompared`).

Pure: reports in, values and text out; no pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ptrport.errors import HarnessError
from ptrport.report import op_support
from ptrport.report.defaults import PERF_DROP
from ptrport.report.expectations import Expectation, Expectations
from ptrport.report.markup import markdown_issue, markdown_text
from ptrport.report.measurements import Measurement, measurements_of
from ptrport.report.platform_report import PlatformReport, by_platform
from ptrport.report.records import Outcome, Result

GOOD = frozenset({Outcome.PASSED, Outcome.XFAILED})
"""Outcomes a later bad result is a regression from."""
LIST_LIMIT = 20
"""Appeared and disappeared results are listed one by one only up to this many."""
DEVICE = "device"
"""The name of the device model among a report's versions (:meth:`PlatformReport.versions`)."""

Key = tuple[str, str | None, str]


class PlatformNotCompared(HarnessError):
    """A platform the diff was told to compare is missing from the baseline or from the
    current reports."""


@dataclass(frozen=True)
class Change:
    """One result whose outcome changed between the baseline and now."""

    was: Result
    now: Result


@dataclass(frozen=True)
class PerfRegression:
    """A benchmark whose ratio to its baseline copy fell too far."""

    was: Measurement
    now: Measurement

    @property
    def drop(self) -> float:
        """The fraction of the baseline's ratio lost: 0.3 for 1.0 -> 0.7."""
        return 1 - self.now.ratio / self.was.ratio


@dataclass(frozen=True, kw_only=True)
class PlatformDiff:
    """One platform present in both the baseline and the current reports."""

    platform_id: str
    versions_changed: dict[str, tuple[str | None, str | None]]
    """Name -> (baseline, current), None where the version is absent on that side."""
    new_failures: tuple[Change, ...]
    """Good before, bad now, and no expectation excuses it."""
    known: tuple[tuple[Change, Expectation], ...]
    """Good before, bad now, excused by the expectation beside it."""
    fixed: tuple[Change, ...]
    disappeared: tuple[Result, ...]
    """In the baseline only, as they were there."""
    appeared: tuple[Result, ...]
    """In the current report only."""
    executed_before: int
    executed_after: int
    coverage_lost: bool
    incomplete: bool
    """The current report is from a run that did not finish."""
    perf_regressions: tuple[PerfRegression, ...] = ()
    """Benchmarks whose ratio fell by more than the diff's ``perf_drop``."""
    benchmarks_compared: int = 0
    """Benchmarks measured in both reports (same name, backend and size)."""
    benchmarks_not_compared: str | None = None
    """Why benchmarks that both reports measured were not compared, if they were not."""

    @property
    def regressions(self) -> int:
        return len(self.new_failures) + int(self.coverage_lost) + len(self.perf_regressions)


@dataclass(frozen=True, kw_only=True)
class Diff:
    platforms: tuple[PlatformDiff, ...]
    """Platforms in both, in the order of the current reports."""
    missing: tuple[PlatformReport, ...]
    """Baseline reports of platforms that have no current report: all their coverage is gone."""
    new: tuple[PlatformReport, ...]
    """Current reports of platforms the baseline does not have; not a regression."""
    stale: tuple[tuple[Expectation, str], ...]
    """Expectations to remove, with why (see :meth:`Expectations.stale`)."""
    unchecked: tuple[Expectation, ...] = ()
    """Expectations only for platforms with no current report (:meth:`Expectations.unchecked`)."""
    coverage_drop: float
    perf_drop: float = PERF_DROP
    left_out: tuple[str, ...] = ()
    """Platforms of either side that the diff was not told to compare; not a regression."""

    @property
    def regressions(self) -> int:
        return sum(p.regressions for p in self.platforms) + len(self.missing)

    @property
    def perf_regressions(self) -> tuple[tuple[str, PerfRegression], ...]:
        """``(platform id, regression)`` for every platform, in the platforms' order."""
        return tuple((p.platform_id, r) for p in self.platforms for r in p.perf_regressions)

    @property
    def regressed(self) -> bool:
        return self.regressions > 0


def diff_reports(
    baseline: Sequence[PlatformReport],
    current: Sequence[PlatformReport],
    *,
    expectations: Expectations,
    coverage_drop: float = 0.05,
    perf_drop: float = PERF_DROP,
    only: Sequence[str] = (),
) -> Diff:
    """Compare ``current`` with ``baseline``, platform by platform (paired by platform id).

    ``coverage_drop`` is the fraction of executed results a platform may lose before that
    counts as a regression: 0.05 lets 100 executed results become 95, not 94. ``perf_drop`` is
    the fraction of a benchmark's ratio it may lose: 0.2 lets 1.0 become 0.8, not 0.79.
    ``only``, when given, names the platforms compared; the others of both sides are left out,
    and a named one missing from either side raises :class:`PlatformNotCompared`. Platform ids
    must be unique within each side, as :func:`ptrport.report.platform_report.load_reports`
    gives them.
    """
    if not 0 <= coverage_drop < 1:
        raise ValueError(f"coverage_drop={coverage_drop!r} must be in [0, 1)")
    if not 0 <= perf_drop < 1:
        raise ValueError(f"perf_drop={perf_drop!r} must be in [0, 1)")
    before = by_platform(baseline)
    after = by_platform(current)
    left_out: tuple[str, ...] = ()
    if only:
        _require_both_sides(only, before, after)
        named = set(only)
        left_out = tuple(p for p in dict.fromkeys([*before, *after]) if p not in named)
        before = {p: r for p, r in before.items() if p in named}
        after = {p: r for p, r in after.items() if p in named}
        current = list(after.values())
    return Diff(
        platforms=tuple(
            _platform_diff(before[p], report, expectations, coverage_drop, perf_drop)
            for p, report in after.items()
            if p in before
        ),
        missing=tuple(r for p, r in before.items() if p not in after),
        new=tuple(r for p, r in after.items() if p not in before),
        stale=tuple(expectations.stale(current)),
        unchecked=tuple(expectations.unchecked(current)),
        coverage_drop=coverage_drop,
        perf_drop=perf_drop,
        left_out=left_out,
    )


def _require_both_sides(
    names: Sequence[str], before: dict[str, PlatformReport], after: dict[str, PlatformReport]
) -> None:
    for name in names:
        if name not in before:
            raise PlatformNotCompared(
                f"platform {name!r} is not in the baseline (its platforms: {', '.join(before)})"
            )
        if name not in after:
            raise PlatformNotCompared(
                f"platform {name!r} has no current report (the current ones: "
                f"{', '.join(after)}); run it with --platform-name={name}"
            )


def _platform_diff(
    baseline: PlatformReport,
    current: PlatformReport,
    expectations: Expectations,
    coverage_drop: float,
    perf_drop: float,
) -> PlatformDiff:
    was: dict[Key, Result] = {r.key: r for r in baseline.results}
    now: dict[Key, Result] = {r.key: r for r in current.results}
    changes = [Change(was[k], r) for k, r in now.items() if k in was]
    worse = [c for c in changes if _worse(c)]
    excused = [(c, expectations.find(current.platform_id, c.now)) for c in worse]
    before = sum(_ran(r) for r in baseline.results)
    after = sum(_ran(r) for r in current.results)
    versions_changed = _versions_changed(baseline.versions(), current.versions())
    benchmarks = _benchmarks(baseline, current)
    not_compared = None
    if benchmarks and DEVICE in versions_changed:
        # A ratio measured on other hardware is no baseline: the Triton interpreter's against
        # a memory-bound copy, say, moves with the CPU's speed. A torch upgrade on the same
        # device is compared: that is a regression users want to see.
        not_compared = f"{len(benchmarks)} measured on another device, not compared"
        benchmarks = []
    return PlatformDiff(
        platform_id=current.platform_id,
        versions_changed=versions_changed,
        new_failures=tuple(c for c, e in excused if e is None),
        known=tuple((c, e) for c, e in excused if e is not None),
        fixed=tuple(c for c in changes if _better(c)),
        disappeared=tuple(r for k, r in was.items() if k not in now),
        appeared=tuple(r for k, r in now.items() if k not in was),
        executed_before=before,
        executed_after=after,
        coverage_lost=after < before * (1 - coverage_drop),
        incomplete=not current.complete,
        perf_regressions=tuple(
            PerfRegression(was, now)
            for was, now in benchmarks
            if was.ratio > 0 and now.ratio < was.ratio * (1 - perf_drop)
        ),
        benchmarks_compared=len(benchmarks),
        benchmarks_not_compared=not_compared,
    )


def _benchmarks(
    baseline: PlatformReport, current: PlatformReport
) -> list[tuple[Measurement, Measurement]]:
    """The benchmarks both reports measured, as ``(baseline, current)``, in the current
    report's order."""
    was = {m.key: m for m in measurements_of(baseline)}
    return [(was[m.key], m) for m in measurements_of(current) if m.key in was]


def _verdicts(
    change: Change,
) -> tuple[op_support.OperationVerdict, op_support.OperationVerdict] | None:
    was, now = op_support.verdict_of(change.was), op_support.verdict_of(change.now)
    return None if was is None or now is None else (was, now)


def _worse(change: Change) -> bool:
    verdicts = _verdicts(change)
    if verdicts is not None:
        return verdicts[1].rank < verdicts[0].rank
    return change.was.outcome in GOOD and change.now.outcome.bad


def _better(change: Change) -> bool:
    verdicts = _verdicts(change)
    if verdicts is not None:
        return verdicts[1].rank > verdicts[0].rank
    return change.was.outcome.bad and change.now.outcome in GOOD


def _ran(result: Result) -> bool:
    """Whether a result counts as executed: it ran, or it probed an operation that raised."""
    return (
        result.outcome.executed
        or op_support.verdict_of(result) is op_support.OperationVerdict.RAISES
    )


def _versions_changed(
    before: dict[str, str], after: dict[str, str]
) -> dict[str, tuple[str | None, str | None]]:
    names = dict.fromkeys([*before, *after])
    return {n: (before.get(n), after.get(n)) for n in names if before.get(n) != after.get(n)}


def to_markdown(diff: Diff) -> str:
    """The diff as a GitHub job summary: the verdict first, then each platform's changes,
    then missing and new platforms, stale expectations and those not checked. Text from
    reports and from the expectations file is escaped."""
    lines = [f"## ptrport diff: {_verdict(diff.regressions)}", "", _summary(diff), ""]
    if diff.left_out:
        names = ", ".join(markdown_text(p) for p in diff.left_out)
        lines += [f"Not compared (only the platforms named were): {names}.", ""]
    for platform in diff.platforms:
        lines += _platform_section(platform, diff.coverage_drop)
    if diff.perf_regressions:
        lines += _perf_section(diff)
    if diff.missing:
        lines += ["### Missing platforms", "", "In the baseline, with no current report:", ""]
        lines += _table(
            ["platform", "executed in the baseline"],
            [[markdown_text(r.platform_id), str(_executed(r))] for r in diff.missing],
        )
    if diff.new:
        lines += ["### New platforms", "", "No baseline to compare with:", ""]
        lines += _table(
            ["platform", "executed"],
            [[markdown_text(r.platform_id), str(_executed(r))] for r in diff.new],
        )
    if diff.stale:
        lines += ["### Stale expectations", "", "Remove these entries:", ""]
        lines += _table(
            ["entry", "check", "why", "reason"],
            [
                [f"known\\[{e.index}\\]", markdown_text(e.check), why, markdown_text(e.reason)]
                for e, why in diff.stale
            ],
        )
    if diff.unchecked:
        lines += [
            "### Expectations not checked",
            "",
            "Only for platforms with no report here (a platform that did not run, or a typo in "
            "`platforms`):",
            "",
        ]
        lines += _table(
            ["entry", "check", "platforms"],
            [
                [
                    f"known\\[{e.index}\\]",
                    markdown_text(e.check),
                    ", ".join(markdown_text(p) for p in e.platforms),
                ]
                for e in diff.unchecked
            ],
        )
    return "\n".join(lines).rstrip() + "\n"


def _verdict(count: int) -> str:
    if count == 0:
        return "no regressions"
    return f"{count} regression" if count == 1 else f"{count} regressions"


def _summary(diff: Diff) -> str:
    counts = {
        "new failures": sum(len(p.new_failures) for p in diff.platforms),
        "known failures": sum(len(p.known) for p in diff.platforms),
        "fixed": sum(len(p.fixed) for p in diff.platforms),
        "platforms that lost coverage": sum(p.coverage_lost for p in diff.platforms),
        "performance regressions": len(diff.perf_regressions),
        "missing platforms": len(diff.missing),
        "new platforms": len(diff.new),
        "stale expectations": len(diff.stale),
        "expectations not checked": len(diff.unchecked),
    }
    shown = [f"{what}: {n}" for what, n in counts.items() if n]
    return "; ".join([f"platforms compared: {len(diff.platforms)}", *shown]) + "."


def _platform_section(platform: PlatformDiff, coverage_drop: float) -> list[str]:
    versions = ", ".join(
        f"{markdown_text(name)} {_version(old)} → {_version(new)}"
        for name, (old, new) in platform.versions_changed.items()
    )
    heading = f"### {markdown_text(platform.platform_id)}"
    lines = [f"{heading} ({versions})" if versions else heading, ""]
    if platform.incomplete:
        lines += [
            "> **Warning:** the current report is incomplete: its run did not finish, so "
            "results may be missing because they never ran.",
            "",
        ]
    if platform.new_failures:
        lines += [f"**New failures ({len(platform.new_failures)})**", ""]
        lines += _table(
            [*_RESULT_COLUMNS, "was", "now", "message"],
            [[*_changed(c), markdown_text(c.now.message or "")] for c in platform.new_failures],
        )
    if platform.known:
        lines += [f"**Known failures ({len(platform.known)})**, not counted", ""]
        lines += _table(
            [*_RESULT_COLUMNS, "was", "now", "reason", "issue"],
            [[*_changed(c), markdown_text(e.reason), _link(e.issue)] for c, e in platform.known],
        )
    if platform.fixed:
        lines += [f"**Fixed ({len(platform.fixed)})**", ""]
        lines += _table([*_RESULT_COLUMNS, "was", "now"], [_changed(c) for c in platform.fixed])
    lines += _listed("Disappeared", "in the baseline, not now", platform.disappeared)
    lines += _listed("Appeared", "not in the baseline", platform.appeared)
    lines += [_coverage(platform, coverage_drop), ""]
    if platform.benchmarks_not_compared:
        lines += [f"Benchmarks: {platform.benchmarks_not_compared}.", ""]
    if platform.benchmarks_compared:
        slower = len(platform.perf_regressions)
        lines += [
            f"Benchmarks: {platform.benchmarks_compared} compared"
            + (f", **{slower} slower** (see Performance regressions)." if slower else "."),
            "",
        ]
    return lines


_RESULT_COLUMNS = ("check", "subject", "backend")


def _perf_section(diff: Diff) -> list[str]:
    """Benchmarks whose ratio fell too far, apart from the correctness regressions."""
    lines = [
        "### Performance regressions",
        "",
        f"Benchmark ratios (the harness's speed / the plain copy's) that fell by more than "
        f"{diff.perf_drop * 100:g}% from the baseline's (`ptrport bench`):",
        "",
    ]
    rows = [
        [
            markdown_text(platform_id),
            markdown_text(r.now.backend),
            markdown_text(r.now.name),
            markdown_text(r.now.size),
            f"{r.was.ratio:.3g}",
            f"{r.now.ratio:.3g}",
            f"{-r.drop:+.0%}",
            f"{_rate(r.was.median, r.was)} → {_rate(r.now.median, r.now)}",
            f"{markdown_text(r.now.baseline)}: {_rate(r.was.baseline_median, r.was)} → "
            f"{_rate(r.now.baseline_median, r.now)}",
        ]
        for platform_id, r in diff.perf_regressions
    ]
    headers = ["platform", "backend", "benchmark", "size", "was", "now", "change"]
    lines = lines + _table([*headers, "median", "baseline median"], rows)
    note = (
        "A ratio falls when the benchmark got slower or its baseline faster: the medians say which."
    )
    return [*lines, note, ""]


def _rate(value: float, m: Measurement) -> str:
    return f"{value:.3g} {markdown_text(m.unit)}"


def _cells(result: Result) -> list[str]:
    subject = "—" if result.subject is None else markdown_text(result.subject)
    return [markdown_text(result.check), subject, markdown_text(result.backend)]


def _state(result: Result) -> str:
    """The outcome, or for an operation probe its verdict: ``raises NotImplementedError``."""
    found = op_support.verdict_of(result)
    return result.outcome.value if found is None else op_support.label(found, result.message)


def _changed(change: Change) -> list[str]:
    return [
        *_cells(change.now),
        markdown_text(_state(change.was)),
        markdown_text(_state(change.now)),
    ]


def _listed(title: str, meaning: str, results: Sequence[Result]) -> list[str]:
    if not results:
        return []
    lines = [f"**{title} ({len(results)})**, {meaning}", ""]
    if len(results) > LIST_LIMIT:
        return [*lines, f"Too many to list here (more than {LIST_LIMIT}).", ""]
    rows = [[*_cells(r), markdown_text(_state(r))] for r in results]
    return lines + _table([*_RESULT_COLUMNS, "outcome"], rows)


def _coverage(platform: PlatformDiff, coverage_drop: float) -> str:
    before, after = platform.executed_before, platform.executed_after
    change = f" ({(after - before) / before:+.1%})" if before else ""
    line = f"Coverage: {before} → {after} results executed{change}"
    if platform.coverage_lost:
        return f"{line}: **coverage lost**, more than {coverage_drop * 100:g}% fewer."
    return line + "."


def _version(value: str | None) -> str:
    return "—" if value is None else markdown_text(value)


def _link(issue: str | None) -> str:
    return "" if issue is None else markdown_issue(issue)


def _executed(report: PlatformReport) -> int:
    return sum(_ran(r) for r in report.results)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table, then a blank line; cells are Markdown already."""
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]
