# vLLM's HiSparse slot invalidator at high device addresses: an open bug.
#
# When the host cache's slots are rewritten, HiSparse drops the hot (device) copies of those
# slots from every index group at once: ``HiSparseSlotInvalidator.__call__``
# (vllm/v1/hisparse/runtime.py:1058-1085 in 0.34.0) keys a table of the groups'
# ``device_global_indices`` base addresses by ``tuple(table.data_ptr() ...)`` and builds it with
# ``async_tensor_h2d(list(key), device, torch.int64)`` (:1068, :1073-1075), that is
# ``torch.tensor(addresses, dtype=torch.int64)``, then hands it to the native
# ``hisparse_invalidate_written_slots``, which reads every group's table through it. Building
# that tensor from an address >= 2**63 raises ``ValueError: Overflow when unpacking long long``
# before the kernel runs. The shipped release still has it, so every upper-half case is expected
# to fail. 0.30.0 has no such table (each runtime calls the op with its own tensor), 0.28.0 no
# HiSparse at all: this file runs on 0.34.0 only.
#
# The invalidator is the engine's own class, built with its own constructor. Its leaders are
# ``HiSparseRuntime`` objects, whose construction needs the platform's HiSparse backend (only
# CUDA names one), streams and pinned memory: they are SimpleNamespace stand-ins carrying only
# what ``__call__`` reads, ``index_group.device_global_indices`` (real tensors, as
# ``HiSparseIndexGroup`` allocates them) and ``cache_ops``. ``cache_ops`` is a stand-in of ours
# for the native ops, which would read the (placed) addresses: it records what it is handed and
# resolves every address of the group table to the index table that holds it. The test checks
# that the table names the groups' tables, in order, and that a second call reuses it.
#
# ``at_2_63`` places the index tables from 2**63 upwards, ``at_top`` down from the top of the
# address space (the last ending exactly at 2**64); ``presented`` leaves them to the backend.

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from vllm.v1.hisparse import runtime as hisparse_runtime

pytestmark = pytest.mark.ptrport

HiSparseSlotInvalidator = getattr(hisparse_runtime, "HiSparseSlotInvalidator", None)
if HiSparseSlotInvalidator is None:
    pytest.skip(
        "this release has no HiSparseSlotInvalidator (no group table of addresses)",
        allow_module_level=True,
    )


GROUPS = 3  # index groups, one leader each
MAX_NUM_REQS = 4
REGION_STRIDE = 8


class _CacheOps:
    """Stands in for the native HiSparse ops: records the invalidation it is asked for and
    resolves the group table's addresses to the index tables, without reading any."""

    def __init__(self, tables):
        self.tables = tables
        self.calls = []

    def hisparse_invalidate_written_slots(
        self, group_table, request_state_indices, req_id_per_token, written_slots,
        num_state_rows, region_stride,
    ):  # fmt: skip
        addresses = group_table.cpu().numpy().view(np.uint64).tolist()
        by_address = {t.data_ptr(): i for i, t in enumerate(self.tables)}
        missing = [f"{a:#x}" for a in addresses if a not in by_address]
        assert not missing, f"group table entries {missing} name no index table: " + ", ".join(
            f"{t.data_ptr():#x}" for t in self.tables
        )
        self.calls.append(
            SimpleNamespace(
                group_table=group_table,
                groups=[by_address[a] for a in addresses],
                request_state_indices=request_state_indices,
                req_id_per_token=req_id_per_token.tolist(),
                written_slots=written_slots.tolist(),
                num_state_rows=num_state_rows,
                region_stride=region_stride,
            )
        )


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(None, id="presented"),
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
    ],
)
def test_invalidate_written_slots_group_table(ptrport_device, place_in_a_row, where):
    device = ptrport_device.device
    # As HiSparseIndexGroup allocates them: one per group, -1 where no slot is hot.
    tables = [
        torch.full((MAX_NUM_REQS, REGION_STRIDE), -1, dtype=torch.int32, device=device)
        for _ in range(GROUPS)
    ]
    place_in_a_row(tables, where)

    request_state_indices = torch.tensor([2, 0, -1, 1], dtype=torch.int32, device=device)
    invalidator = HiSparseSlotInvalidator(request_state_indices)
    ops = _CacheOps(tables)
    leaders = [
        SimpleNamespace(index_group=SimpleNamespace(device_global_indices=table), cache_ops=ops)
        for table in tables
    ]
    written_slots = torch.tensor([17, 18, 40, 41, 99], dtype=torch.int64, device=device)
    req_id_per_token = torch.tensor([0, 0, 1, 1, 3], dtype=torch.int32, device=device)

    invalidator(leaders, written_slots, req_id_per_token[:4])
    invalidator(leaders, written_slots[:2], req_id_per_token)

    assert len(ops.calls) == 2
    first, second = ops.calls
    assert first.groups == list(range(GROUPS))
    assert first.group_table.dtype in (torch.int64, torch.uint64)
    assert second.group_table is first.group_table  # built once, then reused
    assert first.request_state_indices is request_state_indices
    assert first.written_slots == [17, 18, 40, 41] and first.req_id_per_token == [0, 0, 1, 1]
    assert second.written_slots == [17, 18] and second.req_id_per_token == [0, 0]
    assert (first.num_state_rows, first.region_stride) == (MAX_NUM_REQS, REGION_STRIDE)
