"""How long ``ptrport lint`` takes on the real engines of ``real_engines.py`` (the unpacked
vLLM, SGLang and LMCache packages of its cache), for this checkout and for another one: the two
alternate in one process (before, after, after, before, ...), so that the machine's noise falls
on both, and pyflakes on the same trees gives a peer figure.

    python benchmarks/real_engines.py --skip-download   # once, to unpack the packages
    python benchmarks/lint_speed.py [--against ../before23] [--repeat 3] [--cache DIR]
        [--package NAME] [--pyflakes | --no-pyflakes] [--bytecode | --no-bytecode]
        [--markdown FILE]

``--against`` defaults to ``before23`` beside this checkout (``git worktree add ../before23
189c91a``); pyflakes must be installed in this interpreter unless ``--no-pyflakes``.

Each lint is ``python -m ptrport.cli lint PACKAGE --format=json`` in its own process (default
``--jobs``: one per CPU), run from the unpacked package's directory with ``PYTHONPATH`` set to
the checkout (and this interpreter for both); pyflakes is ``python -m pyflakes PACKAGE`` there.
Untimed first: every file read once, and one lint of each side on the smallest package, which
compiles each side's modules into a temporary ``PYTHONPYCACHEPREFIX`` (as pip compiles an
installed package's; ``--no-bytecode`` leaves the environment as it is).

Prints each checkout's commit, each run, and a table of the files, the median wall time of each
side, the ratio of this checkout's median to the other's, the pyflakes median and the findings
of each side per package, with an overall line (sums of the medians). Exit status 2 when the
cache or the other checkout is missing (one line) or a lint fails (an exit status other than 0
or 1, or a traceback); 0 otherwise.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from real_engines import CACHE, ENGINES

ROOT = Path(__file__).resolve().parent.parent
AGAINST = ROOT.parent / "before23"


class Failed(RuntimeError):
    """A lint or pyflakes run that did not finish; the message is one line."""


@dataclass
class Side:
    """One checkout: where it is, what it is, and its runs."""

    label: str
    root: Path
    bytecode: str | None = None
    """Where its modules' compiled bytecode is kept (``PYTHONPYCACHEPREFIX``), as pip compiles
    an installed package's; ``None``: as this environment says (perhaps compiled each run)."""
    times: dict[str, list[float]] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    findings: dict[str, int] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONPATH": str(self.root)}
        if self.bytecode is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = self.bytecode
        return env


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or ["no output"])[-1]


def describe(side: Side, cwd: Path) -> str:
    """Checks that ``side``'s ptrport is the one imported; its commit, and whether it is edited."""
    done = subprocess.run(
        [sys.executable, "-c", "import ptrport; print(ptrport.__file__)"],
        cwd=cwd,
        env=side.env,
        capture_output=True,
        text=True,
        check=False,
    )
    imported = Path(done.stdout.strip()).resolve()
    if done.returncode != 0 or not imported.is_relative_to(side.root):
        found = done.stdout.strip() or _last_line(done.stderr)
        raise Failed(f"{side.label}: ptrport is not imported from {side.root} ({found})")
    git = ["git", "-C", str(side.root)]
    commit = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    edited = subprocess.run(
        [*git, "status", "--porcelain", "--", "ptrport"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    state = ", ptrport/ edited" if edited else ""
    return f"{side.label:<6} {side.root} at {commit or '?'}{state}: {imported}"


def lint(side: Side, cwd: Path, package: str) -> tuple[float, int, int]:
    """One ``ptrport lint`` of ``package``: its wall time, files and reported findings."""
    command = [sys.executable, "-m", "ptrport.cli", "lint", package, "--format=json"]
    began = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, env=side.env, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - began
    if done.returncode not in (0, 1) or "Traceback (most recent call last)" in done.stderr:
        last = _last_line(done.stderr)
        raise Failed(
            f"{side.label}: ptrport lint {package} failed (exit {done.returncode}): {last}"
        )
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise Failed(f"{side.label}: ptrport lint {package}: no JSON on stdout ({exc})") from None
    reported = [f for f in document["findings"] if f.get("suppressed") is None]
    return elapsed, int(document["files"]), len(reported)


def pyflakes(cwd: Path, package: str) -> tuple[float, int]:
    """One pyflakes run on ``package``: its wall time and the lines it printed."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pyflakes", package],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - began
    if done.returncode not in (0, 1) or "Traceback (most recent call last)" in done.stderr:
        raise Failed(
            f"pyflakes {package} failed (exit {done.returncode}): {_last_line(done.stderr)}"
        )
    return elapsed, len(done.stdout.splitlines())


def record(side: Side, package: str, run: tuple[float, int, int], attempt: int) -> None:
    elapsed, files, findings = run
    side.times.setdefault(package, []).append(elapsed)
    first = side.findings.setdefault(package, findings)
    if first != findings:
        print(f"{side.label}: {package} run {attempt + 1} gave {findings} findings, not {first}")
    side.files[package] = files
    print(f"  {side.label:<8} {elapsed:7.2f} s  {files} files, {findings} findings", flush=True)


def table(before: Side, after: Side, flakes: dict[str, list[float]]) -> list[list[str]]:
    """The rows of the result: one per package and an overall one (sums of the medians)."""
    rows = [
        [
            "package",
            "files",
            "before s",
            "after s",
            "after/before",
            "pyflakes s",
            "findings before",
            "findings after",
        ]
    ]
    sums = [0.0, 0.0, 0.0]
    for name in after.times:
        medians = [statistics.median(before.times[name]), statistics.median(after.times[name])]
        flake = statistics.median(flakes[name]) if name in flakes else None
        sums = [sums[0] + medians[0], sums[1] + medians[1], sums[2] + (flake or 0.0)]
        files = str(after.files[name])
        if before.files[name] != after.files[name]:
            files = f"{before.files[name]}/{after.files[name]}"
        rows.append(
            [
                name,
                files,
                f"{medians[0]:.2f}",
                f"{medians[1]:.2f}",
                f"{medians[1] / medians[0]:.3f}",
                "-" if flake is None else f"{flake:.2f}",
                str(before.findings[name]),
                str(after.findings[name]),
            ]
        )
    rows.append(
        [
            "overall",
            str(sum(after.files.values())),
            f"{sums[0]:.2f}",
            f"{sums[1]:.2f}",
            f"{sums[1] / sums[0]:.3f}",
            f"{sums[2]:.2f}" if flakes else "-",
            str(sum(before.findings.values())),
            str(sum(after.findings.values())),
        ]
    )
    return rows


def plain(rows: list[list[str]]) -> str:
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|---" + "|--:" * (len(rows[0]) - 1) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--against", type=Path, default=AGAINST, help=f"the other checkout (default {AGAINST})"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side (default 3)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="real_engines.py's cache")
    parser.add_argument(
        "--pyflakes",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time pyflakes on the same trees too (default: yes)",
    )
    parser.add_argument(
        "--package",
        action="append",
        choices=[e.name for e in ENGINES],
        help="only this package (repeatable; default: all three)",
    )
    parser.add_argument(
        "--bytecode",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="each side's modules compiled once, as an installed package's are (default: yes; "
        "--no-bytecode: as the environment says, PYTHONDONTWRITEBYTECODE compiling them each run)",
    )
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write the table here too")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    unpacked = args.cache.expanduser() / "unpacked"
    trees = {e.name: unpacked / e.unpacked for e in ENGINES if e.name in (args.package or [e.name])}
    missing = [str(tree / name) for name, tree in trees.items() if not (tree / name).is_dir()]
    if missing:
        print(
            f"lint_speed.py: no unpacked package at {', '.join(missing)} "
            "(run benchmarks/real_engines.py first)",
            file=sys.stderr,
        )
        return 2
    against = args.against.expanduser().resolve()
    if not (against / "ptrport" / "lint").is_dir():
        print(f"lint_speed.py: {args.against} is no ptrport checkout", file=sys.stderr)
        return 2
    if args.pyflakes and importlib.util.find_spec("pyflakes") is None:
        print(
            f"lint_speed.py: no pyflakes for {sys.executable} (pip install pyflakes, "
            "or --no-pyflakes)",
            file=sys.stderr,
        )
        return 2
    kept = tempfile.mkdtemp(prefix="lint-speed-bytecode-") if args.bytecode else None
    if kept is not None:
        atexit.register(shutil.rmtree, kept, ignore_errors=True)
    before = Side("before", against, f"{kept}/before" if kept else None)
    after = Side("after", ROOT, f"{kept}/after" if kept else None)
    flakes: dict[str, list[float]] = {}
    began = time.perf_counter()
    try:
        first = next(iter(trees.values()))
        print(f"python {sys.executable}; {os.cpu_count()} CPUs; {args.repeat} runs of each side")
        for side in (before, after):
            print(describe(side, first))
        # Untimed: every file read once, and each side's modules compiled by one lint.
        for name, tree in trees.items():
            for path in (tree / name).rglob("*.py"):
                path.read_bytes()
        smallest = min(trees, key=lambda name: sum(1 for _ in (trees[name] / name).rglob("*.py")))
        for side in (before, after):
            lint(side, trees[smallest], smallest)
        for name, tree in trees.items():
            print(f"{name} ({tree})", flush=True)
            for attempt in range(args.repeat):
                order = (before, after) if attempt % 2 == 0 else (after, before)
                for side in order:
                    record(side, name, lint(side, tree, name), attempt)
                if args.pyflakes:
                    elapsed, lines = pyflakes(tree, name)
                    flakes.setdefault(name, []).append(elapsed)
                    print(f"  {'pyflakes':<8} {elapsed:7.2f} s  {lines} lines", flush=True)
    except Failed as exc:
        print(f"lint_speed.py: {exc}", file=sys.stderr)
        return 2
    rows = table(before, after, flakes)
    print()
    print(plain(rows))
    print(f"total wall time {time.perf_counter() - began:.1f} s")
    if args.markdown is not None:
        args.markdown.write_text(markdown(rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
