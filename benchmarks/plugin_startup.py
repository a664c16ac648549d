"""What installing ptrport costs a pytest run that has nothing for it: a project of plain tests,
run with the plugin and with ``-p no:ptrport``, alternating, in one process each time.

    python benchmarks/plugin_startup.py [--repeat 15]

Prints the median wall time of each and their difference in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAIN_TESTS = "\n\n".join(f"def test_{i}():\n    assert {i} == {i}" for i in range(20)) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"with ptrport": [], "-p no:ptrport": []}
    with tempfile.TemporaryDirectory() as project:
        Path(project, "test_plain.py").write_text(PLAIN_TESTS)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        for _ in range(args.repeat):
            for label, extra in (("with ptrport", []), ("-p no:ptrport", ["-p", "no:ptrport"])):
                began = time.perf_counter()
                subprocess.run([*base, *extra], cwd=project, capture_output=True, check=True)
                times[label].append(time.perf_counter() - began)
        assert not Path(project, "reports").exists(), "a plain run wrote a report"
    medians = {label: statistics.median(found) for label, found in times.items()}
    for label, seconds in medians.items():
        print(f"{label:<14} {seconds * 1000:7.1f} ms (median of {args.repeat})")
    difference = medians["with ptrport"] - medians["-p no:ptrport"]
    print(f"the plugin costs {difference * 1000:+.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
