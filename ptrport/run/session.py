"""A ptrport run inside pytest: the roles each process of it plays, each an object of its own
module registered with pytest's plugin manager (as pytest-xdist registers one object on its
controller and another on each worker), chosen by the process's :class:`Role`:

- collection, :class:`~ptrport.run.collection.ScenarioItems` (parametrize, mark): in a plain
  run, an xdist worker and an isolated child;
- checks, :class:`~ptrport.run.outcomes.CheckOutcomes` (seed, scope, one result per item): the
  same;
- isolation's parent side, :class:`~ptrport.run.isolation.IsolatedChecks`: a plain run and an
  xdist worker; its child side, :class:`~ptrport.run.child_side.ChildSide`: an isolated child
  (a spawned one registers it here; a forked one, as it is forked);
- the report, :class:`~ptrport.run.reporting.RunReport` (journal, header, summary): a plain run
  and an xdist controller.

Each role reads the run's :class:`~ptrport.run.settings.RunSettings`. A check's
:class:`~ptrport.report.records.Result` travels on the last pytest report of its item
(:data:`ptrport.run.names.RESULT_ATTRIBUTE`): from the checks role to the report role in one
process, from an isolated child to its parent (which replays the child's reports), and from an
xdist worker to the controller (which receives every report). So there is one way a result
reaches the report, and a worker's results are not lost or written by the worker.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pytest

from ptrport.device.stand_in import STAND_INS
from ptrport.run.child_side import ChildSide
from ptrport.run.collection import ScenarioItems
from ptrport.run.isolation import IsolatedChecks
from ptrport.run.names import (
    ROLE_CHECKS,
    ROLE_CHILD,
    ROLE_COLLECTION,
    ROLE_ISOLATION,
    ROLE_REPORT,
)
from ptrport.run.outcomes import CheckOutcomes
from ptrport.run.reporting import RunReport
from ptrport.run.settings import RunSettings


@dataclass
class Session:
    """The roles this process plays in a ptrport run (listed in the module's docstring)."""

    settings: RunSettings
    scenario_items: ScenarioItems | None
    """The collection role, where this process collects."""
    report: RunReport | None
    """The report role, where this process keeps the report."""

    @classmethod
    def start(
        cls,
        config: pytest.Config,
        report_dir_default: str | None,
        python_threads: frozenset[int],
    ) -> Session:
        """The roles of this process; ``python_threads``: the Python threads alive when pytest
        loaded ptrport, before any conftest ran."""
        settings = RunSettings.from_config(config, report_dir_default)
        manager = config.pluginmanager
        role = Role.of(config)
        if settings.stand_in is not None and role.collects:
            _install_stand_in(config, settings)
        report: RunReport | None = None
        if role.keeps_report:
            report = RunReport(config, settings)
            if not config.option.collectonly:
                report.check_writable()
            manager.register(report, ROLE_REPORT)
        collection = None
        if role.collects:
            collection = ScenarioItems(config, settings, report.expect if report else None)
            manager.register(collection, ROLE_COLLECTION)
            checks = CheckOutcomes(config, settings)
            manager.register(checks, ROLE_CHECKS)
            if role is Role.CHILD:
                assert settings.child_channel is not None
                commands, answers = (int(fd) for fd in settings.child_channel.split(","))
                manager.register(ChildSide(commands, answers, checks, config), ROLE_CHILD)
            else:
                isolated = IsolatedChecks(config, settings, checks, python_threads)
                manager.register(isolated, ROLE_ISOLATION)
                if report is not None:
                    report.isolation = isolated.counts
        return cls(settings, collection, report)

    def parametrize(self, metafunc: pytest.Metafunc) -> None:
        """Parametrize a scenario (where this process collects; an xdist controller does
        not)."""
        if self.scenario_items is not None:
            self.scenario_items.parametrize(metafunc)


def _install_stand_in(config: pytest.Config, settings: RunSettings) -> None:
    """Stand in for ``--ptrport-stand-in``'s device from now (before any test module is
    imported) to the run's end, with the helpers conftests and plugins stand in for."""
    not_cpu = [b.name for b in settings.backends if b.device_type != "cpu"]
    if not_cpu:
        raise pytest.UsageError(
            f"--ptrport-stand-in={settings.stand_in} stands in on the CPU backends, and "
            f"{', '.join(not_cpu)} {'is' if len(not_cpu) == 1 else 'are'} not: run "
            "them without it"
        )
    assert settings.stand_in is not None
    stand_in = STAND_INS[settings.stand_in]()
    stand_in.install()
    config.add_cleanup(stand_in.uninstall)
    config.hook.pytest_ptrport_stand_in.call_historic(
        kwargs={"stand_in": stand_in, "config": config}
    )


class Role(enum.Enum):
    """What this process is in the run, from how pytest started it."""

    PLAIN = "plain"
    """A run in one process: it collects, runs and keeps the report."""
    CONTROLLER = "controller"
    """An xdist controller: its workers collect and run; it keeps the report."""
    WORKER = "worker"
    """An xdist worker: it collects and runs; its results travel to the controller."""
    CHILD = "child"
    """An isolated child: it collects and runs the checks its parent sends it."""

    @classmethod
    def of(cls, config: pytest.Config) -> Role:
        if config.getoption("ptrport_child"):
            return cls.CHILD
        if hasattr(config, "workerinput"):
            return cls.WORKER
        distributed = config.getoption("dist", "no") not in (None, "no")
        if distributed and not config.getoption("collectonly"):
            return cls.CONTROLLER
        return cls.PLAIN

    @property
    def keeps_report(self) -> bool:
        return self in (Role.PLAIN, Role.CONTROLLER)

    @property
    def collects(self) -> bool:
        return self is not Role.CONTROLLER
