"""Address arithmetic: what pointer code computes from the addresses in its table (order, range
membership, high bits) is what unsigned arithmetic says, above ``2**63`` too.

Subjects that do no arithmetic on their addresses skip these checks. The addresses keep to the
subject's contract (its alignment)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptrport.check import checks

pytestmark = pytest.mark.ptrport_scenario

test_entries_sort_by_unsigned_address = given(data=st.data())(
    checks.entries_sort_by_unsigned_address
)

test_range_checks_compare_unsigned = given(data=st.data())(checks.range_checks_compare_unsigned)

test_high_bits_shift_in_zeros = given(data=st.data())(checks.high_bits_shift_in_zeros)
