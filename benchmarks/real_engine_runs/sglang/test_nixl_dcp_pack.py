# SGLang's PD decode-context-parallel (DCP) transfer over NIXL, at high device addresses.
#
# When the decode side shards each request's KV tokens over DCP ranks, the prefill
# rank sends each decode DCP rank every ``dcp_size``-th token of every layer
# (``build_dcp_token_transfer_plan``). It may first pack those rows into a pack
# buffer with a Triton kernel (``try_pack_dcp_src``, disaggregation/common/
# dcp_pack.py:80, calling ``copy_mla_rows_into_pack``): that function records each
# layer's ``data_ptr()`` in a ``torch.int64`` metadata table
# (kernels/ops/kvcache/pd_dcp_gather.py:60,63; :54,57 in 0.5.19), which cannot take
# an address >= 2**63. Without a pack buffer it sends one descriptor per run of
# tokens (``send_kvcache_dcp`` -> ``_send_kvcache_generic``), built in uint64.
#
# 0.5.23 makes pack buffers on CUDA only: ``init_dcp_pack_buffers`` returns none for
# any other device type (dcp_pack.py:110-114, whose comment names the int64 table
# and XPU's bit-63 addresses), and the connector then passes no pack buffer. CUDA
# device addresses are user-space addresses, below 2**63; the device whose
# addresses have bit 63 set (an Intel GPU's USM, what cpu-usm presents) gets the
# per-token path. The test runs that route at placed addresses with the engine's
# own functions: ``init_dcp_pack_buffers`` for an XPU, ``_pack_dcp_rank_once`` with
# what it returned, ``send_kvcache_dcp`` with that, for both decode DCP ranks,
# through the NIXL stand-in of conftest.py; it checks that no pack buffer was made
# or registered and every decode byte. 0.5.19 has no device-type routing: its
# ``init_dcp_pack_buffers`` allocates on ``cuda:N`` (dcp_pack.py:106-111), which
# fails on a machine without CUDA before any table is built; the test skips there.

import inspect
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sglang.srt.disaggregation.common import dcp_pack
from sglang.srt.disaggregation.common.utils import build_dcp_token_transfer_plan
from sglang.srt.disaggregation.nixl import conn

pytestmark = pytest.mark.ptrport


LAYERS = 3  # MLA: one KV buffer per layer
PAGE = 4
DCP = 2  # decode DCP ranks
ROW = 36  # bf16 elements per token (72 bytes)
SLOTS = 6
SLOTS_DST = 4
SRC_PAGES = np.array([4, 1, 2], dtype=np.int32)  # 12 tokens, 6 per decode DCP rank
DST_PAGES = np.array([3, 0], dtype=np.int32)  # the decode's pages of physical PAGE tokens
TOKENS = SRC_PAGES.size * PAGE


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
        pytest.param(None, id="as_allocated"),
    ],
)
def test_dcp_transfer_on_xpu(ptrport_device, place_in_a_row, nixl_agent, where):
    if "device_type" not in inspect.signature(dcp_pack.init_dcp_pack_buffers).parameters:
        pytest.skip("this release allocates DCP pack buffers on cuda:N whatever the device")
    device = ptrport_device.device
    gen = torch.Generator().manual_seed(9)

    def kv(slots):
        return torch.randn(slots * PAGE, ROW, generator=gen).bfloat16().to(device)

    src = [kv(SLOTS) for _ in range(LAYERS)]
    dst = {rank: [kv(SLOTS_DST) for _ in range(LAYERS)] for rank in range(DCP)}
    tensors = [*src, *dst[0], *dst[1]]
    place_in_a_row(tensors, where)
    before = {rank: [t.clone() for t in ts] for rank, ts in dst.items()}

    token_bytes = ROW * 2
    kv_args = SimpleNamespace(
        kv_data_ptrs=[t.data_ptr() for t in src],
        kv_data_lens=[_nbytes(t) for t in src],
        kv_item_lens=[PAGE * token_bytes] * LAYERS,
        page_size=PAGE,
        gpu_id=0,
        num_draft_entries=0,
        prefill_start_layer=0,
    )
    registered = []
    pack_buffers = dcp_pack.init_dcp_pack_buffers(
        lambda ptr, size: registered.append((ptr, size)),
        kv_args,
        1,
        DCP,
        64,
        device_type="xpu",
    )
    assert pack_buffers == [] and registered == [], "a DCP pack buffer was made on an XPU"
    pack_buffer = pack_buffers[0] if pack_buffers else None  # as the transfer worker picks it

    agent = nixl_agent(tensors)
    manager = object.__new__(conn.NixlKVManager)
    manager.kv_args = kv_args
    manager.agent = agent
    manager.src_mem_kind = "VRAM"
    manager.is_mla_backend = True
    packed_by_rank = {}
    for rank in range(DCP):
        dst_info = SimpleNamespace(
            dst_dcp_rank=rank,
            dst_dcp_size=DCP,
            dcp_token_item_lens=[token_bytes] * LAYERS,
            dst_kv_ptrs=[t.data_ptr() for t in dst[rank]],
            dcp_dst_region_indices=list(range(LAYERS)),
            gpu_id=0,
            dst_homogeneous_mem_kind="VRAM",
        )
        plan = build_dcp_token_transfer_plan(
            SRC_PAGES,
            DST_PAGES,
            physical_page_size=PAGE,
            dcp_size=DCP,
            dcp_rank=rank,
            num_kv_tokens=TOKENS,
        )
        packed = manager._pack_dcp_rank_once(
            pack_buffer, dst_info, plan.target_src_token_indices, packed_by_rank
        )
        assert packed is None
        assert manager.send_kvcache_dcp(f"decode{rank}", dst_info, plan, packed)

    assert agent.posted and all(op == "WRITE" for op, _ in agent.posted)
    for rank in range(DCP):
        # Token t of the chunk goes to DCP rank t % DCP, at local token t // DCP.
        tokens = np.arange(rank, TOKENS, DCP)
        src_rows = torch.from_numpy(SRC_PAGES[tokens // PAGE] * PAGE + tokens % PAGE).long()
        local = tokens // DCP
        dst_rows = torch.from_numpy(DST_PAGES[local // PAGE] * PAGE + local % PAGE).long()
        for layer, (got, old) in enumerate(zip(dst[rank], before[rank], strict=True)):
            expected = old.clone()
            expected[dst_rows] = src[layer][src_rows]
            assert not torch.equal(expected, old)
            assert torch.equal(got.cpu(), expected.cpu()), (
                f"decode DCP rank {rank} layer {layer} at {got.data_ptr():#x} does not hold "
                f"its tokens of the prefill buffer at {src[layer].data_ptr():#x}"
            )
