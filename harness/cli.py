"""The ``ptrport`` command.

- ``ptrport backends``: each backend, whether it is available here and why not, with its
  fingerprint; exit status 1 if a backend named with ``--require`` is missing.
- ``ptrport subjects``: the built-in subjects, controls marked with the scenarios that must
  catch them.
- ``ptrport report merge REPORT... -o OUT``: the compatibility matrix (``.md``, ``.html``,
  ``.json`` by the extension of OUT).
- ``ptrport report diff --baseline B CURRENT...``: regressions; exit 0 none, 1 some.
- ``ptrport report render MATRIX.json -o OUT``: a merged matrix in another format.
- ``ptrport report repro REPORT --check ID -o FILE`` (or ``--all --out-dir DIR``): scripts that
  rerun a failure.

Bad input (a malformed report, a bad expectations file, an unknown check) is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from harness import __version__, diff, render, repro
from harness.backends import load_backends
from harness.errors import HarnessError
from harness.expectations import Expectations, load_expectations
from harness.fingerprint import platform_fingerprint
from harness.matrix import build_matrix
from harness.report import PlatformReport, load_reports
from harness.subjects import builtin_subjects

BAD_INPUT = 2


def _backends(args: argparse.Namespace) -> int:
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
            else:
                state = f"unavailable  {backend.unavailable_reason}"
            print(f"{backend.name:<{width}}  {state}")
    absent = [name for name in args.require if not known[name].is_available()]
    for name in absent:
        print(f"ptrport: {name}: {known[name].unavailable_reason}", file=sys.stderr)
    return 1 if absent else 0


def _subjects(args: argparse.Namespace) -> int:
    subjects = builtin_subjects()
    width = max(len(name) for name in subjects)
    for subject in subjects.values():
        control = (
            f"  [control; must fail in {', '.join(sorted(subject.exposed_by))}]"
            if subject.exposed_by
            else ""
        )
        print(f"{subject.name:<{width}}  {subject.description}{control}")
    return 0


def _expectations(args: argparse.Namespace, reports: list[PlatformReport]) -> Expectations:
    if args.expectations is None:
        return Expectations.none()
    expectations = load_expectations(args.expectations)
    expectations.check_known_checks(reports)
    return expectations


def _merge(args: argparse.Namespace) -> int:
    reports = load_reports(args.reports)
    expectations = _expectations(args, reports)
    matrix = build_matrix(reports, known=expectations.find)
    render.write(matrix, args.out)
    incomplete = [r.platform_id for r in reports if not r.complete]
    note = f"; incomplete: {', '.join(incomplete)}" if incomplete else ""
    print(
        f"ptrport: wrote {args.out}: {len(matrix.columns)} columns from {len(reports)} "
        f"reports, {len(matrix.rows)} checks{note}"
    )
    return 0


def _render(args: argparse.Namespace) -> int:
    reports = load_reports([args.matrix])
    render.write(build_matrix(reports, known=_expectations(args, reports).find), args.out)
    print(f"ptrport: wrote {args.out}")
    return 0


def _diff(args: argparse.Namespace) -> int:
    baseline = load_reports([args.baseline])
    current = load_reports(args.current)
    expectations = _expectations(args, baseline + current)
    found = diff.diff_reports(
        baseline, current, expectations=expectations, coverage_drop=args.coverage_drop
    )
    text = diff.to_markdown(found)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text, encoding="utf-8")
        print(text.splitlines()[0].lstrip("# "))
    return 1 if found.regressed else 0


def _repro(args: argparse.Namespace) -> int:
    (report, *others) = load_reports([args.report])
    if others:
        raise repro.ReproError(f"{args.report}: holds several reports; pass one platform's")
    if args.all:
        written = repro.write_scripts(report, args.out_dir)
        print(f"ptrport: wrote {len(written)} repro scripts under {args.out_dir}")
        return 0
    if args.check is None or args.out is None:
        raise repro.ReproError("name a failure with --check ID and a file with -o, or use --all")
    result = repro.select(report, check=args.check, subject=args.subject, backend=args.backend)
    args.out.write_text(repro.script(result, report), encoding="utf-8")
    print(f"ptrport: wrote {args.out}; run it with: python {args.out}")
    return 0


def _coverage_drop(value: str) -> float:
    try:
        drop = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0 <= drop < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a fraction in [0, 1)")
    return drop


def _report_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = commands.add_parser("report", help="merge, diff, render and reproduce reports")
    actions = report.add_subparsers(dest="action", required=True, metavar="ACTION")
    expectations = argparse.ArgumentParser(add_help=False)
    expectations.add_argument(
        "--expectations", type=Path, metavar="TOML", help="known failures (expectations.toml)"
    )

    merge = actions.add_parser(
        "merge", parents=[expectations], help="the compatibility matrix of platform reports"
    )
    merge.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="file or dir")
    merge.add_argument("-o", "--out", type=Path, required=True, help="OUT.md, .html or .json")
    merge.set_defaults(run=_merge)

    render_ = actions.add_parser(
        "render", parents=[expectations], help="a merged matrix (.json) in another format"
    )
    render_.add_argument("matrix", type=Path, metavar="MATRIX")
    render_.add_argument("-o", "--out", type=Path, required=True, help="OUT.md, .html or .json")
    render_.set_defaults(run=_render)

    diff_ = actions.add_parser(
        "diff", parents=[expectations], help="regressions against a baseline; exit 1 if any"
    )
    diff_.add_argument("--baseline", type=Path, required=True, help="report, dir or matrix")
    diff_.add_argument("current", nargs="+", type=Path, metavar="CURRENT")
    diff_.add_argument("-o", "--out", type=Path, help="write the Markdown here, not stdout")
    diff_.add_argument(
        "--coverage-drop",
        type=_coverage_drop,
        default=0.05,
        metavar="FRACTION",
        help="a drop in executed checks larger than this is a regression (default 0.05)",
    )
    diff_.set_defaults(run=_diff)

    repro_ = actions.add_parser("repro", help="standalone scripts that rerun failures")
    repro_.add_argument("report", type=Path, metavar="REPORT")
    repro_.add_argument("--check", metavar="ID", help="the failing check's id")
    repro_.add_argument("--subject", help="when the check failed for several subjects")
    repro_.add_argument("--backend", help="when the check failed on several backends")
    repro_.add_argument("-o", "--out", type=Path, help="the script to write")
    repro_.add_argument("--all", action="store_true", help="one script per failure")
    repro_.add_argument("--out-dir", type=Path, default=Path("repros"), metavar="DIR")
    repro_.set_defaults(run=_repro)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptrport", description="Checks that device addresses in tensors stay intact."
    )
    parser.add_argument("--version", action="version", version=f"ptrport {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    backends = commands.add_parser("backends", help="which backends this machine has, and why not")
    backends.add_argument("--json", action="store_true", help="print the platform fingerprint")
    backends.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="NAME",
        help="exit 1 unless this backend is available (repeatable)",
    )
    backends.set_defaults(run=_backends)
    subjects = commands.add_parser("subjects", help="the built-in subjects and controls")
    subjects.set_defaults(run=_subjects)
    _report_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except HarnessError as exc:
        print(f"ptrport: {exc}", file=sys.stderr)
        return BAD_INPUT
    return code


if __name__ == "__main__":
    sys.exit(main())
