# LMCache's SGLang connector table of KV cache addresses at high device addresses.
#
# For SGLang, LMCache's ``CreateGPUConnector`` (lmcache/v1/gpu_connector/__init__.py) builds a
# connector whose ``_initialize_pointers`` (called first thing by ``to_gpu`` / ``from_gpu``)
# writes every key and value buffer's ``data_ptr()`` into the host tensor
# ``kv_cache_pointers`` through its numpy view; the native transfer kernels then read that
# table. Up to 0.4.7 every accelerator, Intel GPUs included, got ``SGLangGPUConnector``, whose
# table is int64: an address at or above 2**63 cannot be stored. From 0.5.0 (LMCache #3121,
# built on the XPU kernels of #2902) an Intel GPU gets ``SGLangXPUConnector``, whose table is
# uint64.
#
# Here LMCache's dispatch is told it runs on an Intel GPU (``torch_device_type`` = "xpu"), the
# buffers are real CPU tensors, placed at 2**63, across it and at the top of the 64-bit space
# with ``ptrport_device.place()`` (or as the backend presents them), and the test checks the
# addresses the table holds, read as uint64. On CPU memory the connector stops right after
# filling the table, at its check that the buffers live on the device (it would build the
# device copy of the table next): that assertion is expected here and nothing else is.
#
# No kernel reads the table on CPU: LMCache's own transfer kernels are native (CUDA / SYCL),
# and its pure-torch fallback turns table entries back into tensors with ctypes, which would
# dereference a presented address directly. So the check is on the table itself.
#
# Run (from this folder, with LMCache's venv):
#   CUDA_VISIBLE_DEVICES= python -m pytest -q -p no:cacheprovider \
#       --backend=cpu,cpu-usm,cpu-tbi,cpu-placed

import lmcache.v1.gpu_connector as gpu_connector
import numpy as np
import pytest
import torch
from lmcache.utils import EngineType
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.metadata import LMCacheMetadata

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63
GAP = 1 << 20

NUM_LAYERS = 3
CHUNK_SIZE = 16
NUM_HEADS = 2
HEAD_SIZE = 8
PAGE_TOKENS = 64  # tokens held by each layer's key (and value) buffer
DTYPE = torch.float16


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


def _addresses(where: str, buffers: list[torch.Tensor]) -> list[int]:
    """Where each buffer goes: from 2**63 up, across 2**63 (half below, half above), or
    packed below 2**64 with the last storage ending exactly there."""
    span = max(_nbytes(t) for t in buffers) // 64 * 64 + GAP
    if where == "2**63":
        return [AT_2_63 + i * span for i in range(len(buffers))]
    if where == "across":
        first = AT_2_63 - len(buffers) // 2 * span
        return [first + i * span for i in range(len(buffers))]
    last = (TOP - _nbytes(buffers[-1])) // 64 * 64
    return [last - (len(buffers) - 1 - i) * span for i in range(len(buffers))]


def _fill_table(connector, keys: list[torch.Tensor], values: list[torch.Tensor]) -> list[int]:
    """LMCache fills the table; its table read back as the uint64 addresses it holds."""
    table = connector.kv_cache_pointers
    try:
        connector._initialize_pointers([keys, values])
    except AssertionError as refused:
        # CPU memory: refused after the table was written, before the device copy is made.
        if "device should be" not in str(refused):
            raise
    return table.cpu().numpy().view(np.uint64).tolist()


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("across", id="across_2_63"),
        pytest.param("top", id="at_top"),
    ],
)
def test_table_of_placed_kv_caches(ptrport_device, connector, where):
    keys, values = _make_kv_caches(ptrport_device.device)
    buffers = keys + values
    placed = _addresses(where, buffers)
    for buffer, at in zip(buffers, placed, strict=True):
        ptrport_device.place(buffer, at=at)
    assert [t.data_ptr() for t in buffers] == placed
    if where == "top":
        assert placed[-1] + _nbytes(buffers[-1]) == TOP

    assert _fill_table(connector, keys, values) == placed


def test_table_of_presented_kv_caches(ptrport_device, connector):
    """Nothing placed: the addresses are the ones the backend presents (the CPU's own on
    ``cpu``, upper-half on ``cpu-usm`` and ``cpu-tbi``, drawn on ``cpu-placed``)."""
    keys, values = _make_kv_caches(ptrport_device.device)
    expected = [t.data_ptr() for t in keys + values]
    assert all(0 < address < TOP for address in expected)
    assert _fill_table(connector, keys, values) == expected
