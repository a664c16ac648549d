"""Optional dependencies of the tests. A test that needs Triton skips where it is missing
(``pytest.importorskip("triton")``), unless the run requires it: with ``PTRPORT_REQUIRE_TRITON=1``
(``.ci/run`` and CI set it) a run where Triton cannot be imported stops at its start."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

import pytest

REQUIRE_TRITON = "PTRPORT_REQUIRE_TRITON"


def require_triton(environ: Mapping[str, str] = os.environ) -> None:
    """A usage error (one line, the run does not start) where the run requires Triton and it
    cannot be imported."""
    if environ.get(REQUIRE_TRITON) != "1":
        return
    try:
        importlib.import_module("triton")
    except ImportError as exc:
        raise pytest.UsageError(
            f"{REQUIRE_TRITON}=1: triton cannot be imported ({exc}), and the tests that need it "
            "would skip"
        ) from None
