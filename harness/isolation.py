"""Crash isolation: a check run in a child pytest process, so that a subject or engine that
kills its process (a segfault, an abort, a lost device) or hangs costs one result, not the run.

The whole check runs in the child, not only ``execute``: a copy writes into allocations that
the same check then verifies, so they must share a process. The child runs the one test item
(``pytest NODEID --ptrport-child=DIR``) with the parent's options, and writes:

- ``DIR/example.json`` before each example and after each draw: the inputs so far, in hex, so
  that the parent can say which example a crash or a hang happened in;
- ``DIR/result.json`` when the item is done: its :class:`~harness.records.Result` and pytest's
  serialized reports, which the parent replays to its terminal as if it had run the item.

The parent waits, and kills the child's process group when no example has started for
``--example-timeout`` seconds. A child that died (or was killed) without ``result.json`` gives a
``crashed`` (or ``timed out``) result carrying the last example's inputs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.records import Outcome

EXAMPLE_FILE = "example.json"
RESULT_FILE = "result.json"
OUTPUT_FILE = "output.txt"
"""What the child printed; the parent keeps its terminal for its own report."""
STARTUP_S = 120.0
"""How long a child may take to import and collect before its first example."""
POLL_S = 0.05


@dataclass(frozen=True)
class ChildOutcome:
    """How a child run ended: with its own result, or by dying or hanging."""

    result: dict[str, Any] | None
    """The child's result record and reports (``RESULT_FILE``), if it wrote them."""
    outcome: Outcome | None
    """``CRASHED`` or ``TIMED_OUT`` when there is no result."""
    message: str | None
    example: dict[str, Any] | None
    """The inputs of the example the child was in."""
    examples: int
    duration_s: float


def _read(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _fatal(directory: Path) -> str:
    """The interpreter's own last words (faulthandler's ``Fatal Python error: ...``), if any."""
    try:
        text = (directory / OUTPUT_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.startswith("Fatal Python error")]
    return f" ({lines[0]})" if lines else ""


def _death(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the check's process was killed by {name}"
    return f"the check's process exited with status {code} without a result"


def run_child(command: Sequence[str], directory: Path, *, example_timeout: float) -> ChildOutcome:
    """Run ``command`` (a child pytest run writing into ``directory``) to its end, killing it
    when one example runs longer than ``example_timeout`` seconds."""
    started = time.monotonic()
    with (directory / OUTPUT_FILE).open("wb") as output:
        process = subprocess.Popen(
            list(command), start_new_session=True, stdout=output, stderr=subprocess.STDOUT
        )
        return _watch(process, directory, example_timeout, started)


def _watch(
    process: subprocess.Popen[bytes], directory: Path, example_timeout: float, started: float
) -> ChildOutcome:
    example_file = directory / EXAMPLE_FILE
    last_progress, last_seen = started, None
    timed_out = False
    while process.poll() is None:
        time.sleep(POLL_S)
        try:
            stamp = example_file.stat().st_mtime_ns
        except FileNotFoundError:
            stamp = None
        now = time.monotonic()
        if stamp != last_seen:
            last_seen, last_progress = stamp, now
        limit = example_timeout if last_seen is not None else max(example_timeout, STARTUP_S)
        if now - last_progress > limit:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            break
    duration = time.monotonic() - started
    progress = _read(example_file) or {}
    example, count = progress.get("example"), int(progress.get("count", 0))
    result = None if timed_out else _read(directory / RESULT_FILE)
    if result is not None:
        return ChildOutcome(result, None, None, None, count, duration)
    if timed_out:
        message = (
            f"timed out: no new example for {example_timeout:g} s (--example-timeout); "
            f"killed in example {count}"
        )
        return ChildOutcome(None, Outcome.TIMED_OUT, message, example, count, duration)
    where = f" in example {count}" if count else " before its first example"
    message = f"crashed: {_death(process.returncode or 0)}{where}{_fatal(directory)}"
    return ChildOutcome(None, Outcome.CRASHED, message, example, count, duration)


def child_command(
    nodeid: str,
    directory: Path,
    *,
    backend_spec: str,
    subject_spec: str | None,
    run_seed: str,
    derandomized: bool,
    rootdir: Path,
) -> list[str]:
    """The pytest command that runs one item in a child, as the parent would have run it."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        nodeid,
        f"--rootdir={rootdir}",
        "-p",
        "no:cacheprovider",
        "-q",
        "--no-header",
        "--no-isolate",
        f"--ptrport-child={directory}",
        f"--backend={backend_spec}",
    ]
    if subject_spec is not None:
        command.append(f"--subject={subject_spec}")
    if not derandomized:
        command.append(f"--hypothesis-seed={run_seed}")
    return command
