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
- ``ptrport report diff --baseline B CURRENT... [--perf-drop F] [--platform ID]``:
  regressions, performance ones (a benchmark ratio fallen by more than F, default 0.2) apart;
  with ``--platform``, of the platforms named alone; exit 0 none, 1 some.
- ``ptrport report render MATRIX.json -o OUT``: a merged matrix in another format.
- ``ptrport report repro REPORT --check ID -o FILE`` (or ``--all --out-dir DIR``): scripts that
  rerun a failure; for a test of the user's own, without ``-o``, the pytest command that does.

Bad input (a malformed report, a bad expectations file, an unknown check) is one line on
stderr and exit status 2; so is a command that needs a dependency this install left out
(``pip install --no-deps ptrport`` installs the lint and the report commands alone; the line
says what to install: :mod:`ptrport.cli.dependencies`).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence

from ptrport import __version__
from ptrport.cli.checks import (
    backends_parser,
    bench_parser,
    controls_parser,
    matrix_parser,
    probe_parser,
    run_parser,
    scenarios,
    subjects_parser,
)
from ptrport.cli.dependencies import command_named, missing_dependency
from ptrport.cli.lint_command import lint_parser
from ptrport.cli.report_commands import report_parser
from ptrport.errors import HarnessError

BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptrport", description="Checks that device addresses in tensors stay intact."
    )
    parser.add_argument("--version", action="version", version=f"ptrport {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    backends_parser(commands)
    subjects_parser(commands)
    run_parser(commands)
    controls_parser(commands)
    matrix_parser(commands)
    probe_parser(commands)
    bench_parser(commands)
    lint_parser(commands)
    report_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(arguments)
    except ModuleNotFoundError as exc:
        line = missing_dependency(exc, command_named(arguments))
        if line is None:
            raise
        print(line, file=sys.stderr)
        return BAD_INPUT


def _dispatch(arguments: list[str]) -> int:
    if arguments[:1] == ["run"]:
        # Everything after `run` is pytest's, --help and values that look like ours included.
        return scenarios(*arguments[1:])
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
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``ptrport run --help | head``): what is left goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    if "torch" not in sys.modules:
        # What is left is freed as the process ends; the collector would first walk all of it
        # (a large tree's lint: 8 ms, a sixtieth of the run). Not after checks ran: objects of
        # extension modules kept frozen are never freed, and Triton's (nanobind) then reports
        # each of them as leaked.
        gc.freeze()
    sys.exit(code)
