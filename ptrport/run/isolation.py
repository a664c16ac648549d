"""Crash isolation: checks run in a child process, so that a subject or engine that kills its
process (a segfault, an abort, a lost device) or hangs costs one result, not the run.

The whole check runs in the child, not only ``execute``: a copy writes into allocations that
the same check then verifies, so they must share a process. A child serves checks one after
another (:mod:`ptrport.run.child_side`); the parent replays each check's reports as if it had run
the item, so the result reaches whoever keeps the report, as any other. A check whose child
died (or was killed for saying nothing for ``--example-timeout`` seconds) is ``crashed`` (or
``timed out``) with the last example's inputs, and the next check gets a fresh child. A check
that corrupts the child's memory without killing it must not poison later results either, so
the child also ends after any check that failed, errored or passed unexpectedly; an expected
failure (a control caught by our own verification) does not end it.

**Children are forked, from a warm process.** When the checks are about to run, the run's
process (each xdist worker's) forks the warm process (:mod:`ptrport.run.warm_process`): it has
imported torch, Triton, Hypothesis, the plugin and the user's test modules (and the engine they
import), and collected; it never runs a check. Each child is forked from it, so a fresh child
after a failure costs a fork, not a second import of the engine.

**Fork safety** (the rules, :mod:`ptrport.device.fork_safety`): the run's process must not have
initialized CUDA, ROCm or XPU (a device context does not survive a fork; ptrport asks devices
what it needs from a forked child, and a run sets ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` so that
``torch.cuda.is_available()`` asks NVML instead of initializing CUDA), and must have started no
thread since ptrport's imports (a fork keeps only the thread that forks: threads are counted
against their number right after the imports, which hold numpy's OpenBLAS pool; a Python
thread a test module started is named). OpenMP is the sharpest case: after one
OpenMP-parallel torch op, a forked child's first parallel op hangs, so the warm process tries
one in a forked probe before it serves, and it checks torch's own mark of a fork that spoiled
a device. Where a rule does not hold (no ``fork`` on the platform, or macOS; a device already
initialized; threads started), the run spawns each child as a fresh interpreter that imports
and collects the checks itself, started as soon as collection ends, and the summary's
isolation line says why.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from ptrport.check import examples
from ptrport.check.user_subjects import UserSubject
from ptrport.device import fork_safety
from ptrport.device.backends import warm_up
from ptrport.report.records import Outcome
from ptrport.run.child_side import serve_forked_child
from ptrport.run.children import Child, ChildOutcome, item_key
from ptrport.run.collection import check_info
from ptrport.run.names import CHECK_ATTRIBUTE, RESULT_ATTRIBUTE
from ptrport.run.warm_process import WarmProcess

if TYPE_CHECKING:
    from ptrport.run.collection import CheckInfo
    from ptrport.run.outcomes import CheckOutcomes
    from ptrport.run.settings import RunSettings

WORKER_OUTPUT_KEY = "ptrport_isolation"
"""Where an xdist worker hands its children's counts to the controller."""
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


@dataclass
class Counts:
    """How many children a run started, how, and why the ones after the first."""

    checks: int = 0
    started: int = 0
    forked: int = 0
    crashed: int = 0
    timed_out: int = 0
    after_failure: int = 0
    spawned_because: str = ""
    """Why children were spawned rather than forked, where they were."""

    def add(self, other: dict[str, Any]) -> None:
        for name, value in other.items():
            if name == "spawned_because":
                self.spawned_because = self.spawned_because or str(value)
            elif name in self.__dataclass_fields__:
                setattr(self, name, getattr(self, name) + int(value))

    def to_record(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def summary(self) -> str:
        line = (
            f"isolation: {self.started} child process{'es' if self.started != 1 else ''} "
            f"for {self.checks} isolated check{'s' if self.checks != 1 else ''} "
            f"(restarted after {self.crashed} crashed, {self.timed_out} timed out, "
            f"{self.after_failure} failed)"
        )
        spawned = self.started - self.forked
        if not spawned:
            return f"{line}, forked from a warm process"
        if not self.forked:
            return f"{line}, spawned, not forked: {self.spawned_because}"
        return f"{line}, {self.forked} forked, {spawned} spawned: {self.spawned_because}"


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
        *(["--ptrport-all"] if settings.whole_suite else []),
        *([f"--ptrport-stand-in={settings.stand_in}"] if settings.stand_in else []),
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
    (forked from the warm process, or spawned; replaced after a crash, a hang or a failed
    check, and before a check it ran already on another backend), and each check's reports
    (and so its result) replayed here, or made up for a check whose child died."""

    def __init__(
        self,
        config: pytest.Config,
        settings: RunSettings,
        checks: CheckOutcomes,
        python_threads: frozenset[int],
    ) -> None:
        self.config = config
        self.settings = settings
        self.counts = Counts()
        self._checks = checks
        self._child: Child | None = None
        self._warm: WarmProcess | None = None
        self._directory: tempfile.TemporaryDirectory[str] | None = None
        self._items: list[pytest.Item] | None = None
        self._threads = fork_safety.Threads.now(python=python_threads)
        """This process's threads right after ptrport's imports (its Python threads, when pytest
        loaded ptrport: a thread a conftest started is not among them)."""
        self._unsafe: str | None = None
        """Why children are spawned, not forked, once that is known."""
        self._ran_in_child: set[tuple[str, str | None]] = set()
        """The checks (a test with its subject, whatever its backend) the current child ran."""
        os.environ.setdefault(NVML_CHECK, "1")

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
        info = check_info(item)
        check = info.across_backends() if info is not None else (item.nodeid, None)
        if check in self._ran_in_child:
            # The same test on another backend: in a fresh child, so that what it left in its
            # process (a warn-once flag, a cache, a module's state) does not decide this
            # backend's outcome, and the verdict by difference compares the addresses alone.
            self._end_child()
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
        self._ran_in_child.add(check)
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
        """Once the run's isolated checks are known: where this process cannot be forked, start
        a spawned child at once, so that it imports and collects while this process goes on."""
        if self.config.option.collectonly or not self._isolated(session):
            return
        self._unsafe = (
            fork_safety.platform_forks()
            or fork_safety.initialized_devices()
            or fork_safety.started_threads(self._threads)
        )
        if self._unsafe is not None:
            self._start(session)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """As the checks are about to run, fork the warm process (which serves from here and
        never returns); the run goes on as pytest runs it."""
        if self._unsafe is not None or self._warm is not None:  # spawning, or forked already
            return
        if self.config.option.collectonly or not self._isolated(session):
            return
        if session.testsfailed and not self.config.option.continue_on_collection_errors:
            return  # pytest stops the run
        started = WarmProcess.start(
            prepare=_prepare_warm, serve_child=partial(serve_forked_child, session, self._checks)
        )
        if isinstance(started, str):
            self._unsafe = started
        else:
            self._warm = started

    def _isolated(self, session: pytest.Session) -> list[pytest.Item]:
        if self._items is None:
            self._items = [
                i for i in session.items if (info := check_info(i)) and self.isolates(info)
            ]
        return self._items

    def _start(self, session: pytest.Session) -> Child:
        self._directory = tempfile.TemporaryDirectory(prefix="ptrport-child-")
        directory = Path(self._directory.name)
        child = self._warm.fork_child(directory) if self._warm is not None else None
        if child is not None:
            self.counts.forked += 1
        else:
            if self._warm is not None:
                self._warm = None
                self._unsafe = "the warm process ended"
            self.counts.spawned_because = self.counts.spawned_because or str(self._unsafe)
            items = self._isolated(session)
            child = Child.spawn(
                child_command(items, settings=self.settings, config=self.config), directory
            )
        self._child = child
        self.counts.started += 1
        return child

    def _end_child(self) -> None:
        self._ran_in_child = set()
        if self._child is not None:
            self._child.close()
            self._child = None
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None

    def _end(self, interrupted: bool) -> None:
        if self._child is not None and interrupted:
            self._child.kill()
        self._end_child()
        if self._warm is not None:
            self._warm.close()
            self._warm = None

    def pytest_sessionfinish(self, exitstatus: int) -> None:
        self._end(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
        workeroutput = getattr(self.config, "workeroutput", None)
        if isinstance(workeroutput, dict):
            workeroutput[WORKER_OUTPUT_KEY] = self.counts.to_record()

    def pytest_unconfigure(self) -> None:
        self._end(interrupted=True)

    def _as_ours(self, item: pytest.Item, data: dict[str, Any]) -> Any:
        """A child's report as this run names the item (the child ran it by its absolute path,
        which it may name otherwise: a module outside the rootdir, as an installed package's
        scenarios are, has no rootdir-relative path), and as pytest made it."""
        report = self.config.hook.pytest_report_from_serializable(config=self.config, data=data)
        report.nodeid, report.location = item.nodeid, item.location
        if report.skipped and isinstance(report.longrepr, list):
            # A skip's (path, line, reason) came back from JSON as a list; pytest's summary of
            # skips (-rs) asserts a tuple.
            report.longrepr = tuple(report.longrepr)
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


def _prepare_warm() -> str | None:
    """In the warm process, before it serves: why its children could not run checks (a device
    the fork spoiled, OpenMP's pool), or ``None`` once it has imported what a check's scope
    imports on first use."""
    unsafe = fork_safety.spoiled_devices() or fork_safety.openmp_hangs()
    if unsafe is None:
        warm_up()
    return unsafe
