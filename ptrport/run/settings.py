"""What the command line chose for a ptrport run, resolved once per process: backends, subjects,
platform id, report directory, the run's seed, isolation."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from ptrport.check import controls, examples
from ptrport.check.subjects import Subject, builtin_subjects
from ptrport.check.user_subjects import select_subjects
from ptrport.device.backends import Backend, BackendSelection, load_backends, parse_backend_spec
from ptrport.device.fingerprint import check_platform_id, resolve_platform_id
from ptrport.errors import HarnessError
from ptrport.report.verdicts import REFERENCE
from ptrport.run import profiles
from ptrport.run.names import WHOLE_SUITE_INI

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
    """Set in an isolated child: the pipes to its parent
    (:class:`~ptrport.run.isolation.ChildSide`)."""
    whole_suite: bool = False
    """``--ptrport-all`` (or ``ptrport_all = true``): every collected test runs once per
    backend, and the run is judged by the verdict by difference."""
    stand_in: str | None = None
    """``--ptrport-stand-in``: the device code written for runs on the CPU backends' device."""
    reference_added: bool = False
    """``cpu`` was not among the backends asked for, and a whole-suite run added it as the
    reference the others are judged against."""
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
        whole_suite = bool(config.getoption("ptrport_all") or config.getini(WHOLE_SUITE_INI))
        reference_added = whole_suite and all(b.name != REFERENCE for b in backends)
        if reference_added:
            # The verdict by difference needs the run at low addresses to judge the others by.
            backends = [known[REFERENCE], *backends]
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
            whole_suite=whole_suite,
            stand_in=config.getoption("ptrport_stand_in"),
            reference_added=reference_added,
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
