"""The child side of isolation: the checks the parent sends run one after another, each as its
own pytest protocol (``nextitem=None``: every fixture torn down, and the check's backend scope
undone, as in-process); where each example is, and each check's reports (its result riding on
the last), told to the parent.

A child forked from the warm process (:func:`serve_forked_child`) is the run's process as it
was when collection ended, with two things changed before its first check:

- its output goes to its own file: standard output and error (pytest's capture started again
  on them, so that a check's captured output is its own) and faulthandler's last words;
- reporting is left to the parent, which replays each check's reports to every plugin it has:
  a plugin of another package that takes reports as they arrive (an xdist worker's link to its
  controller, a report log, ptrport's own report) is unregistered here, so that no report is
  sent or written twice. pytest's own plugins stay (a child never reaches the end of the
  session, where they would write), and so do conftest modules, as in a spawned child.
"""

from __future__ import annotations

import faulthandler
import json
import logging
import os
import sys
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any

import pytest

from ptrport.check import examples
from ptrport.report.records import Outcome, describe_example
from ptrport.run.children import item_key
from ptrport.run.names import (
    RESULT_ATTRIBUTE,
    ROLE_CHECKS,
    ROLE_CHILD,
    ROLE_COLLECTION,
    ROLE_ISOLATION,
    ROLE_REPORT,
)

if TYPE_CHECKING:
    from ptrport.run.outcomes import CheckOutcomes
    from ptrport.run.warm_process import ChildPipes

FRESH_CHILD_AFTER = frozenset({Outcome.FAILED, Outcome.ERROR, Outcome.XPASSED})
"""Outcomes after which the child ends, so that what the check did to it cannot leak on."""
PARENT_ROLES = (ROLE_REPORT, ROLE_ISOLATION)
"""The run's roles that belong to the parent alone."""
REPORT_HOOKS = (
    "pytest_runtest_logstart",
    "pytest_runtest_logreport",
    "pytest_runtest_logfinish",
    "pytest_warning_recorded",
)


class ChildSide:
    """The child role."""

    def __init__(
        self, commands: int, answers: int, checks: CheckOutcomes, config: pytest.Config
    ) -> None:
        """``commands``, ``answers``: this side's ends of the two pipes."""
        self.config = config
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
        """A spawned child: it collected the checks it serves itself."""
        if session.testsfailed:
            raise session.Interrupted(f"{session.testsfailed} errors during collection")
        self.serve(session)
        return True

    def serve(self, session: pytest.Session) -> None:
        """Run each check the parent sends, until it sends no more or one leaves this process
        unfit for the next (:data:`FRESH_CHILD_AFTER`)."""
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

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self._reports.append(data)
        record = getattr(report, RESULT_ATTRIBUTE, None)
        if record is not None:
            self._ends = Outcome(record["outcome"]) in FRESH_CHILD_AFTER
            result = {"reports": self._reports, "child_ends": self._ends}
            self._tell({"command": self._number, "result": result})


def serve_forked_child(session: pytest.Session, checks: CheckOutcomes, pipes: ChildPipes) -> None:
    """In a child forked from the warm process: its output to its own file, reporting left to
    the parent, then the checks the parent sends."""
    config = session.config
    output = _output_to(pipes.output, config)
    _leave_reporting_to_the_parent(config)
    side = ChildSide(pipes.commands, pipes.answers, checks, config)
    config.pluginmanager.register(side, ROLE_CHILD)
    try:
        side.serve(session)
    finally:
        output.flush()


def _output_to(output: int, config: pytest.Config) -> IO[str]:
    """Standard input from ``/dev/null``; standard output, standard error and faulthandler to
    ``output``, with pytest's global capture started again over them."""
    capture = config.pluginmanager.getplugin("capturemanager")
    capturing = capture is not None and capture.is_globally_capturing()
    if capturing:
        capture.resume_global_capture()
        captured_by = (sys.stdout, sys.stderr)  # the streams a capturing sys has
        capture.stop_global_capturing()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(output, 1)
    os.dup2(output, 2)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # what they held, the run's process printed: into the file, if anything
    last_words = os.fdopen(output, "w")
    faulthandler.enable(file=last_words)
    if capturing:
        capture.start_global_capturing()
        capture.resume_global_capture()
        _follow_capture(list(zip(captured_by, (sys.stdout, sys.stderr), strict=True)))
        capture.suspend_global_capture()
    return last_words


def _follow_capture(moved: list[tuple[IO[str], IO[str]]]) -> None:
    """Logging handlers that a module bound to the capture's streams at import (a library's
    ``StreamHandler()`` takes ``sys.stderr`` as it is then) write to the new capture's: the
    old ones are closed, and each record would print a logging error instead."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            if not isinstance(handler, logging.StreamHandler):
                continue
            for old, new in moved:
                if handler.stream is old:
                    handler.stream = new  # not setStream: that flushes the closed one


def _leave_reporting_to_the_parent(config: pytest.Config) -> None:
    """Unregister the parent's roles, and the plugins of other packages that take reports."""
    manager = config.pluginmanager
    keep = [manager.get_plugin(ROLE_CHECKS), manager.get_plugin(ROLE_COLLECTION)]
    leaving = [manager.get_plugin(name) for name in PARENT_ROLES]
    for hook in REPORT_HOOKS:
        for implementation in getattr(config.hook, hook).get_hookimpls():
            plugin = implementation.plugin
            if isinstance(plugin, ModuleType) or any(plugin is k for k in keep):
                continue
            if not type(plugin).__module__.startswith("_pytest."):
                leaving.append(plugin)
    for plugin in leaving:
        if plugin is not None and manager.is_registered(plugin):
            manager.unregister(plugin)
