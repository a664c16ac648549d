"""The ``ptrport`` command.

- ``ptrport backends``: each backend, whether it is available here and why not, with its
  fingerprint; exit status 1 if a backend named with ``--require`` is missing.
- ``ptrport subjects``: the built-in subjects and the controls catalogue, controls marked with
  the checks that must catch them.
- ``ptrport run [PYTEST_ARG...]``: the scenarios shipped in the package, from any directory
  (``pytest --pyargs ptrport.scenarios``), writing ``reports/<platform-id>.json`` there; every
  argument goes to pytest.
- ``ptrport controls --backend=NAME [PYTEST_ARG...]``: the same with ``--controls`` and the
  ``ci`` profile: the controls table; exit status non-zero if a control was missed.
- ``ptrport probe --backend=NAME``: which torch operations work on uint64 there, as a table,
  recorded as the ``uint64_operations`` results of the platform report; exit status 1 if an
  operation gives a silently wrong result.
- ``ptrport bench --backend=NAME [--repeat N] [--quick]``: how fast staging, transfer and each
  engine are against the plainest copy of the same bytes, as a table, recorded as the
  ``benchmarks`` section of the platform report; exit status 0 (timings never fail it), 1
  when a benchmark could not be measured (the others are recorded).
- ``ptrport matrix [KIND...] [--no-run] [--promote]``: the nightly matrix on this machine: tox
  runs each platform kind, then the reports are merged and diffed against the baseline; exit 1
  on a regression or an environment without a report.
- ``ptrport lint [PATH...] [--format text|json|sarif|github] [-o FILE] [--baseline FILE]``:
  where device addresses flow into storage that cannot hold ``2**63..2**64-1``, found in the
  source without running it (:mod:`ptrport.lint`), configured by ``[tool.ptrport.lint]``
  (:mod:`ptrport.lint.config`); exit 1 when something is found (something new, against a
  baseline: :mod:`ptrport.lint.baseline`).
- ``ptrport report merge REPORT... -o OUT [--history DIR [--keep N]]``: the compatibility
  matrix (``.md``, ``.html``, ``.json`` by the extension of OUT); with ``--history``, its JSON
  also kept in DIR as its night, the newest N (default 30) staying (:mod:`ptrport.report.history`).
- ``ptrport report diff --baseline B CURRENT... [--perf-drop F]``: regressions, performance
  ones (a benchmark ratio fallen by more than F, default 0.2) apart; exit 0 none, 1 some.
- ``ptrport report render MATRIX.json -o OUT``: a merged matrix in another format.
- ``ptrport report repro REPORT --check ID -o FILE`` (or ``--all --out-dir DIR``): scripts that
  rerun a failure; for a test of the user's own, without ``-o``, the pytest command that does.

Bad input (a malformed report, a bad expectations file, an unknown check) is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ptrport import __version__
from ptrport.errors import HarnessError
from ptrport.lint import FORMATS
from ptrport.report import defaults

if TYPE_CHECKING:
    from ptrport.check import probe
    from ptrport.device.backends import Backend
    from ptrport.report.expectations import Expectations
    from ptrport.report.platform_report import PlatformReport
    from ptrport.report.records import Result
    from ptrport.run.standalone import StandaloneRun

    Commands = argparse._SubParsersAction[argparse.ArgumentParser]
    """Where a command's parser is added: the commands of ``ptrport``, or the actions of
    ``ptrport report``."""

BAD_INPUT = 2


# Options and values that several commands share


def _backend_option(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument(
        "--backend",
        default="available",
        metavar="NAME[,NAME]|all|available",
        help=f"backends to {verb} (default: available)",
    )


def _report_options(parser: argparse.ArgumentParser) -> None:
    """Where a command that records results puts them: the platform report, as pytest names it."""
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=Path(os.environ.get("PTRPORT_REPORT_DIR") or "reports"),
        metavar="DIR",
        help="where the platform report is (default: $PTRPORT_REPORT_DIR, else reports)",
    )
    parser.add_argument(
        "--platform-name",
        type=_platform_name,
        metavar="ID",
        help="the report's platform id (default: $PTRPORT_PLATFORM, else from the backends)",
    )


def _platform_name(value: str) -> str:
    from ptrport.device.fingerprint import check_platform_id

    try:
        return check_platform_id(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _repeat(value: str) -> int:
    try:
        repeat = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if repeat < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return repeat


# The commands, in the order of ``ptrport --help``: each handler, then the builder of its parser


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


def _backends_parser(commands: Commands) -> None:
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


def _subjects_parser(commands: Commands) -> None:
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


def _scenarios(*arguments: str) -> int:
    """pytest on the packaged scenarios with ``arguments``, in this process."""
    import pytest

    # The harness is imported already, so pytest cannot rewrite its asserts; that is expected.
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    return int(pytest.main([*SCENARIOS, *quiet, *arguments]))


def _run_parser(commands: Commands) -> None:
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
    return _scenarios("--controls", f"--backend={args.backend}", *args.pytest_args)


def _controls_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "controls",
        help="run the controls catalogue (HYPOTHESIS_PROFILE=ci unless set) and print whether "
        "each control was caught; exit non-zero if one was missed",
        description="Any other arguments go to pytest: -k, --subject, -x, ...",
    )
    _backend_option(parser, "run on")
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


def _matrix_parser(commands: Commands) -> None:
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


def _probe_parser(commands: Commands) -> None:
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
    _backend_option(parser, "probe")
    _report_options(parser)
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


def _bench_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "bench",
        help="how fast staging, transfer and each engine are against the copy floor; recorded "
        "in the platform report's benchmarks section",
    )
    parser.add_argument(
        "--repeat",
        type=_repeat,
        default=defaults.DEFAULT_REPEAT,
        metavar="N",
        help="timed runs of each measurement after warm-up (default: "
        f"{defaults.DEFAULT_REPEAT}; Triton's interpreter on CPU: at most "
        f"{defaults.INTERPRETED_REPEAT})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller tables and batches (a tenth or so)"
    )
    _backend_option(parser, "measure")
    _report_options(parser)
    parser.set_defaults(run=_bench)


def _lint(args: argparse.Namespace) -> int:
    from ptrport.lint import baseline, checker, config, formats

    project = config.read_config(args.config) if args.config else config.find_config(Path.cwd())
    options = config.lint_options(
        project,
        paths=args.paths,
        exclude=args.exclude,
        select=args.select,
        ignore=args.ignore,
        baseline=args.baseline,
    )
    accepted = None
    if options.baseline is not None and args.write_baseline is None:
        accepted = baseline.read_baseline(options.baseline)
    files = options.python_files()
    run = options.selected(checker.lint_paths(options.paths, files=files, jobs=args.jobs))
    if args.write_baseline is not None:
        written = baseline.write_baseline(args.write_baseline, run)
        print(formats.summary(run))
        noun = "finding" if written == 1 else "findings"
        print(f"ptrport lint: wrote {written} {noun} to the baseline {args.write_baseline}")
        return 0
    comparison = None
    if accepted is not None:
        comparison = baseline.compare(run, accepted, files, options.rules)
        run = comparison.run
    rendered = formats.render(run, args.format, comparison)
    if args.output is None:
        sys.stdout.write(rendered)
    else:
        try:
            args.output.write_text(rendered, encoding="utf-8")
        except OSError as exc:
            raise HarnessError(f"{args.output}: cannot write: {exc.strerror}") from None
        print(formats.summary(run, comparison))
    return 1 if run.reported else 0


def _lint_parser(commands: Commands) -> None:
    parser = commands.add_parser(
        "lint",
        help="find where device addresses meet int64, narrow or float storage in Python "
        "source, without running it; exit 1 if any (new ones, with a baseline)",
        description="Reads every *.py file under each PATH (hidden directories, caches and "
        "virtual environments left out). A site is accepted with a comment on its line: "
        "# ptrport: ignore[RULE] reason. The [tool.ptrport.lint] table of the first "
        "pyproject.toml from here upwards that has one sets paths, exclude, select, ignore and "
        "baseline; each option below replaces its key. Exit status: 0 nothing found (nothing "
        "new, with a baseline), 1 findings, 2 bad input.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="file or directory (default: the configuration's paths, else .)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default), json, sarif (SARIF 2.1.0, for GitHub code scanning), or github "
        "(workflow annotations)",
    )
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write it here")
    parser.add_argument(
        "--jobs",
        type=_repeat,
        metavar="N",
        help="processes for a large tree (default: one per CPU)",
    )
    for option, what in (("select", "report only"), ("ignore", "do not report")):
        parser.add_argument(
            f"--{option}",
            action="append",
            metavar="RULE[,RULE]",
            help=f"{what} these rules (repeatable)",
        )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="leave out files whose path from here, or a directory or name in it, matches "
        "(repeatable)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="fail only on findings this baseline does not hold; list its stale entries",
    )
    parser.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write every finding to this baseline and exit 0",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="PYPROJECT",
        help="read [tool.ptrport.lint] from this file instead",
    )
    parser.set_defaults(run=_lint)


# ``ptrport report``: its parser, then each action's handler and the builder of its parser


def _report_parser(commands: Commands) -> None:
    parser = commands.add_parser("report", help="merge, diff, render and reproduce reports")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    _merge_parser(actions)
    _render_parser(actions)
    _diff_parser(actions)
    _repro_parser(actions)


def _expectations_option(parser: argparse.ArgumentParser) -> None:
    """The known failures that merge, render and diff mark as expected."""
    parser.add_argument(
        "--expectations", type=Path, metavar="TOML", help="known failures (expectations.toml)"
    )


def _expectations(args: argparse.Namespace, reports: list[PlatformReport]) -> Expectations:
    from ptrport.report.expectations import Expectations, load_expectations

    if args.expectations is None:
        return Expectations.none()
    expectations = load_expectations(args.expectations)
    expectations.check_known_checks(reports)
    return expectations


def _merge(args: argparse.Namespace) -> int:
    if args.keep is not None and args.history is None:
        raise HarnessError("--keep says how many nights --history DIR keeps; name the DIR")
    from ptrport.report import history, render
    from ptrport.report.matrix import build_matrix
    from ptrport.report.platform_report import load_reports

    reports = load_reports(args.reports)
    expectations = _expectations(args, reports)
    matrix = build_matrix(reports, known=expectations.find)
    nights: list[history.Night] = []
    if args.history is not None:
        limit = defaults.DEFAULT_LIMIT if args.keep is None else args.keep
        kept = history.keep_matrix(matrix, args.history, limit=limit)
        print(f"ptrport: kept the night as {kept} (the newest {limit} nights stay)")
        nights = history.load(args.history)
    render.write(matrix, args.out, nights)
    incomplete = [r.platform_id for r in reports if not r.complete]
    note = f"; incomplete: {', '.join(incomplete)}" if incomplete else ""
    trend = f", a trend over {len(nights)} nights" if nights else ""
    print(
        f"ptrport: wrote {args.out}: {len(matrix.columns)} columns from {len(reports)} "
        f"reports, {len(matrix.rows)} checks{trend}{note}"
    )
    return 0


def _merge_parser(actions: Commands) -> None:
    parser = actions.add_parser("merge", help="the compatibility matrix of platform reports")
    _expectations_option(parser)
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="file or dir")
    parser.add_argument("-o", "--out", type=Path, required=True, help="OUT.md, .html or .json")
    parser.add_argument(
        "--history",
        type=Path,
        metavar="DIR",
        help="also keep the matrix (JSON) in DIR as its night, named by its run's UTC start",
    )
    parser.add_argument(
        "--keep",
        type=_repeat,
        metavar="N",
        help=f"with --history: the newest N nights stay there (default {defaults.DEFAULT_LIMIT})",
    )
    parser.set_defaults(run=_merge)


def _render(args: argparse.Namespace) -> int:
    from ptrport.report import render
    from ptrport.report.matrix import build_matrix
    from ptrport.report.platform_report import load_reports

    reports = load_reports([args.matrix])
    render.write(build_matrix(reports, known=_expectations(args, reports).find), args.out)
    print(f"ptrport: wrote {args.out}")
    return 0


def _render_parser(actions: Commands) -> None:
    parser = actions.add_parser("render", help="a merged matrix (.json) in another format")
    _expectations_option(parser)
    parser.add_argument("matrix", type=Path, metavar="MATRIX")
    parser.add_argument("-o", "--out", type=Path, required=True, help="OUT.md, .html or .json")
    parser.set_defaults(run=_render)


def _diff(args: argparse.Namespace) -> int:
    from ptrport.report import diff
    from ptrport.report.platform_report import load_reports

    baseline = load_reports([args.baseline])
    current = load_reports(args.current)
    expectations = _expectations(args, baseline + current)
    found = diff.diff_reports(
        baseline,
        current,
        expectations=expectations,
        coverage_drop=args.coverage_drop,
        perf_drop=args.perf_drop,
    )
    text = diff.to_markdown(found)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text, encoding="utf-8")
        print(text.splitlines()[0].lstrip("# "))
    return 1 if found.regressed else 0


def _coverage_drop(value: str) -> float:
    try:
        drop = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0 <= drop < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a fraction in [0, 1)")
    return drop


def _diff_parser(actions: Commands) -> None:
    parser = actions.add_parser("diff", help="regressions against a baseline; exit 1 if any")
    _expectations_option(parser)
    parser.add_argument("--baseline", type=Path, required=True, help="report, dir or matrix")
    parser.add_argument("current", nargs="+", type=Path, metavar="CURRENT")
    parser.add_argument("-o", "--out", type=Path, help="write the Markdown here, not stdout")
    parser.add_argument(
        "--coverage-drop",
        type=_coverage_drop,
        default=0.05,
        metavar="FRACTION",
        help="a drop in executed checks larger than this is a regression (default 0.05)",
    )
    parser.add_argument(
        "--perf-drop",
        type=_coverage_drop,
        default=defaults.PERF_DROP,
        metavar="FRACTION",
        help="a benchmark ratio (ptrport bench) falling by more than this is a performance "
        f"regression, listed apart and counted like any other (default {defaults.PERF_DROP:g})",
    )
    parser.set_defaults(run=_diff)


def _repro(args: argparse.Namespace) -> int:
    from ptrport.report import repro
    from ptrport.report.platform_report import load_reports

    (report, *others) = load_reports([args.report])
    if others:
        raise repro.ReproError(f"{args.report}: holds several reports; pass one platform's")
    if args.all:
        written = repro.write_scripts(report, args.out_dir)
        print(f"ptrport: wrote {len(written)} repro scripts under {args.out_dir}")
        return 0
    if args.check is None:
        raise repro.ReproError("name a failure with --check ID (and a file with -o), or use --all")
    result = repro.select(report, check=args.check, subject=args.subject, backend=args.backend)
    if result.own_test:
        # A test of the user's own reruns by its node id: the command is the repro.
        if args.out is None:
            print(repro.command(result, report))
            return 0
        args.out.write_text(repro.shell_script(result, report), encoding="utf-8")
        print(f"ptrport: wrote {args.out}; run it with: sh {args.out}")
        return 0
    if args.out is None:
        raise repro.ReproError(f"{args.check} is rerun by a script: name its file with -o")
    args.out.write_text(repro.script(result, report), encoding="utf-8")
    print(f"ptrport: wrote {args.out}; run it with: python {args.out}")
    return 0


def _repro_parser(actions: Commands) -> None:
    parser = actions.add_parser("repro", help="standalone scripts that rerun failures")
    parser.add_argument("report", type=Path, metavar="REPORT")
    parser.add_argument("--check", metavar="ID", help="the failing check's id")
    parser.add_argument("--subject", help="when the check failed for several subjects")
    parser.add_argument("--backend", help="when the check failed on several backends")
    parser.add_argument(
        "-o", "--out", type=Path, help="the script to write (a test of yours: else printed)"
    )
    parser.add_argument("--all", action="store_true", help="one script per failure")
    parser.add_argument("--out-dir", type=Path, default=Path("repros"), metavar="DIR")
    parser.set_defaults(run=_repro)


# Parsing and dispatch


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptrport", description="Checks that device addresses in tensors stay intact."
    )
    parser.add_argument("--version", action="version", version=f"ptrport {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _backends_parser(commands)
    _subjects_parser(commands)
    _run_parser(commands)
    _controls_parser(commands)
    _matrix_parser(commands)
    _probe_parser(commands)
    _bench_parser(commands)
    _lint_parser(commands)
    _report_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["run"]:
        # Everything after `run` is pytest's, --help and values that look like ours included.
        return _scenarios(*arguments[1:])
    parser = _parser()
    args, extra = parser.parse_known_args(arguments)
    if extra and not getattr(args, "passes_through", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = extra
    args.argv = arguments
    try:
        code: int = args.run(args)
    except HarnessError as exc:
        print(f"ptrport: {exc}", file=sys.stderr)
        return BAD_INPUT
    return code


def run() -> None:
    """The ``ptrport`` command: :func:`main`'s status as the process's."""
    code = main()
    # What is left is freed as the process ends; the collector would first walk all of it
    # (a large tree's lint: 8 ms, a sixtieth of the run).
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
