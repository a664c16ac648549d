"""``PTRPORT_REQUIRE_TRITON=1`` and ``PTRPORT_REQUIRE_DOCS=1``: a run of the tests where Triton
cannot be imported, or the docs extra is not installed, stops at its start instead of skipping
every test that needs it."""

from __future__ import annotations

import sys

import pytest

from tests.optional import (
    REQUIRE_DOCS,
    REQUIRE_TRITON,
    missing_docs_module,
    require_docs,
    require_triton,
)


def test_a_run_that_requires_triton_stops_where_it_cannot_be_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "triton", None)  # importing it raises ImportError
    with pytest.raises(pytest.UsageError, match=f"^{REQUIRE_TRITON}=1: triton cannot be imp"):
        require_triton({REQUIRE_TRITON: "1"})
    require_triton({})  # not required: the tests that need it skip


def test_where_triton_imports_a_required_run_goes_on() -> None:
    pytest.importorskip("triton")
    require_triton({REQUIRE_TRITON: "1"})


def test_a_run_that_requires_the_docs_extra_stops_where_a_module_of_it_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # nothing is installed
    with pytest.raises(pytest.UsageError, match=f"^{REQUIRE_DOCS}=1: mkdocs is not installed"):
        require_docs({REQUIRE_DOCS: "1"})
    require_docs({})  # not required: the tests that build the site skip


def test_where_the_docs_extra_is_installed_a_required_run_goes_on() -> None:
    missing = missing_docs_module()
    if missing is not None:
        pytest.skip(f"{missing} is not installed; pip install -e '.[docs]'")
    require_docs({REQUIRE_DOCS: "1"})
