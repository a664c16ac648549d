"""What a whole-suite run costs on the four CPU backends against the same run on ``cpu`` alone,
runs alternating so that the machine's noise falls on both, and whether its verdicts are the
same in-process (``--no-isolate``) as isolated.

    python benchmarks/whole_suite_cost.py --python VENV/bin/python --file TESTS/test_x.py
                                          [--rootdir DIR] [--repeat 3] [--json FILE]
                                          [-- EXTRA PYTEST ARGS]

The test file runs unchanged under ``--ptrport-all --ptrport-stand-in=cuda`` with the default
isolation, in the given interpreter (an engine's virtualenv, as ``benchmarks/engine_suites.py``
builds them), from ``--rootdir`` (default: the file's folder). The yardstick of issue 39 is
vLLM 0.34.0's ``tests/v1/worker/test_mamba_utils.py`` (``--noconftest``: vLLM's root conftest
needs packages its tests alone do not), with a target of at most 4.4x (1.1x a backend).

Prints each run's wall time, the median of each side, their ratio and the ratio per backend,
and the verdicts of both isolations. Exit status 1 if the verdicts differ between runs or
isolations, 2 for bad arguments.
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

ALL = "cpu,cpu-usm,cpu-tbi,cpu-placed"
ALONE = "cpu"
TARGET = 4.4
HIGH = ("cpu-usm", "cpu-tbi", "cpu-placed")
FAILED = ("failed", "error", "crashed", "timed out")


def verdicts(report: dict[str, object]) -> dict[str, str]:
    """Each test's verdict by difference, from a platform report's results."""
    by_check: dict[str, dict[str, str]] = {}
    for result in report["results"]:  # type: ignore[attr-defined]
        by_check.setdefault(result["check"], {})[result["backend"]] = result["outcome"]
    found = {}
    for check, outcomes in by_check.items():
        reference = outcomes.get("cpu")
        if reference in FAILED:
            found[check] = "fails everywhere"
        elif reference != "passed":
            found[check] = "skipped"
        elif any(outcomes.get(b) in FAILED for b in HIGH):
            found[check] = "address-sensitive"
        else:
            found[check] = "passes everywhere"
    return found


def run(
    python: str, file: Path, rootdir: Path, backends: str, extra: list[str], isolate: bool
) -> tuple[float, dict[str, str]]:
    """One run's wall time and verdicts."""
    with tempfile.TemporaryDirectory(prefix="ptrport-cost-") as reports:
        command = [
            python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ptrport-all",
            "--ptrport-stand-in=cuda", f"--backend={backends}", f"--report-dir={reports}",
            *([] if isolate else ["--no-isolate"]), *extra, str(file),
        ]  # fmt: skip
        environment = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=rootdir, env=environment, capture_output=True, text=True, check=False
        )
        seconds = time.perf_counter() - started
        written = sorted(Path(reports).glob("*.json"))
        if not written:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise SystemExit(f"no report from {' '.join(command)}:\n" + "\n".join(tail))
        return seconds, verdicts(json.loads(written[0].read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True, help="the interpreter to run pytest with")
    parser.add_argument("--file", type=Path, required=True, help="the test file, unchanged")
    parser.add_argument("--rootdir", type=Path, help="where pytest runs (default: its folder)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the times and ratio to this file")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    if not args.file.is_file() or args.repeat < 1:
        parser.error(f"{args.file}: no such test file" if args.repeat >= 1 else "--repeat >= 1")
    rootdir = args.rootdir or args.file.parent
    times: dict[str, list[float]] = {ALONE: [], ALL: []}
    seen: list[dict[str, str]] = []
    for attempt in range(args.repeat):
        for backends in (ALONE, ALL) if attempt % 2 == 0 else (ALL, ALONE):
            seconds, found = run(args.python, args.file, rootdir, backends, args.extra, True)
            times[backends].append(seconds)
            print(f"{backends:30} {seconds:7.1f} s", flush=True)
            if backends == ALL:
                seen.append(found)
    _, in_process = run(args.python, args.file, rootdir, ALL, args.extra, False)
    alone, whole = statistics.median(times[ALONE]), statistics.median(times[ALL])
    ratio = whole / alone
    same = all(found == seen[0] for found in seen) and in_process == seen[0]
    counts = {v: list(seen[0].values()).count(v) for v in sorted(set(seen[0].values()))}
    print(f"median: cpu alone {alone:.1f} s, four backends {whole:.1f} s")
    print(
        f"ratio {ratio:.2f}x ({ratio / 4:.2f}x a backend; target at most {TARGET}x): "
        f"{'within' if ratio <= TARGET else 'OVER'}"
    )
    print(f"verdicts: {counts}; isolated and --no-isolate {'the same' if same else 'DIFFER'}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"times": times, "ratio": ratio, "verdicts": seen[0], "same": same}, indent=2
            )
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
