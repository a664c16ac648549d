"""What a Triton kernel sees in a pointer table (interpreted on CPU): the boundary values pinned,
and the scenario through pytester with the int64 control failing where it must."""

from __future__ import annotations

import pytest
import torch

from ptrport.addresses import HIGH_HALF, INT64_MAX, MAX_ADDRESS
from ptrport.check.batches import Entry
from ptrport.check.tables import INT64_BITCAST, UINT64, Encoding, PointerTable
from ptrport.device.backends import CpuBackend
from tests.scenario_runs import copy_scenarios, use_profile

pytest.importorskip("triton")
from ptrport.check import kernel_view

CPU = CpuBackend()
BOUNDARY = [INT64_MAX, HIGH_HALF, MAX_ADDRESS, 0xFFFF85ABD4E00000]


def _column(encoding: Encoding) -> torch.Tensor:
    table = PointerTable(len(BOUNDARY), encoding, CPU)
    table.stage([Entry(a, 0, 0) for a in BOUNDARY])
    table.transfer(len(BOUNDARY))
    return table.src.device


@pytest.mark.parametrize("encoding", [UINT64, INT64_BITCAST], ids=lambda e: e.name)
def test_the_kernel_sees_the_boundary_values_bit_exact(encoding: Encoding) -> None:
    offsets = torch.tensor([1, -1, 1, -(2**31)], dtype=torch.int32)
    view = kernel_view.load_entries(_column(encoding), offsets)
    assert view.seen == BOUNDARY
    assert view.plus_loaded == [HIGH_HALF, INT64_MAX, 0, 0xFFFF85AB54E00000]
    stride = kernel_view.STRIDE
    assert view.plus_computed == [(a + i * stride) % 2**64 for i, a in enumerate(BOUNDARY)]


def test_a_uint32_offset_is_added_unsigned() -> None:
    offsets = torch.tensor([2**32 - 1] * 4, dtype=torch.int64).to(torch.uint32)
    view = kernel_view.load_entries(_column(UINT64), offsets)
    assert view.plus_loaded == [(a + 2**32 - 1) % 2**64 for a in BOUNDARY]


def test_the_scenario_passes_the_fixes_and_fails_the_int64_control(
    pytester: pytest.Pytester,
) -> None:
    use_profile(pytester)
    copy_scenarios(pytester, "test_triton_kernel")
    result = pytester.runpytest("--backend=cpu", "--platform-name=test-platform")
    result.assert_outcomes(passed=4, xfailed=2)
