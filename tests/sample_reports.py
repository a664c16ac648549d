"""Realistic pieces of ptrport platform reports, and of the expectations file beside them, for
the tests of the report tooling. Each builder's defaults make a finished CPU run on one lab
machine; a test passes only what it is about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ptrport.report.expectations import Expectations, load_expectations
from ptrport.report.measurements import GBPS, Measurement
from ptrport.report.platform_report import (
    FINISHED,
    RUNNING,
    PlatformReport,
    RunInfo,
    build_report,
    load_report,
    report_from_document,
    write_report,
)
from ptrport.report.records import Outcome, Result

OVERFLOW = "OverflowError: Python int too large to convert to C long"
"""What torch says when an address above ``2**63 - 1`` is put in an int64 tensor."""
HIGH_ADDRESS: dict[str, Any] = {
    "src": "0x0000000000000000",
    "dst": "0x8000000000000000",
    "nbytes": 0,
}
"""A counterexample with a destination just past int64's range."""
NO_XPU = "torch 2.13.0+cpu has no XPU support"
TORCH = "2.13.0+cpu"

CPU: dict[str, Any] = {"available": True, "reason": None, "device": "cpu", "device_model": "Xeon"}
"""The fingerprint's entry for the CPU backend."""
CPU_TARGET: dict[str, Any] = {
    "kind": "cpu",
    "backend": "cpu",
    "device_model": "Xeon",
    "runtime": {},
    "driver": None,
}

STARTED = "2026-12-02T00:00:00+00:00"
ENDED = "2026-12-02T00:01:00+00:00"


def result(
    check: str,
    outcome: Outcome = Outcome.PASSED,
    *,
    subject: str | None = "uint64/torch",
    on: str = "cpu",
    message: str | None = None,
    example: dict[str, Any] | None = None,
    body: str | None = None,
) -> Result:
    """The result of ``check`` (``scenario::test_name``) for ``subject`` on backend ``on``,
    with the node id pytest gives it."""
    scenario, _, name = check.partition("::")
    return Result(
        check=check,
        scenario=scenario,
        subject=subject,
        backend=on,
        outcome=outcome,
        message=message,
        example=example,
        examples=10,
        duration_s=0.25,
        nodeid=f"scenarios/test_{scenario}.py::{name}[{on}-{subject}]",
        body=body,
    )


def run_info(
    status: str = FINISHED,
    *,
    seed: str = "derandomized",
    subjects: tuple[str, ...] = ("uint64/torch", "int64/torch"),
    finished: str = ENDED,
    duration_s: float = 60.0,
) -> RunInfo:
    """A run of every backend under the ``ci`` profile; one still running has no end time
    or duration yet."""
    ended = status != RUNNING
    return RunInfo(
        started=STARTED,
        hypothesis_profile="ci",
        seed=seed,
        backend_spec="all",
        subjects=subjects,
        status=status,
        finished=finished if ended else None,
        duration_s=duration_s if ended else None,
    )


def fingerprint(
    *,
    torch: str = TORCH,
    software: Mapping[str, str | None] | None = None,
    backends: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Linux x86-64 machine. ``software`` replaces the whole software section, which is
    otherwise ptrport, ``torch``, triton and no ipex; ``backends`` is only the CPU unless
    given."""
    return {
        "software": dict(software)
        if software is not None
        else {"ptrport": "0.1.0", "torch": torch, "triton": "3.9.0", "ipex": None},
        "system": {"os": "Linux", "arch": "x86_64"},
        "backends": dict(backends or {"cpu": CPU}),
    }


def document(
    platform_id: str,
    results: Sequence[Result],
    *,
    status: str = FINISHED,
    torch: str = TORCH,
    software: Mapping[str, str | None] | None = None,
    backends: Mapping[str, Mapping[str, Any]] | None = None,
    target: dict[str, Any] = CPU_TARGET,
) -> dict[str, Any]:
    """The report document of ``platform_id``, from :func:`build_report`, for a run that
    ended with ``status``."""
    return build_report(
        platform_id=platform_id,
        fingerprint=fingerprint(torch=torch, software=software, backends=backends),
        execution_target=target,
        run=run_info(status),
        results=results,
    )


class ReportParts(TypedDict, total=False):
    """The keyword arguments of :func:`document`."""

    status: str
    torch: str
    software: Mapping[str, str | None] | None
    backends: Mapping[str, Mapping[str, Any]] | None
    target: dict[str, Any]


def report(
    directory: Path,
    platform_id: str,
    results: Sequence[Result],
    **parts: Unpack[ReportParts],
) -> PlatformReport:
    """A report written to ``directory`` and read back as the tooling reads it."""
    return load_report(write_report(document(platform_id, results, **parts), directory))


def unwritten_report(
    platform_id: str, results: Sequence[Result], **parts: Unpack[ReportParts]
) -> PlatformReport:
    """A report validated and read as if from ``<platform_id>.json``, with no file written."""
    path = Path(f"{platform_id}.json")
    return report_from_document(document(platform_id, results, **parts), path)


@dataclass(frozen=True)
class Known:
    """A known failure as an expectations lookup gives it to the matrix."""

    reason: str
    issue: str | None = None


def expectations_file(directory: Path, text: str) -> Expectations:
    """``text`` written as ``directory/expectations.toml`` and loaded."""
    path = directory / "expectations.toml"
    path.write_text(text, encoding="utf-8")
    return load_expectations(path)


def upper_half_report(directory: Path) -> PlatformReport:
    """A CPU run whose one check ran on ``cpu`` and on the simulated ``cpu-usm``."""
    usm = {**CPU, "simulated": "an upper-half device: CPU memory presented at real + ..."}
    return report(
        directory,
        "cpu-x86-64",
        [result("a::test_x"), result("a::test_x", on="cpu-usm")],
        backends={"cpu": CPU, "cpu-usm": usm},
    )


def measurement(ratio: float, *, name: str = "execute.torch") -> Measurement:
    """A benchmark measurement of ``ratio`` to its baseline, as ``ptrport bench`` records one."""
    return Measurement(
        name=name,
        backend="cpu",
        size="4 x 4 MiB",
        unit=GBPS,
        median=20.0 * ratio,
        low=18.0 * ratio,
        high=21.0 * ratio,
        ratio=ratio,
        baseline="Tensor.copy_",
        baseline_median=20.0,
        repeats=10,
        timer="time.perf_counter",
    )
