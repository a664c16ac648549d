"""Platform reports: one run's results and its platform, as versioned JSON.

The layout is documented in ``reports/README.md``. Pure: records in, a file out; no pytest.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.records import Outcome, Result

SCHEMA = "ptrport.report/0"


@dataclass(frozen=True)
class RunInfo:
    """How the run was made: when, with which selection and Hypothesis settings."""

    started: str
    finished: str
    duration_s: float
    hypothesis_profile: str
    seed: str
    backend_spec: str
    subjects: tuple[str, ...]
    argv: tuple[str, ...] = field(default=())

    def to_record(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "finished": self.finished,
            "duration_s": round(self.duration_s, 3),
            "hypothesis_profile": self.hypothesis_profile,
            "seed": self.seed,
            "backend_spec": self.backend_spec,
            "subjects": list(self.subjects),
            "argv": list(self.argv),
        }


def totals(results: Sequence[Result]) -> dict[str, int]:
    """How many results of each outcome, every outcome listed."""
    counted = Counter(r.outcome for r in results)
    return {o.value: counted.get(o, 0) for o in Outcome}


def build_report(
    *,
    platform_id: str,
    fingerprint: dict[str, Any],
    run: RunInfo,
    results: Sequence[Result],
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "platform": {"id": platform_id, "fingerprint": fingerprint},
        "run": run.to_record(),
        "totals": totals(results),
        "results": [r.to_record() for r in results],
    }


def write_report(report: dict[str, Any], directory: Path) -> Path:
    """Write ``report`` to ``directory/<platform id>.json`` atomically; return the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{report['platform']['id']}.json"
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
