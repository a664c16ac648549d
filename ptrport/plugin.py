"""The pytest plugin's entry point: its options, and when it acts.

Installing ptrport registers this module with every pytest run in the virtualenv, so it is
light: it imports nothing beyond pytest and the names in :mod:`ptrport.run.names`, and it
changes nothing in a run that is not a ptrport run. A run is one when it asks (a ptrport option
on the command line, or the scenarios package among the paths it collects) or when it collects
a scenario: a test marked ``ptrport_scenario``, as every module of :mod:`ptrport.scenarios` is.
Only then does :mod:`ptrport.run.session` load the backends (and torch) and register the
objects that parametrize the scenarios, run them and keep their report. A test of someone else
that asks for a fixture named ``backend`` is left alone.
"""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ptrport.run.names import (
    CHECK_ATTRIBUTE,
    DEVICE_FIXTURE,
    MARKER,
    REAL_MEMORY,
    REPORT_DIR_ENV,
    REPORT_DIR_OPTION,
    RESULT_ATTRIBUTE,
    SCENARIOS_PACKAGE,
    STAND_INS,
    USER_MARKER,
    WHOLE_SUITE_INI,
)

if TYPE_CHECKING:
    from ptrport.device.backends import Backend
    from ptrport.run.own_tests import PtrportDevice
    from ptrport.run.session import Session

_SESSION = pytest.StashKey["Session | None"]()
_PYTHON_THREADS_AT_IMPORT = frozenset(t.ident for t in threading.enumerate() if t.ident)
"""The Python threads alive when pytest loaded this plugin: before any conftest, test module
or plugin loaded after it ran (isolation forks only a process where none of them started a
thread). An xdist worker's own threads are among them."""
_ASKING_OPTIONS = (
    "ptrport_backend",
    "ptrport_subject",
    "ptrport_controls",
    "ptrport_isolate",
    "ptrport_child",
    "ptrport_report_dir",
    "ptrport_platform",
    "ptrport_all",
    "ptrport_stand_in",
)
"""The options whose presence makes a run a ptrport run (each defaults to ``None``)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ptrport", "ptrport: device addresses in tensors")
    group.addoption(
        "--backend",
        dest="ptrport_backend",
        default=None,
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
        action="store_const",
        const=True,
        default=None,
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
        type=_seconds,
        metavar="SECONDS",
        help="in an isolated check, the longest one example may run (default: 60)",
    )
    group.addoption(
        "--ptrport-all",
        dest="ptrport_all",
        action="store_const",
        const=True,
        default=None,
        help="run every collected test, marked or not, once per backend in that backend's "
        "scope, and judge each by the difference between cpu and the other backends "
        "(also: ptrport_all = true in the ini file)",
    )
    group.addoption(
        "--ptrport-stand-in",
        dest="ptrport_stand_in",
        default=None,
        choices=STAND_INS,
        metavar="cuda",
        help="on the CPU backends, let code written for this device run on the backend's "
        "device: availability, tensors asked for on it, synchronize, streams and events, "
        "Triton kernels interpreted",
    )
    parser.addini(
        WHOLE_SUITE_INI,
        type="bool",
        default=False,
        help="ptrport: run every collected test once per backend, as --ptrport-all does",
    )
    group.addoption(
        "--ptrport-child",
        dest="ptrport_child",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(
        REPORT_DIR_OPTION,
        dest="ptrport_report_dir",
        default=None,
        metavar="DIR",
        help=f"where the platform report is written (default: ${REPORT_DIR_ENV}, else reports, "
        "or reports/controls with --controls)",
    )
    group.addoption(
        "--platform-name",
        dest="ptrport_platform",
        default=None,
        metavar="ID",
        help="the platform id the report is filed under "
        "(default: $PTRPORT_PLATFORM, else derived from the backends and devices)",
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from ptrport.run import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    if REPORT_DIR_OPTION in args:
        from ptrport.run import pytest_setup

        pytest_setup.relocate_if_misled(early_config, args, REPORT_DIR_OPTION)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{USER_MARKER}(backends=None): run this test once per backend of the run (those named, "
        f"if given), in that backend's scope, with the {DEVICE_FIXTURE} fixture",
    )
    config.addinivalue_line(
        "markers",
        f"{MARKER}({REAL_MEMORY}=False): a ptrport scenario, parametrized over backends and "
        f"subjects ({REAL_MEMORY}: its checks copy real allocations, so it runs where they are "
        "placed too)",
    )
    config.stash[_SESSION] = None
    if _asked(config):
        ptrport_session(config)
    else:
        config.pluginmanager.register(_ResultsArriving(config), "ptrport-results-arriving")


def ptrport_session(config: pytest.Config) -> Session:
    """This run's ptrport session, started (with torch loaded) on first use."""
    current = config.stash.get(_SESSION, None)
    if current is None:
        from ptrport.run.session import Session

        current = config.stash[_SESSION] = Session.start(
            config, report_dir_default(), _PYTHON_THREADS_AT_IMPORT
        )
    return current


def report_dir_default() -> str | None:
    return os.environ.get(REPORT_DIR_ENV) or None


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    definition = metafunc.definition
    if any(definition.get_closest_marker(m) is not None for m in (MARKER, USER_MARKER)):
        ptrport_session(metafunc.config).parametrize(metafunc)
        return
    started = metafunc.config.stash.get(_SESSION, None)
    if started is not None and started.settings.whole_suite:
        started.parametrize(metafunc)


@pytest.fixture(scope="session")
def ptrport_backend() -> Backend:
    """The backend a marked test runs on: each is parametrized over the run's backends, which
    takes this fixture's place; a test that is not marked gets here, and is told so."""
    pytest.fail(
        f"the {DEVICE_FIXTURE} fixture is for tests marked @pytest.mark.{USER_MARKER}: "
        "add the marker to the test, its class or its module",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def ptrport_device(ptrport_backend: Backend) -> PtrportDevice:
    """The backend a test marked ``@pytest.mark.ptrport`` runs on, once per backend of the run:
    ``.device``, ``.name``, ``.kind``, ``.presented``, ``.can_pin`` and
    ``.place(tensor, at=ADDRESS)`` (:class:`ptrport.run.own_tests.PtrportDevice`). Session
    scoped, as the backend is, so that Hypothesis tests may use it."""
    from ptrport.run.own_tests import PtrportDevice

    return PtrportDevice(ptrport_backend)


class _ResultsArriving:
    """In a run that did not ask for ptrport, a ptrport result arriving from elsewhere (an
    xdist worker that collected a scenario this process never saw) starts the session that
    keeps it, rather than letting it go unrecorded."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.config.stash.get(_SESSION, None) is not None:
            return
        if getattr(report, RESULT_ATTRIBUTE, None) is None and not hasattr(report, CHECK_ATTRIBUTE):
            return
        started = ptrport_session(self.config)
        if started.report is not None:
            started.report.pytest_runtest_logreport(report)


def _seconds(value: str) -> float:
    """A positive number of seconds, for ``--example-timeout``."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not seconds > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of seconds")
    return seconds


def _asked(config: pytest.Config) -> bool:
    """Whether the command line asks for a ptrport run: one of our options, or the scenarios
    package (or a module of it) among the paths to collect. A directory that merely holds it
    does not ask (a project's virtualenv under its root holds it); a scenario collected from
    there starts the session when it is collected."""
    if any(config.getoption(name) is not None for name in _ASKING_OPTIONS):
        return True
    if config.getini(WHOLE_SUITE_INI):
        return True
    scenarios = _scenarios_directory()
    if scenarios is None:
        return False
    for arg in config.args:
        target = _collected_path(arg, config)
        if target is not None and (target == scenarios or scenarios in target.parents):
            return True
    return False


def _scenarios_directory() -> Path | None:
    from importlib.util import find_spec

    spec = find_spec(SCENARIOS_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent


def _collected_path(arg: str, config: pytest.Config) -> Path | None:
    path_part = arg.split("::", 1)[0]
    if config.option.pyargs:
        from importlib.util import find_spec

        try:
            spec = find_spec(path_part)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin is not None:
            origin = Path(spec.origin).resolve()
            return origin.parent if origin.name == "__init__.py" else origin
    path = Path(config.invocation_params.dir, path_part)
    return path.resolve() if path.exists() else None
