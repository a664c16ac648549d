"""The parent's handle on one child process serving isolated checks, however it was started
(forked from the warm process, :mod:`ptrport.run.warm_process`, or spawned as a fresh
interpreter): the two pipes to it, where it last said it was, and how a check in it ended.

The parent sends ``N PATH::NAME`` for check ``N``; the child answers with one JSON message a
line: where check ``N`` is (when it starts, before each example and after each draw: the
example's number and its inputs so far in hex), then its result. A child that dies (or is
killed for saying nothing for ``--example-timeout`` seconds) before a check's result makes that
check ``crashed`` (or ``timed out``) with the last example's inputs.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import pytest

from ptrport.report.records import Outcome

OUTPUT_FILE = "output.txt"
"""What the child printed; the parent keeps its terminal for its own report."""
STARTUP_S = 120.0
"""How long a child may take to import and collect before its first check starts."""
POLL_S = 0.05
"""How often the parent looks at a child that has not answered."""
CLOSE_S = 30.0
"""How long a child may take to finish once the run has no more checks for it."""
STATUS_UNKNOWN = 256
"""The exit status of a child whose end no process could see (its warm process died before
it): none that a process can end with."""


def item_key(item: pytest.Item) -> str:
    """An item as parent and child both name it: its file's absolute path and its name in the
    file (a spawned child's rootdir-relative node ids may differ)."""
    return f"{item.path}::{item.nodeid.split('::', 1)[1]}"


class ChildProcess(Protocol):
    """A child's process as the parent sees it; its exit status is ``Popen``'s ``returncode``
    (``-N``: killed by signal ``N``)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None:
        """Its exit status if it has ended, without waiting."""
        ...

    def wait(self, timeout: float) -> int | None:
        """Its exit status once it ends, waiting up to ``timeout`` seconds (``None``: still
        running)."""
        ...

    def kill(self) -> None:
        """Kill its process group, and wait for it to end."""
        ...


class SpawnedProcess:
    """A child started as a fresh interpreter, in a session of its own. Whenever it ends, what
    it started ends too: its process group is killed before it is reaped."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self.pid = process.pid

    def poll(self) -> int | None:
        if self._process.returncode is None:
            # Reaped only once seen ended: one that ends between the look and a reap would
            # leave its group alive, its id free for another process.
            if not ended_unreaped(self.pid):
                return None
            kill_group(self.pid)
        return self._process.poll()

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(WAIT_S, left))
        return code

    def kill(self) -> None:
        if self._process.returncode is None:
            kill_group(self.pid)  # its zombie, if it has ended, still holds the group's id
            self._process.wait()


WAIT_S = 0.005
"""How often a wait for a child's end looks whether it has ended."""


def ended_unreaped(pid: int) -> bool:
    """Whether this process's child ``pid`` has ended; it stays unreaped, so that its process
    group's id cannot be taken by another process until it is."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return False


def kill_group(pid: int) -> None:
    """Kill ``pid``'s process group (a child's session: the child and all it started that
    stayed there), or ``pid`` if it has not made one yet."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


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


def _fatal(directory: Path) -> str:
    """The interpreter's own last words (faulthandler's ``Fatal Python error: ...``), if any."""
    try:
        text = (directory / OUTPUT_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    marker = "Fatal Python error"
    # Anywhere in a line: the child's terminal may have been in the middle of one.
    lines = [line[line.index(marker) :].strip() for line in text.splitlines() if marker in line]
    return f" ({lines[0]})" if lines else ""


def _death(code: int) -> str:
    if code == STATUS_UNKNOWN:
        return (
            "the check's process ended without a result after its warm process died "
            "(exit status unknown)"
        )
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the check's process was killed by {name}"
    return f"the check's process exited with status {code} without a result"


class Child:
    """The parent's handle on one child process serving checks: ``commands`` and ``answers``
    are this side's ends of its two pipes."""

    def __init__(self, process: ChildProcess, commands: int, answers: int, directory: Path) -> None:
        self.process = process
        self.directory = directory
        self._answers = answers
        self._commands: IO[str] | None = os.fdopen(commands, "w")
        self._unread = b""
        self._open = True
        self._sent = 0
        self.progress: dict[str, Any] = {}
        """Where the child last said it was: ``command``, ``count`` and ``example``."""
        self._results: dict[int, dict[str, Any]] = {}
        self._heard = time.monotonic()

    @classmethod
    def spawn(cls, command: list[str], directory: Path) -> Child:
        """A fresh interpreter running ``command``, told its pipes by
        ``--ptrport-child=COMMANDS,ANSWERS``."""
        commands_read, commands_write = os.pipe()
        answers_read, answers_write = os.pipe()
        with (directory / OUTPUT_FILE).open("ab") as output:
            process = subprocess.Popen(
                [*command, f"--ptrport-child={commands_read},{answers_write}"],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=(commands_read, answers_write),
            )
        os.close(commands_read)
        os.close(answers_write)
        return cls(SpawnedProcess(process), commands_write, answers_read, directory)

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
            if self._open:
                self._listen(POLL_S)
                if number in self._results:
                    break
                ended = self.process.poll()
            else:  # it closed its end: it is ending, or has
                ended = self.process.wait(POLL_S)
            started = self.progress.get("command") == number
            if ended is not None:
                while self._listen(0):
                    pass
                if number in self._results:
                    break
                if not started:
                    return None
                return self._lost(Outcome.CRASHED, began, example_timeout, ended)
            limit = example_timeout if started else max(example_timeout, STARTUP_S)
            if time.monotonic() - self._heard > limit:
                self.kill()
                return self._lost(Outcome.TIMED_OUT, began, example_timeout, None)
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

    def _lost(
        self, outcome: Outcome, began: float, example_timeout: float, code: int | None
    ) -> ChildOutcome:
        duration = time.monotonic() - began
        example, count = self.progress.get("example"), int(self.progress.get("count", 0))
        if outcome is Outcome.TIMED_OUT:
            message = (
                f"timed out: no new example for {example_timeout:g} s (--example-timeout); "
                f"killed in example {count}"
            )
        else:
            where = f" in example {count}" if count else " before its first example"
            message = f"crashed: {_death(code or 0)}{where}{_fatal(self.directory)}"
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
        if self.process.wait(CLOSE_S) is None:
            self.kill()
        with contextlib.suppress(OSError):
            os.close(self._answers)

    def kill(self) -> None:
        self.process.kill()
