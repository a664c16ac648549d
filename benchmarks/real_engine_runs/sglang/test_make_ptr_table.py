# SGLang's multi-type conv-window scatter at high device addresses.
#
# After speculative verification SGLang writes the accepted conv window of every
# request back into the persistent conv-state caches. With several conv state
# types it does so in one launch: ``_conv_multi_build_meta`` packs each pair's
# ``data_ptr()`` values (plus strides and block offsets) into a meta table and
# ``_fused_conv_window_scatter_multi_kernel`` casts the table entries back into
# pointers. SGLang #35051 (issue #35047) builds that table through
# ``make_ptr_table`` (uint64 bits viewed as int64); before it, the table was a
# ``torch.tensor(..., dtype=torch.int64)`` that cannot take an address >= 2**63.
#
# The test goes through the engine's entry point,
# ``scatter_mamba_states_after_mtp_verify``, with real bf16 caches (the temporal
# state left empty, so only the conv path runs), places the caches at 2**63 and at
# the top of the address space, and checks every byte the kernel wrote.

from types import SimpleNamespace

import pytest
import torch
from sglang.kernels.ops.mamba import mamba_state_scatter_triton as scatter

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63

LAYERS = 2
POOL = 6  # request slots of the persistent conv caches
DRAFT_REQS = 3  # request rows of the per-step windows
STEPS = 4
# Two conv state types, as a model with two short-conv streams would have:
# (features, window width).
CONV_TYPES = ((24, 3), (8, 5))


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _top_address(t: torch.Tensor, *, below: int = TOP) -> int:
    """The highest multiple of 64 at which ``t``'s storage ends at or below ``below``."""
    return (below - _nbytes(t)) // 64 * 64


def _make_caches(device: torch.device):
    gen = torch.Generator().manual_seed(1234)
    convs, windows = [], []
    for feat, width in CONV_TYPES:
        convs.append(torch.randn(LAYERS, POOL, feat, width, generator=gen).bfloat16().to(device))
        windows.append(
            torch.randn(LAYERS, DRAFT_REQS, STEPS, feat, width, generator=gen).bfloat16().to(device)
        )
    return convs, windows


def _place_all(ptrport_device, tensors, where: str) -> list[int]:
    """Place the tensors one after the other from 2**63 upwards, or downwards from the
    top of the address space (the last one ending exactly at 2**64)."""
    addresses = []
    if where == "2**63":
        at = AT_2_63
        for t in tensors:
            ptrport_device.place(t, at=at)
            addresses.append(at)
            at += (_nbytes(t) + 4096) // 64 * 64
    else:
        below = TOP
        for t in reversed(tensors):
            at = _top_address(t, below=below)
            ptrport_device.place(t, at=at)
            addresses.insert(0, at)
            below = at - 4096
    assert [t.data_ptr() for t in tensors] == addresses
    return addresses


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
        pytest.param("allocated", id="as_allocated"),
    ],
)
@pytest.mark.parametrize("with_track", [False, True], ids=["accept", "accept_and_track"])
def test_conv_window_scatter(ptrport_device, where, with_track):
    device = ptrport_device.device
    convs, windows = _make_caches(device)
    if where != "allocated":
        _place_all(ptrport_device, [*convs, *windows], where)
    pairs = list(zip(convs, windows, strict=True))
    assert scatter._conv_multi_eligible(pairs)

    before = [c.clone() for c in convs]
    # Accept commit: draft row i lands in pool slot dst[i] with the window of step[i];
    # a negative step means "nothing accepted".
    dst = torch.tensor([4, 1, 2], dtype=torch.int32)
    step = torch.tensor([2, 0, -1], dtype=torch.int32)
    # Interval-crossing track set: row j's window of step track_step[j] into slot
    # track_dst[j].
    track_dst = torch.tensor([5, 0], dtype=torch.int32)
    track_step = torch.tensor([3, 1], dtype=torch.int32)

    caches = SimpleNamespace(
        temporal=torch.empty(0, device=device),
        intermediate_ssm=torch.empty(0, device=device),
        conv=convs,
        intermediate_conv_window=windows,
    )
    scatter.scatter_mamba_states_after_mtp_verify(
        caches,
        dst.to(device),
        step.to(device),
        track_dst.to(device) if with_track else None,
        track_step.to(device) if with_track else None,
    )

    def rows(slots, steps):
        pairs = zip(slots.tolist(), steps.tolist(), strict=True)
        return [(row, slot, s) for row, (slot, s) in enumerate(pairs) if s >= 0]

    moves = rows(dst, step) + (rows(track_dst, track_step) if with_track else [])
    for conv, window, old in zip(convs, windows, before, strict=True):
        expected = old.clone()
        for row, slot, s in moves:
            expected[:, slot] = window[:, row, s]
        assert not torch.equal(expected, old)
        assert torch.equal(conv.cpu(), expected.cpu()), (
            f"conv cache at {conv.data_ptr():#x} (window at {window.data_ptr():#x}) "
            "does not hold the scattered windows"
        )
