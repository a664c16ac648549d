"""Runs outside pytest, ``ptrport probe`` and ``ptrport bench``: the backends they measure, each
in its own scope, and the platform report their results go into, the one a pytest run on the
same backends files under the same platform id."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ptrport.device.backends import Backend, load_backends, parse_backend_spec
from ptrport.device.fingerprint import execution_target, platform_fingerprint, resolve_platform_id
from ptrport.errors import HarnessError
from ptrport.report.platform_report import (
    FINISHED,
    RunInfo,
    build_report,
    iso_time,
    load_report,
    replace_scenario_results,
    report_path,
    write_report,
)
from ptrport.report.records import Result


@dataclass
class StandaloneRun:
    """One command's run over ``backends``, recorded in ``report_dir``."""

    backends: list[Backend]
    platform_id: str
    report_dir: Path
    backend_spec: str
    argv: Sequence[str]
    started: float = field(default_factory=time.time)

    @classmethod
    def start(
        cls, backend_spec: str, platform_name: str | None, report_dir: Path, argv: Sequence[str]
    ) -> StandaloneRun:
        """The backends ``backend_spec`` names (present where named explicitly) and the platform
        id a pytest run would file them under. Refuses a report there made with another torch:
        its fingerprint would name the wrong version for these results."""
        known = load_backends()
        backends = parse_backend_spec(backend_spec, known).resolve_present(known)
        try:
            platform_id = resolve_platform_id(platform_name, backends)
        except ValueError as exc:
            raise HarnessError(str(exc)) from None
        run = cls(backends, platform_id, report_dir, backend_spec, argv)
        if run.report_path.exists():
            torch_then = load_report(run.report_path).fingerprint.get("software", {}).get("torch")
            if torch_then != str(torch.__version__):
                raise HarnessError(
                    f"{run.report_path}: made with torch {torch_then}, and this is torch "
                    f"{torch.__version__}; run the scenarios again, or use another --report-dir"
                )
        return run

    @property
    def report_path(self) -> Path:
        return report_path(self.report_dir, self.platform_id)

    @property
    def started_iso(self) -> str:
        return iso_time(self.started)

    def each_available(self, unavailable: Callable[[Backend], None]) -> Iterator[Backend]:
        """Each available backend in turn, inside its scope (:meth:`Backend.running`);
        ``unavailable`` is told of each of the others, in their order."""
        for backend in self.backends:
            if not backend.is_available():
                unavailable(backend)
                continue
            with backend.running():
                yield backend

    def record(self, scenario: str, results: Sequence[Result]) -> Path:
        """Put ``results`` in the platform's report: in place of ``scenario``'s results on
        these backends in a report there already, else in a new report of their own."""
        if self.report_path.exists():
            names = [b.name for b in self.backends]
            replace_scenario_results(self.report_path, scenario, names, results)
            return self.report_path
        return self.new_report(results)

    def new_report(self, results: Sequence[Result] = ()) -> Path:
        """A report of this run's own holding ``results``, finished now."""
        finished = time.time()
        run = RunInfo(
            started=self.started_iso,
            hypothesis_profile="none",
            seed="none",
            backend_spec=self.backend_spec,
            subjects=(),
            argv=tuple(self.argv),
            status=FINISHED,
            finished=iso_time(finished),
            duration_s=finished - self.started,
        )
        report = build_report(
            platform_id=self.platform_id,
            fingerprint=platform_fingerprint(self.backends),
            execution_target=execution_target(self.backends),
            run=run,
            results=results,
        )
        return write_report(report, self.report_dir)


def heading(backend: Backend) -> str:
    """``cpu (Intel Xeon, torch 2.13.0+cpu)``: what a command's output for a backend starts with."""
    return f"{backend.name} ({backend.device_model() or backend.device}, torch {torch.__version__})"
