"""The table a pytest run ends with: per backend, how many results of each kind, and the time
its checks took (so that backends of one run compare, e.g. ``cpu-usm`` against ``cpu``)."""

from __future__ import annotations

from collections.abc import Sequence

from ptrport.report.records import Outcome, Result

COLUMNS: tuple[tuple[str, tuple[Outcome, ...]], ...] = (
    ("passed", (Outcome.PASSED,)),
    ("failed", (Outcome.FAILED,)),
    ("expected failures", (Outcome.XFAILED,)),
    ("unavailable", (Outcome.UNAVAILABLE,)),
)
OPTIONAL: tuple[tuple[str, tuple[Outcome, ...]], ...] = (
    ("unexpected passes", (Outcome.XPASSED,)),
    ("skipped", (Outcome.SKIPPED,)),
    ("errors", (Outcome.ERROR,)),
    ("crashed", (Outcome.CRASHED,)),
    ("timed out", (Outcome.TIMED_OUT,)),
)
"""Shown only when some result has them."""


def backend_table(results: Sequence[Result]) -> list[str]:
    """Lines of a table: a row per backend (in the order they first appear), a column per
    kind of outcome, and the wall time of its checks (setup, call and teardown)."""
    backends = list(dict.fromkeys(r.backend for r in results))
    present = {r.outcome for r in results}
    columns = [*COLUMNS, *((name, kinds) for name, kinds in OPTIONAL if present & set(kinds))]
    rows = [["backend", *(name for name, _ in columns), "time"]]
    for backend in backends:
        mine = [r for r in results if r.backend == backend]
        counts = [str(sum(r.outcome in kinds for r in mine)) for _, kinds in columns]
        rows.append([backend, *counts, f"{sum(r.duration_s for r in mine):.1f} s"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
