# LMCache's SGLang connector table of KV cache addresses at high device addresses.
#
# For SGLang, LMCache's ``CreateGPUConnector`` (lmcache/v1/gpu_connector/__init__.py) builds a
# connector whose ``_initialize_pointers`` (called first thing by ``from_gpu``, a store, and
# ``to_gpu``, a retrieve) writes every key and value buffer's ``data_ptr()`` into the host tensor
# ``kv_cache_pointers`` through its numpy view, checks that the buffers live on the device,
# copies the table there, and hands that copy to the native transfer kernel. Up to 0.4.7 every
# accelerator, Intel GPUs included, got ``SGLangGPUConnector``, whose table is int64 (an address
# at or above 2**63 cannot be stored: gpu_connectors.py:1482) and whose device check asks for
# CUDA (:1485), so SGLang on an Intel GPU failed there at any address. From 0.5.0 (LMCache
# #3121, built on the XPU kernels of #2902) an Intel GPU gets ``SGLangXPUConnector``, whose
# table is uint64 (xpu_connectors.py:1309) and whose device check asks for XPU (:1310).
#
# Here LMCache's dispatch is told it runs on an Intel GPU (``torch_device_type`` = "xpu"), the
# buffers are real CPU tensors, placed at 2**63, across it and at the top of the 64-bit space
# with ``ptrport_device.place()`` (or as the backend presents them), and each test makes one
# store and one retrieve of a chunk through the connector, as LMCache's cache engine does,
# checking after each the addresses the table holds, read as uint64.
#
# Where it stops: the device check. It asks whether the buffers are on the device, which is
# about the device, not about addresses: an Intel GPU's buffers pass it, CPU tensors cannot,
# and no torch build that runs here can make an XPU tensor or the table's XPU copy. So the
# request is expected to end at exactly one assertion: the one in ``_initialize_pointers``
# whose line checks ``device.type == "xpu"`` (0.5.6's, which the buffers of the scenario
# pass). Any other exception fails the test, 0.4.7's CUDA-only check included: an Intel GPU's
# buffers fail that one too. Not run, then: the table's device copy (uint64 to uint64, bit for
# bit) and the kernel that reads it. LMCache's transfer kernels are native (CUDA / SYCL), and
# its pure-torch fallback turns table entries back into tensors with ctypes, which would
# dereference a placed address.
#
# Run (from this folder, with LMCache's venv):
#   CUDA_VISIBLE_DEVICES= python -m pytest -q -p no:cacheprovider \
#       --backend=cpu,cpu-usm,cpu-tbi,cpu-placed

import traceback

import lmcache.v1.gpu_connector as gpu_connector
import numpy as np
import pytest
import torch
from lmcache.utils import EngineType
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.memory_management import MemoryFormat
from lmcache.v1.metadata import LMCacheMetadata

try:  # 0.5.x
    from lmcache.v1.memory_allocators.ad_hoc_memory_allocator import AdHocMemoryAllocator
except ImportError:  # 0.4.x
    from lmcache.v1.memory_management import AdHocMemoryAllocator

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
GAP = 1 << 20

NUM_LAYERS = 3
CHUNK_SIZE = 16
NUM_HEADS = 2
HEAD_SIZE = 8
PAGE_TOKENS = 64  # tokens held by each layer's key (and value) buffer
DTYPE = torch.float16

# The source line of the one assertion a request may end at: the connector's check that the
# KV buffers live on an Intel GPU (xpu_connectors.py:1310 in 0.5.6).
XPU_DEVICE_CHECK = 'device.type == "xpu"'


@pytest.fixture
def connector(monkeypatch):
    """The connector LMCache creates for SGLang on an Intel GPU, from an ordinary config
    (``enable_pd``: no intermediate device buffer, which CPU torch could not allocate)."""
    monkeypatch.setattr(gpu_connector, "torch_device_type", "xpu")
    config = LMCacheEngineConfig.from_defaults(chunk_size=CHUNK_SIZE, enable_pd=True)
    metadata = LMCacheMetadata(
        model_name="ptrport-model",
        world_size=1,
        local_world_size=1,
        worker_id=0,
        local_worker_id=0,
        kv_dtype=DTYPE,
        kv_shape=(NUM_LAYERS, 2, CHUNK_SIZE, NUM_HEADS, HEAD_SIZE),
    )
    made = gpu_connector.CreateGPUConnector(config, metadata, EngineType.SGLANG)
    assert made.kv_cache_pointers.numel() == 2 * NUM_LAYERS
    return made


@pytest.fixture
def chunk(connector):
    """One chunk in LMCache's host format for the connector (KV_2LTD), from LMCache's own
    allocator; invalidated afterwards so that nothing frees it twice."""
    allocator = AdHocMemoryAllocator(device="cpu")
    made = allocator.allocate(connector.get_shape(CHUNK_SIZE), DTYPE, fmt=MemoryFormat.KV_2LTD)
    yield made
    made.invalidate()


def _make_kv_caches(device: torch.device) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """SGLang's MHA layout: a list of per-layer key buffers and one of value buffers, each
    ``[tokens, heads, head_size]``."""
    torch.manual_seed(0)
    shape = (PAGE_TOKENS, NUM_HEADS, HEAD_SIZE)
    keys = [torch.randn(shape, dtype=DTYPE, device=device) for _ in range(NUM_LAYERS)]
    values = [torch.randn(shape, dtype=DTYPE, device=device) for _ in range(NUM_LAYERS)]
    return keys, values


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _up_to_the_device_check(request) -> None:
    """Runs ``request`` (a store or a retrieve on the connector), which must end at the
    connector's XPU device check and nowhere else (see the header)."""
    try:
        request()
    except AssertionError as refused:
        where = traceback.extract_tb(refused.__traceback__)[-1]
        if where.name != "_initialize_pointers" or XPU_DEVICE_CHECK not in (where.line or ""):
            raise
    else:
        pytest.fail("the connector went past its XPU device check with CPU buffers")


def _table(connector) -> list[int]:
    return connector.kv_cache_pointers.cpu().numpy().view(np.uint64).tolist()


def _store_and_retrieve(connector, chunk, keys, values, expected: list[int]) -> None:
    """A store of the chunk's tokens (``from_gpu``), then their retrieve (``to_gpu``), as
    LMCache's cache engine calls them; after each, the table holds every buffer's address."""
    request = {"kvcaches": [keys, values], "slot_mapping": torch.arange(CHUNK_SIZE)}
    for direction in (connector.from_gpu, connector.to_gpu):
        connector.kv_cache_pointers.zero_()
        _up_to_the_device_check(lambda d=direction: d(chunk, 0, CHUNK_SIZE, **request))
        assert _table(connector) == expected


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("across", id="across_2_63"),
        pytest.param("top", id="at_top"),
    ],
)
def test_table_of_placed_kv_caches(ptrport_device, addresses_in_a_row, connector, chunk, where):
    keys, values = _make_kv_caches(ptrport_device.device)
    buffers = keys + values
    placed = addresses_in_a_row([_nbytes(t) for t in buffers], where, gap=GAP)
    for buffer, at in zip(buffers, placed, strict=True):
        ptrport_device.place(buffer, at=at)
    assert [t.data_ptr() for t in buffers] == placed
    if where == "top":
        assert placed[-1] + _nbytes(buffers[-1]) == TOP

    _store_and_retrieve(connector, chunk, keys, values, placed)


def test_table_of_presented_kv_caches(ptrport_device, connector, chunk):
    """Nothing placed: the addresses are the ones the backend presents (the CPU's own on
    ``cpu`` and ``cpu-placed``, upper-half on ``cpu-usm`` and ``cpu-tbi``)."""
    keys, values = _make_kv_caches(ptrport_device.device)
    expected = [t.data_ptr() for t in keys + values]
    assert all(0 < address < TOP for address in expected)
    _store_and_retrieve(connector, chunk, keys, values, expected)
