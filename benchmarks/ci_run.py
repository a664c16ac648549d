"""How long the whole ci-profile run takes (``HYPOTHESIS_PROFILE=ci pytest`` on every available
backend: here ``cpu``, ``cpu-usm`` and ``cpu-tbi``), and, given another checkout, how it
compares: runs of the two alternate in one process, so that the machine's noise falls on both,
and the results of each run are compared as (check, subject, backend, outcome).

    python benchmarks/ci_run.py [--repeat 2]
    python benchmarks/ci_run.py --against ../before --against-python ../venv-before/bin/python

Prints each run's wall time, the median of each side, the ratio of this checkout's median to the
other's, and whether the result sets are the same (listing the differences if not). Exit status
1 if a run failed or the result sets differ.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

Key = tuple[str, str | None, str, str]


def run_once(checkout: Path, python: str, report_dir: Path) -> tuple[float, int, set[Key]]:
    """One ci-profile run of ``checkout``'s scenarios: its wall time, exit status and results."""
    env = {**os.environ, "HYPOTHESIS_PROFILE": "ci"}
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    began = time.perf_counter()
    done = subprocess.run(
        [*command, f"--report-dir={report_dir}"],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
    (report,) = report_dir.glob("*.json")
    results = json.loads(report.read_text(encoding="utf-8"))["results"]
    keys = {(r["check"], r["subject"], r["backend"], r["outcome"]) for r in results}
    return elapsed, done.returncode, keys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each side (default 2)")
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    parser.add_argument(
        "--against-python", default=sys.executable, help="the python of its virtualenv"
    )
    args = parser.parse_args()
    sides = [("this", ROOT, sys.executable)]
    if args.against is not None:
        sides.insert(0, ("other", args.against.resolve(), args.against_python))
    times: dict[str, list[float]] = {label: [] for label, _, _ in sides}
    results: dict[str, set[Key]] = {}
    failed = False
    with tempfile.TemporaryDirectory(prefix="ptrport-ci-run-") as scratch:
        for attempt in range(args.repeat):
            for label, checkout, python in sides:
                report_dir = Path(scratch) / f"{label}-{attempt}"
                elapsed, status, keys = run_once(checkout, python, report_dir)
                print(f"{label:<5}  run {attempt + 1}: {elapsed:6.1f} s  exit {status}", flush=True)
                times[label].append(elapsed)
                failed |= status != 0
                if results.setdefault(label, keys) != keys:
                    print(f"{label}: run {attempt + 1} gave other results than run 1")
                    failed = True
    for label, _, _ in sides:
        print(
            f"{label:<5}  median {statistics.median(times[label]):6.1f} s, "
            f"{len(results[label])} results"
        )
    if args.against is not None:
        ratio = statistics.median(times["this"]) / statistics.median(times["other"])
        print(f"ratio this/other: {ratio:.3f}")
        only_this = sorted(results["this"] - results["other"], key=str)
        only_other = sorted(results["other"] - results["this"], key=str)
        print(f"result sets: {'the same' if not (only_this or only_other) else 'differ'}")
        for key in only_other:
            print(f"  only in other: {key}")
        for key in only_this:
            print(f"  only in this:  {key}")
        failed |= bool(only_this or only_other)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
