"""The rules a process must keep to be forked for checks, the device asked from a forked child,
and the warm process's handling of the children it forks."""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ptrport.device import fork_safety
from ptrport.device.backends import Backend, Fingerprint
from ptrport.errors import HarnessError
from ptrport.report.records import Outcome
from ptrport.run.warm_process import ChildPipes, WarmProcess

ASKED: list[int] = []
"""What a question asked in a forked child appended to (in the child's copy only)."""


def test_this_platform_forks_and_no_device_is_initialized_here() -> None:
    assert fork_safety.platform_forks() is None
    assert fork_safety.initialized_devices() is None
    assert fork_safety.spoiled_devices() is None


def test_a_python_thread_started_since_the_count_is_named_until_it_ends() -> None:
    # Native threads of this process come and go with other tests: only Python's are counted.
    since = fork_safety.Threads(fork_safety.Threads.now().native + 1000, frozenset())
    since = fork_safety.Threads(since.native, fork_safety.python_threads())
    assert fork_safety.started_threads(since) is None
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="engine-loader")
    thread.start()
    try:
        reason = fork_safety.started_threads(since)
        assert reason is not None
        assert reason == (
            "1 thread (engine-loader) started since pytest loaded ptrport: a conftest, a plugin "
            "or a test module started them"
        )
    finally:
        stop.set()
        thread.join()
    assert fork_safety.started_threads(since) is None


def test_more_native_threads_than_after_the_imports_are_counted_whoever_started_them() -> None:
    now = fork_safety.Threads.now()
    reason = fork_safety.started_threads(fork_safety.Threads(now.native - 1, now.python))
    assert reason == (
        f"1 thread started since pytest loaded ptrport ({now.native} threads now, "
        f"{now.native - 1} after ptrport's imports, OpenBLAS's pools aside): a conftest, a "
        "plugin or a test module started them"
    )


@pytest.mark.parametrize("pool", [1, 2, 4])
def test_openblas_pools_are_not_counted_as_threads_a_fork_cannot_carry(pool: int) -> None:
    script = (
        "import numpy\n"
        "from ptrport.device.fork_safety import Threads, openblas_threads\n"
        "print(openblas_threads(), Threads.now().native)\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(pool)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    servers, native = map(int, done.stdout.split())
    assert servers == min(pool, os.cpu_count() or 1) - 1  # OpenBLAS runs no more than the CPUs
    assert native == 1  # the main thread alone


def test_the_openmp_probe_finds_the_pool_a_parallel_op_started_and_only_then() -> None:
    # In a fresh interpreter: this one may have run parallel ops already. A pool of two threads,
    # on one core as on many.
    script = (
        "import torch\n"
        "torch.set_num_threads(2)\n"
        "from ptrport.device.fork_safety import openmp_hangs\n"
        "print(openmp_hangs())\n"
        "torch.ones(1 << 20).add_(1)\n"
        "print(openmp_hangs())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    before, after = done.stdout.splitlines()
    assert before == "None"
    assert after.startswith("OpenMP's thread pool was started before the fork")


def _remember_and_answer() -> Fingerprint:
    ASKED.append(os.getpid())
    return {"pid": str(os.getpid()), "nothing": None}


def test_the_device_is_asked_in_a_forked_child_and_what_it_did_stays_there() -> None:
    answer = fork_safety.ask_in_fork(_remember_and_answer)
    assert sorted(answer) == ["nothing", "pid"] and answer["nothing"] is None
    assert int(str(answer["pid"])) != os.getpid()
    assert ASKED == []


def _raise() -> Fingerprint:
    raise RuntimeError("no device\nsecond line")


def _die() -> Fingerprint:
    os.kill(os.getpid(), signal.SIGKILL)
    return {}


def test_a_question_that_raises_or_kills_its_child_is_a_harness_error() -> None:
    with pytest.raises(HarnessError, match=r"^asking the device raised RuntimeError: no device$"):
        fork_safety.ask_in_fork(_raise)
    with pytest.raises(HarnessError, match=r"ended its process with status -9$"):
        fork_safety.ask_in_fork(_die)


class _AskedBackend(Backend):
    name = "asked"
    device_type = "cpu"

    def _unavailable_reason(self) -> str | None:
        return None

    def _ask_device(self) -> Fingerprint:
        return {"device_model": f"asked by {os.getpid()}"}

    def device_model(self) -> str | None:
        return self.device_facts.get("device_model")


def test_a_backend_asks_its_device_once_and_not_in_this_process() -> None:
    backend = _AskedBackend()
    model = backend.device_model()
    assert model is not None and model != f"asked by {os.getpid()}"
    assert backend.device_model() == model


def _answer_then(then: str) -> Callable[[ChildPipes], None]:
    """What a forked child runs: it takes its first command, says it started it and is in
    example 2, then ends as ``then`` says."""

    def serve(pipes: ChildPipes) -> None:
        os.dup2(pipes.output, 1)
        os.read(pipes.commands, 4096)
        said = b'{"command": 1, "count": 2, "example": {"src": "0x8000000000000000"}}\n'
        os.write(pipes.answers, said)
        if then == "segfault":
            faulthandler.disable()  # this process's own last words would reach the terminal
            os.write(1, b"Fatal Python error: Segmentation fault\n")
            os.kill(os.getpid(), signal.SIGSEGV)
        if then == "hang":
            time.sleep(600)

    return serve


@pytest.mark.parametrize(
    ("then", "outcome", "message"),
    [
        (
            "segfault",
            Outcome.CRASHED,
            "crashed: the check's process was killed by SIGSEGV in example 2 "
            "(Fatal Python error: Segmentation fault)",
        ),
        (
            "hang",
            Outcome.TIMED_OUT,
            "timed out: no new example for 1 s (--example-timeout); killed in example 2",
        ),
    ],
)
def test_a_forked_childs_end_reaches_the_run_through_the_warm_process(
    tmp_path: Path, then: str, outcome: Outcome, message: str
) -> None:
    warm = WarmProcess.start(prepare=lambda: None, serve_child=_answer_then(then))
    assert isinstance(warm, WarmProcess)
    try:
        child = warm.fork_child(tmp_path)
        assert child is not None and child.process.pid not in (os.getpid(), warm.pid)
        assert child.send("a.py::test_a") == 1
        ended = child.wait(1, example_timeout=1)
        assert ended is not None and (ended.outcome, ended.message) == (outcome, message)
        assert ended.example == {"src": "0x8000000000000000"}
        expected = -signal.SIGSEGV if then == "segfault" else -signal.SIGKILL
        assert child.process.poll() == expected
        child.close()
    finally:
        warm.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(warm.pid, os.WNOHANG)


def test_a_warm_process_that_finds_itself_unsafe_says_why_and_ends() -> None:
    said = WarmProcess.start(
        prepare=lambda: "a device the fork spoiled", serve_child=_answer_then("return")
    )
    assert said == "a device the fork spoiled"


def test_closing_the_warm_process_ends_the_children_it_still_has(tmp_path: Path) -> None:
    warm = WarmProcess.start(prepare=lambda: None, serve_child=_answer_then("hang"))
    assert isinstance(warm, WarmProcess)
    child = warm.fork_child(tmp_path)
    assert child is not None and child.send("a.py::test_a") == 1
    warm.close()
    _wait_until_ended(child.process.pid, 30, "the child outlived its warm process")


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _wait_until_ended(pid: int, seconds: float, failure: str) -> None:
    deadline = time.monotonic() + seconds
    while _running(pid):
        assert time.monotonic() < deadline, failure
        time.sleep(0.05)


def _start_a_sleeper_then(then: str, pids: Path) -> Callable[[ChildPipes], None]:
    """What a forked child runs: it starts a process of its own (an engine's worker, say),
    writes its pid to ``pids``, then serves as :func:`_answer_then` does."""

    def serve(pipes: ChildPipes) -> None:
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        pids.write_text(str(sleeper.pid))
        _answer_then(then)(pipes)

    return serve


@pytest.mark.parametrize("then", ["return", "segfault", "hang"])
def test_what_a_forked_child_started_ends_with_it_however_it_ends(
    tmp_path: Path, then: str
) -> None:
    pids = tmp_path / "sleeper.pid"
    warm = WarmProcess.start(prepare=lambda: None, serve_child=_start_a_sleeper_then(then, pids))
    assert isinstance(warm, WarmProcess)
    try:
        child = warm.fork_child(tmp_path)
        assert child is not None and child.send("a.py::test_a") == 1
        child.wait(1, example_timeout=1)
        child.close()
        _wait_until_ended(
            int(pids.read_text()), 10, f"the child's own process outlived it ({then})"
        )
    finally:
        warm.close()
        with contextlib.suppress(ValueError, OSError):
            os.kill(int(pids.read_text()), signal.SIGKILL)


ORPHANED = """
import ctypes, json, os, signal, sys, time
from pathlib import Path

from ptrport.run.warm_process import WarmProcess

if sys.argv[1] == "subreaper":
    assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER


def serve(pipes):
    os.dup2(pipes.output, 1)
    os.read(pipes.commands, 4096)
    os.write(pipes.answers, b'{"command": 1, "count": 2, "example": {}}\\n')
    os.read(pipes.commands, 4096)  # the second command: by then its warm process is dead
    os.kill(os.getpid(), signal.SIGSEGV)


warm = WarmProcess.start(prepare=lambda: None, serve_child=serve)
child = warm.fork_child(Path(sys.argv[2]))
child.send("a.py::test_a")
while not child.progress:
    child._listen(0.05)
os.kill(warm.pid, signal.SIGKILL)
os.waitpid(warm.pid, 0)
child.send("a.py::test_b")
began = time.monotonic()
ended = child.wait(1, example_timeout=60)
print(json.dumps({"outcome": ended.outcome.value, "message": ended.message,
                  "seconds": time.monotonic() - began}))
"""


@pytest.mark.parametrize(
    ("adopter", "message"),
    [
        (
            "init",
            "crashed: the check's process ended without a result after its warm process died "
            "(exit status unknown) in example 2",
        ),
        ("subreaper", "crashed: the check's process was killed by SIGSEGV in example 2"),
    ],
)
def test_a_child_whose_warm_process_died_is_reported_with_what_is_known(
    tmp_path: Path, adopter: str, message: str
) -> None:
    """The warm process dies, then its child crashes: adopted by whatever adopts orphans here,
    it ended, and how is not known; adopted by the run's process (a subreaper, as PID 1 in a
    container is), the run reaps it and knows."""
    done = subprocess.run(
        [sys.executable, "-c", ORPHANED, adopter, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert (said["outcome"], said["message"]) == (Outcome.CRASHED.value, message)
    assert said["seconds"] < 10, "a dead child was taken for a live one until the timeout"


STARTING = """
import os, sys, time
from pathlib import Path

from ptrport.run.warm_process import WarmProcess


def prepare():
    Path(sys.argv[1]).write_text(str(os.getpid()))
    time.sleep(120)


WarmProcess.start(prepare=prepare, serve_child=lambda pipes: None)
"""


def test_ctrl_c_while_the_warm_process_prepares_ends_it_too(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches its whole foreground group; the warm process, in a group of
    its own by then, ignores it, and the run that started it ends it as it stops."""
    pid_file = tmp_path / "warm.pid"
    run = subprocess.Popen(
        [sys.executable, "-c", STARTING, str(pid_file)],
        start_new_session=True,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(run.pid, signal.SIGINT)
        assert run.wait(timeout=30) != 0
        _wait_until_ended(int(pid_file.read_text()), 5, "the warm process outlived the run")
    finally:
        run.kill()
        with contextlib.suppress(ValueError, OSError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


SERVING = """
import json, os, sys, time
from pathlib import Path

from ptrport.run.warm_process import WarmProcess


def serve(pipes):
    os.read(pipes.commands, 4096)
    time.sleep(120)


warm = WarmProcess.start(prepare=lambda: None, serve_child=serve)
child = warm.fork_child(Path(sys.argv[1]))
child.send("a.py::test_a")
print(json.dumps([warm.pid, child.process.pid]), flush=True)
try:
    time.sleep(120)
except KeyboardInterrupt:
    time.sleep(0.5)  # as long as a signal takes to end a process that does not ignore it
running = []
for pid in (warm.pid, child.process.pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        state = "X"
    running.append(state not in ("Z", "X"))
print(json.dumps(running), flush=True)
warm.close()
"""


def test_a_terminals_ctrl_c_reaches_the_run_alone_not_its_warm_process_or_child(
    tmp_path: Path,
) -> None:
    """The run decides what a Ctrl-C ends (it records the interruption, then ends its
    children): the warm process and the child it forked are not signalled with it."""
    run = subprocess.Popen(
        [sys.executable, "-c", SERVING, str(tmp_path)],
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert run.stdout is not None
        pids = json.loads(run.stdout.readline())
        time.sleep(0.5)  # the child is in its check
        os.killpg(run.pid, signal.SIGINT)
        warm_running, child_running = json.loads(run.stdout.readline())
        assert warm_running, "the terminal's Ctrl-C ended the warm process"
        assert child_running, "the terminal's Ctrl-C ended the check's child"

        assert run.wait(timeout=60) == 0
        for pid in pids:
            assert not _running(pid)
    finally:
        run.kill()
