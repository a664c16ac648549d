# vLLM's HF3FS KV connector's per-layer KV cache pointer table at high device addresses: an
# open bug.
#
# ``HF3FSKVConnector.register_kv_caches`` (vllm/distributed/kv_transfer/kv_connector/v1/hf3fs/
# hf3fs_connector.py) runs ``_setup_kv_cache_config``, which records every layer's KV cache
# address in ``self._kvcache_ptrs = torch.tensor([cache.data_ptr() ...], dtype=torch.int64)``
# (:568-572 in 0.34.0). The connector's save and load paths hand that tensor to its Triton
# kernels (``kv_cache_gather_kernel`` / ``kv_cache_scatter_kernel`` in
# hf3fs/utils/gather_scatter_helper.py, through ``_gather_or_scatter_kv_caches``), which load
# each entry and cast it back to a pointer. Building the int64 tensor from an address >= 2**63
# raises before any kernel runs (the same line is in every release here, 0.23.0 to 0.34.0).
#
# The connector is vLLM's own class, built without its constructor (which reads a VllmConfig
# and installs signal handlers) and given the settings ``register_kv_caches`` reads; the
# engine's file-backed ``Hf3fsClient`` (what the module uses where ``hf3fs_fuse`` is missing)
# writes under ``tmp_path``. Two things are stood in: the metadata client (HTTP to a metadata
# server) and ``AsyncOperationManager`` (CUDA streams and background threads). The test then
# runs what a save and a load run on the device: the engine's gather of two blocks into the
# buffers of its own ``CopyBufferAllocator`` and its scatter of them into two other blocks,
# through ``_gather_or_scatter_kv_caches`` and the pointer table, and checks the bytes.
# ``at_2_63`` and ``at_top`` place the layers' caches with ``ptrport_device.place()``;
# ``presented`` leaves them where the backend presents them.

import numpy as np
import pytest
import torch
from vllm.distributed.kv_transfer.kv_connector.v1.hf3fs import hf3fs_connector
from vllm.distributed.kv_transfer.kv_connector.v1.hf3fs.utils.gather_scatter_helper import (
    CopyBufferAllocator,
)

pytestmark = pytest.mark.ptrport


LAYERS = 2
BLOCKS = 6
HEADS = 2
BLOCK_SIZE = 16
CONTENT = 32
DTYPE = torch.float16


class _MetadataClient:
    """Stands in for the HF3FS metadata client: no metadata server is reached."""

    def initialize(self, rank, num_pages=0, role="worker"):
        self.rank, self.num_pages = rank, num_pages


class _AsyncOperationManager:
    """Stands in for the connector's AsyncOperationManager (CUDA streams, worker threads)."""

    def __init__(self, connector):
        self.connector = connector

    def shutdown(self):
        pass


def _connector(tmp_path):
    connector = object.__new__(hf3fs_connector.HF3FSKVConnector)
    connector._storage_path = str(tmp_path)
    connector._numjobs = 1
    connector._max_device_buffer_count = 4
    page = LAYERS * HEADS * BLOCK_SIZE * CONTENT * DTYPE.itemsize
    connector._file_size = 8 * page
    return connector


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
        pytest.param(None, id="presented"),
    ],
)
def test_register_then_gather_and_scatter(
    ptrport_device, place_in_a_row, monkeypatch, tmp_path, where
):
    device = ptrport_device.device
    monkeypatch.setattr(hf3fs_connector, "get_tensor_model_parallel_rank", lambda: 0)
    monkeypatch.setattr(hf3fs_connector, "Hf3fsMetadataClient", _MetadataClient)
    monkeypatch.setattr(hf3fs_connector, "AsyncOperationManager", _AsyncOperationManager)
    gen = torch.Generator().manual_seed(5)
    # The per-layer [B, H, N, C] views the connector takes.
    caches = [
        torch.randn(BLOCKS, HEADS, BLOCK_SIZE, CONTENT, generator=gen).to(DTYPE).to(device)
        for _ in range(LAYERS)
    ]
    place_in_a_row(caches, where)
    before = [c.clone() for c in caches]

    connector = _connector(tmp_path)
    connector.register_kv_caches({f"model.layers.{i}.self_attn": c for i, c in enumerate(caches)})

    # The pointer table holds every layer's address (its 64 bits, whatever the dtype).
    table = connector._kvcache_ptrs.cpu().numpy().view(np.uint64).tolist()
    assert table == [c.data_ptr() for c in caches]
    assert isinstance(connector._async_manager, _AsyncOperationManager)

    # Save: gather blocks 1 and 4 of every layer into two page buffers.
    allocator = CopyBufferAllocator(
        device, DTYPE, connector._shape_per_page, connector._max_device_buffer_count
    )
    pages = allocator.alloc_buffer(2)
    connector._gather_or_scatter_kv_caches([1, 4], pages, "gather")
    for page, block in zip(pages, [1, 4], strict=True):
        expected = torch.stack([c[block] for c in before])
        assert torch.equal(page.cpu(), expected.cpu()), f"block {block} gathered wrong"

    # Load: scatter the two pages into blocks 2 and 5.
    connector._gather_or_scatter_kv_caches([2, 5], pages, "scatter")
    for layer, (got, old) in enumerate(zip(caches, before, strict=True)):
        expected = old.clone()
        expected[2], expected[5] = old[1], old[4]
        assert torch.equal(got.cpu(), expected.cpu()), (
            f"layer {layer} cache at {got.data_ptr():#x} does not hold the scattered blocks"
        )
