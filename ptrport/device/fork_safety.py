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
  process: :func:`spoiled_devices` reads that mark there. What only an initialized device can
  tell (its model, its capability, Triton's driver for it) ptrport asks from a forked child
  (:func:`ask_in_fork`), so that the run's process stays fork-safe on a GPU machine too.
- **No thread was started since ptrport was loaded.** A fork keeps only the thread that
  forked: a lock another thread held stays held, a pool's workers are gone, an event loop
  another thread ran never answers. So native threads are counted against their number right
  after the imports, and Python threads against those alive when pytest loaded ptrport, before
  any conftest ran (:func:`started_threads`); a Python thread that a conftest, a plugin or a
  test module started is named. OpenBLAS's pools are not counted: OpenBLAS
  stops them before a fork and starts them again on their next use, and an engine's imports
  load more than one (``import torch`` loads numpy's; vLLM's, OpenCV's too).
- **OpenMP's pool is not started.** After one OpenMP-parallel torch op, GNU OpenMP keeps a team
  of threads that a forked child still believes in: its first parallel op waits for them
  forever (setting the child's thread count to 1 avoids it; to the same count does not). The
  count above sees the team where it was started after the imports; :func:`openmp_hangs` tries
  one parallel op in a forked probe, which sees it wherever it was started.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from ptrport.errors import HarnessError, exception_message

TASKS = "/proc/self/task"
MAPS = "/proc/self/maps"
OPENBLAS = "openblas"
OPENBLAS_PREFIXES = ("openblas_", "scipy_openblas_")
"""OpenBLAS's API prefixes: its own, and the one of the build numpy and SciPy ship."""
OPENBLAS_PTHREADS = 1
"""``openblas_get_parallel()`` of a build whose pool runs pthreads (0: none, 2: OpenMP's)."""
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


def openblas_threads() -> int:
    """How many threads the OpenBLAS pools loaded here may run besides their caller (a pool of
    ``N`` threads has ``N - 1``), for those that run pthreads: OpenBLAS stops them before a
    fork and starts them again on their next use, so a fork carries them. numpy and OpenCV each
    load one."""
    try:
        with open(MAPS, encoding="utf-8", errors="replace") as maps:
            paths = {line.split()[-1] for line in maps if OPENBLAS in line and ".so" in line}
    except OSError:
        return 0
    return sum(_pool_threads(path) for path in sorted(paths))


def _pool_threads(path: str) -> int:
    try:
        library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)  # loaded already: nothing new runs
    except OSError:
        return 0
    for name in OPENBLAS_PREFIXES:
        count = getattr(library, f"{name}get_num_threads", None) or getattr(
            library, f"{name}get_num_threads64_", None
        )
        layer = getattr(library, f"{name}get_parallel", None) or getattr(
            library, f"{name}get_parallel64_", None
        )
        if count is not None:
            pthreads = layer is None or layer() == OPENBLAS_PTHREADS
            return max(int(count()) - 1, 0) if pthreads else 0
    return 0


@dataclass(frozen=True)
class Threads:
    """A process's threads at one moment: its native threads a fork cannot carry (OpenBLAS's
    pools aside), and its Python threads by ident."""

    native: int
    python: frozenset[int]

    @classmethod
    def now(cls, python: frozenset[int] | None = None) -> Threads:
        """This process's threads now (``python``: its Python threads as of another moment)."""
        native = os_threads() - openblas_threads()
        return cls(native, python_threads() if python is None else python)


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


def started_threads(since: Threads) -> str | None:
    """Which threads were started since ``since``, if any: ``since.python`` is taken when
    pytest loads ptrport, ``since.native`` after ptrport's imports."""
    now = Threads.now()
    named = [t.name for t in threading.enumerate() if t.ident not in since.python]
    if now.native <= since.native and not named:
        return None
    started = max(now.native - since.native, len(named))
    names = f" ({', '.join(sorted(named))})" if named else ""
    # The native count is taken later than the Python threads: said only where it grew.
    native = (
        f" ({now.native} threads now, {since.native} after ptrport's imports, OpenBLAS's pools "
        "aside)"
        if now.native > since.native
        else ""
    )
    return (
        f"{started} thread{'s' if started != 1 else ''}{names} started since pytest loaded "
        f"ptrport{native}: a conftest, a plugin or a test module started them"
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
