"""Which placements a ci-profile run on ``cpu-placed`` draws, and how often: every allocation
the strategies make there, counted by where it was placed (a placement whose range an earlier
allocation of the same example took is counted as moved).

    python benchmarks/placements.py [PYTEST_ARG...]

Runs the scenarios as ``HYPOTHESIS_PROFILE=ci pytest --backend=cpu-placed`` does, in this
process, into a temporary report directory, and prints a Markdown table.
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
from typing import Any

import pytest

from ptrport.check import strategies
from ptrport.check.placements import PLACEMENT_KINDS


class Counting:
    """Counts the ``placed`` argument of every allocation the strategies make."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def pytest_configure(self, config: pytest.Config) -> None:
        made = strategies.allocate

        def counted(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("at") is not None:
                self.counts[str(kwargs["placed"])] += 1
            return made(*args, **kwargs)

        strategies.allocate = counted  # type: ignore[assignment]


def main() -> int:
    os.environ["HYPOTHESIS_PROFILE"] = "ci"
    counting = Counting()
    with tempfile.TemporaryDirectory() as reports:
        status = pytest.main(
            [
                "--backend=cpu-placed",
                f"--report-dir={reports}",
                "-q",
                "-p",
                "no:cacheprovider",
                "--pyargs",
                "ptrport.scenarios",
                *sys.argv[1:],
            ],
            plugins=[counting],
        )
    total = sum(counting.counts.values())
    print("\n| placement | allocations | share | moved beside another |")
    print("| --- | ---: | ---: | ---: |")
    for kind in PLACEMENT_KINDS:
        count = counting.counts[kind]
        moved = counting.counts[f"{kind}, moved beside another"]
        share = (count + moved) / total if total else 0
        print(f"| {kind} | {count + moved} | {share:.1%} | {moved} |")
    print(f"| all | {total} | | |")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
