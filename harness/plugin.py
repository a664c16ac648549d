"""The pytest plugin: options, configuration, parametrization and the hooks that collect results.

Scenario tests ask for the ``backend`` and ``subject`` arguments; the plugin parametrizes them
over the selected backends and subjects, marks controls as expected failures where their bug
must show, and writes one platform report at the end of the run. The work is in the modules it
calls; the state of a run lives in one :class:`PtrportRun` registered with the plugin manager.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import FailedHealthCheck

from harness import controls, examples, isolation
from harness.backends import (
    Backend,
    BackendSelection,
    load_backends,
    parse_backend_spec,
)
from harness.errors import HarnessError, UnknownName, exception_message
from harness.fingerprint import (
    check_platform_id,
    execution_target,
    platform_fingerprint,
    resolve_platform_id,
)
from harness.records import Outcome, Result, describe_example
from harness.report import (
    FINISHED,
    INTERRUPTED,
    RUNNING,
    ReportWriter,
    RunInfo,
    build_report,
    scenario_speed,
    write_json_atomically,
)
from harness.subjects import Subject, builtin_subjects
from harness.summary import backend_table
from harness.user_subjects import UserSubject, select_subjects

BACKEND_ARG = "backend"
SUBJECT_ARG = "subject"
SCENARIO_PREFIX = "test_"
REPORT_DIR = "reports"
CONTROLS_REPORT_DIR = "reports/controls"


def _backend_option(value: str) -> BackendSelection:
    try:
        return parse_backend_spec(value, load_backends())
    except UnknownName as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _platform_option(value: str) -> str:
    try:
        return check_platform_id(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ptrport", "ptrport: device addresses in tensors")
    group.addoption(
        "--backend",
        dest="ptrport_backend",
        default="available",
        type=_backend_option,
        metavar="NAME[,NAME]|all|available",
        help="backends to run on (default: available). A backend named here but not present "
        "fails the run; 'all' records missing ones as unavailable.",
    )
    group.addoption(
        "--subject",
        dest="ptrport_subject",
        default=None,
        metavar="NAME|MODULE:FACTORY[,...]",
        help="subjects to test: built-in or catalogue names, entry points of the "
        "'ptrport.subjects' group, or package.module:factory (default: the built-in ones, "
        "int64 controls included, and every installed entry point)",
    )
    group.addoption(
        "--controls",
        dest="ptrport_controls",
        action="store_true",
        help="run the controls catalogue, each control in the checks that must catch it, and "
        "print whether each was caught; the run fails if one is missed",
    )
    group.addoption(
        "--isolate",
        dest="ptrport_isolate",
        action="store_const",
        const=True,
        default=None,
        help="run each check in a child process, so that a crash or a hang costs one result "
        "(default: on for non-CPU backends and for users' own subjects)",
    )
    group.addoption(
        "--no-isolate",
        dest="ptrport_isolate",
        action="store_const",
        const=False,
        help="run every check in this process",
    )
    group.addoption(
        "--example-timeout",
        dest="ptrport_example_timeout",
        default=60.0,
        type=float,
        metavar="SECONDS",
        help="in an isolated check, the longest one example may run (default: 60)",
    )
    group.addoption(
        "--ptrport-child",
        dest="ptrport_child",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(
        "--report-dir",
        dest="ptrport_report_dir",
        default=None,
        metavar="DIR",
        help="where the platform report is written (default: reports, or reports/controls "
        "with --controls)",
    )
    group.addoption(
        "--platform-name",
        dest="ptrport_platform",
        default=None,
        type=_platform_option,
        metavar="ID",
        help="the platform id the report is filed under "
        "(default: $PTRPORT_PLATFORM, else derived from the backends and devices)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(PtrportRun.from_config(config), PtrportRun.NAME)


@dataclass(frozen=True)
class CheckInfo:
    """What a collected scenario item checks, without pytest objects."""

    check: str
    scenario: str
    function: str
    """``scenario::function``: the check without its parameters."""
    backend: Backend
    subject: Subject | None
    unavailable: str | None

    def result(self, outcome: Outcome, **fields: Any) -> Result:
        """This check's result for its subject on its backend."""
        return Result(
            check=self.check,
            scenario=self.scenario,
            subject=self.subject.name if self.subject is not None else None,
            backend=self.backend.name,
            outcome=outcome,
            **fields,
        )


_CHECK_INFO = pytest.StashKey[CheckInfo]()

_LOST_PHASES: tuple[
    tuple[Literal["setup", "call", "teardown"], Literal["passed", "failed"]], ...
] = (("setup", "passed"), ("call", "failed"), ("teardown", "passed"))
"""The reports an isolated check that crashed or hung is shown with."""


@dataclass
class _Pending:
    """A result being assembled from an item's setup, call and teardown reports."""

    outcome: Outcome | None = None
    message: str | None = None
    example: dict[str, Any] | None = None
    duration_s: float = 0.0


@dataclass
class PtrportRun:
    """The state of one pytest run as the plugin sees it."""

    NAME = "ptrport-run"

    config: pytest.Config
    selection: BackendSelection
    backends: list[Backend]
    subjects: dict[str, Subject]
    platform_id: str
    report_dir: Path
    run_seed: str
    controls_only: bool = False
    subject_spec: str | None = None
    isolate: bool | None = None
    """``--isolate`` / ``--no-isolate``; ``None``: isolate non-CPU backends and user subjects."""
    example_timeout: float = 60.0
    child_dir: Path | None = None
    """Set in an isolated child: where it writes its progress and result for the parent."""
    started: float = field(default_factory=time.time)
    results: list[Result] = field(default_factory=list)
    report_path: Path | None = None
    _writer: ReportWriter | None = None
    _pending: dict[str, _Pending] = field(default_factory=dict)
    _examples: examples.ExampleLog = field(default_factory=examples.ExampleLog)
    _child_reports: list[dict[str, Any]] = field(default_factory=list)
    scenario_items: int = 0
    problems: list[str] = field(default_factory=list)
    """Why this run must not end green although pytest may think it can: one line each."""
    verdicts: list[controls.Verdict] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: pytest.Config) -> PtrportRun:
        selection: BackendSelection = config.getoption("ptrport_backend")
        try:
            backends = selection.resolve_present(load_backends())
            platform_id = resolve_platform_id(config.getoption("ptrport_platform"), backends)
        except (HarnessError, ValueError) as exc:
            raise pytest.UsageError(str(exc)) from None
        controls_only = bool(config.getoption("ptrport_controls"))
        report_dir = config.invocation_params.dir / (
            config.getoption("ptrport_report_dir")
            or (CONTROLS_REPORT_DIR if controls_only else REPORT_DIR)
        )
        return cls(
            config=config,
            selection=selection,
            backends=backends,
            subjects=_select_subjects(config.getoption("ptrport_subject"), controls_only),
            subject_spec=config.getoption("ptrport_subject"),
            isolate=config.getoption("ptrport_isolate"),
            example_timeout=config.getoption("ptrport_example_timeout"),
            child_dir=Path(child) if (child := config.getoption("ptrport_child")) else None,
            controls_only=controls_only,
            platform_id=platform_id,
            report_dir=report_dir,
            run_seed=examples.run_seed(
                config.getoption("hypothesis_seed", None),
                derandomize=hypothesis_settings().derandomize,
            ),
        )

    # -- header ---------------------------------------------------------------------------

    def pytest_report_header(self) -> list[str]:
        present = [b.name for b in self.backends if b.is_available()]
        missing = [
            f"{b.name} ({b.unavailable_reason})" for b in self.backends if not b.is_available()
        ]
        controls = [name for name, s in self.subjects.items() if s.exposed_by]
        lines = [
            f"ptrport: platform {self.platform_id}, report "
            f"{self.report_dir / (self.platform_id + '.json')}",
            f"ptrport: backends {', '.join(present) or 'none'}"
            + (f"; unavailable: {'; '.join(missing)}" if missing else ""),
            f"ptrport: subjects {', '.join(self.subjects)}"
            + (f" (controls: {', '.join(controls)})" if controls else ""),
            *(
                f"ptrport: {name} declares {s.contract}"
                for name, s in self.subjects.items()
                if s.contract.declared
            ),
            f"ptrport: hypothesis profile {_profile_name()}, seed {self.run_seed}",
        ]
        return lines

    # -- collection -----------------------------------------------------------------------

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if BACKEND_ARG in metafunc.fixturenames:
            metafunc.parametrize(
                BACKEND_ARG, self.backends, ids=[b.name for b in self.backends], scope="session"
            )
        if SUBJECT_ARG in metafunc.fixturenames:
            subjects = list(self.subjects.values())
            metafunc.parametrize(
                SUBJECT_ARG, subjects, ids=[s.name for s in subjects], scope="session"
            )

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        kept, deselected = [], []
        for item in items:
            info = _check_info(item)
            if info is None:
                kept.append(item)
                continue
            if self.controls_only and not _exposing(info):
                deselected.append(item)
                continue
            kept.append(item)
            item.stash[_CHECK_INFO] = info
            if info.unavailable:
                item.add_marker(pytest.mark.skip(reason=f"unavailable: {info.unavailable}"))
            elif _exposing(info):
                assert info.subject is not None
                item.add_marker(
                    pytest.mark.xfail(
                        strict=True,
                        reason=f"control {info.subject.name} must fail here: "
                        f"{info.subject.description}",
                    )
                )
        if deselected:
            self.config.hook.pytest_deselected(items=deselected)
            items[:] = kept
        self.scenario_items = sum(_CHECK_INFO in item.stash for item in items)
        if self.scenario_items and self.child_dir is None:
            reason = _unwritable(self.report_dir)
            if reason:
                raise pytest.UsageError(
                    f"--report-dir: cannot write reports in {self.report_dir}: {reason}"
                )

    # -- running --------------------------------------------------------------------------

    def pytest_runtest_logstart(self) -> None:
        self._examples = examples.ExampleLog()
        self._child_reports = []
        if self.child_dir is not None:
            self._examples.on_progress = self._tell_parent

    def _tell_parent(self, log: examples.ExampleLog, inputs: dict[str, Any]) -> None:
        assert self.child_dir is not None
        progress = {"count": log.count, "example": describe_example(inputs)}
        write_json_atomically(self.child_dir / isolation.EXAMPLE_FILE, progress)

    def _isolates(self, info: CheckInfo) -> bool:
        if self.child_dir is not None or info.unavailable:
            return False
        if self.isolate is not None:
            return self.isolate
        return info.backend.device.type != "cpu" or isinstance(info.subject, UserSubject)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        info = item.stash.get(_CHECK_INFO, None)
        if info is None or not self._isolates(info):
            return None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        with tempfile.TemporaryDirectory(prefix="ptrport-child-") as directory:
            command = isolation.child_command(
                item.nodeid,
                Path(directory),
                backend_spec=info.backend.name,
                subject_spec=self.subject_spec,
                run_seed=self.run_seed,
                derandomized=self.run_seed == examples.DERANDOMIZED,
                rootdir=self.config.rootpath,
            )
            ended = isolation.run_child(
                command, Path(directory), example_timeout=self.example_timeout
            )
        if ended.result is not None:
            for data in ended.result["reports"]:
                report = self.config.hook.pytest_report_from_serializable(
                    config=self.config, data=data
                )
                item.ihook.pytest_runtest_logreport(report=report)
            self._record(Result.from_record(ended.result["result"]))
        else:
            assert ended.outcome is not None and ended.message is not None
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
                item.ihook.pytest_runtest_logreport(report=report)
            self._record(
                info.result(
                    ended.outcome,
                    message=ended.message,
                    example=ended.example,
                    examples=ended.examples,
                    found_after=ended.examples or None,
                    duration_s=ended.duration_s,
                    nodeid=item.nodeid,
                )
            )
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.child_dir is not None:
            data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
            self._child_reports.append(data)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        info = item.stash.get(_CHECK_INFO, None)
        if info is None:
            return (yield)
        function = getattr(item, "obj", None)
        if examples.is_hypothesis_test(function):
            examples.prepare(
                function,
                seed_value=examples.check_seed(self.run_seed, info.check),
                log=self._examples,
                fixtures=_fixtures_only(item),
            )
        # The check's whole body, every example included, runs in its backend's scope: on an
        # upper-half backend data_ptr() is presented there, and restored however it ends.
        with info.backend.running():
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        info = item.stash.get(_CHECK_INFO, None)
        if info is not None:
            if call.excinfo is not None and isinstance(call.excinfo.value, FailedHealthCheck):
                # Not the bug a control must show: a check that could not generate its
                # inputs proves nothing, so it fails even where a failure was expected.
                if hasattr(report, "wasxfail"):
                    del report.wasxfail
                report.outcome = "failed"
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
        outcome, message = _classify(report, call, info)
        first = outcome is not None and pending.outcome is None
        if first or (outcome == Outcome.ERROR and pending.outcome == Outcome.PASSED):
            pending.outcome, pending.message = outcome, message
            if outcome in (Outcome.FAILED, Outcome.XFAILED) and self._examples.last is not None:
                pending.example = describe_example(self._examples.last)
        if report.when == "teardown":
            del self._pending[item.nodeid]
            self._record(
                info.result(
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
            )

    # -- the report -----------------------------------------------------------------------

    def _run_info(self, status: str) -> RunInfo:
        finished = time.time() if status != RUNNING else None
        return RunInfo(
            started=_iso(self.started),
            hypothesis_profile=_profile_name(),
            seed=self.run_seed,
            backend_spec=self.selection.spec,
            subjects=tuple(self.subjects),
            argv=tuple(self.config.invocation_params.args),
            status=status,
            finished=_iso(finished) if finished is not None else None,
            duration_s=finished - self.started if finished is not None else None,
            scenarios=scenario_speed(self.results) if finished is not None else None,
            contracts={
                name: s.contract.to_record()
                for name, s in self.subjects.items()
                if s.contract.declared
            },
        )

    def _record(self, result: Result) -> None:
        """Keep a result, starting the report file with the first one (in an isolated child,
        hand it to the parent instead)."""
        if self.child_dir is not None:
            document = {"result": result.to_record(), "reports": self._child_reports}
            write_json_atomically(self.child_dir / isolation.RESULT_FILE, document)
            return
        if self._writer is None:
            header = build_report(
                platform_id=self.platform_id,
                fingerprint=platform_fingerprint(self.backends),
                execution_target=execution_target(self.backends),
                run=self._run_info(RUNNING),
                results=(),
            )
            try:
                self._writer = ReportWriter(self.report_dir, header)
            except OSError as exc:
                self._cannot_write(exc)
        self.results.append(result)
        if self._writer is not None and not self.problems:
            try:
                self._writer.add(result)
            except OSError as exc:
                self._cannot_write(exc)

    def _cannot_write(self, exc: OSError) -> None:
        self.problems.append(f"cannot write the report in {self.report_dir}: {exc}")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.controls_only:
            self.verdicts = controls.verdicts(self.subjects.values(), self.backends, self.results)
            quiet = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
            if exitstatus in quiet and any(v.missed for v in self.verdicts):
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.child_dir is not None:
            return
        if self.scenario_items and not any(r.outcome.executed for r in self.results):
            self.problems.append(
                f"no check ran: all {len(self.results)} were skipped or unavailable"
                if self.results
                else "no check ran"
            )
        if self._writer is not None and not any("cannot write" in p for p in self.problems):
            interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
            try:
                self.report_path = self._writer.finish(
                    self._run_info(INTERRUPTED if interrupted else FINISHED)
                )
            except OSError as exc:
                self._cannot_write(exc)
        if self.problems and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for problem in self.problems:
            terminalreporter.write_line(f"ptrport: {problem}", red=True, bold=True)
        if self.controls_only:
            terminalreporter.section("ptrport controls")
            for line in controls.table(self.verdicts):
                terminalreporter.write_line(line)
            missed = [v for v in self.verdicts if v.missed]
            if missed:
                names = ", ".join(f"{v.control} on {v.backend}" for v in missed)
                terminalreporter.write_line(f"missed: {names}", red=True, bold=True)
        if self.report_path is None:
            return
        terminalreporter.section("ptrport")
        for line in backend_table(self.results):
            terminalreporter.write_line(line)
        speeds = [
            f"{name} {s['wall_s']:.1f} s"
            + (f" ({s['examples_per_s']:.0f} examples/s)" if s["examples"] else "")
            for name, s in scenario_speed(self.results).items()
        ]
        terminalreporter.write_line("scenarios, slowest first: " + ", ".join(speeds))
        terminalreporter.write_line(f"report: {self.report_path}")


def _classify(
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


def _check_info(item: pytest.Item) -> CheckInfo | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None or BACKEND_ARG not in callspec.params:
        return None
    backend: Backend = callspec.params[BACKEND_ARG]
    subject: Subject | None = callspec.params.get(SUBJECT_ARG)
    scenario = item.path.stem.removeprefix(SCENARIO_PREFIX)
    name = getattr(item, "originalname", item.name)
    others = callspec.id
    for ours in (backend.name, subject.name if subject is not None else None):
        if ours is not None:
            others = re.sub(f"(^|-){re.escape(ours)}(-|$)", "-", others, count=1)
    others = others.strip("-")
    function = f"{scenario}::{name}"
    check = function + (f"[{others}]" if others else "")
    unavailable = None
    if not backend.is_available():
        unavailable = f"{backend.name}: {backend.unavailable_reason}"
    elif subject is not None:
        reason = subject.unavailable_reason(backend)
        if reason:
            unavailable = f"{subject.name} on {backend.name}: {reason}"
    return CheckInfo(check, scenario, function, backend, subject, unavailable)


def _unwritable(directory: Path) -> str | None:
    """Why reports cannot be written in ``directory``, or ``None`` if they can."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".ptrport-", suffix=".probe"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _fixtures_only(item: pytest.Item) -> set[str]:
    """The item's fixtures, less the scenario's own parameters (those other than backend and
    subject), which are recorded with the example so a repro can pass them again."""
    callspec = getattr(item, "callspec", None)
    params = set(callspec.params) - {BACKEND_ARG, SUBJECT_ARG} if callspec is not None else set()
    return set(getattr(item, "fixturenames", ())) - params


def _exposing(info: CheckInfo) -> bool:
    """Whether this check must catch its subject's bug."""
    subject = info.subject
    return subject is not None and controls.exposes(
        controls.must_catch(subject, info.backend), info.scenario, info.function
    )


def _select_subjects(spec: str | None, controls_only: bool) -> dict[str, Subject]:
    """The run's subjects: ``--subject`` resolved among the built-in subjects, the controls
    catalogue, entry points and factories; by default the built-in ones and entry points, or
    with ``--controls`` the whole catalogue."""
    catalogue = controls.catalogue()
    try:
        if spec is None:
            chosen = catalogue if controls_only else select_subjects(None, builtin_subjects())
        else:
            chosen = select_subjects(spec, builtin_subjects() | catalogue)
    except HarnessError as exc:
        raise pytest.UsageError(f"--subject: {exc}") from None
    if controls_only:
        chosen = {name: s for name, s in chosen.items() if s.exposed_by}
        if not chosen:
            raise pytest.UsageError(f"--controls: none of the subjects {spec!r} is a control")
    return chosen


def _profile_name() -> str:
    get_name: Callable[[], str] | None = getattr(
        hypothesis_settings, "get_current_profile_name", None
    )
    return get_name() if get_name is not None else "unknown"


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat(timespec="seconds")
