"""What isolation costs, isolated against ``--no-isolate`` in one script, runs alternating so that
the machine's noise falls on both:

- ``engine``: a stand-in for an inference engine, a package that sleeps 3 s at import (as
  ``import vllm`` takes about 10 s), and a test module of 6 tests marked
  ``@pytest.mark.ptrport`` on cpu, cpu-usm, cpu-tbi and cpu-placed: 24 checks, each a Triton
  batch copy from memory placed at or above ``2**63``, the pointers kept in ``uint64`` (12
  pass) or ``int64`` (12 fail, as a port that starts red does). Also how long it takes, isolated,
  from a failed check's end to the next check's start (a fresh child).
- ``scenarios``: the worked example subject (``examples.batched_copy_buffers:make_subject``)
  in the ``ci`` profile on ``cpu``.

    python benchmarks/isolation.py [--repeat 3] [--only engine|scenarios]
    python benchmarks/isolation.py --against ../before    # that checkout's ptrport, alternating

Prints each run's wall time, each side's median ratio of isolated to in-process time, and the
median time to a fresh child. Exit status 1 if a run's outcomes differ from the others', or
the engine's are not 12 failed and 12 passed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = "cpu,cpu-usm,cpu-tbi,cpu-placed"
TIMES_ENV = "PTRPORT_BENCH_TIMES"

STAND_IN = '''\
"""A stand-in for an inference engine: slow to import, pointers in host tensors read by a
Triton batch copy."""

import time

import torch
import triton
import triton.language as tl

time.sleep(3)  # the engine's import


@triton.jit
def batch_copy(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    n = tl.load(sizes + i)
    src = tl.load(src_ptrs + i).to(tl.pointer_type(tl.uint8))
    dst = tl.load(dst_ptrs + i).to(tl.pointer_type(tl.uint8))
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


def copy_all(pairs, device, ptr_dtype):
    host = torch.zeros((2, len(pairs)), dtype=ptr_dtype)
    view = host.numpy()
    sizes = torch.zeros(len(pairs), dtype=torch.int32)
    for i, (src, dst) in enumerate(pairs):
        view[0, i], view[1, i] = src.data_ptr(), dst.data_ptr()
        sizes[i] = src.numel() * src.element_size()
    table = host.to(device)
    batch_copy[(len(pairs),)](table[0], table[1], sizes.to(device), BLOCK=256)
'''

ENGINE_TESTS = """\
import json
import os
import time

import pytest
import torch

from slow_engine import copy_all

pytestmark = pytest.mark.ptrport


@pytest.fixture(autouse=True)
def timed(request):
    began = time.time()
    yield
    with open(os.environ["PTRPORT_BENCH_TIMES"], "a") as out:
        out.write(json.dumps([request.node.nodeid, began, time.time(), os.getpid()]) + "\\n")


@pytest.mark.parametrize("ptr_dtype", [torch.uint64, torch.int64], ids=["uint64", "int64"])
@pytest.mark.parametrize("at", [1 << 63, 0xFFFF85ABD4E00000, (1 << 64) - 4096])
def test_copy_from_placed_memory(ptrport_device, ptr_dtype, at):
    src = torch.arange(256, dtype=torch.uint8)
    dst = torch.zeros(256, dtype=torch.uint8)
    ptrport_device.place(src, at=at)
    copy_all([(src, dst)], ptrport_device.device, ptr_dtype)
    assert torch.equal(src, dst)
"""


def run_once(
    cwd: Path, checkout: Path, args: list[str], report_dir: Path, times: Path
) -> tuple[float, Counter[str]]:
    """One pytest run with ``checkout``'s ptrport first on the path: its wall time and the
    outcomes in its report."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")])),
        "HYPOTHESIS_PROFILE": "ci",
        TIMES_ENV: str(times),
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    began = time.perf_counter()
    done = subprocess.run(
        [*command, f"--report-dir={report_dir}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - began
    if done.returncode not in (0, 1):
        print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
    (report,) = report_dir.glob("*.json")
    results = json.loads(report.read_text(encoding="utf-8"))["results"]
    return elapsed, Counter(r["outcome"] for r in results)


def fresh_child_gaps(times: Path) -> list[float]:
    """Seconds from each failed check's end to the next check's start, where the next ran in
    another process (the engine's ``int64`` checks are the failing ones)."""
    rows = [json.loads(line) for line in times.read_text().splitlines()]
    rows.sort(key=lambda row: row[1])
    return [
        after[1] - before[2]
        for before, after in itertools.pairwise(rows)
        if "int64" in before[0] and "uint64" not in before[0] and before[3] != after[3]
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each mode (default 3)")
    parser.add_argument("--only", choices=("engine", "scenarios"), help="one workload")
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    args = parser.parse_args()
    sides = [("this", ROOT)]
    if args.against is not None:
        sides.insert(0, ("other", args.against.resolve()))
    failed = False
    with tempfile.TemporaryDirectory(prefix="ptrport-isolation-") as scratch_name:
        scratch = Path(scratch_name)
        project = scratch / "project"
        (project / "slow_engine").mkdir(parents=True)
        (project / "slow_engine" / "__init__.py").write_text(STAND_IN)
        (project / "test_slow_engine.py").write_text(ENGINE_TESTS)
        # The scenarios run from the checkout itself: ``python -m pytest`` puts the working
        # directory first on the path, before PYTHONPATH.
        workloads = {
            "engine": (project, [f"--backend={BACKENDS}", "test_slow_engine.py"]),
            "scenarios": (
                None,
                ["--backend=cpu", "--subject=examples.batched_copy_buffers:make_subject"],
            ),
        }
        for name, (project_dir, base) in workloads.items():
            if args.only not in (None, name):
                continue
            print(f"{name}:", flush=True)
            times: dict[tuple[str, str], list[float]] = {}
            outcomes: dict[tuple[str, str], Counter[str]] = {}
            gaps: dict[str, list[float]] = {label: [] for label, _ in sides}
            for attempt in range(args.repeat):
                for label, checkout in sides:
                    for mode, extra in (("isolated", []), ("in-process", ["--no-isolate"])):
                        run = scratch / f"{name}-{label}-{mode}-{attempt}"
                        run.mkdir()
                        elapsed, found = run_once(
                            project_dir or checkout,
                            checkout,
                            [*base, *extra],
                            run / "reports",
                            run / "times",
                        )
                        times.setdefault((label, mode), []).append(elapsed)
                        if outcomes.setdefault((label, mode), found) != found:
                            failed = True
                        if mode == "isolated" and (run / "times").exists():
                            gaps[label] += fresh_child_gaps(run / "times")
                        print(
                            f"  {label:<5} {mode:<10} run {attempt + 1}: {elapsed:6.2f} s  "
                            f"{dict(sorted(found.items()))}",
                            flush=True,
                        )
            if len({tuple(sorted(c.items())) for c in outcomes.values()}) != 1:
                print("  the outcomes differ between runs")
                failed = True
            if name == "engine" and outcomes[(sides[-1][0], "isolated")] != Counter(
                passed=12, failed=12
            ):
                print("  the engine's outcomes are not 12 failed, 12 passed")
                failed = True
            for label, _ in sides:
                isolated = statistics.median(times[(label, "isolated")])
                in_process = statistics.median(times[(label, "in-process")])
                line = (
                    f"  {label:<5} median isolated {isolated:6.2f} s, in-process "
                    f"{in_process:6.2f} s: {isolated / in_process:.2f}x"
                )
                if gaps[label]:
                    line += (
                        f"; a failed check to the next check's start, median "
                        f"{statistics.median(gaps[label]) * 1000:.0f} ms of {len(gaps[label])}"
                    )
                print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
