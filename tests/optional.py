"""Optional dependencies of the tests. A test that needs Triton skips where it is missing
(``pytest.importorskip("triton")``), unless the run requires it: with ``PTRPORT_REQUIRE_TRITON=1``
(``.ci/run`` and CI set it) a run where Triton cannot be imported stops at its start. The same
for the docs extra (MkDocs, Material, mkdocstrings), which tests/test_docs.py builds the site
with: ``PTRPORT_REQUIRE_DOCS=1``."""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping

import pytest

REQUIRE_TRITON = "PTRPORT_REQUIRE_TRITON"
REQUIRE_DOCS = "PTRPORT_REQUIRE_DOCS"
DOCS_MODULES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
"""What ``mkdocs build`` of mkdocs.yml needs: the docs extra of pyproject.toml."""


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


def missing_docs_module() -> str | None:
    """The first module of the docs extra that is not installed, or None."""
    for name in DOCS_MODULES:
        try:
            found = importlib.util.find_spec(name)
        except ImportError:  # its parent package is missing
            found = None
        if found is None:
            return name
    return None


def require_docs(environ: Mapping[str, str] = os.environ) -> None:
    """A usage error (one line, the run does not start) where the run requires the docs extra
    and a module of it is not installed."""
    if environ.get(REQUIRE_DOCS) != "1":
        return
    missing = missing_docs_module()
    if missing is not None:
        raise pytest.UsageError(
            f"{REQUIRE_DOCS}=1: {missing} is not installed (pip install -e '.[docs]'), and the "
            "tests that build the documentation would skip"
        )
