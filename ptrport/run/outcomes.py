"""Running checks: each scenario item seeded and run in its backend's scope, and its setup,
call and teardown reports classified into one :class:`~ptrport.report.records.Result`.

The result rides on the item's teardown report (:data:`ptrport.run.names.RESULT_ATTRIBUTE`), and
the check it is for on every report of the item (:data:`ptrport.run.names.CHECK_ATTRIBUTE`), so
that whoever keeps the report (this process, an isolation parent, an xdist controller) receives
both with pytest's reports. A user's test that fails with an exception is given where it failed
(:func:`where_failed`): the deepest frame in the user's or the engine's code.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sysconfig
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis.errors import FailedHealthCheck

from ptrport.addresses import to_hex
from ptrport.check import controls, examples
from ptrport.device import presentation
from ptrport.errors import exception_message
from ptrport.report.records import Outcome, describe_example
from ptrport.run.collection import CheckInfo, check_info, fixtures_only
from ptrport.run.names import CHECK_ATTRIBUTE, RESULT_ATTRIBUTE

if TYPE_CHECKING:
    from ptrport.run.settings import RunSettings


@dataclass
class _Pending:
    """A result being assembled from an item's setup, call and teardown reports."""

    outcome: Outcome | None = None
    message: str | None = None
    example: dict[str, Any] | None = None
    duration_s: float = 0.0
    where: str | None = None


class CheckOutcomes:
    """The checks role."""

    def __init__(self, config: pytest.Config, settings: RunSettings) -> None:
        self.config = config
        self.settings = settings
        self.on_progress: Callable[[examples.ExampleLog, dict[str, Any]], None] | None = None
        """Told where each example is (an isolated child tells its parent)."""
        self._examples = examples.ExampleLog()
        self._pending: dict[str, _Pending] = {}
        self._scopes: dict[str, contextlib.ExitStack] = {}
        """A user's test's backend scope, open from its setup to the end of its teardown."""

    def pytest_runtest_logstart(self) -> None:
        self._examples = examples.ExampleLog(on_progress=self.on_progress)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        info = check_info(item)
        if info is not None and info.own:
            # A user's fixtures make tensors and take their addresses too: the whole test,
            # setup to teardown, runs in its backend's scope.
            scope = self._scopes[item.nodeid] = contextlib.ExitStack()
            # A whole-suite run's test places nothing itself: on cpu-placed, the run spreads
            # its storages, as its seed says (so the same run seed places them again).
            spread = examples.check_seed(self.settings.run_seed, info.check)
            scope.enter_context(info.backend.running(spread if info.unmarked else None))
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, object, object]:
        try:
            return (yield)
        finally:
            scope = self._scopes.pop(item.nodeid, None)
            if scope is not None:
                scope.close()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        info = check_info(item)
        if info is None:
            return (yield)
        function = getattr(item, "obj", None)
        if examples.is_hypothesis_test(function):
            examples.prepare(
                function,
                seed_value=examples.check_seed(self.settings.run_seed, info.check),
                log=self._examples,
                fixtures=fixtures_only(item),
            )
        if info.own:  # in its scope since its setup
            return (yield)
        # The check's whole body, every example included, runs in its backend's scope: on an
        # upper-half backend data_ptr() is presented there, and restored however it ends.
        with info.backend.running():
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        info = check_info(item)
        if info is not None:
            if call.excinfo is not None and isinstance(call.excinfo.value, FailedHealthCheck):
                # Not the bug a control must show: a check that could not generate its
                # inputs proves nothing, so it fails even where a failure was expected.
                if hasattr(report, "wasxfail"):
                    del report.wasxfail
                report.outcome = "failed"
            elif (
                not info.own
                and hasattr(report, "wasxfail")
                and call.excinfo is not None
                and controls.caught_as(call.excinfo.value) is None
            ):
                # A control failed, but not as catching it looks: an error in ptrport's own
                # code, or an unrelated one. The controls run fails.
                del report.wasxfail
                report.outcome = "failed"
            setattr(report, CHECK_ATTRIBUTE, info.identity())
            self._observe(item, info, call, report)
        return report

    def _observe(
        self,
        item: pytest.Item,
        info: CheckInfo,
        call: pytest.CallInfo[None],
        report: pytest.TestReport,
    ) -> None:
        pending = self._pending.setdefault(item.nodeid, _Pending())
        pending.duration_s += report.duration
        outcome, message = classify(report, call, info)
        if info.own and outcome == Outcome.FAILED and message is not None:
            message += _addresses_here(message)
        first = outcome is not None and pending.outcome is None
        if first or (outcome == Outcome.ERROR and pending.outcome == Outcome.PASSED):
            pending.outcome, pending.message = outcome, message
            if info.own and outcome in (Outcome.FAILED, Outcome.ERROR) and call.excinfo:
                pending.where = where_failed(call.excinfo, self.config.rootpath)
            if outcome in (Outcome.FAILED, Outcome.XFAILED) and self._examples.last is not None:
                pending.example = describe_example(self._examples.last)
        if report.when != "teardown":
            return
        del self._pending[item.nodeid]
        result = info.result(
            pending.outcome or Outcome.PASSED,
            message=pending.message,
            example=pending.example,
            examples=self._examples.count,
            found_after=self._examples.found_after if pending.example else None,
            duration_s=pending.duration_s,
            nodeid=item.nodeid,
            body=self._examples.body,
            copied=self._examples.copied_records()
            if pending.outcome in (None, Outcome.PASSED)
            else (),
            where=pending.where,
        )
        setattr(report, RESULT_ATTRIBUTE, result.to_record())


BENEATH = ("ptrport", "torch", "triton", "numpy", "hypothesis", "_pytest", "pytest", "pluggy")
"""The packages whose frames :func:`where_failed` passes over: ptrport's own, and the libraries
beneath the user's and the engine's code (the standard library's too)."""
_INSTALLED = ("site-packages", "dist-packages")


def where_failed(excinfo: pytest.ExceptionInfo[BaseException], rootdir: Path) -> str | None:
    """The deepest frame of a failure's traceback in the user's or the engine's code, as
    ``file:line`` (the line from 1): the file relative to the site-packages it is installed in
    (``vllm/v1/worker/mamba_utils.py:123``), else to ``rootdir``, else as it is; ``None`` where
    every frame is of a package of :data:`BENEATH` or of the standard library."""
    for entry in reversed(excinfo.traceback):
        if isinstance(entry.path, Path):
            shown = _shown_path(entry.path, rootdir)
            if shown is not None:
                return f"{shown}:{entry.lineno + 1}"
    return None


def _shown_path(path: Path, rootdir: Path) -> str | None:
    real = os.path.realpath(path)
    if any(_under(real, root) for root in _beneath()):
        return None
    parts = Path(real).parts
    installed = [i for i, part in enumerate(parts) if part in _INSTALLED]
    if installed:
        package = parts[installed[-1] + 1 :]
        if not package or package[0].removesuffix(".py") in BENEATH:
            return None
        return "/".join(package)
    if any(_under(real, directory) for directory in _standard_library()):
        return None
    root = os.path.realpath(rootdir)
    if _under(real, root):
        return Path(real).relative_to(root).as_posix()
    return real


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


@functools.cache
def _beneath() -> tuple[str, ...]:
    """Where the packages of :data:`BENEATH` are, installed or in a checkout of their own."""
    found = []
    for name in BENEATH:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            found += [os.path.realpath(p) for p in spec.submodule_search_locations or ()]
            if spec.origin and not spec.submodule_search_locations:
                found.append(os.path.realpath(spec.origin))
    return tuple(found)


@functools.cache
def _standard_library() -> tuple[str, ...]:
    return tuple({os.path.realpath(sysconfig.get_path(name)) for name in ("stdlib", "platstdlib")})


PLACED_NAMED = 4
"""How many placed addresses a failure's message names, the lowest first."""


def _addresses_here(message: str) -> str:
    """The addresses a failed test was most likely about, for its message (an overflow names
    none): where it placed memory (a Hypothesis example's, though its end released them),
    ``(placed at 0x8000...)``, and on an upper-half backend
    where the storages whose ``data_ptr()`` it took last are presented, the newest last,
    ``(last presented at 0xffff8000...)``, those the message names already aside."""
    # The page leaves this out where it groups failures of one cause (compat.cause in
    # ptrport.report): a change of its form is a change there too.
    memory = presentation.active()
    if memory is None:
        return ""
    named = []
    placed = memory.placed_lately()
    if placed:
        more = f" and {len(placed) - PLACED_NAMED} more" if len(placed) > PLACED_NAMED else ""
        kinds = memory.spread_kinds
        shown = [f"{to_hex(a)}{f' ({kinds[a]})' if a in kinds else ''}" for a in placed]
        named.append(f"placed at {', '.join(shown[:PLACED_NAMED])}{more}")
    if memory.presentation.upper_half:
        last = [to_hex(a) for a in memory.presented_last() if to_hex(a) not in message]
        if last:
            named.append(f"last presented at {', '.join(last)}")
    return f" ({'; '.join(named)})" if named else ""


def classify(
    report: pytest.TestReport, call: pytest.CallInfo[None], info: CheckInfo
) -> tuple[Outcome | None, str | None]:
    """The outcome one phase's report contributes, with its message."""
    excinfo = call.excinfo
    message = exception_message(excinfo.value) if excinfo is not None else None
    if excinfo is not None and isinstance(excinfo.value, FailedHealthCheck):
        return Outcome.ERROR, f"Hypothesis health check failed: {message}"
    if report.when != "call":
        if report.failed:
            return Outcome.ERROR, f"in {report.when}: {message}"
        if report.skipped:
            if info.unavailable:
                return Outcome.UNAVAILABLE, info.unavailable
            return Outcome.SKIPPED, _skip_reason(report)
        return None, None
    if hasattr(report, "wasxfail"):
        if report.skipped:
            return Outcome.XFAILED, message
        return Outcome.XPASSED, f"expected to fail and passed: {report.wasxfail}"
    if report.failed:
        if str(report.longrepr).startswith("[XPASS(strict)]"):
            return Outcome.XPASSED, f"expected to fail and passed: {report.longrepr}"
        return Outcome.FAILED, message
    if report.skipped:
        return Outcome.SKIPPED, _skip_reason(report)
    return Outcome.PASSED, None


def _skip_reason(report: pytest.TestReport) -> str | None:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr) if longrepr else None
