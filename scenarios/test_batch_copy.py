"""Batch copy of real allocations: every destination holds its source's bytes afterwards,
nothing else in any payload changed, and every guard band is intact."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness import checks

test_real_entries_are_copied_exactly = given(data=st.data())(checks.real_entries_are_copied_exactly)
