"""What several commands of ``ptrport`` share: the ``--backend`` option, where a command
that records results puts its report, and the types that check an option's value."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    Commands = argparse._SubParsersAction[argparse.ArgumentParser]
    """Where a command's parser is added: the commands of ``ptrport``, or the actions of
    ``ptrport report``."""


def backend_option(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument(
        "--backend",
        default="available",
        metavar="NAME[,NAME]|all|available",
        help=f"backends to {verb} (default: available)",
    )


def report_options(parser: argparse.ArgumentParser) -> None:
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
        type=platform_id,
        metavar="ID",
        help="the report's platform id (default: $PTRPORT_PLATFORM, else from the backends)",
    )


def platform_id(value: str) -> str:
    from ptrport.device.fingerprint import check_platform_id

    try:
        return check_platform_id(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def repeat_count(value: str) -> int:
    try:
        repeat = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if repeat < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return repeat
