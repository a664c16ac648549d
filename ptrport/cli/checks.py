"""The commands that run checks on this machine's backends, each handler followed by the
builder of its parser: ``backends``, ``subjects``, ``run`` (the scenarios, through pytest),
``controls``, ``matrix``, ``probe`` and ``bench``. What they need of torch and pytest is
imported when they run."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ptrport.cli.dependencies import DEPENDENCIES, require
from ptrport.cli.options import backend_option, repeat_count, report_options
from ptrport.report import defaults

if TYPE_CHECKING:
    import pytest

    from ptrport.check import probe
    from ptrport.cli.options import Commands
    from ptrport.device.backends import Backend
    from ptrport.report.records import Result
    from ptrport.run.standalone import StandaloneRun


def _backends(args: argparse.Namespace) -> int:
    from ptrport.device.backends import load_backends
    from ptrport.device.fingerprint import platform_fingerprint

    known = load_backends()
    missing = [name for name in args.require if name not in known]
    if missing:
        known_names = ", ".join(known)
        print(f"ptrport: unknown backend {missing[0]!r}; known: {known_names}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(platform_fingerprint(list(known.values())), indent=2))
    else:
        width = max(len(name) for name in known)
        for backend in known.values():
            if backend.is_available():
                state = f"available    {backend.device_model() or backend.device}"
                state += f"; simulates {backend.simulated}" if backend.simulated else ""
            else:
                state = f"unavailable  {backend.unavailable_reason}"
            print(f"{backend.name:<{width}}  {state}")
    absent = [name for name in args.require if not known[name].is_available()]
    for name in absent:
        print(f"ptrport: {name}: {known[name].unavailable_reason}", file=sys.stderr)
    return 1 if absent else 0


def backends_parser(commands: Commands) -> None:
    parser = commands.add_parser("backends", help="which backends this machine has, and why not")
    parser.add_argument("--json", action="store_true", help="print the platform fingerprint")
    parser.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="NAME",
        help="exit 1 unless this backend is available (repeatable)",
    )
    parser.set_defaults(run=_backends)


def _subjects(args: argparse.Namespace) -> int:
    from ptrport.check import controls
    from ptrport.check.subjects import builtin_subjects

    default = builtin_subjects()
    subjects = default | controls.catalogue()
    width = max(len(name) for name in subjects)
    for subject in subjects.values():
        control = ""
        if subject.exposed_by:
            how = "" if subject.name in default else "; run with --controls or by name"
            where = ", ".join(sorted(subject.exposed_by))
            upper = ", ".join(sorted(subject.exposed_by_upper_half - subject.exposed_by))
            also = f"; in the upper half also in {upper}" if upper else ""
            shows = (
                f"; shows with {controls.exposing(subject)}" if controls.exposing(subject) else ""
            )
            placed = (
                "; only where allocations are placed (cpu-placed)"
                if isinstance(subject, controls.PlacedOnly)
                else ""
            )
            control = f"  [control{how}; must fail in {where}{placed}{also}{shows}]"
        print(f"{subject.name:<{width}}  {subject.description}{control}")
    return 0


def subjects_parser(commands: Commands) -> None:
    parser = commands.add_parser("subjects", help="the built-in subjects and controls")
    parser.set_defaults(run=_subjects)


SCENARIOS = (
    "--pyargs",
    "ptrport.scenarios",
    # The scenarios' own naming, whatever the configuration of the directory it runs in says.
    "-o",
    "python_files=test_*.py",
    "-o",
    "python_classes=Test",
    "-o",
    "python_functions=test",
)
"""pytest arguments that collect the scenarios shipped in the package, from any directory."""


class _Usage:
    """The plugin that names the command in pytest's usage line and its usage errors
    (``usage: ptrport run [options] ...``), where ``pytest.main()`` would name itself."""

    def __init__(self, command: str) -> None:
        self.command = command

    def pytest_addoption(self, parser: pytest.Parser) -> None:
        parser.prog = self.command


def scenarios(*arguments: str, command: str = "ptrport run") -> int:
    """pytest on the packaged scenarios with ``arguments``, in this process, as ``command``."""
    import pytest

    if not {"-h", "--help"} & set(arguments):
        # Inside pytest a hook's missing module is an INTERNALERROR traceback; looked for
        # first, it is the command's one line (pytest's own help needs none of them).
        require(*DEPENDENCIES)
    # The harness is imported already, so pytest cannot rewrite its asserts; that is expected.
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return int(pytest.main([*SCENARIOS, *quiet, *arguments], plugins=[_Usage(command)]))


def run_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "run",
        help="run the scenarios from any directory (pytest --pyargs ptrport.scenarios) and "
        "write the platform report there",
        description="Every argument goes to pytest: --backend, --subject, -k, -n, ...",
        add_help=False,
    )
    parser.set_defaults(passes_through=True)  # main() hands `run` to pytest before parsing


def _controls(args: argparse.Namespace) -> int:
    os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")
    return scenarios(
        "--controls", f"--backend={args.backend}", *args.pytest_args, command="ptrport controls"
    )


def controls_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "controls",
        help="run the controls catalogue (HYPOTHESIS_PROFILE=ci unless set) and print whether "
        "each control was caught; exit non-zero if one was missed",
        description="Any other arguments go to pytest: -k, --subject, -x, ...",
    )
    backend_option(parser, "run on")
    parser.set_defaults(run=_controls, passes_through=True)


def _matrix(args: argparse.Namespace) -> int:
    from ptrport.report import local_matrix

    return local_matrix.main_run(
        args.kinds or list(defaults.DEFAULT_KINDS),
        reports=args.reports,
        baseline=args.baseline,
        no_run=args.no_run,
        do_promote=args.promote,
        expectations=args.expectations,
    )


def matrix_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "matrix",
        help="run platform kinds with tox here, merge their reports and diff them against the "
        "baseline; exit 1 if a check regressed or an environment wrote no report",
    )
    parser.add_argument(
        "kinds",
        nargs="*",
        metavar="KIND",
        help=f"tox environments to run (default: {' '.join(defaults.DEFAULT_KINDS)})",
    )
    parser.add_argument(
        "--no-run",
        action="store_true",
        help="run nothing: merge and diff every report already in the reports directory",
    )
    parser.add_argument(
        "--reports",
        type=Path,
        default=Path("reports"),
        metavar="DIR",
        help="where the reports are and the matrix goes (default: reports)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=defaults.BASELINE,
        metavar="MATRIX_JSON",
        help=f"the merged result to diff against (default: {defaults.BASELINE})",
    )
    parser.add_argument(
        "--expectations",
        type=Path,
        default=defaults.EXPECTATIONS,
        metavar="TOML",
        help=f"known failures (default: {defaults.EXPECTATIONS}, where it exists)",
    )
    parser.add_argument(
        "--promote",
        action="store_true",
        help="afterwards, make this merged result the baseline",
    )
    parser.set_defaults(run=_matrix)


def _standalone(args: argparse.Namespace) -> StandaloneRun:
    from ptrport.run.standalone import StandaloneRun

    return StandaloneRun.start(args.backend, args.platform_name, args.report_dir, args.argv)


def _not_available(backend: Backend) -> None:
    print(f"{backend.name}: not available: {backend.unavailable_reason}")


def _findings_table(findings: Sequence[probe.Finding]) -> list[str]:
    width = max(len("operation"), *(len(f.operation) for f in findings))
    rows = [
        ("operation", "result", "detail"),
        *((f.operation, f.verdict, f.detail or "") for f in findings),
    ]
    return [f"{name:<{width}}  {verdict:<6}  {detail}".rstrip() for name, verdict, detail in rows]


def _probe(args: argparse.Namespace) -> int:
    from ptrport.check import probe
    from ptrport.report.op_support import SCENARIO, OperationVerdict
    from ptrport.run.standalone import heading

    run = _standalone(args)
    operations = (
        probe.catalogue(compiled=args.compile)
        if args.operations is None
        else probe.load_operations(args.operations)
    )
    results: list[Result] = []

    def unavailable(backend: Backend) -> None:
        _not_available(backend)
        results.extend(probe.unavailable(backend, operations))

    wrong = 0
    for backend in run.each_available(unavailable):
        findings = probe.probe_all(backend, operations)
        counts = {v: sum(f.verdict is v for f in findings) for v in OperationVerdict}
        wrong += counts[OperationVerdict.WRONG]
        print(
            f"{heading(backend)}: {counts[OperationVerdict.WORKS]} work, "
            f"{counts[OperationVerdict.RAISES]} raise, {counts[OperationVerdict.WRONG]} wrong"
        )
        print("\n".join(_findings_table(findings)) + "\n")
        results += [f.to_result() for f in findings]
    path = run.record(SCENARIO, results)
    print(f"ptrport: recorded {len(results)} {SCENARIO} results in {path}")
    return 1 if wrong else 0


def probe_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "probe", help="which torch operations work on uint64 on a backend; exit 1 if one is wrong"
    )
    parser.add_argument(
        "--compile", action="store_true", help="also probe under torch.compile (slow to compile)"
    )
    parser.add_argument(
        "--operations",
        metavar="MODULE:ATTR",
        help="probe this catalogue of ptrport.check.probe.Operation instead of the built-in one",
    )
    backend_option(parser, "probe")
    report_options(parser)
    parser.set_defaults(run=_probe)


def _bench(args: argparse.Namespace) -> int:
    from ptrport.check import bench
    from ptrport.report import measurements
    from ptrport.run.standalone import heading

    run = _standalone(args)
    sizes = bench.QUICK if args.quick else bench.FULL
    measured: list[measurements.Measurement] = []
    failures: list[bench.Failure] = []

    def failed(failure: bench.Failure) -> None:
        print(
            bench.table_row([failure.name, failure.size, f"not measured: {failure.error}"]),
            flush=True,
        )
        failures.append(failure)

    benched: list[str] = []
    for backend in run.each_available(_not_available):
        print(
            f"{heading(backend)}: {args.repeat} repeats after {defaults.WARMUP} warm-up runs"
            f"{', quick sizes' if args.quick else ''}"
        )
        print(bench.table_row(bench.HEADER), flush=True)
        measured += bench.measure(
            backend,
            sizes=sizes,
            repeat=args.repeat,
            progress=lambda m: print(bench.format_measurement(m), flush=True),
            failed=failed,
        )
        print("\n".join(f"  {note}" for note in bench.notes(backend, args.repeat)) + "\n")
        benched.append(backend.name)
    if not benched:
        print("ptrport: no backend to benchmark here; nothing recorded")
        return 0
    if not run.report_path.exists():
        run.new_report()
    found = bench.section(measured, started=run.started_iso, argv=args.argv, quick=args.quick)
    measurements.record(run.report_path, found, benched)
    print(f"ptrport: recorded {len(measured)} benchmarks in {run.report_path}")
    for failure in failures:
        print(f"ptrport: {failure.describe()}", file=sys.stderr)
    return 1 if failures else 0


def bench_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "bench",
        help="how fast staging, transfer and each engine are against the copy floor; recorded "
        "in the platform report's benchmarks section",
    )
    parser.add_argument(
        "--repeat",
        type=repeat_count,
        default=defaults.DEFAULT_REPEAT,
        metavar="N",
        help="timed runs of each measurement after warm-up (default: "
        f"{defaults.DEFAULT_REPEAT}; Triton's interpreter on CPU: at most "
        f"{defaults.INTERPRETED_REPEAT})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller tables and batches (a tenth or so)"
    )
    backend_option(parser, "measure")
    report_options(parser)
    parser.set_defaults(run=_bench)
