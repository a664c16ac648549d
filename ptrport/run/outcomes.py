"""Running checks: each scenario item seeded and run in its backend's scope, and its setup,
call and teardown reports classified into one :class:`~ptrport.report.records.Result`.

The result rides on the item's teardown report (:data:`ptrport.run.names.RESULT_ATTRIBUTE`), and
the check it is for on every report of the item (:data:`ptrport.run.names.CHECK_ATTRIBUTE`), so
that whoever keeps the report (this process, an isolation parent, an xdist controller) receives
both with pytest's reports.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
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
            scope.enter_context(info.backend.running())
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
        )
        setattr(report, RESULT_ATTRIBUTE, result.to_record())


PLACED_NAMED = 4
"""How many placed addresses a failure's message names, the lowest first."""


def _addresses_here(message: str) -> str:
    """The addresses a failed test was most likely about, for its message (an overflow names
    none): where it placed memory, ``(placed at 0x8000...)``, and on an upper-half backend
    where the storages whose ``data_ptr()`` it took last are presented, the newest last,
    ``(last presented at 0xffff8000...)``, those the message names already aside."""
    # The page leaves this out where it groups failures of one cause (compat.cause in
    # ptrport.report): a change of its form is a change there too.
    memory = presentation.active()
    if memory is None:
        return ""
    named = []
    placed = memory.placements()
    if placed:
        more = f" and {len(placed) - PLACED_NAMED} more" if len(placed) > PLACED_NAMED else ""
        named.append(f"placed at {', '.join(to_hex(a) for a in placed[:PLACED_NAMED])}{more}")
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
