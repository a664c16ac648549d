"""Collection: scenarios parametrized over the run's backends and subjects, and their items
marked, skipped where a backend or subject is unavailable, expected to fail where a control's
bug must show, deselected outside the controls with ``--controls``.

Only functions marked ``ptrport_scenario`` are parametrized (:mod:`ptrport.plugin` decides);
the ``backend`` and ``subject`` arguments of anyone else's test are theirs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from ptrport.check import controls
from ptrport.check.subjects import Subject
from ptrport.device.backends import Backend
from ptrport.report.records import OWN_TEST, Outcome, Result
from ptrport.run.names import (
    BACKEND_PARAM,
    BACKENDS_KEYWORD,
    MARKER,
    REAL_MEMORY,
    USER_MARKER,
)

if TYPE_CHECKING:
    from ptrport.run.settings import RunSettings

BACKEND_ARG = "backend"
SUBJECT_ARG = "subject"
SCENARIO_PREFIX = "test_"


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
    own: bool = False
    """A user's own test marked ``@pytest.mark.ptrport``, not one of our scenarios."""
    unmarked: bool = False
    """A user's test that a whole-suite run parametrized, not marked: on a backend that places
    allocations, the run places them (it places none itself)."""

    def identity(self) -> dict[str, Any]:
        """Which check this is, as a result names it (and as its reports carry it)."""
        subject = self.subject.name if self.subject is not None else None
        return {
            "check": self.check,
            "scenario": self.scenario,
            "subject": OWN_TEST if self.own else subject,
            "backend": self.backend.name,
        }

    def across_backends(self) -> tuple[str, str | None]:
        """What this check is on every backend: its check and its subject."""
        return self.check, OWN_TEST if self.own else getattr(self.subject, "name", None)

    def result(self, outcome: Outcome, **fields: Any) -> Result:
        """This check's result for its subject on its backend."""
        return Result(**self.identity(), outcome=outcome, **fields)

    @property
    def exposing(self) -> bool:
        """Whether this check must catch its subject's bug."""
        subject = self.subject
        return subject is not None and controls.exposes(
            controls.must_catch(subject, self.backend), self.scenario, self.function
        )

    @property
    def demonstrates(self) -> bool:
        """Whether this check shows what a control does here: catches its bug, or passes
        where the bug cannot show (a ``--controls`` run keeps these)."""
        subject = self.subject
        return subject is not None and controls.exposes(
            controls.must_catch(subject, self.backend) | subject.exposed_by,
            self.scenario,
            self.function,
        )


CHECK_INFO = pytest.StashKey[CheckInfo]()


def check_info(item: pytest.Item) -> CheckInfo | None:
    """The check a collected item makes, if it is one of the run's scenario items."""
    return item.stash.get(CHECK_INFO, None)


class ScenarioItems:
    """The collection role."""

    def __init__(
        self,
        config: pytest.Config,
        settings: RunSettings,
        collected: Callable[[int], None] | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self._collected = collected
        """Told how many scenario items this process collected (the report role's count)."""
        self._unmarked: set[str] = set()
        """The tests a whole-suite run parametrized, by their definitions' node ids."""

    def parametrize(self, metafunc: pytest.Metafunc) -> None:
        """Parametrize a scenario over the backends, and over the subjects if it takes one. A
        backend that places allocations runs only the scenarios marked ``real_memory``: for
        the others (no real allocation drawn) it would be ``cpu`` again."""
        own = metafunc.definition.get_closest_marker(USER_MARKER)
        scenario = metafunc.definition.get_closest_marker(MARKER)
        if own is None and scenario is None and self.settings.whole_suite:
            own = getattr(pytest.mark, USER_MARKER).mark  # a whole-suite run marks every test
            self._unmarked.add(metafunc.definition.nodeid)
        if own is not None:
            self._parametrize_own(metafunc, own)
            return
        markers = metafunc.definition.iter_markers(MARKER)
        real_memory = any(marker.kwargs.get(REAL_MEMORY) for marker in markers)
        backends = [b for b in self.settings.backends if real_memory or not b.places_allocations]
        if BACKEND_ARG in metafunc.fixturenames:
            metafunc.parametrize(
                BACKEND_ARG, backends, ids=[b.name for b in backends], scope="session"
            )
        if SUBJECT_ARG in metafunc.fixturenames:
            subjects = list(self.settings.subjects.values())
            metafunc.parametrize(
                SUBJECT_ARG, subjects, ids=[s.name for s in subjects], scope="session"
            )

    def _parametrize_own(self, metafunc: pytest.Metafunc, marker: pytest.Mark) -> None:
        """A user's marked test, once per backend of the run (those its marker allows)."""
        allowed = marker.kwargs.get(BACKENDS_KEYWORD)
        if allowed is not None and (
            isinstance(allowed, str) or not all(isinstance(name, str) for name in allowed)
        ):
            raise pytest.Collector.CollectError(
                f"{metafunc.definition.nodeid}: @pytest.mark.{USER_MARKER}({BACKENDS_KEYWORD}=...) "
                f"takes a list of backend names, not {allowed!r}"
            )
        backends = [b for b in self.settings.backends if allowed is None or b.name in allowed]
        if BACKEND_PARAM not in metafunc.fixturenames:
            # Its own parameter even where the test asks for no fixture of ours: every marked
            # test is collected once per backend (as pytest-repeat adds its step number).
            metafunc.fixturenames.append(BACKEND_PARAM)
        metafunc.parametrize(
            BACKEND_PARAM, backends, ids=[b.name for b in backends], scope="session"
        )

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        kept, deselected = [], []
        for item in items:
            if _backendless(item):
                deselected.append(item)
                continue
            info = _make_check_info(item)
            if info is None:
                kept.append(item)
                continue
            if info.own and item.nodeid.split("[", 1)[0] in self._unmarked:
                info = dataclasses.replace(info, unmarked=True)
            if info.own and item.get_closest_marker(USER_MARKER) is None:
                # Parametrized over the backends without the marker on the item: a whole-suite
                # run, or a marker added to the test's definition while it was parametrized
                # (pytest copies no marker from the definition to its items). Whatever reads
                # the item's markers (``-m ptrport``, a plugin, a conftest) sees what ran.
                item.add_marker(USER_MARKER)
            if self.settings.controls_only and not info.demonstrates:
                deselected.append(item)
                continue
            kept.append(item)
            item.stash[CHECK_INFO] = info
            if info.unavailable:
                item.add_marker(pytest.mark.skip(reason=f"unavailable: {info.unavailable}"))
            elif info.exposing:
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
        if self._collected is not None:
            self._collected(sum(CHECK_INFO in item.stash for item in items))


def _backendless(item: pytest.Item) -> bool:
    """A scenario none of the run's backends runs (only a backend that places allocations
    was asked for, and the scenario copies no real memory): pytest's empty parameter set."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return False
    for marker, param in ((MARKER, BACKEND_ARG), (USER_MARKER, BACKEND_PARAM)):
        if item.get_closest_marker(marker) is not None and param in callspec.params:
            return not isinstance(callspec.params[param], Backend)
    return False


def _make_check_info(item: pytest.Item) -> CheckInfo | None:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and BACKEND_PARAM in callspec.params:
        return _own_check_info(item, callspec.params[BACKEND_PARAM], callspec.id)
    if item.get_closest_marker(MARKER) is None or callspec is None:
        return None
    if BACKEND_ARG not in callspec.params:
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


def _own_check_info(item: pytest.Item, backend: Backend, ids: str) -> CheckInfo | None:
    """A user's marked test: the check is its node id without the backend (so that it lines up
    across platforms), grouped by its file, with the user's own code as its subject."""
    if not isinstance(backend, Backend):
        return None
    others = re.sub(f"(^|-){re.escape(backend.name)}(-|$)", "-", ids, count=1).strip("-")
    function = item.nodeid.split("[", 1)[0]
    check = function + (f"[{others}]" if others else "")
    unavailable = None
    if not backend.is_available():
        unavailable = f"{backend.name}: {backend.unavailable_reason}"
    scenario = function.split("::", 1)[0]
    return CheckInfo(check, scenario, function, backend, None, unavailable, own=True)


def fixtures_only(item: pytest.Item) -> set[str]:
    """The item's fixtures, less the scenario's own parameters (those other than backend and
    subject), which are recorded with the example so a repro can pass them again."""
    callspec = getattr(item, "callspec", None)
    ours = {BACKEND_ARG, SUBJECT_ARG, BACKEND_PARAM}
    params = set(callspec.params) - ours if callspec is not None else set()
    return set(getattr(item, "fixturenames", ())) - params
