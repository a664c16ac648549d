"""What translating an address costs per load: ``DeviceMemory.real`` for one Triton load of
``--lanes`` addresses, with ``--storages`` storages handed out, at a fixed offset (``cpu-usm``)
and placed one by one where a check chooses (``cpu-placed``'s boundaries).

    python benchmarks/translation.py [--lanes 1024] [--storages 64] [--repeat 2000]
    python benchmarks/translation.py --against ../other-checkout   # its fixed offset too

Prints the median time per load and per lane of each, and their ratios. The other checkout's
fixed-offset translation runs in a child process with that checkout first on ``sys.path``,
alternating with this one's, so the machine's noise falls on both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(placed: bool, lanes: int, storages: int, repeat: int) -> float:
    """Median seconds of one ``real()`` call over ``lanes`` addresses spread over the storages."""
    import numpy as np
    import torch

    from ptrport.device import presentation

    tensors = [torch.zeros(4096, dtype=torch.uint8) for _ in range(storages)]
    with presentation.presenting(presentation.USM) as memory:
        for index, tensor in enumerate(tensors):
            if placed:
                at = (1 << 63) - 2048 + index * 3 * 4096 + tensor.data_ptr() % 4096
                memory.place(tensor, at)
            else:
                tensor.data_ptr()
        starts = [t.data_ptr() for t in tensors]
        rng = np.random.default_rng(0)
        picks = rng.integers(0, storages, lanes)
        offsets = rng.integers(0, 4096 - 8, lanes)
        addresses = np.array(
            [starts[int(p)] + int(o) for p, o in zip(picks, offsets, strict=True)], dtype=np.uint64
        )
        times = []
        for _ in range(repeat):
            began = time.perf_counter()
            memory.translate(addresses, 8, "load")
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=1024)
    parser.add_argument("--storages", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--against", type=Path, help="another checkout: its fixed offset too")
    parser.add_argument("--only-fixed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only_fixed:
        print(json.dumps(measure(False, args.lanes, args.storages, args.repeat)))
        return 0
    sys.path.insert(0, str(ROOT))
    rounds: dict[str, list[float]] = {"fixed": [], "placed": [], "other fixed": []}
    for _ in range(3):
        rounds["fixed"].append(measure(False, args.lanes, args.storages, args.repeat))
        rounds["placed"].append(measure(True, args.lanes, args.storages, args.repeat))
        if args.against is not None:
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--only-fixed",
                    f"--lanes={args.lanes}",
                    f"--storages={args.storages}",
                    f"--repeat={args.repeat}",
                ],
                env={"PYTHONPATH": str(args.against.resolve()), "PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                check=True,
            )
            rounds["other fixed"].append(json.loads(done.stdout))
    medians = {name: statistics.median(found) for name, found in rounds.items() if found}
    for name, seconds in medians.items():
        print(
            f"{name:<12} {seconds * 1e6:8.1f} us per load of {args.lanes} lanes, "
            f"{seconds * 1e9 / args.lanes:6.1f} ns per lane ({args.storages} storages)"
        )
    print(f"placed / fixed: {medians['placed'] / medians['fixed']:.3f}")
    if "other fixed" in medians:
        print(f"fixed / other's fixed: {medians['fixed'] / medians['other fixed']:.3f}")
        print(f"placed / other's fixed: {medians['placed'] / medians['other fixed']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
