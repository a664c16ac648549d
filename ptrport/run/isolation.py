"""Crash isolation: checks run in a child pytest process, so that a subject or engine that kills
its process (a segfault, an abort, a lost device) or hangs costs one result, not the run.

The whole check runs in the child, not only ``execute``: a copy writes into allocations that
the same check then verifies, so they must share a process. One child serves the whole run (one
per xdist worker): it starts as soon as the run's isolated checks are collected, imports torch,
Triton and Hypothesis once, collects those checks with the parent's options, then runs the
checks the parent sends it, one after another, each as its own pytest protocol
(``nextitem=None``: every fixture torn down, and the check's backend scope undone, as
in-process).

Two pipes connect them: the parent sends ``N PATH::NAME`` for check ``N``; the child answers
with one JSON message a line: where check ``N`` is (when it starts, before each example and
after each draw: the example's number and its inputs so far in hex, so that the parent can say
which example a crash or a hang happened in), then its result (pytest's serialized reports of
it, the last carrying its :class:`~ptrport.report.records.Result`, which the parent replays as
if it had run the item, so the result reaches whoever keeps the report, as any other). The parent
kills the child's process group when it has heard nothing for ``--example-timeout`` seconds. A
check whose child died (or was killed) before its result is ``crashed`` (or ``timed out``) with
the last example's inputs; a new child is started for the next check.

A check that corrupts the child's memory without killing it must not poison later results, so
the child also ends after any check that failed, errored or passed unexpectedly
(:data:`FRESH_CHILD_AFTER`), and the next check gets a fresh one. An expected failure (a
control caught) does not end it: that failure is our own verification finding the bytes a
subject wrote, in memory the check owns, wrong.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import pytest

from ptrport.check import examples
from ptrport.check.user_subjects import UserSubject
from ptrport.report.records import Outcome, describe_example
from ptrport.run.collection import check_info
from ptrport.run.names import CHECK_ATTRIBUTE, RESULT_ATTRIBUTE

if TYPE_CHECKING:
    from ptrport.run.collection import CheckInfo
    from ptrport.run.outcomes import CheckOutcomes
    from ptrport.run.settings import RunSettings

OUTPUT_FILE = "output.txt"
"""What the child printed; the parent keeps its terminal for its own report."""
STARTUP_S = 120.0
"""How long a child may take to import and collect before its first check starts."""
POLL_S = 0.05
"""How often the parent looks at a child that has not answered."""
CLOSE_S = 30.0
"""How long a child may take to finish once the run has no more checks for it."""
FRESH_CHILD_AFTER = frozenset({Outcome.FAILED, Outcome.ERROR, Outcome.XPASSED})
"""Outcomes after which the child ends, so that what the check did to it cannot leak on."""
WORKER_OUTPUT_KEY = "ptrport_isolation"
"""Where an xdist worker hands its children's counts to the controller."""


@dataclass(frozen=True)
class ChildOutcome:
    """How a check in a child ended: with its own result, or by the child dying or hanging."""

    result: dict[str, Any] | None
    """The check's result message from the child (its serialized reports), if it sent one."""
    outcome: Outcome | None
    """``CRASHED``, ``TIMED_OUT`` (or ``ERROR``) when there is no result."""
    message: str | None
    example: dict[str, Any] | None
    """The inputs of the example the child was in."""
    examples: int
    duration_s: float


@dataclass
class Counts:
    """How many children a run started, and why the ones after the first."""

    checks: int = 0
    started: int = 0
    crashed: int = 0
    timed_out: int = 0
    after_failure: int = 0

    def add(self, other: dict[str, int]) -> None:
        for name, value in other.items():
            if name in self.__dataclass_fields__:
                setattr(self, name, getattr(self, name) + int(value))

    def to_record(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def summary(self) -> str:
        return (
            f"isolation: {self.started} child process{'es' if self.started != 1 else ''} "
            f"for {self.checks} isolated check{'s' if self.checks != 1 else ''} "
            f"(restarted after {self.crashed} crashed, {self.timed_out} timed out, "
            f"{self.after_failure} failed)"
        )


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


def item_key(item: pytest.Item) -> str:
    """An item as parent and child both name it: its file's absolute path and its name in the
    file (their rootdir-relative node ids may differ)."""
    return f"{item.path}::{item.nodeid.split('::', 1)[1]}"


class Child:
    """The parent's handle on one child process serving checks."""

    def __init__(self, command: list[str], directory: Path) -> None:
        self.directory = directory
        commands_read, commands_write = os.pipe()
        self._answers, answers_write = os.pipe()
        with (directory / OUTPUT_FILE).open("ab") as output:
            self.process = subprocess.Popen(
                [*command, f"--ptrport-child={commands_read},{answers_write}"],
                start_new_session=True,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=(commands_read, answers_write),
            )
        os.close(commands_read)
        os.close(answers_write)
        self._commands: IO[str] | None = os.fdopen(commands_write, "w")
        self._unread = b""
        self._open = True
        self._sent = 0
        self.progress: dict[str, Any] = {}
        """Where the child last said it was: ``command``, ``count`` and ``example``."""
        self._results: dict[int, dict[str, Any]] = {}
        self._heard = time.monotonic()

    def send(self, key: str) -> int | None:
        """Ask the child to run the check ``key``; its command number, or ``None`` if the child
        can no longer take commands."""
        if self._commands is None or self.process.poll() is not None:
            return None
        self._sent += 1
        try:
            self._commands.write(f"{self._sent} {key}\n")
            self._commands.flush()
        except OSError:
            return None
        self._heard = time.monotonic()
        return self._sent

    def wait(self, number: int, example_timeout: float) -> ChildOutcome | None:
        """The outcome of command ``number``, or ``None`` if the child ended without starting
        it. Kills the child if it has said nothing for ``example_timeout`` seconds."""
        began = time.monotonic()
        while number not in self._results:
            self._listen(POLL_S)
            if number in self._results:
                break
            started = self.progress.get("command") == number
            if self.process.poll() is not None:
                while self._listen(0):
                    pass
                if number in self._results:
                    break
                if not started:
                    return None
                return self._lost(Outcome.CRASHED, began, example_timeout)
            limit = example_timeout if started else max(example_timeout, STARTUP_S)
            if time.monotonic() - self._heard > limit:
                self.kill()
                return self._lost(Outcome.TIMED_OUT, began, example_timeout)
        duration = time.monotonic() - began
        count = int(self.progress.get("count", 0))
        result = self._results.pop(number)
        if "missing" in result:
            message = "error: the isolated child did not collect this check"
            return ChildOutcome(None, Outcome.ERROR, message, None, count, duration)
        return ChildOutcome(result, None, None, None, count, duration)

    def _listen(self, timeout: float) -> bool:
        """Take in what the child said within ``timeout`` seconds; whether it said anything."""
        if not self._open:
            return False
        ready, _, _ = select.select([self._answers], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self._answers, 1 << 16)
        if not chunk:
            self._open = False
            return False
        self._heard = time.monotonic()
        *lines, self._unread = (self._unread + chunk).split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "result" in message:
                self._results[int(message["command"])] = message["result"]
            else:
                self.progress = message
        return True

    def _lost(self, outcome: Outcome, began: float, example_timeout: float) -> ChildOutcome:
        duration = time.monotonic() - began
        example, count = self.progress.get("example"), int(self.progress.get("count", 0))
        if outcome is Outcome.TIMED_OUT:
            message = (
                f"timed out: no new example for {example_timeout:g} s (--example-timeout); "
                f"killed in example {count}"
            )
        else:
            where = f" in example {count}" if count else " before its first example"
            code = self.process.returncode or 0
            message = f"crashed: {_death(code)}{where}{_fatal(self.directory)}"
        return ChildOutcome(None, outcome, message, example, count, duration)

    def last_words(self) -> str:
        """The last line the child printed, as ``: LINE`` (or nothing)."""
        try:
            text = (self.directory / OUTPUT_FILE).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return f": {lines[-1]}" if lines else ""

    def close(self) -> None:
        """No more commands: let the child finish (kill it if it does not) and wait for it."""
        if self._commands is not None:
            with contextlib.suppress(OSError):
                self._commands.close()
            self._commands = None
        try:
            self.process.wait(timeout=CLOSE_S)
        except subprocess.TimeoutExpired:
            self.kill()
        os.close(self._answers)

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def child_command(
    items: list[pytest.Item], *, settings: RunSettings, config: pytest.Config
) -> list[str]:
    """The pytest command of a child that serves ``items``, as the parent would run them: each
    item by its absolute path, the parent's rootdir and configuration file, none of its
    ``addopts`` (a ``-n`` there would start workers in the child)."""
    backends = sorted({info.backend.name for i in items if (info := check_info(i)) is not None})
    command = [
        sys.executable,
        "-m",
        "pytest",
        *(item_key(item) for item in items),
        f"--rootdir={config.rootpath}",
        *(["-c", str(config.inipath)] if config.inipath is not None else []),
        "-o",
        "addopts=",
        "-p",
        "no:cacheprovider",
        "-q",
        "--no-header",
        "--no-isolate",
        f"--backend={','.join(backends)}",
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
    """The parent side of isolation: which checks run in a child, the child that runs them
    (started on the first, replaced after a crash, a hang or a failed check), and each check's
    reports (and so its result) replayed here, or made up for a check whose child died."""

    def __init__(self, config: pytest.Config, settings: RunSettings) -> None:
        self.config = config
        self.settings = settings
        self.counts = Counts()
        self._child: Child | None = None
        self._directory: tempfile.TemporaryDirectory[str] | None = None
        self._items: list[pytest.Item] | None = None

    def isolates(self, info: CheckInfo) -> bool:
        if info.unavailable:
            return False
        if self.settings.isolate is not None:
            return self.settings.isolate
        return (
            info.backend.device.type != "cpu" or info.own or isinstance(info.subject, UserSubject)
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        info = check_info(item)
        if info is None or not self.isolates(info):
            return None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        ended = self._run(item)
        if ended.result is not None:
            reports = [self._as_ours(item, data) for data in ended.result["reports"]]
        else:
            reports = self._lost(item, info, ended)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def _run(self, item: pytest.Item) -> ChildOutcome:
        """Run ``item`` in the child, starting one if there is none; once more in a fresh child
        if the child ended before it started the check (it died while starting)."""
        self.counts.checks += 1
        last_words = ""
        for _ in range(2):
            child = self._child or self._start(item.session)
            number = child.send(item_key(item))
            ended = None if number is None else child.wait(number, self.settings.example_timeout)
            if ended is not None:
                break
            last_words = child.last_words()
            self._end_child()
        else:
            ended = ChildOutcome(
                None,
                Outcome.CRASHED,
                f"crashed: the isolated child ended before it ran the check{last_words}",
                None,
                0,
                0.0,
            )
        if ended.outcome in (Outcome.CRASHED, Outcome.TIMED_OUT):
            if ended.outcome is Outcome.CRASHED:
                self.counts.crashed += 1
            else:
                self.counts.timed_out += 1
            self._end_child()
        elif ended.result is not None and ended.result.get("child_ends"):
            self.counts.after_failure += 1
            self._end_child()
        return ended

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Start the child as soon as the run's isolated checks are known, so that it imports
        and collects while this process gets going."""
        if not self.config.option.collectonly and self._isolated(session):
            self._start(session)

    def _isolated(self, session: pytest.Session) -> list[pytest.Item]:
        if self._items is None:
            self._items = [
                i for i in session.items if (info := check_info(i)) and self.isolates(info)
            ]
        return self._items

    def _start(self, session: pytest.Session) -> Child:
        items = self._isolated(session)
        self._directory = tempfile.TemporaryDirectory(prefix="ptrport-child-")
        directory = Path(self._directory.name)
        command = child_command(items, settings=self.settings, config=self.config)
        self._child = Child(command, directory)
        self.counts.started += 1
        return self._child

    def _end_child(self) -> None:
        if self._child is not None:
            self._child.close()
            self._child = None
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        if self._child is not None and exitstatus == pytest.ExitCode.INTERRUPTED:
            self._child.kill()
        self._end_child()
        workeroutput = getattr(self.config, "workeroutput", None)
        if isinstance(workeroutput, dict):
            workeroutput[WORKER_OUTPUT_KEY] = self.counts.to_record()

    def pytest_unconfigure(self) -> None:
        if self._child is not None:
            self._child.kill()
        self._end_child()

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
            setattr(report, CHECK_ATTRIBUTE, info.identity())
            if when == "teardown":
                setattr(report, RESULT_ATTRIBUTE, result.to_record())
            reports.append(report)
        return reports


class ChildSide:
    """The child side of isolation: the checks the parent sends run one after another; where
    each example is, and each check's reports (its result riding on the last), told to the
    parent."""

    def __init__(self, channel: str, checks: CheckOutcomes, config: pytest.Config) -> None:
        """``channel``: the pipes' file descriptors, ``COMMANDS,ANSWERS``."""
        self.config = config
        commands, answers = (int(fd) for fd in channel.split(","))
        self._commands = os.fdopen(commands, "r")
        self._answers = os.fdopen(answers, "w")
        self._number = 0
        self._reports: list[dict[str, Any]] = []
        self._ends = False
        checks.on_progress = self._tell_parent

    def _tell(self, message: dict[str, Any]) -> None:
        self._answers.write(json.dumps(message) + "\n")
        self._answers.flush()

    def _tell_parent(self, log: examples.ExampleLog, inputs: dict[str, Any]) -> None:
        example = describe_example(inputs)
        self._tell({"command": self._number, "count": log.count, "example": example})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:
            raise session.Interrupted(f"{session.testsfailed} errors during collection")
        items = {item_key(item): item for item in session.items}
        for line in self._commands:
            number, _, key = line.rstrip("\n").partition(" ")
            self._number, self._reports = int(number), []
            self._tell({"command": self._number, "count": 0, "example": None})
            item = items.get(key)
            if item is None:
                self._tell({"command": self._number, "result": {"missing": key}})
            else:
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=None)
            if self._ends or session.shouldstop or session.shouldfail:
                break
        return True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self._reports.append(data)
        record = getattr(report, RESULT_ATTRIBUTE, None)
        if record is not None:
            self._ends = Outcome(record["outcome"]) in FRESH_CHILD_AFTER
            result = {"reports": self._reports, "child_ends": self._ends}
            self._tell({"command": self._number, "result": result})
