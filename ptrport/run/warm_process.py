"""The warm process: forked from the run's process as its checks are about to run, it has
everything that process imported and collected (torch, Triton, Hypothesis, the plugin, the
user's test modules and the engine they import) and never runs a check. Each isolated child is
forked from it, so a fresh child costs a fork, not an interpreter that imports everything again.

The run's process and the warm process talk over a Unix socket pair, one JSON message a line:

- warm → run, once: ``{"ready": PID}``, or ``{"unsafe": REASON}`` before it ends (it found, as
  forked, that a fork cannot carry what it holds);
- run → warm: ``{"fork": true}`` with three file descriptors (the child's end of its command
  pipe, of its answer pipe, and its output file); warm → run: ``{"forked": PID}``;
- warm → run: ``{"exited": PID, "status": CODE}`` when a child ends (``CODE`` as ``Popen``'s
  ``returncode``): a forked child's exit status reaches only its parent, the warm process.

The run's process closing its end tells the warm process to kill what children it still has
and end. The warm process is in a process group of its own and ignores SIGINT, so that the
terminal's Ctrl-C reaches the run alone; each child is in a session of its own, as a spawned
child is, so that killing its process group kills what it started too. That group is killed
whenever a child ends, however it ended, before the child is reaped: the processes a check
started end with the child that ran it.

Should the warm process die, its children live on as orphans: adopted by this process where it
adopts orphans (PID 1 in a container, a subreaper), which then reaps them and knows how they
ended; by another process elsewhere, and a child that ended there is reported with what is
known, that it ended and not how.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from ptrport.device.fork_safety import quiet_fork
from ptrport.run.children import (
    CLOSE_S,
    OUTPUT_FILE,
    STARTUP_S,
    STATUS_UNKNOWN,
    WAIT_S,
    Child,
    ended_unreaped,
    kill_group,
)


@dataclass(frozen=True)
class ChildPipes:
    """What a forked child is given: its ends of the two pipes, and its output file."""

    commands: int
    answers: int
    output: int


class WarmProcess:
    """The run's handle on its warm process."""

    def __init__(self, pid: int, link: socket.socket) -> None:
        self.pid = pid
        self._link: socket.socket | None = link
        self._unread = b""
        self._replies: list[dict[str, Any]] = []
        self._exits: dict[int, int] = {}

    @classmethod
    def start(
        cls, prepare: Callable[[], str | None], serve_child: Callable[[ChildPipes], None]
    ) -> WarmProcess | str:
        """Fork the warm process; in it, ``prepare()`` says why it cannot serve (or readies
        it), and each child it forks runs ``serve_child``. The handle, or why there is none."""
        link, warm_end = socket.socketpair()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        try:
            with quiet_fork():
                pid = os.fork()
        except OSError as exc:
            link.close()
            warm_end.close()
            return f"the warm process could not be forked: {exc.strerror or exc}"
        if pid == 0:
            try:
                link.close()
                _serve(warm_end, prepare, serve_child)
            finally:
                os._exit(1)  # _serve never returns: anything else is a failure of its own
        warm_end.close()
        warm = cls(pid, link)
        try:
            first = warm._reply(STARTUP_S)
        except BaseException:  # Ctrl-C while it prepares: it must not live on as an orphan
            warm.close(at_once=True)
            raise
        if first is None or "ready" not in first:
            warm.close()
            if first is None:
                return "the warm process ended before it was ready"
            return str(first.get("unsafe"))
        return warm

    def fork_child(self, directory: Path) -> Child | None:
        """A child forked from the warm process, its output in ``directory``; ``None`` if the
        warm process is gone."""
        if self._link is None:
            self.close()
            return None
        commands_read, commands_write = os.pipe()
        answers_read, answers_write = os.pipe()
        output = os.open(directory / OUTPUT_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            socket.send_fds(
                self._link, [b'{"fork": true}\n'], [commands_read, answers_write, output]
            )
            reply = self._reply(STARTUP_S)
        except OSError:
            reply = None
        finally:
            for fd in (commands_read, answers_write, output):
                os.close(fd)
        if reply is None or "forked" not in reply:
            os.close(commands_write)
            os.close(answers_read)
            self.close()
            return None
        return Child(
            ForkedProcess(int(reply["forked"]), self), commands_write, answers_read, directory
        )

    def exit_status(self, pid: int, timeout: float) -> int | None:
        """Child ``pid``'s exit status once it ends, waiting up to ``timeout`` seconds for the
        warm process to report it (``None``: still running)."""
        deadline = time.monotonic() + timeout
        while pid not in self._exits:
            left = deadline - time.monotonic()
            if self._link is not None:
                if not self._receive(max(left, 0.0)) and left <= 0:
                    return None
            elif (status := _orphan_status(pid)) is not None:
                self._exits[pid] = status
            elif left <= 0:
                return None
            else:
                time.sleep(min(WAIT_S, left))
        return self._exits[pid]

    def _reply(self, timeout: float) -> dict[str, Any] | None:
        """The next message that is not a child's exit, within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self._replies:
            left = deadline - time.monotonic()
            if self._link is None or left <= 0:
                return None
            self._receive(left)
        return self._replies.pop(0)

    def _receive(self, timeout: float) -> bool:
        """Take in what the warm process said within ``timeout`` seconds; whether it said
        anything (it ending counts)."""
        assert self._link is not None
        ready, _, _ = select.select([self._link], [], [], timeout)
        if not ready:
            return False
        chunk = self._link.recv(1 << 16)
        if not chunk:
            self._link.close()
            self._link = None
            return True
        *lines, self._unread = (self._unread + chunk).split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "exited" in message:
                self._exits[int(message["exited"])] = int(message["status"])
            else:
                self._replies.append(message)
        return True

    def close(self, *, at_once: bool = False) -> None:
        """End the warm process (it kills what children it still has) and wait for it;
        ``at_once``: kill it, not waiting for it to end by itself."""
        if self._link is not None:
            self._link.close()
            self._link = None
        if at_once:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + CLOSE_S
        while True:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid or time.monotonic() > deadline:
                break
            time.sleep(0.001)
        if not pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)


class ForkedProcess:
    """A child forked from the warm process, as the run's process sees it."""

    def __init__(self, pid: int, warm: WarmProcess) -> None:
        self.pid = pid
        self._warm = warm

    def poll(self) -> int | None:
        return self._warm.exit_status(self.pid, 0.0)

    def wait(self, timeout: float) -> int | None:
        return self._warm.exit_status(self.pid, timeout)

    def kill(self) -> None:
        if self.poll() is None:
            kill_group(self.pid)
            self.wait(CLOSE_S)


def _orphan_status(pid: int) -> int | None:
    """The exit status of child ``pid`` of a warm process that died, once it has ended
    (``None`` while it runs): its own, where this process adopted and so reaps it, else
    :data:`STATUS_UNKNOWN`. Either way its process group is killed."""
    if ended_unreaped(pid):  # adopted here
        kill_group(pid)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
    if _running(pid):
        return None
    kill_group(pid)
    return STATUS_UNKNOWN


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            state = stat.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def _serve(
    link: socket.socket,
    prepare: Callable[[], str | None],
    serve_child: Callable[[ChildPipes], None],
) -> NoReturn:
    """The warm process: fork a child for each request, report each child's end, and end when
    the run's process closes the link."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    woken, wake = os.pipe()
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake)
    unsafe = prepare()
    _tell(link, {"unsafe": unsafe} if unsafe else {"ready": os.getpid()})
    if unsafe:
        os._exit(0)
    # Children then leave what they inherited alone when they collect: fewer pages copied.
    gc.freeze()
    children: set[int] = set()
    try:
        while True:
            ready, _, _ = select.select([link.fileno(), woken], [], [])
            if woken in ready:
                with contextlib.suppress(BlockingIOError):
                    while os.read(woken, 512):
                        pass
                _reap(link, children)
            if link.fileno() in ready:
                data, fds, _, _ = socket.recv_fds(link, 1 << 12, 3)
                if not data:
                    break
                pid = _fork_child(ChildPipes(*fds), serve_child, link, (woken, wake))
                for fd in fds:
                    os.close(fd)
                children.add(pid)
                _tell(link, {"forked": pid})
    finally:
        for pid in children:
            kill_group(pid)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        os._exit(0)


def _fork_child(
    pipes: ChildPipes,
    serve_child: Callable[[ChildPipes], None],
    link: socket.socket,
    wakeup: tuple[int, int],
) -> int:
    with quiet_fork():
        pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        link.close()
        for fd in wakeup:
            os.close(fd)
        serve_child(pipes)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _reap(link: socket.socket, children: set[int]) -> None:
    """Report each child that has ended, having killed its process group while its zombie
    still holds the group's id."""
    while children:
        try:
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if ended is None:
            return
        pid = ended.si_pid
        if pid in children:
            kill_group(pid)
        _, status = os.waitpid(pid, 0)
        if pid in children:
            children.discard(pid)
            _tell(link, {"exited": pid, "status": os.waitstatus_to_exitcode(status)})


def _tell(link: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the run's process ended: the loop sees it next
        link.sendall((json.dumps(message) + "\n").encode())
