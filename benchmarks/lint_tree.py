"""How long ``ptrport lint`` takes on a large tree: a generated tree of engine-style files (the
lint corpus, three files to a module, so every module has address sources, Triton kernels and
launches to follow), linted in one process and with one process per CPU.

    python benchmarks/lint_tree.py [--files 2000] [--repeat 3]

Prints the tree's size, the best wall time of each way, and the findings (the same both ways).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.lint.checker import lint_paths  # noqa: E402

CORPUS = ROOT / "tests" / "lint_corpus"


def generate(root: Path, files: int) -> int:
    """``files`` modules in packages of 50, each three corpus files end to end; their lines."""
    templates = [path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*.py"))]
    lines = 0
    for index in range(files):
        package = root / f"engine_{index // 50:03d}"
        package.mkdir(exist_ok=True)
        parts = [templates[(index + k) % len(templates)] for k in range(3)]
        text = "\n\n".join(parts)
        (package / f"module_{index:04d}.py").write_text(text, encoding="utf-8")
        lines += text.count("\n")
    return lines


def best(root: Path, jobs: int, repeat: int) -> tuple[float, int, int]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run = lint_paths([root], jobs=jobs)
        times.append(time.perf_counter() - start)
    return min(times), run.files, len(run.findings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        lines = generate(root, args.files)
        print(f"tree: {args.files} files, {lines} lines; {cpus} CPUs")
        for jobs in sorted({1, cpus}):
            seconds, files, findings = best(root, jobs, args.repeat)
            rate = files / seconds
            print(
                f"jobs={jobs}: {seconds:.2f} s best of {args.repeat} "
                f"({rate:.0f} files/s), {files} files, {findings} findings"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
