"""The rules a process must keep to be forked for checks, the device asked from a forked child,
and the warm process's handling of the children it forks."""

from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

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
        assert reason.startswith("1 thread (engine-loader) started since ptrport's imports (")
    finally:
        stop.set()
        thread.join()
    assert fork_safety.started_threads(since) is None


def test_more_native_threads_than_after_the_imports_are_counted_whoever_started_them() -> None:
    now = fork_safety.Threads.now()
    reason = fork_safety.started_threads(fork_safety.Threads(now.native - 1, now.python))
    assert reason is not None and " started since ptrport's imports (" in reason


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


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="OpenMP runs one thread here: no pool")
def test_the_openmp_probe_finds_the_pool_a_parallel_op_started_and_only_then() -> None:
    # In a fresh interpreter: this one may have run parallel ops already.
    script = (
        "import torch\n"
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
    assert answer == {"pid": answer["pid"], "nothing": None}
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
    deadline = time.monotonic() + 30
    while _exists(child.process.pid):
        assert time.monotonic() < deadline, "the child outlived its warm process"
        time.sleep(0.05)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
