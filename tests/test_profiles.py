"""The Hypothesis profiles that ship with the package (ptrport.run.profiles)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

from ptrport.run import profiles

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def restored_profiles() -> Iterator[None]:
    """Put back the profiles this run registered, and the one it loaded."""
    loaded = profiles.current_name()
    yield
    profiles.register(ROOT / "reports")
    settings.load_profile(loaded)


def test_ci_is_derandomized_without_deadline_or_database() -> None:
    ci = settings.get_profile("ci")
    assert ci.derandomize is True
    assert ci.deadline is None
    assert ci.database is None


def test_nightly_runs_many_examples_and_keeps_its_database_in_the_report_directory(
    tmp_path: Path, restored_profiles: None
) -> None:
    profiles.register(tmp_path / "out")
    nightly = settings.get_profile("nightly")
    dev = settings.get_profile("dev")
    assert nightly.max_examples > 10 * dev.max_examples
    assert isinstance(nightly.database, DirectoryBasedExampleDatabase)
    assert Path(nightly.database.path) == tmp_path / "out" / ".hypothesis"
    assert nightly.derandomize is False


def test_dev_is_quick() -> None:
    dev = settings.get_profile("dev")
    assert dev.max_examples <= 50
    assert dev.deadline is None


def test_hypothesis_profile_chooses_among_ours_and_a_profile_loaded_before_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restored_profiles: None
) -> None:
    monkeypatch.setenv(profiles.PROFILE_ENV, "ci")
    settings.load_profile("default")
    profiles.activate(tmp_path)
    assert profiles.current_name() == "ci"
    settings.register_profile("mine", max_examples=3)
    settings.load_profile("mine")
    profiles.activate(tmp_path)
    assert profiles.current_name() == "mine"


def test_a_profile_that_is_not_ours_is_a_usage_error_naming_ours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(profiles.PROFILE_ENV, "fast")
    with pytest.raises(pytest.UsageError, match="'fast' is not a profile; choose one of dev, ci"):
        profiles.requested()


def test_profiles_are_the_same_where_a_ci_environment_variable_is_set(tmp_path: Path) -> None:
    # Hypothesis loads its own "ci" profile at import under CI=true (GitHub Actions sets it);
    # ours must not inherit from it, or the nightly would run derandomized.
    read_back = (
        "import json, pathlib; from ptrport.run import profiles; from hypothesis import settings; "
        "profiles.register(pathlib.Path('reports')); "
        "print(json.dumps({name: [settings.get_profile(name).derandomize, "
        "list(map(str, settings.get_profile(name).suppress_health_check))] "
        "for name in profiles.PROFILES}))"
    )
    env = {**os.environ, "CI": "true", "HYPOTHESIS_PROFILE": "dev"}
    out = subprocess.run(
        [sys.executable, "-c", read_back],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(out.stdout)
    assert found == {"dev": [False, []], "ci": [True, []], "nightly": [False, []]}
