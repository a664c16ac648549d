# SGLang's fused conv-state slot clear / copy at high device addresses.
#
# A hybrid (Mamba-style) pool clears the conv state of freshly allocated slots and
# copies checkpointed slots into new ones (copy-on-write) for every conv-state
# tensor in one launch. ``build_conv_slot_descriptor``
# (sglang/srt/mem_cache/mamba_slot_fused.py) records each tensor's ``data_ptr()``
# in a pointer column, and ``_fused_slot_clear_kernel`` /
# ``_fused_slot_copy_kernel`` cast the entries back into bf16 pointers. SGLang
# #35051 (issue #35047) builds the column through ``make_ptr_table``; before it,
# the column was ``torch.tensor(..., dtype=torch.int64)``, which cannot take an
# address >= 2**63.
#
# The test builds the descriptor with the engine's function over real bf16
# tensors (one of them a strided view inside a wider buffer), places them at
# 2**63 and at the top of the address space, runs the engine's copy and clear,
# and checks every element. A second test takes its three buffers from
# ``ptrport.strategies.allocations()``: on ``cpu-placed`` Hypothesis chooses where
# each is presented, and the guard bands around them must stay untouched.

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sglang.srt.mem_cache import mamba_slot_fused as slots

from ptrport.strategies import allocations

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63

LAYERS = 3
POOL = 8


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _make_buffers(device: torch.device) -> list[torch.Tensor]:
    """Three conv-state buffers of different feature shapes, sharing
    ``[LAYERS, POOL]``; the last is wider than the state it will hold."""
    gen = torch.Generator().manual_seed(7)
    shapes = [(LAYERS, POOL, 3, 8), (LAYERS, POOL, 40), (LAYERS, POOL, 24)]
    return [torch.randn(*s, generator=gen).bfloat16().to(device) for s in shapes]


def _place(ptrport_device, buffers: list[torch.Tensor], where: str) -> None:
    if where == "2**63":
        at = AT_2_63
        for t in buffers:
            ptrport_device.place(t, at=at)
            at += (_nbytes(t) + 4096) // 64 * 64
    elif where == "top":
        # The last buffer's storage ends exactly at 2**64, the others just below it.
        below = TOP
        for t in reversed(buffers):
            at = (below - _nbytes(t)) // 64 * 64
            ptrport_device.place(t, at=at)
            below = at - 4096
    else:
        # Straddling 2**63: the first buffer starts below it and ends above it.
        first, *rest = buffers
        ptrport_device.place(first, at=AT_2_63 - _nbytes(first) // 2 // 64 * 64)
        at = AT_2_63 + (1 << 20)
        for t in rest:
            ptrport_device.place(t, at=at)
            at += (_nbytes(t) + 4096) // 64 * 64


PLACEMENTS = [
    pytest.param("2**63", id="at_2_63"),
    pytest.param("top", id="at_top"),
    pytest.param("straddle", id="across_2_63"),
    pytest.param(None, id="as_allocated"),
]


@pytest.mark.parametrize("where", PLACEMENTS)
def test_copy_then_clear_slots(ptrport_device, where):
    device = ptrport_device.device
    buffers = _make_buffers(device)
    if where is not None:
        _place(ptrport_device, buffers, where)
    # The conv states as the pool hands them over: the first two whole, the third the
    # leading 16 features of each 24-wide slot (slot stride 24, not 16).
    states = [buffers[0], buffers[1], buffers[2][:, :, :16]]
    desc = slots.build_conv_slot_descriptor(states)
    recorded = [v % TOP for v in desc.ptr.cpu().tolist()]
    assert recorded == [s.data_ptr() for s in states], [hex(v) for v in recorded]

    before = [b.clone() for b in buffers]
    src = torch.tensor([1, 6], dtype=torch.int32)
    dst = torch.tensor([4, 0], dtype=torch.int32)
    slots.fused_copy_conv_slots(desc, src.to(device), dst.to(device))
    expected = [b.clone() for b in before]
    for buf in expected[:2]:
        buf[:, dst.long()] = buf[:, src.long()]
    expected[2][:, dst.long(), :16] = expected[2][:, src.long(), :16]
    for buf, exp in zip(buffers, expected, strict=True):
        assert torch.equal(buf.cpu(), exp.cpu()), f"copy wrong in buffer at {buf.data_ptr():#x}"

    cleared = torch.tensor([2, 7, 4], dtype=torch.int64)
    slots.fused_clear_conv_slots(desc, cleared.to(device))
    for buf in expected[:2]:
        buf[:, cleared] = 0
    expected[2][:, cleared, :16] = 0
    for buf, exp in zip(buffers, expected, strict=True):
        assert torch.equal(buf.cpu(), exp.cpu()), f"clear wrong in buffer at {buf.data_ptr():#x}"
    # The features outside the held state were never touched.
    assert torch.equal(buffers[2][:, :, 16:].cpu(), before[2][:, :, 16:].cpu())


# Per-slot feature shapes of the three buffers the Hypothesis test draws.
DRAWN_FEATURES = ((2, 8), (40,), (24,))


@settings(max_examples=10, deadline=None)
@given(
    drawn=st.tuples(
        *[
            allocations(
                dtypes=[torch.bfloat16],
                min_numel=LAYERS * POOL * int(torch.Size(f).numel()),
                max_numel=LAYERS * POOL * int(torch.Size(f).numel()),
                max_offset=0,
            )
            for f in DRAWN_FEATURES
        ]
    )
)
def test_copy_then_clear_drawn_buffers(ptrport_device, drawn):
    buffers = [a.tensor.view(LAYERS, POOL, *f) for a, f in zip(drawn, DRAWN_FEATURES, strict=True)]
    gen = torch.Generator().manual_seed(11)
    for buf in buffers:
        # The drawn bytes include NaN patterns; give the states ordinary values.
        buf.copy_(torch.randn(buf.shape, generator=gen).bfloat16())
    states = [buffers[0], buffers[1], buffers[2][:, :, :16]]
    desc = slots.build_conv_slot_descriptor(states)
    where = ", ".join(f"{s.data_ptr():#x}" for s in states)

    before = [b.clone() for b in buffers]
    src = torch.tensor([5, 2], dtype=torch.int64)
    dst = torch.tensor([0, 7], dtype=torch.int64)
    slots.fused_copy_conv_slots(desc, src.to(buffers[0].device), dst.to(buffers[0].device))
    slots.fused_clear_conv_slots(desc, torch.tensor([3], device=buffers[0].device))
    expected = [b.clone() for b in before]
    for buf in expected[:2]:
        buf[:, dst] = buf[:, src]
        buf[:, 3] = 0
    expected[2][:, dst, :16] = expected[2][:, src, :16]
    expected[2][:, 3, :16] = 0
    for buf, exp in zip(buffers, expected, strict=True):
        assert torch.equal(buf.cpu(), exp.cpu()), f"slots wrong in the buffers at {where}"
    assert all(a.guards_intact() for a in drawn), f"a guard band was written near {where}"
