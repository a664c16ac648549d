"""Batch copy of real allocations: every destination holds its source's bytes afterwards,
nothing else in any payload changed, and every guard band is intact."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptrport.check import checks

pytestmark = pytest.mark.ptrport_scenario(real_memory=True)

test_real_entries_are_copied_exactly = given(data=st.data())(checks.real_entries_are_copied_exactly)
