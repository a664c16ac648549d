"""``ptrport lint``: its handler and the builder of its parser (the analysis is
:mod:`ptrport.lint`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ptrport.cli.options import repeat_count
from ptrport.errors import HarnessError
from ptrport.lint import FORMATS

if TYPE_CHECKING:
    from ptrport.cli.options import Commands


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


def lint_parser(commands: Commands) -> None:
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
        type=repeat_count,
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
