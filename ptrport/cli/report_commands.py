"""``ptrport report``: its parser, then each action's handler and the builder of its parser
(``merge``, ``render``, ``diff``, ``repro``). Reading reports needs the standard library
alone."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ptrport.cli.options import repeat_count
from ptrport.errors import HarnessError
from ptrport.report import defaults

if TYPE_CHECKING:
    from ptrport.cli.options import Commands
    from ptrport.report.expectations import Expectations
    from ptrport.report.platform_report import PlatformReport


def report_parser(commands: Commands) -> None:
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
        type=repeat_count,
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
        only=args.platform or (),
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
    parser.add_argument(
        "--platform",
        action="append",
        metavar="ID",
        help="compare only this platform (repeatable); both sides must have it, and the "
        "others are left out rather than missing",
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
