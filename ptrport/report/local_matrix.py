"""The nightly matrix on one machine: run chosen platform kinds (tox environments), then merge
their reports into the compatibility matrix and diff it against the baseline, as the nightly's
final job does, so a developer sees the night's result before pushing.

``ptrport matrix cpu cpu-latest`` runs ``tox -e cpu`` and ``tox -e cpu-latest``, then merges
``reports/cpu.json`` and ``reports/cpu-latest.json``. ``ptrport matrix --no-run`` merges every
report under ``reports/`` (the ``report`` tox environment). Either writes ``matrix.md``,
``matrix.html`` and ``matrix.json`` beside the reports, and ``diff.md`` when there is a
baseline; ``--promote`` makes the merged result the new baseline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ptrport.errors import HarnessError
from ptrport.report import diff, history, render
from ptrport.report.defaults import BASELINE, EXPECTATIONS
from ptrport.report.expectations import Expectations, load_expectations
from ptrport.report.matrix import CellState, Matrix, build_matrix
from ptrport.report.platform_report import PlatformReport, load_reports, report_path
from ptrport.report.platforms import KINDS

OUTPUTS = ("matrix.md", "matrix.html", "matrix.json")
HISTORY = "history"
"""Under the reports directory: the nights kept for the trend (the newest 30)."""


@dataclass(frozen=True)
class EnvRun:
    """One tox environment as this run ran it."""

    name: str
    exit_status: int
    wall_s: float
    report: Path | None
    """Its platform report, if it wrote one."""


@dataclass(frozen=True)
class Outcome:
    runs: tuple[EnvRun, ...]
    matrix: Matrix
    written: tuple[Path, ...]
    diff: diff.Diff | None
    """``None`` where there is no baseline."""

    @property
    def missing(self) -> list[str]:
        """Environments that ran and wrote no report."""
        return [r.name for r in self.runs if r.report is None]

    @property
    def failed(self) -> bool:
        return bool(self.missing) or (self.diff is not None and self.diff.regressed)


def check_kinds(names: Sequence[str]) -> list[str]:
    unknown = [n for n in names if n not in KINDS]
    if unknown:
        raise HarnessError(f"unknown platform kind {unknown[0]!r}; known: {', '.join(KINDS)}")
    return list(dict.fromkeys(names))


def run_env(name: str, reports: Path, tox: Sequence[str] = ("tox",)) -> EnvRun:
    """``tox -e NAME``, its output passing through; the report it wrote, if any."""
    path = report_path(reports, name)
    before = path.stat().st_mtime if path.exists() else None
    started = time.monotonic()
    # Each environment files its report under its own name, whatever this shell names.
    env = {k: v for k, v in os.environ.items() if k != "PTRPORT_PLATFORM"}
    try:
        code = subprocess.run([*tox, "-e", name], check=False, env=env).returncode
    except FileNotFoundError:
        raise HarnessError(f"cannot run {tox[0]!r}: install tox (pip install tox)") from None
    wall = time.monotonic() - started
    fresh = path.exists() and path.stat().st_mtime != before
    return EnvRun(name, code, wall, path if fresh else None)


def _expectations(path: Path | None, reports: list[PlatformReport]) -> Expectations:
    if path is None or not path.exists():
        return Expectations.none()
    expectations = load_expectations(path)
    expectations.check_known_checks(reports)
    return expectations


def merge_and_diff(
    report_files: Sequence[Path],
    out_dir: Path,
    *,
    baseline: Path | None,
    expectations: Path | None = EXPECTATIONS,
    runs: Sequence[EnvRun] = (),
    history_dir: Path | None = None,
) -> Outcome:
    """Merge ``report_files`` (or a directory of them) into ``out_dir``/matrix.*, and diff
    against ``baseline`` (only the platforms present now, when ``runs`` says which ran). With
    ``history_dir``, the merged matrix is kept there as a night (:mod:`ptrport.report.history`) and
    the page and the Markdown show the nights kept as a trend."""
    current = load_reports(list(report_files))
    previous = load_reports([baseline]) if baseline is not None and baseline.exists() else None
    known = _expectations(expectations, current + (previous or []))
    matrix = build_matrix(current, known=known.find)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    nights: list[history.Night] = []
    if history_dir is not None:
        written.append(history.keep_matrix(matrix, history_dir))
        nights = history.load(history_dir)
    for name in OUTPUTS:
        path = out_dir / name
        render.write(matrix, path, nights)
        written.append(path)
    found = None
    if previous is not None:
        if runs:
            ran = {r.platform_id for r in current}
            previous = [r for r in previous if r.platform_id in ran]
        found = diff.diff_reports(previous, current, expectations=known)
        path = out_dir / "diff.md"
        path.write_text(diff.to_markdown(found), encoding="utf-8")
        written.append(path)
    return Outcome(tuple(runs), matrix, tuple(written), found)


def promote(matrix_json: Path, baseline: Path) -> Path:
    """Make a merged result the baseline the next diff compares against."""
    load_reports([matrix_json])
    baseline.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(matrix_json, baseline)
    return baseline


def summary(outcome: Outcome, baseline: Path | None) -> list[str]:
    """What a developer reads at the end: each environment, the matrix totals, the verdict."""
    lines = []
    if outcome.runs:
        width = max(len(r.name) for r in outcome.runs)
        for r in outcome.runs:
            state = "report written" if r.report else "NO REPORT"
            lines.append(f"{r.name:<{width}}  exit {r.exit_status}  {r.wall_s:7.1f} s  {state}")
    for index, column in enumerate(outcome.matrix.columns):
        states = Counter(row.cells[index].state.value for row in outcome.matrix.rows)
        counts = ", ".join(f"{s.value}: {states[s.value]}" for s in CellState if states[s.value])
        torch = column.versions.get("torch", "?")
        lines.append(f"{column.name} (torch {torch}): {counts}")
    lines.extend(f"wrote {p}" for p in outcome.written)
    if outcome.diff is None:
        where = baseline or BASELINE
        lines.append(f"no baseline at {where}: make this result the baseline with --promote")
    else:
        verdict = diff.to_markdown(outcome.diff).splitlines()[0].lstrip("# ")
        lines.append(f"against {baseline or BASELINE}: {verdict.removeprefix('ptrport diff: ')}")
    if outcome.missing:
        lines.append(f"no report from: {', '.join(outcome.missing)}")
    return lines


def main_run(
    kinds: Sequence[str],
    *,
    reports: Path,
    baseline: Path | None,
    no_run: bool,
    do_promote: bool,
    expectations: Path | None = EXPECTATIONS,
    tox: Sequence[str] = ("tox",),
) -> int:
    runs: list[EnvRun] = []
    if no_run:
        files: list[Path] = [reports]
    else:
        runs = [run_env(name, reports, tox) for name in check_kinds(kinds)]
        files = [r.report for r in runs if r.report is not None]
        if not files:
            raise HarnessError(f"no environment wrote a report ({', '.join(kinds)})")
    outcome = merge_and_diff(
        files,
        reports,
        baseline=baseline,
        expectations=expectations,
        runs=runs,
        history_dir=reports / HISTORY,
    )
    for line in summary(outcome, baseline):
        print(f"ptrport: {line}")
    if do_promote:
        target = promote(reports / "matrix.json", baseline or BASELINE)
        print(f"ptrport: promoted {reports / 'matrix.json'} to {target}")
    sys.stdout.flush()
    return 1 if outcome.failed else 0
