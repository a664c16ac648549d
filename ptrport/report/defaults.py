"""The report commands' defaults, apart from the modules that use them: the command line names
them in its help without importing those modules (``ptrport lint`` starts without the reports)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_KINDS = ("cpu", "cpu-latest")
"""The tox environments ``ptrport matrix`` runs when none is named."""
BASELINE = Path("reports/baseline/matrix.json")
"""The merged result that ``ptrport matrix`` diffs against."""
EXPECTATIONS = Path("reports/expectations.toml")
"""The known failures ``ptrport matrix`` reads, where the file exists."""
DEFAULT_LIMIT = 30
"""The nights a history directory keeps."""
PERF_DROP = 0.2
"""A benchmark ratio may fall by this fraction before that counts as a regression."""
WARMUP = 2
"""Untimed runs of each benchmark's subject and baseline before the timed ones."""
INTERPRETED_REPEAT = 3
"""At most this many timed runs (after one warm-up run) for Triton's interpreter."""
DEFAULT_REPEAT = 10
"""Timed runs of each measurement, unless ``ptrport bench --repeat`` says otherwise."""
