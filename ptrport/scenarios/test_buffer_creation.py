"""Buffer creation: a pointer table has the capacity, dtypes and placement asked for, pins its
host side where the backend can, stages through a numpy view that shares the host tensor's
memory, accumulates staging offsets, refuses to stage past its capacity, and transfers only
the entries asked for.

Addresses here stay in the lower half: these checks are about the buffers, not the encoding,
so a control passes them like any other subject. Sizes and addresses keep to the subject's
contract."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptrport.check import checks

pytestmark = pytest.mark.ptrport_scenario

test_columns_have_the_capacity_dtype_and_placement_asked_for = given(capacity=st.integers(0, 4096))(
    checks.columns_have_the_capacity_dtype_and_placement_asked_for
)

test_the_numpy_view_shares_the_host_tensor_memory = given(
    capacity=st.integers(1, 256), data=st.data()
)(checks.the_numpy_view_shares_the_host_tensor_memory)

test_staging_offsets_accumulate_and_only_n_entries_transfer = given(data=st.data())(
    checks.staging_offsets_accumulate_and_only_n_entries_transfer
)

test_staging_past_the_capacity_is_refused = given(capacity=st.integers(0, 16), data=st.data())(
    checks.staging_past_the_capacity_is_refused
)
