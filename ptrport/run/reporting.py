"""The report role: the platform report of a run, written as results arrive (a journal beside it,
so an interrupted run keeps what it had), the header and summary on the terminal, the controls'
verdicts, the verdict by difference on the user's tests, and the reasons a run must not end
green.

Where a run has ``cpu`` and an upper-half or placed backend, each user test is judged by its
outcomes across them (:mod:`ptrport.report.verdicts`): the address-sensitive ones lead the
summary, the counts follow, and the report holds them all. A whole-suite run
(``--ptrport-all``) ends by that verdict: 1 where a test is address-sensitive, 0 where the only
failures are of tests that fail on ``cpu`` too (they cannot run here).

A partial run, one whose command line selects among the tests it collects (:func:`selected_by`),
merges into the platform's report: its results replace those of the same checks and every other
result is kept, from the first write on. A whole run replaces the report.

Results arrive on pytest's reports (:data:`ptrport.run.names.RESULT_ATTRIBUTE`), from this
process or from xdist workers. A worker that dies in a check is reported by xdist with a report
of its own; the check it was in, known from that item's earlier reports, is recorded as
``crashed``.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ptrport.check import controls
from ptrport.check.user_subjects import UserSubject
from ptrport.device.fingerprint import execution_target, platform_fingerprint, software_versions
from ptrport.report.platform_report import (
    FINISHED,
    INTERRUPTED,
    RUNNING,
    PlatformReport,
    ReportError,
    ReportWriter,
    RunInfo,
    build_report,
    iso_time,
    kept_results,
    load_report,
    report_path,
    scenario_speed,
)
from ptrport.report.records import Outcome, Result
from ptrport.report.summary import backend_table
from ptrport.report.verdicts import REFERENCE, Verdict, Verdicts, judge
from ptrport.run import profiles
from ptrport.run.isolation import WORKER_OUTPUT_KEY, Counts
from ptrport.run.names import CHECK_ATTRIBUTE, RESULT_ATTRIBUTE

if TYPE_CHECKING:
    from ptrport.run.settings import RunSettings

PHASES = ("setup", "call", "teardown")
REFERENCE_ADDED = (
    f"ptrport: {REFERENCE} added as the reference the other backends are judged against"
)


class RunReport:
    """The report role."""

    def __init__(self, config: pytest.Config, settings: RunSettings) -> None:
        self.config = config
        self.settings = settings
        self.results: list[Result] = []
        self.report_path: Path | None = None
        self.problems: list[str] = []
        """Why this run must not end green although pytest may think it can: one line each."""
        self.verdicts: list[controls.ControlVerdict] = []
        self.expected: int | None = None
        """How many scenario items this process collected (``None`` on an xdist controller)."""
        self.isolation: Counts | None = None
        """The isolated checks' children: this process's, or its xdist workers' summed."""
        self.selected_by = selected_by(config)
        """What makes this a partial run, merged into the report (empty for a whole run)."""
        self.earlier: PlatformReport | None = None
        """The report a partial run merges into, read before it starts."""
        self.judgement: Verdicts | None = None
        """The verdict by difference on the user's tests of the report, once the run ends
        (``None`` where the run has no ``cpu``, no upper-half or placed backend, or no user
        test)."""
        self.unjudged: set[str] = set()
        """Node ids of the tests that failed outside ptrport (no check of ours): pytest's
        verdict on them stands in a whole-suite run."""
        self._writer: ReportWriter | None = None
        self._writer_failed = False
        self._in_flight: dict[str, dict[str, Any]] = {}
        self._recorded: set[str] = set()

    @property
    def path(self) -> Path:
        return report_path(self.settings.report_dir, self.settings.platform_id)

    def check_writable(self) -> None:
        """Refuse to start where the report cannot be written, or, for a partial run, where
        the report it would merge into cannot be read or was made with another torch."""
        reason = _unwritable(self.settings.report_dir)
        if reason:
            raise pytest.UsageError(
                f"--report-dir: cannot write reports in {self.settings.report_dir}: {reason}"
            )
        if self.selected_by and self.path.exists():
            self.earlier = self._report_to_merge_into()

    def _report_to_merge_into(self) -> PlatformReport:
        how = ", ".join(self.selected_by)
        try:
            earlier = load_report(self.path)
        except ReportError as exc:
            raise pytest.UsageError(
                f"{exc}; this run selects tests ({how}) and would keep the report's other "
                "results: move the file away, or run all the tests to replace it"
            ) from None
        torch_then = earlier.fingerprint.get("software", {}).get("torch")
        torch_now = software_versions()["torch"]
        if torch_then != torch_now:
            raise pytest.UsageError(
                f"{self.path}: made with torch {torch_then}, and this is torch {torch_now}; "
                f"this run selects tests ({how}) and would keep the report's other results: "
                "run all the tests to replace it, or use another --report-dir"
            )
        return earlier

    def expect(self, count: int) -> None:
        self.expected = count

    # -- header ---------------------------------------------------------------------------

    def pytest_report_header(self) -> list[str]:
        settings = self.settings
        present = [b.name for b in settings.backends if b.is_available()]
        missing = [
            f"{b.name} ({b.unavailable_reason})" for b in settings.backends if not b.is_available()
        ]
        controls = [name for name, s in settings.subjects.items() if s.exposed_by]
        merging = f" (a partial run, by {', '.join(self.selected_by)}: other results are kept)"
        return [
            f"ptrport: platform {settings.platform_id}, report {self.path}"
            + (merging if self.selected_by else ""),
            f"ptrport: backends {', '.join(present) or 'none'}"
            + (f"; unavailable: {'; '.join(missing)}" if missing else ""),
            *([REFERENCE_ADDED] if settings.reference_added else []),
            *self._what_runs(controls),
            f"ptrport: hypothesis profile {profiles.current_name()}, seed {settings.run_seed}",
        ]

    def _what_runs(self, controls: list[str]) -> list[str]:
        """The subjects of the scenarios; for a whole-suite run that names none, what it runs
        instead (its scenarios, should it collect any, still run every subject)."""
        settings = self.settings
        if settings.whole_suite and settings.subject_spec is None:
            stand_in = f", {settings.stand_in} stood in for" if settings.stand_in else ""
            return [f"ptrport: whole suite, every test once per backend{stand_in}"]
        return [
            f"ptrport: subjects {', '.join(settings.subjects)}"
            + (f" (controls: {', '.join(controls)})" if controls else ""),
            *(
                f"ptrport: {name} declares {s.contract}"
                for name, s in settings.subjects.items()
                if s.contract.declared
            ),
        ]

    # -- results --------------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, RESULT_ATTRIBUTE, None)
        check = getattr(report, CHECK_ATTRIBUTE, None)
        if record is not None:
            self._in_flight.pop(report.nodeid, None)
            self.record(Result.from_record(record))
        elif isinstance(check, dict):
            self._in_flight[report.nodeid] = check
        elif report.when not in PHASES and report.nodeid in self._in_flight:
            self._worker_crashed(report)
        elif report.failed:
            self.unjudged.add(report.nodeid)

    def _worker_crashed(self, report: pytest.TestReport) -> None:
        check = self._in_flight.pop(report.nodeid)
        text = str(report.longrepr or "").strip()
        first = text.splitlines()[0] if text else "the worker died"
        message = f"crashed: {first}"
        self.record(Result(**check, outcome=Outcome.CRASHED, message=message, nodeid=report.nodeid))

    def record(self, result: Result) -> None:
        """Keep a result, starting the report file with the first one."""
        if result.nodeid is not None:
            if result.nodeid in self._recorded:
                return
            self._recorded.add(result.nodeid)
        if self._writer is None and not self._writer_failed:
            header = build_report(
                platform_id=self.settings.platform_id,
                fingerprint=platform_fingerprint(self.settings.backends),
                execution_target=execution_target(self.settings.backends),
                run=self._run_info(RUNNING),
                results=(),
            )
            kept: tuple[Result, ...] = ()
            if self.earlier is not None:
                kept = kept_results(self.earlier)
                if self.earlier.benchmarks is not None:
                    header["benchmarks"] = self.earlier.benchmarks
            try:
                self._writer = ReportWriter(self.settings.report_dir, header, kept)
            except OSError as exc:
                self._writer_failed = True
                self._cannot_write(exc)
        self.results.append(result)
        if self._writer is not None and not self.problems:
            try:
                self._writer.add(result)
            except OSError as exc:
                self._cannot_write(exc)

    def _cannot_write(self, exc: OSError) -> None:
        self.problems.append(f"cannot write the report in {self.settings.report_dir}: {exc}")

    def _run_info(self, status: str) -> RunInfo:
        settings = self.settings
        finished = time.time() if status != RUNNING else None
        return RunInfo(
            started=iso_time(settings.started),
            hypothesis_profile=profiles.current_name(),
            seed=settings.run_seed,
            backend_spec=settings.selection.spec,
            subjects=tuple(settings.subjects),
            argv=tuple(self.config.invocation_params.args),
            status=status,
            finished=iso_time(finished) if finished is not None else None,
            duration_s=finished - settings.started if finished is not None else None,
            scenarios=scenario_speed(self.results) if finished is not None else None,
            contracts={
                name: s.contract.to_record()
                for name, s in settings.subjects.items()
                if s.contract.declared
            },
            subject_specs={
                name: s.spec
                for name, s in settings.subjects.items()
                if isinstance(s, UserSubject) and s.spec is not None
            },
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """An xdist worker ended: add up its isolated children."""
        counts = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
        if isinstance(counts, dict):
            if self.isolation is None:
                self.isolation = Counts()
            self.isolation.add(counts)

    # -- the end --------------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.config.option.collectonly:
            return
        settings = self.settings
        quiet = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
        if settings.controls_only:
            self.verdicts = controls.verdicts(
                settings.subjects.values(), settings.backends, self.results
            )
            if exitstatus in quiet and any(v.missed for v in self.verdicts):
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if (self.expected or self.results) and not any(r.outcome.executed for r in self.results):
            self.problems.append(
                f"no check ran: all {len(self.results)} were skipped or unavailable"
                if self.results
                else "no check ran"
            )
        self.judgement = judge(
            self._writer.results if self._writer is not None else self.results,
            {b.name: bool(b.high_addresses) for b in settings.backends if b.is_available()},
        )
        if self._writer is not None and not any("cannot write" in p for p in self.problems):
            interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
            try:
                self.report_path = self._writer.finish(
                    self._run_info(INTERRUPTED if interrupted else FINISHED), self.judgement
                )
            except OSError as exc:
                self._cannot_write(exc)
        judged = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        if settings.whole_suite and self.judgement is not None and exitstatus in judged:
            session.exitstatus = self._whole_suite_status()
        if self.problems and session.exitstatus in quiet:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _whole_suite_status(self) -> pytest.ExitCode:
        """A whole-suite run's status, by the verdict: failed where a test this run ran is
        address-sensitive, or where something failed that the verdict does not judge (a
        scenario's check, a test that ran outside ptrport); else passed, however many tests
        fail on ``cpu`` too."""
        assert self.judgement is not None
        ran = {r.check for r in self.results}
        red = (
            any(v.check in ran for v in self.judgement.findings)
            or any(r.outcome.bad for r in self.results if not r.own_test)
            or bool(self.unjudged)
            or any(v.missed for v in self.verdicts)
        )
        return pytest.ExitCode.TESTS_FAILED if red else pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for problem in self.problems:
            terminalreporter.write_line(f"ptrport: {problem}", red=True, bold=True)
        if self.settings.controls_only:
            terminalreporter.section("ptrport controls")
            for line in controls.table(self.verdicts):
                terminalreporter.write_line(line)
            missed = [v for v in self.verdicts if v.missed]
            if missed:
                names = ", ".join(f"{v.control} on {v.backend}" for v in missed)
                terminalreporter.write_line(f"missed: {names}", red=True, bold=True)
        if self.report_path is None:
            if self.judgement is not None:
                terminalreporter.section("ptrport")
                self._write_verdicts(terminalreporter)
            why = self._why_no_report(terminalreporter)
            if why:
                terminalreporter.write_line(f"ptrport: {why}")
            return
        terminalreporter.section("ptrport")
        self._write_verdicts(terminalreporter)
        for line in backend_table(self.results):
            terminalreporter.write_line(line)
        if self.isolation is not None and self.isolation.checks:
            terminalreporter.write_line(self.isolation.summary())
        scenarios = [r for r in self.results if not r.own_test]
        own_tests = [r for r in self.results if r.own_test]
        tests = "tests' modules" if self.settings.whole_suite else "marked tests' modules"
        for what, results in (("scenarios", scenarios), (tests, own_tests)):
            if results:
                terminalreporter.write_line(f"{what}, slowest first: {_speeds(results)}")
        terminalreporter.write_line(f"report: {self.report_path}{self._what_was_kept()}")

    def _write_verdicts(self, terminalreporter: Any) -> None:
        """The verdict by difference: each address-sensitive test on a line, then the counts;
        in a whole-suite run, what its exit status stands on."""
        judgement = self.judgement
        if judgement is None:
            return
        for finding in judgement.findings:
            terminalreporter.write_line(finding.finding_line(), red=True, bold=True)
        judged = ", ".join(judgement.judged)
        terminalreporter.write_line(
            f"verdict by difference ({judgement.reference} against {judged}): "
            + judgement.counts_line()
        )
        if self.settings.whole_suite:
            terminalreporter.write_line(_whole_suite_line(judgement, self.unjudged))

    def _why_no_report(self, terminalreporter: Any) -> str | None:
        """Why no report was written, where pytest's own summary does not say it."""
        errors = sum(
            isinstance(r, pytest.CollectReport) for r in terminalreporter.stats.get("error", ())
        )
        if errors and not self.results:
            were = "error" if errors == 1 else "errors"
            return f"{errors} {were} during collection; no check ran, no report written"
        if self.expected == 0 and not self.results and not self.selected_by:
            return (
                "no scenario and no marked test collected; the scenarios are `ptrport run` or "
                "`pytest --pyargs ptrport.scenarios`, your own tests are marked "
                "@pytest.mark.ptrport"
            )
        return None

    def _what_was_kept(self) -> str:
        """For a partial run, how many results the report holds, this run's and those it
        kept, and from which runs."""
        if not self.selected_by or self._writer is None:
            return ""
        everything = self._writer.results
        runs = Counter(r.from_run["started"] for r in everything if r.from_run is not None)
        total = f"{len(everything)} result{'' if len(everything) == 1 else 's'}"
        if self.earlier is None:
            return f" ({total}, from this run: there was no report to merge into)"
        if not runs:
            return f" ({total}, all from this run, which reran every check the report had)"
        kept = sum(runs.values())
        ours = len(everything) - kept
        if len(runs) == 1:
            (started,) = runs
            where = f"the run of {started}"
        else:
            where = "the runs of " + ", ".join(f"{when} ({n})" for when, n in sorted(runs.items()))
        return f" ({total}: {ours} from this run, {kept} kept from {where})"


def selected_by(config: pytest.Config) -> list[str]:
    """What selects among the tests this run collects, as the command line (``addopts``
    included) names it: node ids (``FILE::TEST``), ``-k``, ``-m``, ``--deselect``, ``--lf``,
    ``--sw``. Paths, ``--ignore``, ``--backend`` and ``--subject`` choose what is collected,
    and select nothing."""
    option = config.option
    found = []
    if any("::" in str(arg) for arg in config.args):
        found.append("node ids")
    for name, shown in (("keyword", "-k"), ("markexpr", "-m"), ("deselect", "--deselect")):
        if getattr(option, name, None):
            found.append(shown)
    if getattr(option, "lf", False):
        found.append("--lf")
    if any(getattr(option, f"stepwise{more}", False) for more in ("", "_skip", "_reset")):
        found.append("--sw")
    return found


def _whole_suite_line(judgement: Verdicts, unjudged: set[str]) -> str:
    """What a whole-suite run's exit status says: address-sensitive tests, or none, and how
    many tests cannot run here."""
    counts = judgement.counts
    sensitive = len(judgement.findings)
    cannot = counts[Verdict.FAILS_EVERYWHERE]
    found = (
        f"{sensitive} {'test is' if sensitive == 1 else 'tests are'} address-sensitive"
        if sensitive
        else "no test is address-sensitive"
    )
    tests = "test" if cannot == 1 else "tests"
    here = f"{cannot} {tests} cannot run here (failing on {judgement.reference} too)"
    outside = (
        f"; {len(unjudged)} failed outside the verdict (not run per backend)" if unjudged else ""
    )
    return f"whole suite: {found}; {here}{outside}"


def _speeds(results: list[Result]) -> str:
    return ", ".join(
        f"{name} {s['wall_s']:.1f} s"
        + (f" ({s['examples_per_s']:.0f} examples/s)" if s["examples"] else "")
        for name, s in scenario_speed(results).items()
    )


def _unwritable(directory: Path) -> str | None:
    """Why reports cannot be written in ``directory``, or ``None`` if they can."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".ptrport-", suffix=".probe"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
