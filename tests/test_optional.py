"""``PTRPORT_REQUIRE_TRITON=1``: a run of the tests where Triton cannot be imported stops at
its start instead of skipping every test that needs it."""

from __future__ import annotations

import sys

import pytest

from tests.optional import REQUIRE_TRITON, require_triton


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
