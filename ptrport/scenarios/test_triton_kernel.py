"""Triton kernel: what a kernel sees when it loads addresses from a pointer table. Each entry
comes out bit-exact, and int32 and uint32 offsets (loaded, or computed from the kernel's own
indices) add to high addresses modulo ``2**64``, for every encoding. Interpreted on CPU,
compiled on GPUs; the ``int64`` control must fail here as everywhere it stores high addresses.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptrport.check import checks
from ptrport.check import strategies as hst
from ptrport.check.tables import ENCODINGS

pytestmark = pytest.mark.ptrport_scenario

encodings = [
    pytest.param(
        e.name,
        id=e.name,
        marks=[pytest.mark.xfail(strict=True, reason=e.description)] if e.control else [],
    )
    for e in ENCODINGS.values()
]

test_a_kernel_sees_each_entry_and_the_entry_plus_an_offset = pytest.mark.parametrize(
    "offsets", list(checks.OFFSET_DTYPES)
)(
    pytest.mark.parametrize("encoding", encodings)(
        given(addresses=st.lists(hst.addresses(), min_size=1, max_size=16), data=st.data())(
            checks.a_kernel_sees_each_entry_and_the_entry_plus_an_offset
        )
    )
)
