# LMCache's CacheBlend retrieve plan at high device addresses: safe in 0.5.6, as it is not reached.
#
# In LMCache's multiprocess server a CacheBlend retrieve (the blend module's ``RetrieveMixin``,
# lmcache/v1/multiprocess/modules/blend/retrieve.py) plans the whole request as numpy tables for
# one native call. ``_build_cb_retrieve_plan_flat`` puts the host objects' addresses in
# ``src = np.array([[o.data_ptr ...]], dtype=np.int64)`` (:384-386) and the device staging
# slots' in ``obj_buf_ptrs = np.asarray([[buf.data_ptr() ...]], dtype=np.int64)`` (:470-473),
# stacked into the ``staging`` table (dest, src, nbytes, host offset): either raises
# ``OverflowError`` for an address at or above 2**63.
#
# No device that hands out such addresses reaches those lines in 0.5.6: the planner returns
# None first (:345) unless the device ops have the native ``execute_cb_retrieve_plan_flat``
# (:96), which only ``lmcache.cuda_ops`` binds (CUDA addresses are below 2**48). An Intel GPU's
# ``XpuDeviceOps`` binds ``lmcache.xpu_ops``, whose bindings (csrc/sycl/pybind_sycl.cpp) have no
# such op, and 0.5.6 has no multiprocess cache context for an XPU at all (``XpuDeviceSpec``
# keeps the base ``create_cache_context``, which raises ``NotImplementedError``); the CPU's
# device ops have none either. The retrieve then fails and the client recomputes. 0.4.7 has no
# such plan (its blend module is ``blend_v3``): skipped there.
#
# ``test_staging_table`` runs the planner as the release ships it with a request's inputs:
# CacheBlend matches (``CBMatchResult``) and their host objects (``TensorMemoryObj`` of a
# ``LazyMemoryAllocator``, the type the planner requires; its pinning needs a device, so the
# allocator is never initialised, and the objects are ordinary host tensors), and the
# request-invariant half of the plan, which the planner resolves once per cache context and
# caches (``_cb_plan_invariants``): the group specs, which stand in for the native
# ``CBGroupSpec`` with the two fields the planner writes, and the device staging slots, slices
# of one pool placed at 2**63, across it and at the top (or where the backend presents it).
# Where the release's device ops have the native plan, it checks the staging table's dest and
# src columns, read as uint64; where they do not (0.5.6 here), that the planner declines.
# Nothing runs the plan. ``test_no_plan_on_an_intel_gpu`` checks the release's Intel GPU side:
# no native plan op on ``XpuDeviceOps`` (without ``lmcache.xpu_ops``, which cannot be built
# here), no cache context for ``xpu``.
#
# Run (from this folder, with LMCache's venv, which needs msgspec, pydantic and
# opentelemetry-api):
#   CUDA_VISIBLE_DEVICES= python -m pytest -q -p no:cacheprovider \
#       --backend=cpu,cpu-usm,cpu-tbi,cpu-placed

import importlib
import weakref
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from lmcache.v1.memory_management import MemoryObjMetadata, TensorMemoryObj

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63

MAX_BATCH = 4  # staging slots (two waves of two)
READ_GROUPS = 2  # object groups read per chunk
GROUP_BYTES = (4096, 2048)  # each read group's bytes per slot
CHUNK_TOKENS = 16
CHUNKS = 5  # matched chunks: two runs, of three and two
BLOCK_SIZE = 16


@pytest.fixture(scope="module")
def retrieve():
    """The planner's module; the test skips where the release has none (0.4.7), and fails where
    it has one that does not import (a package missing here is no skip)."""
    name = "lmcache.v1.multiprocess.modules.blend.retrieve"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as missing:
        if missing.name is None or not name.startswith(missing.name):
            raise
        pytest.skip("no native CacheBlend retrieve plan in this release")


class _Context:
    """What the planner asks of the cache context once its invariants are cached: a key for its
    per-context caches and the device of the slot-mapping staging."""

    device = torch.device("cpu")


def _slot_pool() -> tuple[torch.Tensor, int]:
    """One device pool of ``MAX_BATCH`` slots, each holding every read group, as LMCache lays
    out its private staging pool; and its slot stride."""
    stride = (sum(GROUP_BYTES) + 255) & ~255
    return torch.zeros(MAX_BATCH * stride, dtype=torch.uint8), stride


def _pool_address(where: str, nbytes: int) -> int | None:
    if where == "2**63":
        return AT_2_63
    if where == "across":  # two slots below 2**63, two above
        return AT_2_63 - nbytes // 2
    if where == "top":
        return TOP - nbytes
    return None


@pytest.fixture
def host_objects(retrieve):
    """Each chunk's host objects, one per read group, in one host pool; invalidated afterwards
    so that nothing frees them through the never initialised allocator."""
    allocator = retrieve.LazyMemoryAllocator.__new__(retrieve.LazyMemoryAllocator)
    per_chunk = sum(GROUP_BYTES)
    pool = torch.zeros(CHUNKS * per_chunk, dtype=torch.uint8)
    made = []
    for chunk in range(CHUNKS):
        objs, offset = [], chunk * per_chunk
        for nbytes in GROUP_BYTES:
            meta = MemoryObjMetadata(
                shape=torch.Size([nbytes]),
                dtype=torch.uint8,
                address=offset,
                phy_size=nbytes,
                ref_count=1,
            )
            objs.append(TensorMemoryObj(pool[offset : offset + nbytes], meta, allocator))
            offset += nbytes
        made.append(objs)
    yield made
    for objs in made:
        for obj in objs:
            obj.invalidate()


def _planner(retrieve):
    """The blend module's retrieve half, with the per-context state the module gives it."""
    planner = retrieve.RetrieveMixin()
    planner._cb_plan_invariants = weakref.WeakKeyDictionary()
    planner._cb_slot_staging = weakref.WeakKeyDictionary()
    planner._cb_plan_done_events = weakref.WeakKeyDictionary()
    return planner


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("across", id="across_2_63"),
        pytest.param("top", id="at_top"),
        pytest.param("presented", id="presented"),
    ],
)
def test_staging_table(ptrport_device, retrieve, host_objects, where):
    from lmcache.v1.multiprocess.custom_types import CBMatchResult

    pool, stride = _slot_pool()
    at = _pool_address(where, pool.untyped_storage().nbytes())
    if at is not None:
        ptrport_device.place(pool, at=at)
    offsets = np.cumsum((0, *GROUP_BYTES))
    slots = [
        [pool[s * stride + offsets[g] : s * stride + offsets[g + 1]] for g in range(READ_GROUPS)]
        for s in range(MAX_BATCH)
    ]
    specs = [SimpleNamespace(slot_mapping_base=0, slot_mapping_capacity=0)]
    rope_state = SimpleNamespace(cos_sin_caches=[])  # NoPE: staging and scatter only
    context = _Context()
    planner = _planner(retrieve)
    planner._cb_plan_invariants[context] = (rope_state, MAX_BATCH, (specs, slots, GROUP_BYTES))

    # Matches at tokens 0..48 and 64..96 of the query, shifted from where they were stored.
    starts = [0, 16, 32, 64, 80]
    matches = [
        CBMatchResult(old_st=s + 128, old_ed=s + 144, cur_st=s, cur_ed=s + 16, hash=b"%d" % i)
        for i, s in enumerate(starts)
    ]
    pairs = list(zip(matches, host_objects, strict=True))
    runs = [pairs[:3], pairs[3:]]
    block_ids = np.arange(8, dtype=np.int64)
    cpu_block_tables = [(block_ids, BLOCK_SIZE)]

    plan = planner._build_cb_retrieve_plan_flat(
        context, rope_state, cpu_block_tables, runs, MAX_BATCH
    )

    if not retrieve._HAS_NATIVE_RETRIEVE_PLAN:
        assert plan is None  # declined before reading an address: the retrieve fails
        return
    _, (staging, _, _, _), _ = plan
    rows = np.asarray(staging)
    assert rows.shape == (CHUNKS * READ_GROUPS, 4)
    dest = rows[:, 0].view(np.uint64).tolist()
    src = rows[:, 1].view(np.uint64).tolist()
    for row, (d, s) in enumerate(zip(dest, src, strict=True)):
        chunk, group = divmod(row, READ_GROUPS)
        assert s == host_objects[chunk][group].data_ptr
        assert d in {slot[group].data_ptr() for slot in slots}


def test_no_plan_on_an_intel_gpu(retrieve):
    from lmcache.v1.platform import get_device_spec
    from lmcache.v1.platform.devices.xpu.device_ops import XpuDeviceOps

    ops = XpuDeviceOps()
    ops.ensure_native()  # binds lmcache.xpu_ops where it is built; not here
    assert not hasattr(ops, "execute_cb_retrieve_plan_flat")
    with pytest.raises(NotImplementedError):
        get_device_spec("xpu").create_cache_context([])
