"""Inner pytest runs of the plugin (``pytester``): a Hypothesis profile for them, and the
scenarios copied in, as the tests of the plugin, controls, isolation and users' subjects set
them up."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

# Imported before any test: pytester takes sys.modules back to what it was before each test,
# and native modules, once dropped from it, cannot be imported again (Triton's aborts the
# process, torch's raises); the plugin imports them only when an inner run starts a session.
import ptrport.run.session  # noqa: F401

with contextlib.suppress(ImportError):
    import triton  # noqa: F401

SCENARIOS = Path(__file__).resolve().parent.parent / "ptrport" / "scenarios"

# Inner runs may happen in this process, so the profile they load is put back when they end.
PROFILE_CONFTEST = """
import pytest
from hypothesis import Phase, settings

_previous = settings.get_current_profile_name()
settings.register_profile(
    "pytester", settings.get_profile("default"), max_examples={max_examples}, deadline=None,
    derandomize={derandomize}, database=None, phases=[p for p in Phase if p != Phase.explain],
)
settings.load_profile("pytester")


def pytest_unconfigure(config):
    settings.load_profile(_previous)


def pytest_collectstart(collector):
    # Every test module of these runs is a scenario, as the modules of ptrport.scenarios are.
    if isinstance(collector, pytest.Module):
        collector.add_marker("ptrport_scenario")
"""


def use_profile(
    pytester: pytest.Pytester, *, max_examples: int = 20, derandomize: bool = True
) -> None:
    """A ``conftest.py`` loading a profile of ``max_examples``, no deadline, no database, and
    no explain phase (as the ``dev`` and ``ci`` profiles), and marking every test module of
    the run a scenario."""
    pytester.makeconftest(
        PROFILE_CONFTEST.format(max_examples=max_examples, derandomize=derandomize)
    )


def own_tests_project(pytester: pytest.Pytester, *, max_examples: int = 20) -> pytest.Pytester:
    """``pytester`` with :func:`use_profile`'s profile, its modules left the user's own tests
    (not marked scenarios)."""
    use_profile(pytester, max_examples=max_examples)
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text().split("def pytest_collectstart")[0])
    return pytester


def written_report(pytester: pytest.Pytester, reports: str = "reports") -> dict[str, Any]:
    """The one platform report an inner run wrote in ``reports``."""
    (path,) = (pytester.path / reports).glob("*.json")
    found: dict[str, Any] = json.loads(path.read_text())
    return found


def copy_scenarios(pytester: pytest.Pytester, *names: str) -> None:
    """The scenario modules ``names`` (``test_batch_copy``...) as they are in ``scenarios/``."""
    for name in names:
        pytester.makepyfile(**{name: (SCENARIOS / f"{name}.py").read_text()})


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def signal_when_started(
    pytester: pytest.Pytester, touched: str, sent: signal.Signals, *args: str
) -> tuple[int, str]:
    """Run ``pytest ARGS`` in a session of its own and send ``sent`` to its process group, as a
    terminal sends Ctrl-C to its foreground group, once a test of the run has created the file
    ``touched``; its exit status and what it printed."""
    log = pytester.path / "pytest.log"
    process = pytester.popen(
        [sys.executable, "-m", "pytest", *args],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        # As a terminal's Ctrl-C reaches it: a run started in the background (``cmd &`` in a
        # script) ignores SIGINT, and its children would inherit that.
        preexec_fn=_interruptible,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (pytester.path / touched).exists():
            assert process.poll() is None, f"pytest ended before a test made {touched}"
            assert time.monotonic() < deadline, f"no test made {touched}"
            time.sleep(0.1)
        os.killpg(process.pid, sent)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, log.read_text()
