"""The ``ptrport`` command: what this machine offers the harness.

- ``ptrport backends``: each backend, whether it is available here and why not, with its
  fingerprint; exit status 1 if a backend named with ``--require`` is missing.
- ``ptrport subjects``: the built-in subjects, controls marked with the scenarios that must
  catch them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from harness import __version__
from harness.backends import load_backends
from harness.fingerprint import platform_fingerprint
from harness.subjects import builtin_subjects


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
