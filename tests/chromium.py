"""Headless Chromium loading a page and handing back its DOM, for the tests that read the
rendered HTML. Skipped where Chromium is missing, unless PTRPORT_REQUIRE_CHROMIUM=1 (CI)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REQUIRE_ENV = "PTRPORT_REQUIRE_CHROMIUM"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WINDOW = "1400,900"


def dump_dom(page: Path | str, profile: Path) -> str:
    """The DOM of ``page`` (a file, or a URL) once Chromium has loaded it in a 1400x900
    window."""
    # GitHub's runners have Google Chrome, the same engine with the same headless flags.
    chromium = next(filter(None, map(shutil.which, BROWSERS)), None)
    if chromium is None:
        reason = "chromium is not installed; it renders the HTML page in this test"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires it")
        pytest.skip(reason)
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--window-size={WINDOW}",
        "--dump-dom",
        page if isinstance(page, str) else page.resolve().as_uri(),
    ]
    try:
        dumped = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    except subprocess.TimeoutExpired:
        # A script that ran an alert() holds the page open.
        pytest.fail("chromium did not finish loading the page in 60 s; did a script run?")
    return dumped.stdout
