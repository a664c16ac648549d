"""Hypothesis settings profiles, chosen by the HYPOTHESIS_PROFILE environment variable.

- ``dev`` (the default): few examples, quick feedback while editing.
- ``ci``: derandomized, so a run is the same on every machine; no deadline, no database.
- ``nightly``: many examples, the example database kept under ``reports/.hypothesis`` so
  failures found one night are replayed first the next.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

pytest_plugins = ["pytester"]

PROFILE_ENV = "HYPOTHESIS_PROFILE"
EXAMPLE_DATABASE = Path(__file__).parent / "reports" / ".hypothesis"

# Hypothesis loads its own "ci" profile at import when a CI environment variable is set (as
# GitHub Actions sets CI=true), and a profile registered without a parent inherits whatever is
# loaded; so each profile here starts from Hypothesis's defaults, the same on every machine.
_DEFAULTS = settings.get_profile("default")
# The explain phase (which parts of a failing example could vary) runs after every failure;
# for the controls, which must fail, it took more time than all their other phases together.
# dev and ci leave it out; nightly, with time to spare, keeps it.
_QUICK_PHASES = tuple(p for p in Phase if p != Phase.explain)
settings.register_profile("dev", _DEFAULTS, max_examples=20, deadline=None, phases=_QUICK_PHASES)
settings.register_profile(
    "ci",
    _DEFAULTS,
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    phases=_QUICK_PHASES,
)
settings.register_profile(
    "nightly",
    _DEFAULTS,
    max_examples=2000,
    deadline=None,
    database=DirectoryBasedExampleDatabase(EXAMPLE_DATABASE),
)
PROFILES = ("dev", "ci", "nightly")
_requested = os.environ.get(PROFILE_ENV, "dev")
if _requested in PROFILES:
    settings.load_profile(_requested)


def pytest_configure(config: pytest.Config) -> None:
    if _requested not in PROFILES:
        raise pytest.UsageError(
            f"{PROFILE_ENV}={_requested!r} is not a profile; choose one of {', '.join(PROFILES)}"
        )
