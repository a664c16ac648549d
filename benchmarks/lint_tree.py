"""How long ``ptrport lint`` takes on a large tree: a generated tree of engine-style files (the
lint corpus, three files to a module, so every module has address sources, Triton kernels and
launches to follow), linted in one process and with one process per CPU.

    python benchmarks/lint_tree.py [--files 2000] [--repeat 3]
    python benchmarks/lint_tree.py --tree DIR   # a tree of real code instead (an installed torch)

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

from ptrport.lint.checker import lint_paths  # noqa: E402
from ptrport.lint.sources import python_files  # noqa: E402

CORPUS = ROOT / "tests" / "lint_corpus"


def generate(root: Path, files: int) -> None:
    """``files`` modules in packages of 50, each three corpus files end to end."""
    templates = [path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*.py"))]
    for index in range(files):
        package = root / f"engine_{index // 50:03d}"
        package.mkdir(exist_ok=True)
        parts = [templates[(index + k) % len(templates)] for k in range(3)]
        text = "\n\n".join(parts)
        (package / f"module_{index:04d}.py").write_text(text, encoding="utf-8")


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
    parser.add_argument("--tree", type=Path, help="lint this directory instead of a generated one")
    args = parser.parse_args()
    if args.tree is not None:
        if not args.tree.is_dir():
            parser.error(f"{args.tree}: not a directory")
        return measure(args.tree, args.repeat)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        generate(root, args.files)
        return measure(root, args.repeat)


def measure(root: Path, repeat: int) -> int:
    cpus = os.cpu_count() or 1
    files = python_files([root])
    lines = sum(path.read_bytes().count(b"\n") for path in files)
    print(f"tree: {len(files)} files, {lines} lines; {cpus} CPUs")
    for jobs in sorted({1, cpus}):
        seconds, linted, findings = best(root, jobs, repeat)
        print(
            f"jobs={jobs}: {seconds:.2f} s best of {repeat} "
            f"({linted / seconds:.0f} files/s), {linted} files, {findings} findings"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
