"""The Hypothesis profiles registered by the root conftest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

ROOT = Path(__file__).resolve().parent.parent


def test_ci_is_derandomized_without_deadline_or_database() -> None:
    ci = settings.get_profile("ci")
    assert ci.derandomize is True
    assert ci.deadline is None
    assert ci.database is None


def test_nightly_runs_many_examples_and_keeps_its_database_under_reports() -> None:
    nightly = settings.get_profile("nightly")
    dev = settings.get_profile("dev")
    assert nightly.max_examples > 10 * dev.max_examples
    assert isinstance(nightly.database, DirectoryBasedExampleDatabase)
    assert Path(nightly.database.path).resolve().is_relative_to(ROOT / "reports")
    assert nightly.derandomize is False


def test_dev_is_quick() -> None:
    dev = settings.get_profile("dev")
    assert dev.max_examples <= 50
    assert dev.deadline is None


def test_profiles_are_the_same_where_a_ci_environment_variable_is_set() -> None:
    # Hypothesis loads its own "ci" profile at import under CI=true (GitHub Actions sets it);
    # ours must not inherit from it, or the nightly would run derandomized.
    read_back = (
        "import json, conftest; from hypothesis import settings; "
        "print(json.dumps({name: [settings.get_profile(name).derandomize, "
        "list(map(str, settings.get_profile(name).suppress_health_check))] "
        "for name in conftest.PROFILES}))"
    )
    env = {**os.environ, "CI": "true", "HYPOTHESIS_PROFILE": "dev"}
    out = subprocess.run(
        [sys.executable, "-c", read_back],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    profiles = json.loads(out.stdout)
    assert profiles == {"dev": [False, []], "ci": [True, []], "nightly": [False, []]}
