# vLLM's Kimi-K3 KDA RecoverSSM commit context at high device addresses: an open bug.
#
# ``KDARecoverSSMCommitContext.create`` (vllm/models/kimi_k3/nvidia/ops/recoverssm.py) records
# the base address of every layer's conv state, recurrent-state checkpoint, correction cache and
# key-gate cache in tensors built with ``torch.tensor([...data_ptr()...], dtype=torch.int64)``,
# which the commit kernels (``_compact_conv_state_kernel``, ``_commit_kda_state_kernel``) turn
# back into pointers. Building such a tensor from an address >= 2**63 raises before any kernel
# runs. The shipped release still has it (vLLM #55730, open; reported on XPU as
# intel/intel-xpu-backend-for-triton#7789), so every instance here is expected to fail on the
# backends that hand out such addresses, until a release carries the fix.
#
# The layers are the objects the context reads (their KV cache, RecoverSSM records and gate
# parameters), with real tensors; ``presented`` leaves the addresses to the backend,
# ``at_2_63`` and ``at_top`` place the caches with ``ptrport_device.place()``. The test checks
# that the base-address columns hold the caches' addresses.

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from vllm.model_executor.layers.mamba.mamba_utils import is_conv_state_dim_first
from vllm.models.kimi_k3.nvidia.ops.recoverssm import (
    KDARecoverSSMCommitContext,
    KDARecoverSSMRecords,
)

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63

NUM_LAYERS = 2
NUM_BLOCKS = 8
MAX_NUM_REQS = 4
HEADS = 2
HEAD_DIM = 16
SPEC_QUERY_LEN = 3
CONV_STATE_LEN = 4
CONV_DIM = 3 * HEADS * HEAD_DIM
DTYPE = torch.float16


def _layer(device: torch.device) -> SimpleNamespace:
    if is_conv_state_dim_first():
        conv = torch.randn(NUM_BLOCKS, CONV_DIM, CONV_STATE_LEN, dtype=DTYPE, device=device)
    else:
        conv = torch.randn(NUM_BLOCKS, CONV_STATE_LEN, CONV_DIM, dtype=DTYPE, device=device)
    checkpoint = torch.randn(
        NUM_BLOCKS, HEADS, HEAD_DIM, HEAD_DIM, dtype=torch.float32, device=device
    )
    records = KDARecoverSSMRecords.allocate(
        MAX_NUM_REQS, HEADS, SPEC_QUERY_LEN, HEAD_DIM, DTYPE, device
    )
    return SimpleNamespace(
        kv_cache=[conv, checkpoint],
        recoverssm_records=records,
        A_log=torch.randn(HEADS, dtype=torch.float32, device=device),
        dt_bias=torch.randn(HEADS * HEAD_DIM, dtype=torch.float32, device=device),
        gate_lower_bound=-5.0,
        local_num_heads=HEADS,
        head_dim=HEAD_DIM,
    )


def _caches(layer: SimpleNamespace) -> list[torch.Tensor]:
    """The four tensors of a layer whose base addresses the context records."""
    conv, checkpoint = layer.kv_cache
    return [
        conv,
        checkpoint,
        layer.recoverssm_records.correction,
        layer.recoverssm_records.key_gate,
    ]


def _u64(column: torch.Tensor) -> list[int]:
    return column.cpu().numpy().view(np.uint64).tolist()


@pytest.mark.parametrize("where", ["presented", "at_2_63", "at_top"])
def test_commit_context_base_addresses(ptrport_device, where):
    device = ptrport_device.device
    torch.manual_seed(0)
    layers = [_layer(device) for _ in range(NUM_LAYERS)]
    if where != "presented":
        # Each layer's four caches one after another, 64 KiB apart: from 2**63 upwards, or
        # downwards from the top of the address space (the last one ending exactly at 2**64).
        below = TOP
        at = AT_2_63
        for cache in (c for layer in layers for c in _caches(layer)):
            if where == "at_2_63":
                ptrport_device.place(cache, at=at)
                at += (cache.untyped_storage().nbytes() + (1 << 16)) // 64 * 64
            else:
                below = (below - cache.untyped_storage().nbytes()) // 64 * 64
                ptrport_device.place(cache, at=below)
                below -= 1 << 16

    context = KDARecoverSSMCommitContext.create(
        layers, spec_query_len=SPEC_QUERY_LEN, max_num_reqs=MAX_NUM_REQS
    )

    columns = [
        context.conv_state_base_addrs,
        context.state_base_addrs,
        context.correction_cache_base_addrs,
        context.kg_cache_base_addrs,
    ]
    for kind, column in enumerate(columns):
        expected = [_caches(layer)[kind].data_ptr() for layer in layers]
        assert _u64(column) == expected
