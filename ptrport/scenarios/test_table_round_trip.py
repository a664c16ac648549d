"""Table round trip: any 64-bit address staged on the host and transferred reads back from the
device bit-exact, as an unsigned int, whatever the encoding (within the subject's contract).

Each check is a body from :mod:`ptrport.check.checks` given its strategies here."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptrport.check import checks

pytestmark = pytest.mark.ptrport_scenario

test_an_entry_reads_back_bit_exact = given(data=st.data())(checks.an_entry_reads_back_bit_exact)

test_batches_staged_step_by_step_read_back_bit_exact = given(data=st.data())(
    checks.batches_staged_step_by_step_read_back_bit_exact
)
