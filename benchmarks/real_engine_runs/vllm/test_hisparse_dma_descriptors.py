# vLLM's HiSparse DMA descriptors at high device addresses: an open bug.
#
# HiSparse keeps a sparse attention's KV rows in a host cache and mirrors the rows the forward
# writes, and spills whole pages, from the resident (device) KV cache to it with one batched
# DMA: ``HiSparseConnectorWorker`` (vllm/distributed/kv_transfer/kv_connector/v1/hisparse/
# worker.py) fills descriptor tensors, source address, destination address and size per row
# span and layer, and hands them to ``swap_blocks_batch``, which copies those bytes. The
# descriptors are ``torch.int64`` tensors (``_allocate_dma_descriptors``, :71-72 in 0.34.0,
# :63-64 in 0.30.0) written through their numpy views with ``cache.data_ptr() + <np.int64
# offsets>``: the row mirror in ``_enqueue_row_dma`` (:689-697; 0.30.0 :672-680) and the page
# spill in ``_enqueue_transfers`` (:819-826; 0.30.0 :800-807). With numpy 2, a base address
# >= 2**63 plus an int64 array raises ``OverflowError: Python int too large to convert to C
# long`` before anything is stored; a base below 2**63 whose rows run past it wraps silently to
# the address's int64 bits, which the kernel reads back right (the ``straddling_2_63`` case).
# The shipped release still has it, so the upper-half cases are expected to fail.
#
# Built without its constructor: ``HiSparseConnectorWorker.__init__`` asks the platform for its
# HiSparse backend (only CUDA names one: "The current platform does not support HiSparse"
# here), and ``initialize()`` wants streams, IPC events, pinned host pools and fully bound cache
# handles. The worker is made with ``object.__new__`` and given the fields the DMA path reads,
# as vLLM's own tests/v1/worker/test_utils.py does; its cache handles are SimpleNamespace
# stand-ins carrying only the fields ``_init_dma`` reads (``view.cache``, ``slot_mapping``,
# ``runtime.host_cache``). The engine's own ``_init_dma`` then binds the caches and checks
# their layout, and the engine's own ``_set_row_mirrors``/``_enqueue_row_dma`` and
# ``_submit_transfers``/``_enqueue_transfers``/``_submit_dma_descriptors`` build and submit the
# descriptors. Streams and events are stand-ins (no driver here); so is the native DMA,
# ``vllm._custom_ops.swap_blocks_batch``, which would read the (placed) addresses: the stand-in
# records the descriptors, and the test carries the copies out by resolving every address to the
# tensor that holds it, then checks the host cache byte for byte.
#
# ``at_2_63`` places the resident caches from 2**63 upwards and the host caches at a low,
# host-like address (a device in the upper half, host memory where x86 puts it);
# ``host_at_2_63`` the other way round (the destination column alone: host memory handed out
# tagged or in the upper half, the device's low); ``at_top`` places both down from the top of
# the address space; ``straddling_2_63`` starts the first layer's resident cache just below
# 2**63, so that the rows the DMA moves lie above it (the other layer's cache below it, the host
# caches low); ``presented`` leaves every address to the backend.

import contextlib
import dataclasses
from collections import deque
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from vllm import _custom_ops
from vllm.distributed.kv_transfer.kv_connector.v1.hisparse import worker as hisparse_worker
from vllm.distributed.kv_transfer.kv_connector.v1.hisparse.worker import (
    HiSparseConnectorWorker,
)
from vllm.v1.hisparse.types import SparseKVPageTransfer, SparseKVRowMirror

try:  # 0.31.0 and later: the worker reaches the DMA through a platform backend
    from vllm.v1.hisparse.backend import CUDAHiSparseBackend
except ImportError:  # 0.30.0: it calls vllm._custom_ops directly
    CUDAHiSparseBackend = None

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63
HOST = 0x1000_0000_0000  # a host address, well inside x86's lower half
DEVICE_LOW = 0x2000_0000_0000  # a device address in the lower half, as CUDA's are

LAYERS = 2
BLOCK = 4  # rows per kernel block
RESIDENT_BLOCKS = 4
HOST_BLOCKS = 6
ROW = 16  # float16 elements per row: 32 bytes
DTYPE = torch.float16
GAP = 1 << 16


class _Stream:
    """Stands in for a device stream: ordering only, nothing to order here."""

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def synchronize(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Event:
    """Stands in for a device event: complete as soon as it is recorded."""

    def record(self, stream=None):
        pass

    def query(self):
        return True

    def synchronize(self):
        pass


@pytest.fixture
def dma_calls(monkeypatch):
    """The native batched DMA, recorded (its three descriptor tensors, cloned) not run."""
    calls = []

    def swap_blocks_batch(src, dst, sizes):
        calls.append((src.clone(), dst.clone(), sizes.clone()))

    monkeypatch.setattr(_custom_ops, "swap_blocks_batch", swap_blocks_batch)
    stream = _Stream()
    monkeypatch.setattr(torch.accelerator, "current_stream", lambda *a, **k: stream)
    monkeypatch.setattr(torch, "Event", lambda *a, **k: _Event())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext(s))
    # 0.30.0 reads the current stream through vllm.utils.torch_utils.current_stream.
    monkeypatch.setattr(hisparse_worker, "current_stream", lambda: stream, raising=False)
    return calls


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _upwards(ptrport_device, tensors, at):
    for t in tensors:
        ptrport_device.place(t, at=at)
        at += (_nbytes(t) + GAP) // 64 * 64


def _place(ptrport_device, resident, host, where):
    if where == "at_2_63":
        _upwards(ptrport_device, resident, AT_2_63)
        _upwards(ptrport_device, host, HOST)
    elif where == "host_at_2_63":
        _upwards(ptrport_device, resident, DEVICE_LOW)
        _upwards(ptrport_device, host, AT_2_63)
    elif where == "straddling_2_63":
        # The first cache's block 0 (its first 128 bytes) below 2**63, the rest above; the
        # other layer's cache below it.
        at = AT_2_63 - BLOCK * ROW * 2
        for t in resident:
            ptrport_device.place(t, at=at)
            at -= (_nbytes(t) + GAP) // 64 * 64
        _upwards(ptrport_device, host, HOST)
    elif where == "at_top":
        below = TOP
        for t in [*resident, *host]:
            below = (below - _nbytes(t)) // 64 * 64
            ptrport_device.place(t, at=below)
            below -= GAP


def _u64(t: torch.Tensor) -> list[int]:
    return t.numpy().view(np.uint64).tolist()


def _carry_out(calls, memory, where) -> list[tuple[int, int, int]]:
    """Do what the recorded DMA calls asked; the (src, dst, size) descriptors, unsigned."""
    done = []
    for src, dst, sizes in calls:
        assert src.dtype == dst.dtype and src.numel() == dst.numel() == sizes.numel()
        for s, d, n in zip(_u64(src), _u64(dst), _u64(sizes), strict=True):
            memory.bytes_at(d, n).copy_(memory.bytes_at(s, n))
            done.append((s, d, n))
    if where == "straddling_2_63":
        # What the case is about: a base below 2**63, rows moved from above it.
        assert any(b < AT_2_63 < b + size for b, size, _ in memory.regions)
        assert any(s >= AT_2_63 for s, _, _ in done)
    return done


def _worker(ptrport_device, where, *, eager_host_mirror=False):
    device = ptrport_device.device
    gen = torch.Generator().manual_seed(7)
    resident = [
        torch.randn(RESIDENT_BLOCKS, BLOCK, ROW, generator=gen).to(DTYPE).to(device)
        for _ in range(LAYERS)
    ]
    host = [torch.zeros(HOST_BLOCKS * BLOCK, ROW, dtype=DTYPE) for _ in range(LAYERS)]
    _place(ptrport_device, resident, host, where)

    worker = object.__new__(HiSparseConnectorWorker)
    if CUDAHiSparseBackend is not None:
        worker.backend = CUDAHiSparseBackend()
    worker.is_host_writer = True
    worker.kernel_block_size = BLOCK
    worker.cache_handles = [
        SimpleNamespace(
            view=SimpleNamespace(cache=cache),
            slot_mapping=torch.zeros(1, dtype=torch.int64),
            runtime=SimpleNamespace(
                host_cache=host_cache,
                resident_source_index=0,
                eager_host_mirror=eager_host_mirror,
            ),
        )
        for cache, host_cache in zip(resident, host, strict=True)
    ]
    worker._init_dma()
    assert worker.resident_caches[0] is resident[0] and worker.host_caches[0] is host[0]
    worker.dma_stream = _Stream()
    worker.host_write_event = _Event()
    worker._dma_free_descriptors = []
    worker._pending_dma_descriptors = deque()
    worker._pending_transfer_events = deque()
    worker._enqueued_transfer_ids = []
    worker._dma_submitted = False
    return worker, resident, host


def _transfer(transfer_id, host_block_id, resident_block_ids):
    """A page spilled after the forward (0.30.0 says so with ``after_forward``; later
    releases spill every transfer that is no restore after it)."""
    extra = {}
    if "after_forward" in {f.name for f in dataclasses.fields(SparseKVPageTransfer)}:
        extra["after_forward"] = True
    return SparseKVPageTransfer(transfer_id, host_block_id, resident_block_ids, **extra)


WHERE = ["presented", "at_2_63", "host_at_2_63", "straddling_2_63", "at_top"]


@pytest.mark.parametrize("where", WHERE)
def test_row_mirror_dma(ptrport_device, memory_of, dma_calls, where):
    """The forward's written rows, mirrored to the host cache (``_enqueue_row_dma``)."""
    worker, resident, host = _worker(ptrport_device, where)
    # Resident slots 5..7 (block 1, rows 1-3) to host rows 9..11; slot 12 (block 3, row 0)
    # to host row 20; slots 14..15 (block 3, rows 2-3) to host rows 2..3.
    mirrors = (
        SparseKVRowMirror((5,), 9, 3),
        SparseKVRowMirror((12,), 20, 1),
        SparseKVRowMirror((14,), 2, 2),
    )
    worker._set_row_mirrors(mirrors)
    worker._enqueue_row_dma(range(LAYERS))

    assert len(dma_calls) == 1 and worker._dma_submitted
    done = _carry_out(dma_calls, memory_of([*resident, *host]), where)
    row_bytes = ROW * resident[0].element_size()
    assert sorted(done) == sorted(
        (
            resident[layer].data_ptr() + m.source_starts[0] * row_bytes,
            host[layer].data_ptr() + m.destination_start * row_bytes,
            m.num_rows * row_bytes,
        )
        for layer in range(LAYERS)
        for m in mirrors
    )
    for layer in range(LAYERS):
        expected = torch.zeros_like(host[layer])
        flat = resident[layer].cpu().reshape(-1, ROW)
        for m in mirrors:
            start, dest, n = m.source_starts[0], m.destination_start, m.num_rows
            expected[dest : dest + n] = flat[start : start + n]
        assert torch.equal(host[layer], expected), (
            f"layer {layer}: host cache at {host[layer].data_ptr():#x} does not hold the rows "
            f"of the resident cache at {resident[layer].data_ptr():#x}"
        )


@pytest.mark.parametrize("where", WHERE)
def test_page_spill_dma(ptrport_device, memory_of, dma_calls, where):
    """Whole pages spilled to the host cache after the forward (``_submit_transfers``, lazy
    host mirror: ``_enqueue_transfers``)."""
    worker, resident, host = _worker(ptrport_device, where)
    # Transfer id, host block, resident block: the last resident blocks, above 2**63 in the
    # straddling case.
    transfers = [_transfer(7, 2, (1,)), _transfer(8, 5, (3,))]
    worker._submit_transfers(transfers)

    assert len(dma_calls) == 1
    assert worker._enqueued_transfer_ids == [7, 8]
    done = _carry_out(dma_calls, memory_of([*resident, *host]), where)
    page_bytes = BLOCK * ROW * resident[0].element_size()
    assert sorted(done) == sorted(
        (
            resident[layer].data_ptr() + t.resident_block_ids[0] * page_bytes,
            host[layer].data_ptr() + t.host_block_id * page_bytes,
            page_bytes,
        )
        for layer in range(LAYERS)
        for t in transfers
    )
    for layer in range(LAYERS):
        expected = torch.zeros_like(host[layer])
        for t in transfers:
            rows = slice(t.host_block_id * BLOCK, (t.host_block_id + 1) * BLOCK)
            expected[rows] = resident[layer][t.resident_block_ids[0]].cpu()
        assert torch.equal(host[layer], expected), (
            f"layer {layer}: host cache at {host[layer].data_ptr():#x} does not hold the pages "
            f"of the resident cache at {resident[layer].data_ptr():#x}"
        )
