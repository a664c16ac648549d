"""Hypothesis settings profiles of a ptrport run, chosen by the HYPOTHESIS_PROFILE environment
variable (they ship with the package, so a run from any directory has them):

- ``dev`` (the default): few examples, quick feedback while editing.
- ``ci``: derandomized, so a run is the same on every machine; no deadline, no database.
- ``nightly``: many examples, the example database kept in the report directory's
  ``.hypothesis``, so failures found one night are replayed first the next.

A profile loaded before the run (by the user's ``conftest.py``, or ``--hypothesis-profile``)
is kept; HYPOTHESIS_PROFILE chooses among ours otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

PROFILE_ENV = "HYPOTHESIS_PROFILE"
PROFILES = ("dev", "ci", "nightly")
DEFAULT = "dev"
EXAMPLE_DATABASE = ".hypothesis"
"""The nightly example database, inside the report directory."""

# Hypothesis loads its own "ci" profile at import when a CI environment variable is set (as
# GitHub Actions sets CI=true), and a profile registered without a parent inherits whatever is
# loaded; so each profile here starts from Hypothesis's defaults, the same on every machine.
_DEFAULTS = settings.get_profile("default")
# The explain phase (which parts of a failing example could vary) runs after every failure;
# for the controls, which must fail, it took more time than all their other phases together.
# dev and ci leave it out; nightly, with time to spare, keeps it.
QUICK_PHASES = tuple(p for p in Phase if p != Phase.explain)


def register(report_dir: Path) -> None:
    """Register ``dev``, ``ci`` and ``nightly``, the last keeping its examples under
    ``report_dir``."""
    settings.register_profile("dev", _DEFAULTS, max_examples=20, deadline=None, phases=QUICK_PHASES)
    settings.register_profile(
        "ci",
        _DEFAULTS,
        max_examples=100,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=True,
        phases=QUICK_PHASES,
    )
    settings.register_profile(
        "nightly",
        _DEFAULTS,
        max_examples=2000,
        deadline=None,
        database=DirectoryBasedExampleDatabase(report_dir / EXAMPLE_DATABASE),
    )


def requested() -> str:
    """The profile HYPOTHESIS_PROFILE names (``dev`` if unset); a usage error if it is none of
    ours."""
    name = os.environ.get(PROFILE_ENV, DEFAULT)
    if name not in PROFILES:
        raise pytest.UsageError(
            f"{PROFILE_ENV}={name!r} is not a profile; choose one of {', '.join(PROFILES)}"
        )
    return name


def activate(report_dir: Path) -> None:
    """Register the profiles and load the requested one, unless the run already chose a
    profile of its own."""
    current = current_name()
    register(report_dir)
    if current in ("default", "unknown", *PROFILES):
        settings.load_profile(requested())


def current_name() -> str:
    """The name of the loaded profile (``unknown`` where Hypothesis cannot say)."""
    get_name = getattr(settings, "get_current_profile_name", None)
    return str(get_name()) if get_name is not None else "unknown"
