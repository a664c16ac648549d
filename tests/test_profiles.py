"""The Hypothesis profiles registered by the root conftest."""

from __future__ import annotations

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
