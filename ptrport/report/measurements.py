"""Benchmark measurements as a report holds them: the ``benchmarks`` section that ``ptrport
bench`` (:mod:`ptrport.check.bench`) writes and ``ptrport report diff`` compares.

Each :class:`Measurement` is data: a name, a size, a unit, the median and the spread (min and
max) of repeated runs after warm-up, and a ``ratio`` against a named baseline that moves the same
bytes the plainest way (baseline median time / measured median time: 1.0 is as fast as the
baseline).

Pure: reports are read where torch is not installed; measuring is :mod:`ptrport.check.bench`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ptrport.report import schema
from ptrport.report.platform_report import SCHEMA_FILE, PlatformReport, ReportError, rewrite_report

GBPS = "GB/s"
ENTRIES_PER_S = "entries/s"
SECTION_DEF = "benchmarks"
"""The report schema's definition of the section."""


@dataclass(frozen=True)
class Measurement:
    """One benchmark on one backend: the median and spread of its repeated runs, in ``unit``,
    and how it compares with its baseline."""

    name: str
    backend: str
    size: str
    """What was moved, e.g. ``4 x 4 MiB``; a diff compares measurements of one size only."""
    unit: str
    median: float
    low: float
    """The slowest run, in ``unit``."""
    high: float
    """The fastest run, in ``unit``."""
    ratio: float
    """Baseline median time / this median time: 1.0 is as fast as the baseline."""
    baseline: str
    baseline_median: float
    """The baseline's median, in ``unit``."""
    repeats: int
    timer: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.backend, self.name, self.size)

    def to_record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backend": self.backend,
            "size": self.size,
            "unit": self.unit,
            "median": self.median,
            "min": self.low,
            "max": self.high,
            "ratio": self.ratio,
            "baseline": self.baseline,
            "baseline_median": self.baseline_median,
            "repeats": self.repeats,
            "timer": self.timer,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Measurement:
        return cls(
            name=str(record["name"]),
            backend=str(record["backend"]),
            size=str(record["size"]),
            unit=str(record["unit"]),
            median=float(record["median"]),
            low=float(record["min"]),
            high=float(record["max"]),
            ratio=float(record["ratio"]),
            baseline=str(record["baseline"]),
            baseline_median=float(record["baseline_median"]),
            repeats=int(record["repeats"]),
            timer=str(record["timer"]),
        )


def section_errors(value: Any) -> list[str]:
    """What makes ``value`` not a ``benchmarks`` section, none if it is one."""
    root = schema.load_schema(SCHEMA_FILE)
    return schema.errors(value, {"$ref": f"#/$defs/{SECTION_DEF}", "$defs": root["$defs"]})


def record(path: Path, new: dict[str, Any], backends: Iterable[str]) -> dict[str, Any]:
    """Put the section ``new`` into the report at ``path``: its measurements replace those of
    ``backends`` there, measurements of other backends stay; everything else in the report is
    kept as it is (:func:`~ptrport.report.platform_report.rewrite_report`). Returns the section
    as written."""
    benched = set(backends)

    def with_section(report: PlatformReport) -> PlatformReport:
        old = (report.benchmarks or {}).get("measurements", [])
        kept = [m for m in old if m["backend"] not in benched]
        return replace(report, benchmarks={**new, "measurements": [*kept, *new["measurements"]]})

    written = rewrite_report(path, with_section).benchmarks
    assert written is not None
    return written


def measurements_of(report: PlatformReport) -> list[Measurement]:
    """The benchmark measurements in ``report``'s ``benchmarks`` section, none if it has none."""
    held = report.benchmarks
    if held is None:
        return []
    problems = section_errors(held)
    if problems:
        raise ReportError(f"{report.path}: benchmarks: {problems[0]}")
    return [Measurement.from_record(m) for m in held["measurements"]]
