# SGLang's NIXL slice-transfer descriptor lists at high device addresses.
#
# In prefill/decode disaggregation with a larger decode TP than prefill TP, the
# prefill rank sends each decode rank only its KV heads. ``NixlKVManager.
# _init_hetero_tp_prep_handle`` (sglang/srt/disaggregation/nixl/conn.py) turns the
# KV buffers' ``data_ptr()`` values into one (address, length, device) descriptor
# per (layer buffer, slot, token, head group), computed in numpy, and hands the
# arrays to NIXL; ``send_kvcache_slice`` then picks descriptor indices per page
# (``expand_page_indices_for_slice``) and asks NIXL to move those bytes.
#
# SGLang #27415: the slot/token/group index arrays there were ``np.int64``, and
# numpy promotes ``int64 * uint64`` to float64, so an address with bit 63 set lost
# its low bits (float64 holds 53). The fix made the index arrays ``np.uint64``.
# No published release carries the int64 lines (added after 0.5.12.post1, fixed
# before 0.5.13), so the ``int64_indices`` parameter restores them for the test's
# duration: ``np.arange(..., dtype=np.uint64)`` in that module gives int64 again.
#
# NIXL itself is not needed: the manager is SGLang's own class, built without its
# constructor (which starts a NIXL agent) and given the fields these methods read;
# its ``agent`` is a stand-in of ours that only records what it is handed. The test
# then carries out the recorded transfer by resolving every descriptor address to
# the real tensor holding it, and checks the decode buffers byte for byte.

import inspect
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sglang.srt.disaggregation.nixl import conn

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63

LAYERS = 2
PAGE = 4  # tokens per slot
HEADS = 2  # KV heads on the prefill rank (prefill TP 1)
DECODE_TP = 2  # one head per decode rank
HEAD_DIM = 24  # bf16: 48 bytes per head and token, not a multiple of 2048
SLOTS = 6
SLOTS_DST = 5


class _RecordingAgent:
    """Stands in for a NIXL agent: records descriptor lists and transfers."""

    def __init__(self):
        self.dlists = {}
        self.transfers = []

    def get_xfer_descs(self, descs, mem_kind):
        return np.asarray(descs)

    def prep_xfer_dlist(self, peer_name, descs, mem_kind):
        descs = np.asarray(descs)
        if descs.ndim == 2 and descs.shape[1] == 5:
            # Strided (addr, len, dev, stride, count) runs: as a NIXL without them,
            # so that SGLang expands one descriptor per block itself.
            raise TypeError("strided descriptors not supported")
        handle = f"dlist{len(self.dlists)}"
        self.dlists[handle] = descs
        return handle

    def make_prepped_xfer(self, op, src_handle, src_indices, dst_handle, dst_indices, *notif):
        self.transfers.append(
            (op, src_handle, np.asarray(src_indices), dst_handle, np.asarray(dst_indices))
        )
        return f"xfer{len(self.transfers)}"

    def transfer(self, handle):
        return "PROC"


class _Int64Arange:
    """numpy as the module saw it before SGLang #27415: index ranges asked for as
    uint64 come back as int64."""

    def __init__(self, module):
        self._np = module

    def __getattr__(self, name):
        return getattr(self._np, name)

    def arange(self, *args, dtype=None, **kwargs):
        if dtype is self._np.uint64:
            dtype = self._np.int64
        return self._np.arange(*args, dtype=dtype, **kwargs)


@pytest.fixture(params=["shipped", "int64_indices"])
def indices(request, monkeypatch):
    if request.param == "int64_indices":
        builder = inspect.getsource(conn.NixlKVManager._init_hetero_tp_prep_handle)
        if "np.arange(num_slots, dtype=np.uint64)" not in builder:
            pytest.skip("this release no longer has the index ranges SGLang #27415 changed")
        monkeypatch.setattr(conn, "np", _Int64Arange(np))
    return request.param


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _place(ptrport_device, tensors, where):
    if where == "2**63":
        at = AT_2_63
        for t in tensors:
            ptrport_device.place(t, at=at)
            at += (_nbytes(t) + 4096) // 64 * 64
    elif where == "top":
        below = TOP
        for t in reversed(tensors):
            at = (below - _nbytes(t)) // 64 * 64
            ptrport_device.place(t, at=at)
            below = at - 4096


class _Memory:
    """The registered tensors, looked up by address."""

    def __init__(self, tensors):
        self.regions = [(t.data_ptr(), _nbytes(t), t) for t in tensors]

    def bytes_at(self, address: int, length: int) -> torch.Tensor:
        for base, size, t in self.regions:
            if base <= address and address + length <= base + size:
                offset = address - base
                return t.view(-1).view(torch.uint8)[offset : offset + length]
        raise AssertionError(
            f"descriptor {address:#x}+{length} lies in no registered buffer: "
            + ", ".join(f"[{b:#x}, {b + s:#x})" for b, s, _ in self.regions)
        )


def _manager(src_k, src_v):
    manager = object.__new__(conn.NixlKVManager)
    kv = [*src_k, *src_v]
    manager.kv_args = SimpleNamespace(
        page_size=PAGE,
        total_kv_head_num=HEADS,
        kv_head_num=HEADS,
        engine_rank=0,
        gpu_id=0,
        prefill_start_layer=0,
        kv_data_ptrs=[t.data_ptr() for t in kv],
        kv_data_lens=[_nbytes(t) for t in kv],
        kv_item_lens=[_nbytes(t) // SLOTS for t in kv],
    )
    manager.attn_tp_size = 1
    manager.agent = _RecordingAgent()
    manager.prep_handle_slice_src = None
    manager.prep_handles_slice_dst = {}
    manager._use_strided_descs = True
    return manager


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
        pytest.param(None, id="as_allocated"),
    ],
)
def test_slice_transfer_to_two_decode_ranks(ptrport_device, indices, where):
    device = ptrport_device.device
    gen = torch.Generator().manual_seed(3)

    def kv(slots, heads):
        return torch.randn(slots, PAGE, heads, HEAD_DIM, generator=gen).bfloat16().to(device)

    src_k = [kv(SLOTS, HEADS) for _ in range(LAYERS)]
    src_v = [kv(SLOTS, HEADS) for _ in range(LAYERS)]
    dst = {rank: [kv(SLOTS_DST, 1) for _ in range(2 * LAYERS)] for rank in range(DECODE_TP)}
    tensors = [*src_k, *src_v, *dst[0], *dst[1]]
    _place(ptrport_device, tensors, where)
    before = {rank: [t.clone() for t in ts] for rank, ts in dst.items()}

    manager = _manager(src_k, src_v)
    send = manager.send_kvcache_slice
    notif = {"notif": "room"} if "notif" in inspect.signature(send).parameters else {}
    src_pages = np.array([1, 4], dtype=np.int32)
    dst_pages = np.array([3, 0], dtype=np.int32)
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
        send(peer, src_pages, dst_pages, **notif)

    # Carry out what was asked of NIXL, through the recorded descriptors.
    agent = manager.agent
    memory = _Memory(tensors)
    assert len(agent.transfers) == DECODE_TP
    for op, src_handle, src_idx, dst_handle, dst_idx in agent.transfers:
        assert op == "WRITE" and len(src_idx) == len(dst_idx) > 0
        src_descs, dst_descs = agent.dlists[src_handle], agent.dlists[dst_handle]
        for i, j in zip(src_idx.tolist(), dst_idx.tolist(), strict=True):
            (s_addr, s_len, _), (d_addr, d_len, _) = src_descs[i], dst_descs[j]
            assert int(s_len) == int(d_len)
            memory.bytes_at(int(d_addr), int(d_len)).copy_(memory.bytes_at(int(s_addr), int(s_len)))

    for rank in range(DECODE_TP):
        for layer, (got, old) in enumerate(zip(dst[rank], before[rank], strict=True)):
            source = (src_k + src_v)[layer]
            expected = old.clone()
            expected[torch.from_numpy(dst_pages).long()] = source[
                torch.from_numpy(src_pages).long(), :, rank : rank + 1
            ]
            assert torch.equal(got.cpu(), expected.cpu()), (
                f"decode rank {rank} buffer {layer} at {got.data_ptr():#x} does not hold "
                f"head {rank} of prefill buffer at {source.data_ptr():#x}"
            )
