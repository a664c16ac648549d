# SGLang's NIXL transfers to decode ranks of a larger TP, at high device addresses.
#
# In prefill/decode disaggregation with a larger decode TP than prefill TP, the
# prefill rank sends each decode rank only its KV heads, one of two ways
# (sglang/srt/disaggregation/nixl/conn.py):
#
# - Slices. ``NixlKVManager._init_hetero_tp_prep_handle`` turns the KV buffers'
#   ``data_ptr()`` values into descriptors, one per (layer buffer, slot, token,
#   head group), and prepares them with NIXL; ``send_kvcache_slice`` picks
#   descriptor indices per page (``expand_page_indices_for_slice``) and asks NIXL
#   to write. 0.5.19 computes every descriptor in numpy, in uint64 (SGLang #27415
#   made the index ranges uint64 before any release had the int64 ones); 0.5.23
#   packs one run per buffer, (address, length, device, stride, count), as a uint64
#   Nx5 array that NIXL 1.5 takes as it is (ai-dynamo/nixl#1978), and expands the
#   runs into uint64 Nx3 descriptors itself where an older NIXL refuses them
#   (TypeError). The ``nixl`` parameter gives the connector either NIXL, so both of
#   0.5.23's paths run; the test checks which one ran.
# - Staging (SGLANG_DISAGG_STAGING_BUFFER=1). ``send_kvcache_staged`` gathers the
#   decode rank's heads of every layer into a staging buffer with a Triton kernel
#   (``gather_all_layers_to_staging``, whose table of layer addresses is
#   ``torch.int64`` in 0.5.19, staging_buffer.py:429, and ``make_ptr_table`` in
#   0.5.23), then asks NIXL for one bulk write, described by two one-row arrays:
#   (staging address, bytes, device) and (decode staging address, bytes, device).
#   0.5.19 builds them as ``np.int64`` (conn.py:1925-1931), which cannot hold an
#   address >= 2**63 (OverflowError); 0.5.23 as ``np.uint64`` (conn.py:2592-2598).
#   The decode rank then scatters its staging region into its KV buffers
#   (``scatter_staging_to_kv``, the same kind of table). Variants place everything,
#   only the two staging buffers, or only the decode's staging buffer, so that on
#   the CPU's own addresses 0.5.19 stops at the descriptor arrays themselves.
#
# NIXL itself is not needed: the manager is SGLang's own class, built without its
# constructor (which starts a NIXL agent) and given the fields these methods read;
# its ``agent`` is the stand-in of conftest.py, which takes what NIXL takes and
# carries out each posted write by looking the descriptors up in the registered
# tensors. The staging buffers are SGLang's ``StagingBuffer`` built the same way
# around a CPU tensor (its constructor allocates on CUDA or XPU), and ptrport's
# CUDA stand-in answers the ``torch.cuda`` calls 0.5.19's gather makes outright.
# Every test checks the decode buffers byte for byte.

import inspect
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sglang.srt.disaggregation.common import staging_buffer as staging
from sglang.srt.disaggregation.nixl import conn

pytestmark = pytest.mark.ptrport


LAYERS = 2
PAGE = 4  # tokens per slot
HEADS = 2  # KV heads on the prefill rank (prefill TP 1)
DECODE_TP = 2  # one head per decode rank
HEAD_DIM = 24  # bf16: 48 bytes per head and token, not a multiple of 2048
SLOTS = 6
SLOTS_DST = 5
SRC_PAGES = np.array([1, 4], dtype=np.int32)
DST_PAGES = np.array([3, 0], dtype=np.int32)


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _kv(gen, device, slots, heads, *, tokens_first=False):
    shape = (slots * PAGE, heads, HEAD_DIM) if tokens_first else (slots, PAGE, heads, HEAD_DIM)
    return torch.randn(*shape, generator=gen).bfloat16().to(device)


def _expected(old, source, rank):
    """``old`` with decode rank ``rank``'s head of ``source`` written into its pages."""
    expected = old.clone().view(SLOTS_DST, PAGE, 1, HEAD_DIM)
    src = source.view(SLOTS, PAGE, HEADS, HEAD_DIM)
    expected[torch.from_numpy(DST_PAGES).long()] = src[
        torch.from_numpy(SRC_PAGES).long(), :, rank : rank + 1
    ]
    return expected.view(old.shape)


def _check(dst, before, sources):
    for rank in range(DECODE_TP):
        for i, (got, old) in enumerate(zip(dst[rank], before[rank], strict=True)):
            source = sources[i]
            assert torch.equal(got.cpu(), _expected(old, source, rank).cpu()), (
                f"decode rank {rank} buffer {i} at {got.data_ptr():#x} does not hold "
                f"head {rank} of prefill buffer at {source.data_ptr():#x}"
            )


def _manager(agent, src_kv):
    manager = object.__new__(conn.NixlKVManager)
    manager.kv_args = SimpleNamespace(
        page_size=PAGE,
        total_kv_head_num=HEADS,
        kv_head_num=HEADS,
        engine_rank=0,
        gpu_id=0,
        prefill_start_layer=0,
        kv_data_ptrs=[t.data_ptr() for t in src_kv],
        kv_data_lens=[_nbytes(t) for t in src_kv],
        kv_item_lens=[_nbytes(t) // SLOTS for t in src_kv],
    )
    manager.attn_tp_size = 1
    manager.agent = agent
    manager.prep_handle_slice_src = None
    manager.prep_handles_slice_dst = {}
    manager._use_strided_descs = True
    return manager


PLACEMENTS = [
    pytest.param("2**63", id="at_2_63"),
    pytest.param("top", id="at_top"),
    pytest.param(None, id="as_allocated"),
]


@pytest.mark.parametrize("where", PLACEMENTS)
@pytest.mark.parametrize("nixl", ["strided", "per_block"], ids=["nixl_strided", "nixl_per_block"])
def test_slice_transfer_to_two_decode_ranks(
    ptrport_device, place_in_a_row, nixl_agent, nixl, where
):
    device = ptrport_device.device
    gen = torch.Generator().manual_seed(3)
    src = [_kv(gen, device, SLOTS, HEADS) for _ in range(2 * LAYERS)]  # K of each layer, then V
    dst = {rank: [_kv(gen, device, SLOTS_DST, 1) for _ in range(2 * LAYERS)] for rank in (0, 1)}
    tensors = [*src, *dst[0], *dst[1]]
    place_in_a_row(tensors, where)
    before = {rank: [t.clone() for t in ts] for rank, ts in dst.items()}

    agent = nixl_agent(tensors, strided=nixl == "strided")
    manager = _manager(agent, src)
    send = manager.send_kvcache_slice
    notif = {"notif": "room"} if "notif" in inspect.signature(send).parameters else {}
    for rank in range(DECODE_TP):
        peer = f"decode{rank}"
        decode_args = SimpleNamespace(
            decode_tp_size=DECODE_TP,
            decode_tp_rank=rank,
            dst_kv_item_len=_nbytes(dst[rank][0]) // SLOTS_DST,
            dst_kv_ptrs=[t.data_ptr() for t in dst[rank]],
            dst_num_slots=SLOTS_DST,
            gpu_id=0,
        )
        manager._init_hetero_tp_prep_handle(peer, decode_args)
        send(peer, SRC_PAGES, DST_PAGES, **notif)

    # 0.5.23 packs runs (and expands them itself for an older NIXL); 0.5.19 always
    # hands NIXL one descriptor per block.
    packs = hasattr(conn.NixlKVManager, "_pack_stride_descs")
    expected_kind = "strided" if packs and nixl == "strided" else "per_block"
    assert agent.prepped and set(agent.prepped) == {expected_kind}, agent.prepped
    assert [op for op, _ in agent.posted] == ["WRITE"] * DECODE_TP
    _check(dst, before, src)


STAGED_PLACEMENTS = [
    pytest.param("2**63", id="at_2_63"),
    pytest.param("top", id="at_top"),
    pytest.param("staging", id="staging_at_2_63"),
    pytest.param("decode_staging", id="decode_staging_at_top"),
    pytest.param(None, id="as_allocated"),
]

STAGING_BYTES = 4096
DECODE_OFFSET = 512  # where the decode's staging ring hands this chunk its region


def _staging_buffer(buffer: torch.Tensor):
    """SGLang's StagingBuffer around a CPU tensor, given the fields both releases read
    (its constructor allocates on CUDA or XPU)."""
    buf = object.__new__(staging.StagingBuffer)
    buf.buffer = buffer
    buf.data_ptr = buffer.data_ptr()
    buf.size_bytes = _nbytes(buffer)
    buf.gpu_id = 0
    buf.device = buffer.device
    buf.device_module = torch.get_device_module(buffer.device)
    buf._gather_stream = torch.cuda.Stream()  # the CUDA stand-in's
    return buf


@pytest.mark.parametrize("where", STAGED_PLACEMENTS)
def test_staged_transfer_to_two_decode_ranks(
    ptrport_device, place_in_a_row, nixl_agent, cuda_stand_in, where
):
    device = ptrport_device.device
    gen = torch.Generator().manual_seed(5)
    k = [_kv(gen, device, SLOTS, HEADS, tokens_first=True) for _ in range(LAYERS)]
    v = [_kv(gen, device, SLOTS, HEADS, tokens_first=True) for _ in range(LAYERS)]
    dst = {
        rank: [_kv(gen, device, SLOTS_DST, 1, tokens_first=True) for _ in range(2 * LAYERS)]
        for rank in (0, 1)
    }
    prefill_staging = torch.zeros(STAGING_BYTES, dtype=torch.uint8, device=device)
    decode_staging = {
        rank: torch.zeros(STAGING_BYTES, dtype=torch.uint8, device=device) for rank in (0, 1)
    }
    stagings = [prefill_staging, *decode_staging.values()]
    tensors = [*k, *v, *dst[0], *dst[1], *stagings]
    if where in ("2**63", "top"):
        place_in_a_row(tensors, where)
    elif where == "staging":
        place_in_a_row(stagings, "2**63")
    elif where == "decode_staging":
        place_in_a_row(list(decode_staging.values()), "top")
    before = {rank: [t.clone() for t in ts] for rank, ts in dst.items()}

    agent = nixl_agent(tensors)
    manager = _manager(agent, [*k, *v])
    manager.kv_buffer_tensors = {"k_buffers": k, "v_buffers": v, "page_size": PAGE}
    buffer = _staging_buffer(prefill_staging)
    send = manager.send_kvcache_staged
    notif = {"notif": "room"} if "notif" in inspect.signature(send).parameters else {}
    for rank in range(DECODE_TP):
        ring = decode_staging[rank]
        handle = send(
            f"decode{rank}",
            SRC_PAGES,
            dst_staging_ptr=ring.data_ptr() + DECODE_OFFSET,
            dst_staging_size=STAGING_BYTES - DECODE_OFFSET,
            dst_gpu_id=0,
            dst_tp_rank=rank,
            dst_attn_tp_size=DECODE_TP,
            dst_kv_item_len=_nbytes(dst[rank][0]) // SLOTS_DST,
            staging_buffer=buffer,
            **notif,
        )
        assert handle is not None, "the staged transfer fell back"
        # The decode rank, once NIXL reports the write: its region into its KV buffers.
        staging.scatter_staging_to_kv(
            ring[DECODE_OFFSET:],
            dst[rank][:LAYERS],
            dst[rank][LAYERS:],
            torch.from_numpy(DST_PAGES).to(device),
            PAGE,
            1,
            DECODE_TP,
            rank,
            HEADS,
        )

    assert agent.posted == [("WRITE", 1)] * DECODE_TP  # one bulk descriptor per rank
    _check(dst, before, [*k, *v])
