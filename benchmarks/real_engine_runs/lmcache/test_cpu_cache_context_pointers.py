# LMCache's CPU cache context: its tables of KV cache addresses at high addresses. Open in 0.5.6.
#
# On a host without an accelerator, LMCache's multiprocess server serves an engine's KV cache
# from POSIX shared memory: the engine's side moves each layer's buffer into a segment
# (``migrate_to_shm_and_wrap``, the ``cpu`` wrapper factory), and the server maps the segment
# again (``to_tensor``) when ``create_cache_context`` builds the context for those wrappers:
# ``CPUCacheContext`` (0.5.6, lmcache/v1/platform/devices/cpu/cache_context.py) or
# ``CpuCacheContext`` (0.4.7, lmcache/v1/platform/cpu/cache_context.py). Its constructor
# records the address of every kernel group's layers (``group_kv_pointers_``, 0.5.6 :136-146,
# 0.4.7 :121-130) and of every layer (``kv_cache_pointers_``, 0.5.6 :148-150, 0.4.7 :138-140)
# with ``torch.tensor([... data_ptr() ...], dtype=torch.long)``, which raises for an address at
# or above 2**63 (``ValueError: Overflow when unpacking long long``); the context's transfer ops
# read these tables back as addresses. Both releases have it.
#
# Here the engine's buffers (vLLM's layout: one ``[2, blocks, block_size, heads, head_size]``
# tensor per layer) go through LMCache's own wrap, mapping and context; the server's mappings
# are placed at 2**63, across it and at the top of the 64-bit space with
# ``ptrport_device.place()`` as LMCache maps them (``to_tensor`` is wrapped for that, and does
# what it did), or left where the backend presents them. The test checks that the tables hold
# the mappings' addresses, read as uint64. Nothing reads through the tables: the CPU transfer
# ops turn their entries into tensors with ctypes, which would dereference a placed address.
#
# Latent on real hosts: the server's buffers are mmap'd POSIX shared memory, and no current OS
# maps that at or above 2**63 (Linux x86-64 and ARM64 user space ends below 2**48; Android's
# 0xb4 top-byte tag is on malloc'd heap pointers, not on mmap). ``cpu-tbi`` presents every CPU
# address tagged, mappings included: it shows what the code does with a tagged address, not that
# a real ARM64 host hands one to this path.
#
# Run (from this folder, with LMCache's venv, which needs msgspec, and cryptography for 0.5.6):
#   CUDA_VISIBLE_DEVICES= python -m pytest -q -p no:cacheprovider \
#       --backend=cpu,cpu-usm,cpu-tbi,cpu-placed

import contextlib
import importlib

import numpy as np
import pytest
import torch
from lmcache.utils import EngineType
from lmcache.v1.platform.cache_context import create_cache_context

try:  # 0.5.x
    from lmcache.v1.platform.devices.cpu.shm import CpuShmTensorWrapper, migrate_to_shm_and_wrap
except ImportError:  # 0.4.x
    from lmcache.v1.platform.cpu.shm import CpuShmTensorWrapper, migrate_to_shm_and_wrap

pytestmark = pytest.mark.ptrport

# Modules LMCache imports lazily on this path (the context's ``unwrap_kv_cache_tensors``, the
# wrapper factory's layout check), imported once here so that each check's process, forked from
# the warm one, does not import them again (about 0.6 s a check).
for _lazy in (
    "lmcache.v1.platform.devices.cuda.cache_context",  # 0.5.x
    "lmcache.v1.multiprocess.gpu_context",  # 0.4.x
    "lmcache.v1.gpu_connector.kv_format.contiguity",
):
    with contextlib.suppress(ImportError):
        importlib.import_module(_lazy)

TOP = 1 << 64
GAP = 1 << 20

NUM_LAYERS = 4
NUM_BLOCKS = 8
BLOCK_SIZE = 16
NUM_HEADS = 2
HEAD_SIZE = 8
CHUNK_TOKENS = 32  # LMCache's tokens per chunk
DTYPE = torch.float16


def _engine_kv_caches() -> list[torch.Tensor]:
    torch.manual_seed(0)
    shape = (2, NUM_BLOCKS, BLOCK_SIZE, NUM_HEADS, HEAD_SIZE)
    return [torch.randn(shape, dtype=DTYPE) for _ in range(NUM_LAYERS)]


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


@pytest.fixture
def mappings(monkeypatch):
    """The server's mappings of the engine's segments, in the order LMCache makes them; with
    ``place`` set to a list of addresses, each mapping is placed at the next one."""
    made: list[torch.Tensor] = []
    places: list[int] = []
    device = None
    to_tensor = CpuShmTensorWrapper.to_tensor

    def mapped(self):
        tensor = to_tensor(self)
        if places:
            device.place(tensor, at=places[len(made)])
        made.append(tensor)
        return tensor

    monkeypatch.setattr(CpuShmTensorWrapper, "to_tensor", mapped)

    class Mappings:
        tensors = made

        def place_at(self, ptrport_device, addresses: list[int]) -> None:
            nonlocal device
            device = ptrport_device
            places.extend(addresses)

    return Mappings()


def _u64(table: torch.Tensor) -> list[int]:
    return table.numpy().view(np.uint64).tolist()


def _check_tables(context, mapped: list[torch.Tensor]) -> None:
    addresses = [t.data_ptr() for t in mapped]
    assert len(addresses) == NUM_LAYERS
    manager = context.kv_layer_groups_manager
    groups = getattr(manager, "kernel_groups", None) or manager.kv_layer_groups
    assert len(groups) == 1  # one attention type: one group of all layers
    assert _u64(context.get_group_kv_pointers(0)) == addresses
    assert _u64(context.kv_pointers) == addresses


def _context(wrappers):
    return create_cache_context(
        wrappers, lmcache_tokens_per_chunk=CHUNK_TOKENS, engine_type=EngineType.VLLM
    )


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("across", id="across_2_63"),
        pytest.param("top", id="at_top"),
    ],
)
def test_tables_of_placed_mappings(ptrport_device, addresses_in_a_row, mappings, where):
    layers = _engine_kv_caches()  # the engine's, alive while the server maps them
    wrappers = [migrate_to_shm_and_wrap(layer) for layer in layers]
    # Page-aligned, as mmap returns them, the last ending exactly at 2**64 for "top".
    sizes = [_nbytes(layer) for layer in layers]
    placed = addresses_in_a_row(sizes, where, align=4096, gap=GAP)
    mappings.place_at(ptrport_device, placed)

    context = _context(wrappers)

    assert [t.data_ptr() for t in mappings.tensors] == placed
    if where == "top":
        assert placed[-1] + _nbytes(mappings.tensors[-1]) == TOP
    _check_tables(context, mappings.tensors)


def test_tables_of_presented_mappings(mappings):
    """Nothing placed: the mappings' addresses are the ones the backend presents (the CPU's own
    on ``cpu`` and ``cpu-placed``, upper-half on ``cpu-usm`` and ``cpu-tbi``)."""
    layers = _engine_kv_caches()  # the engine's, alive while the server maps them
    wrappers = [migrate_to_shm_and_wrap(layer) for layer in layers]

    context = _context(wrappers)

    _check_tables(context, mappings.tensors)
