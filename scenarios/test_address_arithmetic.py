"""Address arithmetic: what pointer code computes from the addresses in its table (order, range
membership, high bits) is what unsigned arithmetic says, above ``2**63`` too.

Subjects that do no arithmetic on their addresses skip these checks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness import checks
from harness import strategies as hst

addresses = st.lists(hst.addresses(), min_size=1, max_size=8)

test_entries_sort_by_unsigned_address = given(addresses=addresses)(
    checks.entries_sort_by_unsigned_address
)

test_range_checks_compare_unsigned = given(addresses=addresses, data=st.data())(
    checks.range_checks_compare_unsigned
)

test_high_bits_shift_in_zeros = given(addresses=addresses, shift=st.integers(1, 63))(
    checks.high_bits_shift_in_zeros
)
