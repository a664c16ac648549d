"""Mixed batches: synthetic high addresses beside real allocations in one executed batch. The
table holds every address exactly, the real entries are copied exactly, and no synthetic
address is dereferenced."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptrport.check import checks

pytestmark = pytest.mark.ptrport_scenario(real_memory=True)

test_a_mixed_batch_is_held_exactly_and_only_real_entries_are_copied = given(data=st.data())(
    checks.a_mixed_batch_is_held_exactly_and_only_real_entries_are_copied
)
