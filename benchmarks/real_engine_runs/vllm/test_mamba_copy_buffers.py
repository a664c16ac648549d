# vLLM's Mamba copy buffers (align-mode prefix caching) at high device addresses.
#
# ``collect_mamba_copy_meta`` (vllm/v1/worker/mamba_utils.py) writes, for every Mamba state of
# every layer, the source address (``MambaCopySpec.start_addr``), the destination address
# (``state[block].data_ptr()``) and the byte count into the numpy views of the
# ``MambaCopyBuffers`` (``CpuGpuBuffer``s); ``do_mamba_copy_block`` copies the filled prefix to
# the device and launches the Triton ``batch_memcpy_kernel`` through ``batch_memcpy``, which casts
# each table entry back to a pointer.
#
# Here the state tensors are presented at 2**63 and at the very top of the 64-bit space with
# ``ptrport_device.place()``, the engine's own functions fill the tables and launch the kernel,
# and the test checks the addresses in the tables and the bytes that landed in the placed states.
# Releases whose pointer columns are ``torch.int64`` (numpy int64 views) fail on storing an
# address >= 2**63; releases with ``torch.uint64`` columns pass (vLLM #44665).

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import vllm.model_executor.layers.mamba.mamba_utils as layer_mamba_utils
from vllm.model_executor.layers.mamba.mamba_utils import (
    get_conv_copy_spec,
    get_temporal_copy_spec,
    is_conv_state_dim_first,
)
from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
from vllm.v1.kv_cache_interface import KVCacheConfig, KVCacheGroupSpec, MambaSpec
from vllm.v1.utils import CpuGpuBuffer
from vllm.v1.worker.mamba_utils import (
    MambaCopyBuffers,
    collect_mamba_copy_meta,
    do_mamba_copy_block,
)

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63

BLOCK_SIZE = 16
NUM_BLOCKS = 24
MAX_NUM_REQS = 4
CONV_WIDTH = 4
CONV_DIM = 64
TEMPORAL_DIM = 128
DTYPE = torch.float16

# Per request: its block ids, the source and destination block columns, the accepted-token bias
# (number of accepted tokens - 1).
REQUESTS = [
    ([1, 2, 3, 4], 0, 1, 0),  # plain migration to the next block
    ([5, 6, 7, 8], 0, 2, 1),  # conv window shifted by one token, temporal state from column 1
    ([9, 10, 11, 12], 1, 3, 2),  # shifted by two tokens, temporal state from column 3
]


def _copy_funcs():
    """The engine's copy functions for a Mamba2 layer, in the shape this release takes them."""
    funcs = (get_conv_copy_spec, get_temporal_copy_spec)
    if hasattr(layer_mamba_utils, "MambaStateCopyFuncsByType"):
        return {MambaAttentionBackendEnum.MAMBA2: funcs}
    return funcs


def _kv_cache_config() -> KVCacheConfig:
    spec = MambaSpec(
        block_size=BLOCK_SIZE,
        shapes=((CONV_WIDTH, CONV_DIM), (TEMPORAL_DIM,)),
        dtypes=(DTYPE, DTYPE),
        mamba_type=MambaAttentionBackendEnum.MAMBA2,
        mamba_cache_mode="align",
    )
    group = KVCacheGroupSpec(layer_names=["layer_0"], kv_cache_spec=spec)
    return KVCacheConfig(num_blocks=NUM_BLOCKS, kv_cache_tensors=[], kv_cache_groups=[group])


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _top_address(t: torch.Tensor, *, below: int = TOP) -> int:
    """The highest multiple of 64 at which ``t``'s storage ends at or below ``below``."""
    return (below - _nbytes(t)) // 64 * 64


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
        pytest.param("straddle", id="straddling_2_63"),
    ],
)
def test_copy_blocks_placed_states(ptrport_device, where):
    device = ptrport_device.device
    assert not is_conv_state_dim_first()
    torch.manual_seed(0)
    conv = torch.randn(NUM_BLOCKS, CONV_WIDTH, CONV_DIM, dtype=DTYPE, device=device)
    temporal = torch.randn(NUM_BLOCKS, TEMPORAL_DIM, dtype=DTYPE, device=device)
    if where == "2**63":
        conv_at, temporal_at = AT_2_63, AT_2_63 + (1 << 20)
    elif where == "top":
        # The temporal state's storage ends exactly at 2**64, the conv state's just below it.
        temporal_at = _top_address(temporal)
        conv_at = _top_address(conv, below=temporal_at - 4096)
    else:
        # The conv state's first half lies below 2**63, its second half above.
        conv_at = AT_2_63 - _nbytes(conv) // 2 // 64 * 64
        temporal_at = AT_2_63 + (1 << 16)
    ptrport_device.place(conv, at=conv_at)
    ptrport_device.place(temporal, at=temporal_at)
    assert (conv.data_ptr(), temporal.data_ptr()) == (conv_at, temporal_at)
    conv_before, temporal_before = conv.clone(), temporal.clone()

    kv_cache_config = _kv_cache_config()
    copy_funcs = _copy_funcs()

    def make_buffer(*size, dtype):
        return CpuGpuBuffer(*size, dtype=dtype, device=device, pin_memory=False)

    bufs = MambaCopyBuffers.create(MAX_NUM_REQS, kv_cache_config, copy_funcs, make_buffer)
    forward_context = {"layer_0": SimpleNamespace(kv_cache=[conv, temporal])}

    # What the tables must hold afterwards, and what the copies must do to the states.
    expected_src, expected_dst, expected_sizes = [], [], []
    conv_exp, temporal_exp = conv_before.clone(), temporal_before.clone()
    row_bytes = CONV_DIM * conv.element_size()
    conv_block = CONV_WIDTH * row_bytes
    temporal_block = TEMPORAL_DIM * temporal.element_size()
    bufs.offset = 0
    for block_ids, src_col, dst_col, bias in REQUESTS:
        collect_mamba_copy_meta(
            bufs,
            kv_cache_config,
            copy_funcs,
            bufs.mamba_group_ids,
            src_col,
            dst_col,
            bias,
            SimpleNamespace(block_ids=[block_ids]),
            forward_context,
        )
        src, dst = block_ids[src_col], block_ids[dst_col]
        temporal_src = block_ids[src_col + bias]
        expected_src += [conv_at + src * conv_block + bias * row_bytes]
        expected_src += [temporal_at + temporal_src * temporal_block]
        expected_dst += [conv_at + dst * conv_block, temporal_at + dst * temporal_block]
        expected_sizes += [(CONV_WIDTH - bias) * row_bytes, temporal_block]
        conv_exp[dst, : CONV_WIDTH - bias] = conv_before[src, bias:]
        temporal_exp[dst] = temporal_before[temporal_src]

    n = bufs.offset
    assert n == 2 * len(REQUESTS)
    assert bufs.src_ptrs.np[:n].view(np.uint64).tolist() == expected_src
    assert bufs.dst_ptrs.np[:n].view(np.uint64).tolist() == expected_dst
    assert bufs.sizes.np[:n].tolist() == expected_sizes

    do_mamba_copy_block(bufs)

    assert not torch.equal(conv_exp, conv_before)
    assert torch.equal(conv.cpu(), conv_exp)
    assert torch.equal(temporal.cpu(), temporal_exp)
