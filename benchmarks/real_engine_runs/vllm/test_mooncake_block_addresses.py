# vLLM's Mooncake P/D connector: the transfer addresses a prefill worker computes for a decode
# worker's pull, at high device addresses.
#
# Each worker's ``register_kv_caches`` (vllm/distributed/kv_transfer/kv_connector/v1/mooncake/
# mooncake_connector.py) records its KV regions' base addresses (``data_ptr()``) and registers
# the memory with Mooncake's ``TransferEngine``. The decode worker (D) sends its layout and block
# ids to the prefill worker (P) over ZMQ (``receive_kv_from_single_worker``, a msgpack-encoded
# ``MooncakeXferMetadata``); P's ``send_kv_to_decode`` aligns the two layouts, builds one source
# and one destination address per run of blocks in ``_build_transfer_params`` and hands them to
# ``TransferEngine.batch_transfer_sync_write``.
#
# vLLM 0.34.0 builds those addresses in numpy: the block ids become ``np.int64`` arrays
# (:2157-2172) and the address is ``ids * block_len + (base_addr + offset)`` (:2223-2234), so a
# base address >= 2**63 does not fit the int64 arithmetic and numpy raises ``OverflowError``
# (the bug class of SGLang #27415, where int64 indices times uint64 bases gave float64). In
# production ``_sender_worker`` catches it and answers D with an error: every pull from a P whose
# KV cache lies in the upper half fails. 0.30.0 adds Python ints (``group_concurrent_contiguous``
# returns lists) and is right.
#
# Both workers are vLLM's own class, built without the constructor (which starts a
# TransferEngine, threads and a bootstrap server) and given the fields these methods read, as
# vLLM's own unit tests build them (``is_kv_consumer`` and ``is_kv_producer`` both set: no
# side-channel listener is started on registration). Stood in: Mooncake's ``TransferEngine``
# (``_TransferEngine`` records registrations and carries out each write by resolving both
# addresses to the registered tensors holding them, so no synthetic address is ever
# dereferenced) and the ZMQ socket between D and P (``_SideChannel``: D's request bytes go to
# P's decoder, P's answers to D's ``recv``). The test checks the descriptors, that D's blocks
# hold P's bytes and that D counts the pull as done. ``at_2_63`` and ``at_top`` place both
# workers' caches with ``ptrport_device.place()``, ``presented`` leaves them to the backend.

import asyncio
import queue
from collections import OrderedDict
from types import SimpleNamespace

import msgspec
import pytest
import torch
from vllm.distributed.kv_transfer.kv_connector.utils import TransferTopology
from vllm.distributed.kv_transfer.kv_connector.v1.mooncake import mooncake_connector as mc
from vllm.distributed.kv_transfer.kv_connector.v1.mooncake.stats import (
    MooncakeKVConnectorStats,
)
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec

pytestmark = pytest.mark.ptrport


LAYERS = 2
BLOCKS = 8
BLOCK_SIZE = 16
HEADS = 2
HEAD_DIM = 16
DTYPE = torch.float16
LAYER_NAMES = [f"model.layers.{i}.self_attn" for i in range(LAYERS)]

# P's blocks of the request and the D blocks they go to: a run of three, then one block.
P_BLOCKS = [1, 2, 3, 6]
D_BLOCKS = [2, 3, 4, 7]


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


class _TransferEngine:
    """Stands in for Mooncake's TransferEngine on both workers: records what is registered and
    written, and carries out each write through the registered tensors."""

    def __init__(self):
        self.registered = []
        self.writes = []
        self.memory = None

    def batch_register_memory(self, ptrs, lens):
        self.registered.extend(zip(ptrs, lens, strict=True))
        return 0

    def batch_transfer_sync_write(self, session, src_ptrs, dst_ptrs, lengths):
        self.writes.append((session, list(src_ptrs), list(dst_ptrs), list(lengths)))
        for src, dst, n in zip(src_ptrs, dst_ptrs, lengths, strict=True):
            assert all(isinstance(v, int) for v in (src, dst, n)), (src, dst, n)
            assert any(b <= src and src + n <= b + s for b, s in self.registered)
            assert any(b <= dst and dst + n <= b + s for b, s in self.registered)
            self.memory.bytes_at(dst, n).copy_(self.memory.bytes_at(src, n))
        return 0


class _SideChannel:
    """Stands in for ``make_zmq_socket`` and the DEALER socket D opens to P's side channel:
    what D sends waits in ``requests``, what P answers (``send_multipart``) goes to D's
    ``recv``."""

    def __init__(self):
        self.requests = asyncio.Queue()
        self.answers = asyncio.Queue()

    def __call__(self, ctx, path, socket_type, *args, **kwargs):
        self.path = path
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def setsockopt(self, *args):
        pass

    async def send(self, data):
        await self.requests.put(bytes(data))

    async def recv(self):
        return await self.answers.get()

    async def send_multipart(self, frames):
        _identity, payload = frames
        await self.answers.put(bytes(payload))


def _kv_cache_config() -> KVCacheConfig:
    spec = FullAttentionSpec(
        block_size=BLOCK_SIZE, num_kv_heads=HEADS, head_size=HEAD_DIM, dtype=DTYPE
    )
    return KVCacheConfig(
        num_blocks=BLOCKS,
        kv_cache_tensors=[],
        kv_cache_groups=[KVCacheGroupSpec(LAYER_NAMES, spec)],
    )


def _worker(name: str, port: int, engine: _TransferEngine) -> mc.MooncakeConnectorWorker:
    kv_cache_config = _kv_cache_config()
    worker = object.__new__(mc.MooncakeConnectorWorker)
    worker.engine = engine
    worker.engine_id = name
    worker.hostname = name
    worker.rpc_port = port
    worker.tp_rank, worker.tp_size, worker.pp_rank, worker.pp_size = 0, 1, 0, 1
    worker.is_kv_consumer = worker.is_kv_producer = True
    worker.async_zmq_ctx = SimpleNamespace(term=lambda: None)
    worker.use_mla = False
    worker.kv_cache_config = kv_cache_config
    worker._physical_blocks_per_logical_kv_block = 1
    worker._layer_specs = {
        layer: group.kv_cache_spec
        for group in kv_cache_config.transfer_groups
        for layer in group.layer_names
    }
    worker.transfer_topo = TransferTopology(
        tp_rank=0,
        tp_size=1,
        block_size=BLOCK_SIZE,
        engine_id=name,
        is_mla=False,
        is_mamba=False,
        total_num_kv_heads=HEADS,
        attn_backends=[],
    )
    worker._prepared_transfer_regions = {}
    worker._layout_by_peer = OrderedDict()
    worker._acked_layout_peers = set()
    worker._kv_layout_id = 0
    worker._kv_lease_duration = None
    worker.reqs_need_send = {}
    worker._expired_transfer_ids = OrderedDict()
    worker.finished_sending_reqs = set()
    worker.finished_recving_reqs = set()
    worker._invalid_block_ids = queue.Queue()
    worker._failed_recv_reqs = queue.Queue()
    worker._is_hma_required = False
    worker.xfer_stats = MooncakeKVConnectorStats()
    worker._encoder = msgspec.msgpack.Encoder()
    worker._xfer_meta_decoder = msgspec.msgpack.Decoder(mc.MooncakeXferMetadata)
    worker._xfer_resp_decoder = msgspec.msgpack.Decoder(mc.MooncakeXferResponse)
    worker._sender_executor = None  # the event loop's default executor
    return worker


async def _pull(p_worker, d_worker, channel, transfer_id, d_req_id):
    """D pulls the request's blocks from P, each running its own code on its side."""
    p_worker.sender_loop = asyncio.get_running_loop()
    # What P's scheduler side hands its worker: the request allocated, then finished.
    for block_ids in ([], [P_BLOCKS]):
        meta = mc.MooncakeConnectorMetadata()
        meta.add_new_req("p-req", block_ids, {"transfer_id": transfer_id}, load_remote_cache=False)
        await p_worker.record_send_reqs(meta)
    pull_metas = {
        d_req_id: mc.PullReqMeta(
            d_req_id=d_req_id,
            transfer_id=transfer_id,
            local_block_ids=[D_BLOCKS],
            remote_engine_id=p_worker.engine_id,
            remote_bootstrap_addr="http://p:8998",
            pull_tasks_count=1,
        )
    }
    d_task = asyncio.create_task(d_worker.receive_kv_from_single_worker("tcp://p:5555", pull_metas))
    try:
        request = await asyncio.wait_for(channel.requests.get(), 10)
        meta = p_worker._xfer_meta_decoder.decode(request)
        await p_worker.send_kv_to_decode(b"d-identity", channel, meta)
        await asyncio.wait_for(d_task, 10)
    finally:
        d_task.cancel()
    return meta


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
        pytest.param(None, id="presented"),
    ],
)
def test_decode_pulls_prefill_blocks(ptrport_device, place_in_a_row, memory_of, monkeypatch, where):
    device = ptrport_device.device
    gen = torch.Generator().manual_seed(11)

    def kv_cache():
        # Blocks first: [num_blocks, K/V, block_size, heads, head_dim], one page per block.
        shape = (BLOCKS, 2, BLOCK_SIZE, HEADS, HEAD_DIM)
        return torch.randn(shape, generator=gen).to(DTYPE).to(device)

    p_caches = [kv_cache() for _ in LAYER_NAMES]
    d_caches = [kv_cache() for _ in LAYER_NAMES]
    tensors = [*p_caches, *d_caches]
    place_in_a_row(tensors, where)
    p_before = [t.clone() for t in p_caches]
    d_before = [t.clone() for t in d_caches]

    engine = _TransferEngine()
    channel = _SideChannel()
    monkeypatch.setattr(mc, "make_zmq_socket", channel)
    p_worker = _worker("prefill", 5555, engine)
    d_worker = _worker("decode", 6666, engine)
    p_worker.register_kv_caches(dict(zip(LAYER_NAMES, p_caches, strict=True)))
    d_worker.register_kv_caches(dict(zip(LAYER_NAMES, d_caches, strict=True)))
    engine.memory = memory_of(tensors)
    assert engine.registered == [(t.data_ptr(), _nbytes(t)) for t in tensors]
    assert p_worker.kv_caches_base_addr == [t.data_ptr() for t in p_caches]

    meta = asyncio.run(_pull(p_worker, d_worker, channel, "xfer-1", "d-req"))

    # What D told P, through msgpack: its regions' addresses, unchanged.
    assert meta.kv_caches_base_addr == [t.data_ptr() for t in d_caches]
    # One write, one descriptor per run of blocks per layer.
    page = _nbytes(p_caches[0]) // BLOCKS
    assert len(engine.writes) == 1
    session, src, dst, lengths = engine.writes[0]
    assert session == "decode:6666"
    expected_src = [p.data_ptr() + b * page for p in p_caches for b in (P_BLOCKS[0], P_BLOCKS[3])]
    expected_dst = [d.data_ptr() + b * page for d in d_caches for b in (D_BLOCKS[0], D_BLOCKS[3])]
    assert src == expected_src, [f"{a:#x}" for a in src]
    assert dst == expected_dst, [f"{a:#x}" for a in dst]
    assert lengths == [3 * page, page] * LAYERS

    for layer, (got, old, source) in enumerate(zip(d_caches, d_before, p_before, strict=True)):
        expected = old.clone()
        expected[D_BLOCKS] = source[P_BLOCKS]
        assert torch.equal(got.cpu(), expected.cpu()), (
            f"D layer {layer} at {got.data_ptr():#x} does not hold P's blocks"
        )
    assert d_worker.finished_recving_reqs == {"d-req"}
    assert p_worker.finished_sending_reqs == {"p-req"}
