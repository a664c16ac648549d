"""Crash isolation: a check run in a child pytest process, so that a subject or engine that
kills its process (a segfault, an abort, a lost device) or hangs costs one result, not the run.

The whole check runs in the child, not only ``execute``: a copy writes into allocations that
the same check then verifies, so they must share a process. The child runs the one test item
(``pytest NODEID --ptrport-child=DIR``) with the parent's options, and writes:

- ``DIR/example.json`` before each example and after each draw: the inputs so far, in hex, so
  that the parent can say which example a crash or a hang happened in;
- ``DIR/result.json`` when the item is done: pytest's serialized reports of it, the last
  carrying its :class:`~harness.records.Result`, which the parent replays as if it had run the
  item (so the result reaches whoever keeps the report, as any other).

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
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from harness import examples
from harness.outcomes import check_record
from harness.plugin import CHECK_ATTRIBUTE, RESULT_ATTRIBUTE
from harness.records import Outcome, describe_example
from harness.report import write_json_atomically
from harness.scenario_items import check_info
from harness.user_subjects import UserSubject

if TYPE_CHECKING:
    from harness.outcomes import CheckOutcomes
    from harness.scenario_items import CheckInfo
    from harness.session import RunSettings

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
    item: pytest.Item,
    directory: Path,
    *,
    settings: RunSettings,
    backend: str,
    config: pytest.Config,
) -> list[str]:
    """The pytest command that runs one item in a child, as the parent would have run it: the
    item by its absolute path, the parent's rootdir and configuration file, none of its
    ``addopts`` (a ``-n`` there would start workers in the child)."""
    function = item.nodeid.split("::", 1)[1]
    command = [
        sys.executable,
        "-m",
        "pytest",
        f"{item.path}::{function}",
        f"--rootdir={config.rootpath}",
        *(["-c", str(config.inipath)] if config.inipath is not None else []),
        "-o",
        "addopts=",
        "-p",
        "no:cacheprovider",
        "-q",
        "--no-header",
        "--no-isolate",
        f"--ptrport-child={directory}",
        f"--backend={backend}",
        f"--subject={settings.subject_spec or ','.join(settings.subjects)}",
    ]
    if settings.run_seed != examples.DERANDOMIZED:
        command.append(f"--hypothesis-seed={settings.run_seed}")
    return command


_LOST_PHASES: tuple[
    tuple[Literal["setup", "call", "teardown"], Literal["passed", "failed"]], ...
] = (("setup", "passed"), ("call", "failed"), ("teardown", "passed"))
"""The reports an isolated check that crashed or hung is shown with."""


class IsolatedChecks:
    """The parent side of isolation: which checks run in a child, and each one's reports (and
    so its result) replayed here, or made up for a child that died or hung."""

    def __init__(self, config: pytest.Config, settings: RunSettings) -> None:
        self.config = config
        self.settings = settings

    def isolates(self, info: CheckInfo) -> bool:
        if info.unavailable:
            return False
        if self.settings.isolate is not None:
            return self.settings.isolate
        return info.backend.device.type != "cpu" or isinstance(info.subject, UserSubject)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        info = check_info(item)
        if info is None or not self.isolates(info):
            return None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        with tempfile.TemporaryDirectory(prefix="ptrport-child-") as directory:
            command = child_command(
                item,
                Path(directory),
                settings=self.settings,
                backend=info.backend.name,
                config=self.config,
            )
            ended = run_child(
                command, Path(directory), example_timeout=self.settings.example_timeout
            )
        if ended.result is not None:
            reports = [self._as_ours(item, data) for data in ended.result["reports"]]
        else:
            reports = self._lost(item, info, ended)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def _as_ours(self, item: pytest.Item, data: dict[str, Any]) -> Any:
        """A child's report as this run names the item: the child ran it by its absolute path,
        which it may name otherwise (a module outside the rootdir, as an installed package's
        scenarios are, has no rootdir-relative path)."""
        report = self.config.hook.pytest_report_from_serializable(config=self.config, data=data)
        report.nodeid, report.location = item.nodeid, item.location
        record = getattr(report, RESULT_ATTRIBUTE, None)
        if record is not None:
            record["nodeid"] = item.nodeid
        return report

    def _lost(self, item: pytest.Item, info: CheckInfo, ended: ChildOutcome) -> list[Any]:
        assert ended.outcome is not None and ended.message is not None
        result = info.result(
            ended.outcome,
            message=ended.message,
            example=ended.example,
            examples=ended.examples,
            found_after=ended.examples or None,
            duration_s=ended.duration_s,
            nodeid=item.nodeid,
        )
        reports = []
        for when, outcome in _LOST_PHASES:
            report = pytest.TestReport(
                item.nodeid,
                item.location,
                {},
                outcome,
                ended.message if when == "call" else None,
                when,
                duration=ended.duration_s if when == "call" else 0.0,
            )
            setattr(report, CHECK_ATTRIBUTE, check_record(info))
            if when == "teardown":
                setattr(report, RESULT_ATTRIBUTE, result.to_record())
            reports.append(report)
        return reports


class ChildSide:
    """The child side of isolation: where each example is, and the item's reports (its result
    riding on the last), written for the parent."""

    def __init__(self, directory: Path, checks: CheckOutcomes, config: pytest.Config) -> None:
        self.directory = directory
        self.config = config
        self._reports: list[dict[str, Any]] = []
        checks.on_progress = self._tell_parent

    def _tell_parent(self, log: examples.ExampleLog, inputs: dict[str, Any]) -> None:
        progress = {"count": log.count, "example": describe_example(inputs)}
        write_json_atomically(self.directory / EXAMPLE_FILE, progress)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self._reports.append(data)
        if getattr(report, RESULT_ATTRIBUTE, None) is not None:
            write_json_atomically(self.directory / RESULT_FILE, {"reports": self._reports})
