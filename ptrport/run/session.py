"""A ptrport run inside pytest: its settings, and the objects each process of it registers.

One process may play several roles, each an object of its own module registered with pytest's
plugin manager (as pytest-xdist registers one object on its controller and another on each
worker):

- collection, :class:`ptrport.run.collection.ScenarioItems` (parametrize, mark): in a plain
  run, an xdist worker and an isolated child;
- checks, :class:`ptrport.run.outcomes.CheckOutcomes` (seed, scope, one result per item): the same;
- isolation's parent side, :class:`ptrport.run.isolation.IsolatedChecks`: a plain run and an xdist
  worker; its child side, :class:`ptrport.run.isolation.ChildSide`: an isolated child;
- the report, :class:`ptrport.run.reporting.RunReport` (journal, header, summary): a plain run and
  an xdist controller.

A check's :class:`~ptrport.report.records.Result` travels on the last pytest report of its item
(:data:`ptrport.plugin.RESULT_ATTRIBUTE`): from the checks role to the report role in one
process, from an isolated child to its parent (which replays the child's reports), and from an
xdist worker to the controller (which receives every report). So there is one way a result
reaches the report, and a worker's results are not lost or written by the worker.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings as hypothesis_settings

from ptrport.check import controls, examples
from ptrport.check.subjects import Subject, builtin_subjects
from ptrport.check.user_subjects import select_subjects
from ptrport.device.backends import Backend, BackendSelection, load_backends, parse_backend_spec
from ptrport.device.fingerprint import check_platform_id, resolve_platform_id
from ptrport.errors import HarnessError
from ptrport.run import profiles

if TYPE_CHECKING:
    from ptrport.run.collection import ScenarioItems
    from ptrport.run.reporting import RunReport

REPORT_DIR = "reports"
CONTROLS_REPORT_DIR = "reports/controls"


@dataclass(frozen=True)
class RunSettings:
    """What the command line chose, resolved once per process."""

    selection: BackendSelection
    backends: list[Backend]
    subjects: dict[str, Subject]
    subject_spec: str | None
    platform_id: str
    report_dir: Path
    run_seed: str
    controls_only: bool
    isolate: bool | None
    """``--isolate`` / ``--no-isolate``; ``None``: isolate non-CPU backends and user subjects."""
    example_timeout: float
    child_channel: str | None
    """Set in an isolated child: the pipes to its parent (:class:`ptrport.run.isolation.ChildSide`)."""
    started: float = field(default_factory=time.time)

    @classmethod
    def from_config(cls, config: pytest.Config, report_dir_default: str | None) -> RunSettings:
        known = load_backends()
        try:
            spec = config.getoption("ptrport_backend") or "available"
            selection = parse_backend_spec(spec, known)
        except (HarnessError, ValueError) as exc:
            raise pytest.UsageError(f"--backend: {exc}") from None
        try:
            backends = selection.resolve_present(known)
        except (HarnessError, ValueError) as exc:
            raise pytest.UsageError(str(exc)) from None
        platform = config.getoption("ptrport_platform")
        try:
            platform = check_platform_id(platform) if platform is not None else None
        except ValueError as exc:
            raise pytest.UsageError(f"--platform-name: {exc}") from None
        try:
            platform_id = resolve_platform_id(platform, backends)
        except (HarnessError, ValueError) as exc:
            raise pytest.UsageError(str(exc)) from None
        controls_only = bool(config.getoption("ptrport_controls"))
        report_dir = config.invocation_params.dir / (
            config.getoption("ptrport_report_dir")
            or report_dir_default
            or (CONTROLS_REPORT_DIR if controls_only else REPORT_DIR)
        )
        # The profile decides whether the run is derandomized, so it is loaded before the
        # run's seed is chosen.
        profiles.activate(report_dir)
        return cls(
            selection=selection,
            backends=backends,
            subjects=_select_subjects(config.getoption("ptrport_subject"), controls_only),
            subject_spec=config.getoption("ptrport_subject"),
            platform_id=platform_id,
            report_dir=report_dir,
            run_seed=examples.run_seed(
                config.getoption("hypothesis_seed", None),
                derandomize=hypothesis_settings().derandomize,
            ),
            controls_only=controls_only,
            isolate=config.getoption("ptrport_isolate"),
            example_timeout=config.getoption("ptrport_example_timeout"),
            child_channel=config.getoption("ptrport_child"),
        )


@dataclass
class Session:
    """The roles this process plays in a ptrport run (listed in the module's docstring)."""

    settings: RunSettings
    scenario_items: ScenarioItems | None
    """The collection role, where this process collects."""
    report: RunReport | None
    """The report role, where this process keeps the report."""

    @classmethod
    def start(cls, config: pytest.Config, report_dir_default: str | None) -> Session:
        from ptrport.run import collection as scenario_items
        from ptrport.run import isolation, outcomes
        from ptrport.run import reporting as run_report

        settings = RunSettings.from_config(config, report_dir_default)
        manager = config.pluginmanager
        role = _role(config)
        report: run_report.RunReport | None = None
        if role in ("plain", "controller"):
            report = run_report.RunReport(config, settings)
            if not config.option.collectonly:
                report.check_writable()
            manager.register(report, "ptrport-report")
        collection = None
        if role != "controller":
            collection = scenario_items.ScenarioItems(config, settings, report)
            manager.register(collection, "ptrport-collection")
            checks = outcomes.CheckOutcomes(config, settings)
            manager.register(checks, "ptrport-checks")
            if settings.child_channel is not None:
                child = isolation.ChildSide(settings.child_channel, checks, config)
                manager.register(child, "ptrport-child")
            else:
                isolated = isolation.IsolatedChecks(config, settings)
                manager.register(isolated, "ptrport-isolation")
                if report is not None:
                    report.isolation = isolated.counts
        return cls(settings, collection, report)

    def parametrize(self, metafunc: pytest.Metafunc) -> None:
        """Parametrize a scenario (where this process collects; an xdist controller does
        not)."""
        if self.scenario_items is not None:
            self.scenario_items.parametrize(metafunc)


def _role(config: pytest.Config) -> str:
    if config.getoption("ptrport_child"):
        return "child"
    if hasattr(config, "workerinput"):
        return "worker"
    distributed = config.getoption("dist", "no") not in (None, "no")
    if distributed and not config.getoption("collectonly"):
        return "controller"
    return "plain"


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
