"""The repository's own test runs: pytester for the plugin's tests, and the Hypothesis profiles
of :mod:`ptrport.run.profiles` (chosen by HYPOTHESIS_PROFILE) for the harness's own property tests.
A scenario run from here gets the same profiles from the plugin, as it would anywhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from ptrport.run import profiles
from tests.optional import require_docs, require_triton

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    require_triton()
    require_docs()
    profiles.activate(Path(config.invocation_params.dir) / "reports")
