# vLLM's ``MambaSpecDecodeGPUContext`` (align-mode prefix caching with speculative decoding)
# at high device addresses.
#
# The context (vllm/v1/worker/mamba_utils.py) records every Mamba state tensor's ``data_ptr()``
# and each group's block-table ``data_ptr()`` in int64 metadata tensors; its fused Triton kernels
# (``precopy_mamba_align_fused_kernel`` and ``postprocess_mamba_fused_kernel``, both copying
# through ``_copy_mamba_state_block``) turn those values back into pointers. Releases from
# vLLM #48109 on (0.30.0 here) store each address through ``_reinterpret_u64_as_i64`` (the same
# 64 bits as a signed value); earlier ones assign the raw ``data_ptr()`` into the int64 tensor,
# which overflows for an address >= 2**63 (vLLM #48059): 0.28.0, the first release here with the
# V2 entry points ``run_fused_precopy`` / ``run_fused_postprocess_align``, at
# ``initialize_from_forward_context`` (mamba_utils.py:783 for the states, :871 for the block
# tables). 0.23.0 has neither entry point, so these tests do not apply to it.
#
# vLLM's own unit tests check the metadata with a wrapper whose ``data_ptr()`` returns a fake
# high address, so no kernel ever runs there. Here ``ptrport_device.place()`` presents real
# tensors at 2**63 and at the top of the 64-bit space, the real context is built through
# ``create`` + ``initialize_from_forward_context``, the real kernels are launched through
# ``run_fused_precopy`` / ``run_fused_postprocess_align``, and the test checks the bytes that
# landed at the placed addresses.

import inspect
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
import torch
import vllm.model_executor.layers.mamba.mamba_utils as layer_mamba_utils
import vllm.v1.worker.mamba_utils as worker_mamba_utils
from vllm.model_executor.layers.mamba.mamba_utils import (
    get_conv_copy_spec,
    get_temporal_copy_spec,
    is_conv_state_dim_first,
)
from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum
from vllm.v1.kv_cache_interface import KVCacheConfig, KVCacheGroupSpec, MambaSpec
from vllm.v1.utils import CpuGpuBuffer
from vllm.v1.worker.mamba_utils import MambaSpecDecodeGPUContext

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63


def _copy_funcs():
    """The engine's copy functions for a Mamba2 layer, in the shape this release takes them: a
    mapping by Mamba type where the release has one, else the plain tuple."""
    funcs = (get_conv_copy_spec, get_temporal_copy_spec)
    if hasattr(layer_mamba_utils, "MambaStateCopyFuncsByType"):
        return {MambaAttentionBackendEnum.MAMBA2: funcs}
    return funcs


@dataclass
class _TestConfig:
    block_size: int = 16
    num_blocks: int = 24
    max_num_reqs: int = 8
    max_blocks_per_req: int = 4
    # Conv state: [num_blocks, conv_width, conv_inner_dim] (SD layout)
    conv_width: int = 4
    conv_inner_dim: int = 64
    # Temporal state: [num_blocks, temporal_state_dim]
    temporal_state_dim: int = 128
    dtype: torch.dtype = torch.float16


CFG = _TestConfig()


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _top_address(t: torch.Tensor, *, below: int = TOP) -> int:
    """The highest multiple of 64 at which ``t``'s storage ends at or below ``below``."""
    return (below - _nbytes(t)) // 64 * 64


def _make_kv_cache_config(cfg: _TestConfig, layer_names: list[str]) -> KVCacheConfig:
    spec = MambaSpec(
        block_size=cfg.block_size,
        shapes=((cfg.conv_width, cfg.conv_inner_dim), (cfg.temporal_state_dim,)),
        dtypes=(cfg.dtype, cfg.dtype),
        mamba_type=MambaAttentionBackendEnum.MAMBA2,
        mamba_cache_mode="align",
    )
    group = KVCacheGroupSpec(layer_names=layer_names, kv_cache_spec=spec)
    return KVCacheConfig(num_blocks=cfg.num_blocks, kv_cache_tensors=[], kv_cache_groups=[group])


def _make_states(cfg: _TestConfig, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    conv = torch.randn(
        cfg.num_blocks, cfg.conv_width, cfg.conv_inner_dim, dtype=cfg.dtype, device=device
    )
    temporal = torch.randn(cfg.num_blocks, cfg.temporal_state_dim, dtype=cfg.dtype, device=device)
    return conv, temporal


def _block_id(slot: int, col: int, cfg: _TestConfig = CFG) -> int:
    """A distinct non-zero block id per (request slot, column)."""
    return 1 + slot * cfg.max_blocks_per_req + col


def _make_block_table(
    cfg: _TestConfig, device: torch.device, row_slots: list[int] | None = None
) -> torch.Tensor:
    """The block table, row ``i`` holding the blocks of request slot ``row_slots[i]`` (slot
    ``i`` by default)."""
    table = torch.zeros(cfg.max_num_reqs, cfg.max_blocks_per_req, dtype=torch.int32)
    if row_slots is None:
        row_slots = list(range(cfg.max_num_reqs))
    for row, slot in enumerate(row_slots):
        if slot >= (cfg.num_blocks - 1) // cfg.max_blocks_per_req:
            continue
        for col in range(cfg.max_blocks_per_req):
            table[row, col] = _block_id(slot, col, cfg)
    return table.to(device)


def _block_table_in_batch_order() -> bool:
    """Whether this release's postprocess kernel reads the block table by batch row under
    ``idx_mapping`` (0.28.0 and 0.30.0: their V2 runner hands it a batch-ordered table), not
    by request slot as 0.34.0 does."""
    source = inspect.getsource(worker_mamba_utils)
    return "bt_row_idx = batch_idx if HAS_IDX_MAPPING else req_idx" in source


def _make_gpu_ctx(
    cfg: _TestConfig,
    device: torch.device,
    conv: torch.Tensor,
    temporal: torch.Tensor,
    block_table: torch.Tensor,
) -> MambaSpecDecodeGPUContext:
    """The production path: ``create`` then ``initialize_from_forward_context``."""
    kv_cache_config = _make_kv_cache_config(cfg, ["layer_0"])
    forward_context = {"layer_0": SimpleNamespace(kv_cache=[conv, temporal])}
    copy_funcs = _copy_funcs()
    # The arguments ``create`` takes differ between releases; give it those it names.
    offered = {
        "max_num_reqs": cfg.max_num_reqs,
        "kv_cache_config": kv_cache_config,
        "copy_funcs": copy_funcs,
        "num_state_types": 2,
        "forward_context": forward_context,
        "device": device,
        "make_buffer": lambda *size, dtype: CpuGpuBuffer(
            *size, dtype=dtype, device=device, pin_memory=False
        ),
    }
    params = inspect.signature(MambaSpecDecodeGPUContext.create).parameters
    ctx = MambaSpecDecodeGPUContext.create(**{k: v for k, v in offered.items() if k in params})
    ctx.initialize_from_forward_context(kv_cache_config, forward_context, copy_funcs, [block_table])
    assert ctx.is_initialized
    assert ctx.state_base_addrs.numel() == 2
    return ctx


def _metadata_addresses(ctx: MambaSpecDecodeGPUContext) -> tuple[list[int], list[int]]:
    """The int64 metadata read back as the uint64 addresses they hold."""
    as_u64 = lambda t: [v % TOP for v in t.cpu().tolist()]  # noqa: E731
    return as_u64(ctx.state_base_addrs), as_u64(ctx.block_table_ptrs)


def _expect_copy(
    conv_exp: torch.Tensor,
    temporal_exp: torch.Tensor,
    conv_before: torch.Tensor,
    temporal_before: torch.Tensor,
    slot: int,
    src_col: int,
    dst_col: int,
    bias: int,
) -> None:
    """What a Mamba align copy means: the conv window shifted by ``bias`` tokens from the
    source block into the destination block, the temporal state of column
    ``src_col + bias`` into the destination block."""
    dst = _block_id(slot, dst_col)
    conv_exp[dst, : CFG.conv_width - bias] = conv_before[_block_id(slot, src_col), bias:]
    temporal_exp[dst] = temporal_before[_block_id(slot, src_col + bias)]


# -----------------------------------------------------------------------------
# run_fused_precopy -> precopy_mamba_align_fused_kernel
# -----------------------------------------------------------------------------

# (src_col, dst_col, token_bias) per request slot, batch order == slot order.
_PRECOPY_CASES = [
    (0, 1, 0),  # plain migration to the next block
    (0, 2, 1),  # conv shifted by one token, temporal from column 1
    (-1, 1, 0),  # fresh request: nothing to copy
    (2, 2, 0),  # still in the same block: nothing to copy
]


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
    ],
)
def test_precopy_placed_states(ptrport_device, where):
    device = ptrport_device.device
    assert not is_conv_state_dim_first()
    conv, temporal = _make_states(CFG, device)
    block_table = _make_block_table(CFG, device)
    if where == "2**63":
        conv_at = AT_2_63
        temporal_at = AT_2_63 + (1 << 20)
    else:
        # The temporal state's storage ends exactly at 2**64, the conv state just below it.
        temporal_at = _top_address(temporal)
        conv_at = _top_address(conv, below=temporal_at - 4096)
    ptrport_device.place(conv, at=conv_at)
    ptrport_device.place(temporal, at=temporal_at)
    assert (conv.data_ptr(), temporal.data_ptr()) == (conv_at, temporal_at)

    conv_before, temporal_before = conv.clone(), temporal.clone()
    ctx = _make_gpu_ctx(CFG, device, conv, temporal, block_table)
    state_addrs, _ = _metadata_addresses(ctx)
    assert state_addrs == [conv_at, temporal_at]

    n = len(_PRECOPY_CASES)
    src_col = torch.full((CFG.max_num_reqs,), -1, dtype=torch.int32)
    state_idx = torch.zeros(CFG.max_num_reqs, dtype=torch.int32)
    token_bias = torch.zeros(CFG.max_num_reqs, dtype=torch.int32)
    for slot, (src, dst, bias) in enumerate(_PRECOPY_CASES):
        src_col[slot], state_idx[slot], token_bias[slot] = src, dst, bias

    ctx.run_fused_precopy(
        n, state_idx.to(device), src_col.to(device), token_bias.to(device), idx_mapping=None
    )

    conv_exp, temporal_exp = conv_before.clone(), temporal_before.clone()
    for slot, (src, dst, bias) in enumerate(_PRECOPY_CASES):
        if src >= 0 and src != dst:
            _expect_copy(conv_exp, temporal_exp, conv_before, temporal_before, slot, src, dst, bias)
    assert not torch.equal(conv_exp, conv_before)
    assert torch.equal(conv.cpu(), conv_exp)
    assert torch.equal(temporal.cpu(), temporal_exp)


# -----------------------------------------------------------------------------
# run_fused_postprocess_align -> postprocess_mamba_fused_kernel
# -----------------------------------------------------------------------------


def test_postprocess_align_placed_states_and_block_table(ptrport_device):
    """States across 2**63, the block table at the top of the address space, and a batch
    order that differs from the request-slot order (``idx_mapping``)."""
    device = ptrport_device.device
    conv, temporal = _make_states(CFG, device)
    idx_mapping = torch.tensor([2, 0, 1], dtype=torch.int32)
    row_slots = None
    if _block_table_in_batch_order():
        row_slots = idx_mapping.tolist() + list(range(len(idx_mapping), CFG.max_num_reqs))
    block_table = _make_block_table(CFG, device, row_slots)
    conv_at = AT_2_63 - _nbytes(conv) // 2 // 64 * 64  # straddles 2**63
    temporal_at = AT_2_63 + (1 << 16)
    table_at = _top_address(block_table)
    ptrport_device.place(conv, at=conv_at)
    ptrport_device.place(temporal, at=temporal_at)
    ptrport_device.place(block_table, at=table_at)

    conv_before, temporal_before = conv.clone(), temporal.clone()
    ctx = _make_gpu_ctx(CFG, device, conv, temporal, block_table)
    state_addrs, table_addrs = _metadata_addresses(ctx)
    assert state_addrs == [conv_at, temporal_at]
    assert table_addrs == [table_at]

    bs = CFG.block_size
    # Per request slot: (running block column, tokens computed after the step,
    # accepted tokens) and what the align step must do about it.
    num_accepted = torch.ones(CFG.max_num_reqs, dtype=torch.int32)
    state_idx = torch.zeros(CFG.max_num_reqs, dtype=torch.int32)
    new_computed = torch.zeros(CFG.max_num_reqs, dtype=torch.int32)
    slots = {
        # running state ends at token 2*bs-1 (block column 1), 3 accepted -> 2*bs+1
        # computed: save the state at 2*bs, column 1 in place (conv shifted by 1,
        # temporal from column 2), and the accepted count is reset to 1.
        0: (1, 2 * bs + 1, 3),
        # running state in column 0 ends at 3*bs-1, 4 accepted -> 3*bs+2 computed:
        # save at 3*bs into column 2 (conv from column 0 shifted by 1, temporal
        # from column 1).
        1: (0, 3 * bs + 2, 4),
        # no block boundary crossed: nothing copied
        2: (1, bs + 4, 2),
    }
    for slot, (col, computed, accepted) in slots.items():
        state_idx[slot], new_computed[slot], num_accepted[slot] = col, computed, accepted
    num_accepted_gpu = num_accepted.to(device)

    ctx.run_fused_postprocess_align(
        len(idx_mapping),
        num_accepted_gpu,
        state_idx.to(device),
        new_computed.to(device),
        idx_mapping.to(device),
    )

    conv_exp, temporal_exp = conv_before.clone(), temporal_before.clone()
    _expect_copy(conv_exp, temporal_exp, conv_before, temporal_before, 0, 1, 1, 1)
    _expect_copy(conv_exp, temporal_exp, conv_before, temporal_before, 1, 0, 2, 1)
    assert torch.equal(conv.cpu(), conv_exp)
    assert torch.equal(temporal.cpu(), temporal_exp)
    expected_accepted = num_accepted.clone()
    expected_accepted[0] = 1
    assert torch.equal(num_accepted_gpu.cpu(), expected_accepted)
