"""Whether a process that has imported torch may be forked, so that its children run code on
a device as a fresh process would: the rules, each answering with the reason a run gives when it
must start its children otherwise (``None``: safe).

- **The platform forks.** Windows has no ``fork``; on macOS the system frameworks are not
  fork-safe (Python's ``multiprocessing`` spawns there too).
- **No device is initialized.** A CUDA, ROCm or XPU context does not survive a fork: a child
  that touches the device fails (torch: "Cannot re-initialize CUDA in forked subprocess"). So
  the process that will be forked must not have initialized one, and must not have asked the
  driver anything that initializes it either (``torch.cuda.is_available()`` calls ``cuInit``
  unless ``PYTORCH_NVML_BASED_CUDA_CHECK=1``). Torch marks a fork it spoiled in the forked
  process: :func:`spoiled_devices` reads that mark there.
- **No thread was started since the imports.** A fork keeps only the thread that forked: a
  lock another thread held stays held, a pool's workers are gone. ``import torch`` leaves a
  thread of its own (numpy's OpenBLAS pool, which stops and restarts itself across a fork),
  so threads are counted against their number right after the imports
  (:func:`started_threads`), and a Python thread started by a test module at import is named.
- **ptrport asks the device from a forked child.** What only an initialized device can tell (its
  model, its capability, Triton's driver for it) is asked by :func:`ask_in_fork`, so that the
  run's process stays fork-safe on a GPU machine too.
- **OpenMP's pool is not started.** After one OpenMP-parallel torch op, GNU OpenMP keeps a team
  of threads that a forked child still believes in: its first parallel op waits for them
  forever (setting the child's thread count to 1 avoids it; to the same count does not). The
  count above sees the team where it was started after the imports; :func:`openmp_hangs` tries
  one parallel op in a forked probe, which sees it wherever it was started.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from ptrport.errors import HarnessError, exception_message

TASKS = "/proc/self/task"
DEVICE_MODULES = ("cuda", "xpu")
"""The torch modules whose state does not survive a fork (ROCm is torch's ``cuda``)."""
OPENMP_PROBE_S = 2.0
"""How long the OpenMP probe's parallel op may take before it is taken to hang."""


def os_threads() -> int:
    """How many threads this process has, native ones included (Python's alone elsewhere)."""
    try:
        return len(os.listdir(TASKS))
    except OSError:
        return threading.active_count()


def python_threads() -> frozenset[int]:
    """The idents of the Python threads alive now."""
    return frozenset(t.ident for t in threading.enumerate() if t.ident is not None)


def platform_forks() -> str | None:
    """Why this platform cannot fork a process that runs torch, if it cannot."""
    if not hasattr(os, "fork"):
        return f"{sys.platform} has no fork"
    if sys.platform == "darwin":
        return "macOS's system frameworks are not fork-safe"
    return None


def initialized_devices() -> str | None:
    """Which devices this process has initialized, if any."""
    found = [name for name in DEVICE_MODULES if _device_module_says(name, "is_initialized")]
    return f"{' and '.join(found)} already initialized in this process" if found else None


def spoiled_devices() -> str | None:
    """In a forked process: which devices the fork left unusable, as torch marked them."""
    found = [name for name in DEVICE_MODULES if _device_module_says(name, "_is_in_bad_fork")]
    if not found:
        return None
    return (
        f"{' and '.join(found)}'s driver was initialized before the fork (a test module or "
        "conftest asked the device, or used it, at import)"
    )


def _device_module_says(name: str, question: str) -> bool:
    module = getattr(torch, name, None)
    ask = getattr(module, question, None)
    return bool(ask()) if callable(ask) else False


def started_threads(since: int, python_since: frozenset[int]) -> str | None:
    """Which threads were started since there were ``since`` (and the Python threads
    ``python_since``), if any."""
    named = [
        t.name for t in threading.enumerate() if t.ident is not None and t.ident not in python_since
    ]
    now = os_threads()
    if now <= since and not named:
        return None
    started = max(now - since, len(named))
    names = f" ({', '.join(sorted(named))})" if named else ""
    return (
        f"{started} thread{'s' if started != 1 else ''}{names} started since ptrport's imports "
        f"({now} threads now, {since} then): a test module or plugin started them at import"
    )


def openmp_hangs() -> str | None:
    """Whether a forked child of this process hangs in its first OpenMP-parallel torch op: one
    such op, in a probe forked for it, given :data:`OPENMP_PROBE_S` seconds."""
    done_read, done_write = os.pipe()
    with quiet_fork():
        pid = os.fork()
    if pid == 0:  # the probe: the pipe closes when it ends, however it ends
        try:
            os.close(done_read)
            torch.ones(1 << 16).add_(1)  # above torch's grain size: split across the team
        finally:
            os._exit(0)
    os.close(done_write)
    try:
        ended, _, _ = select.select([done_read], [], [], OPENMP_PROBE_S)
    finally:
        os.close(done_read)
        if not ended:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if ended:
        return None
    return (
        "OpenMP's thread pool was started before the fork (an OpenMP-parallel torch op in a "
        "test module, a conftest or the run before): a forked child's first parallel op hangs"
    )


@contextmanager
def quiet_fork() -> Iterator[None]:
    """Around a fork whose safety was checked: no warning that the process has threads
    (Python 3.12 warns of any, numpy's OpenBLAS pool included)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*use of fork\\(\\) may lead to deadlocks")
        yield


Answer = dict[str, str | None]


def ask_in_fork(question: Callable[[], Answer]) -> Answer:
    """``question()`` answered in a forked child, so that what answering it initializes (a
    device's driver, its context) stays there and this process stays fork-safe; answered here
    where this process cannot fork, or has initialized the devices already. Raises
    :class:`~ptrport.errors.HarnessError` with the child's error, or how it died."""
    if platform_forks() is not None or initialized_devices() is not None:
        return question()
    answer_read, answer_write = os.pipe()
    with quiet_fork():
        pid = os.fork()
    if pid == 0:  # the child: its answer, or its error, as one JSON document
        try:
            os.close(answer_read)
            said: dict[str, object]
            try:
                said = {"answer": question()}
            except BaseException as exc:
                said = {"error": exception_message(exc)}
            with os.fdopen(answer_write, "w", encoding="utf-8") as out:
                json.dump(said, out)
        finally:
            os._exit(0)
    os.close(answer_write)
    with os.fdopen(answer_read, encoding="utf-8") as answer:
        text = answer.read()
    _, status = os.waitpid(pid, 0)
    if not text:
        raise HarnessError(
            f"asking the device ended its process with status {os.waitstatus_to_exitcode(status)}"
        )
    reply = json.loads(text)
    if "error" in reply:
        raise HarnessError(f"asking the device raised {reply['error']}")
    return {
        str(key): None if value is None else str(value) for key, value in reply["answer"].items()
    }
