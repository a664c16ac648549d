# vLLM's prompt-embeddings pointer table (model runner V2) at high device addresses.
#
# ``PromptEmbedsState`` (vllm/v1/worker/gpu/model_states/prompt_embeds.py) keeps, per request
# slot, the device address of the request's prompt embeddings and of its is-token-ids mask in
# ``UvaBackedTensor`` columns, written through their numpy views in ``add_request``; ``apply``
# launches the Triton ``_apply_prompt_embeds_kernel``, which loads each address and casts it back
# to a pointer to overlay the embeddings onto ``inputs_embeds``. Releases whose columns are
# ``torch.int64`` fail on storing an address >= 2**63 (reported on XPU as vLLM #54514 and
# #56781); from vLLM 0.31.0 on the columns are ``torch.uint64`` and the addresses go through.
#
# The request arrives as the scheduler hands it to the worker: a ``NewRequestData`` whose
# embeddings are a host tensor, already in the model's dtype (the renderer casts them), and whose
# mask is a ``list[bool]``. ``add_request`` copies both to the device with
# ``async_tensor_h2d`` (the mask is built as a tensor there first) and records the addresses of
# the copies. On the CPU backends the device *is* the host: ``async_tensor_h2d`` runs in full
# (its ``t.is_cpu`` check, the ``.to(device, dtype)``), but the ``.to`` of a tensor already on
# the host in the right dtype is the tensor itself, so no bytes move for the embeddings; the mask
# is a tensor the engine allocated. What a device's allocator would decide, where the copy lies,
# is what ``at_2_63`` and ``at_top`` decide: a stand-in around the module's own
# ``async_tensor_h2d`` places each tensor it returns with ``ptrport_device.place()``
# (``presented`` leaves them where the backend presents them: upper-half addresses on ``cpu-usm``
# and ``cpu-tbi``, the CPU's own on ``cpu`` and ``cpu-placed``). The test checks that the state
# keeps the engine's copies, the table, and the rows the kernel wrote.

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import vllm.v1.worker.gpu.buffer_utils as buffer_utils
import vllm.v1.worker.gpu.model_states.prompt_embeds as prompt_embeds_module
from vllm.platforms import current_platform
from vllm.v1.core.sched.output import NewRequestData
from vllm.v1.worker.gpu.model_states.prompt_embeds import PromptEmbedsState

pytestmark = pytest.mark.ptrport

TOP = 1 << 64
AT_2_63 = 1 << 63

MAX_NUM_REQS = 4
HIDDEN = 64
DTYPE = torch.float16
SENTINEL = -7.0


@pytest.fixture
def host_without_uva(monkeypatch, ptrport_device):
    """vLLM as it runs where the host has neither UVA nor pinned memory: its ``UvaBackedTensor``
    falls back to a plain device mirror filled by explicit copies."""
    monkeypatch.setattr(buffer_utils, "is_uva_available", lambda: False)
    monkeypatch.setattr(buffer_utils, "is_pin_memory_available", lambda: False, raising=False)
    monkeypatch.setattr(current_platform, "device_type", ptrport_device.device.type)


class _PlacingAllocator:
    """Stands in for the device allocator behind ``async_tensor_h2d``: every tensor the engine's
    own function returns is placed at the next of the given addresses."""

    def __init__(self, ptrport_device, addresses):
        self.ptrport_device = ptrport_device
        self.addresses = list(addresses)
        self.copies = []
        self.h2d = prompt_embeds_module.async_tensor_h2d

    def __call__(self, data, *args, **kwargs):
        out = self.h2d(data, *args, **kwargs)
        at = self.addresses.pop(0)
        if at is not None:
            self.ptrport_device.place(out, at=at)
        self.copies.append(out)
        return out


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _top_address(nbytes: int, *, below: int = TOP) -> int:
    """The highest multiple of 64 at which ``nbytes`` end at or below ``below``."""
    return (below - nbytes) // 64 * 64


def _as_u64(column) -> list[int]:
    return np.asarray(column).view(np.uint64).tolist()


def _request(req_id, embeds, is_token_ids):
    n = 3 if embeds is None else embeds.shape[0]
    return NewRequestData(
        req_id=req_id,
        prompt_token_ids=[0] * n,
        mm_features=[],
        sampling_params=None,
        pooling_params=None,
        block_ids=([],),
        num_computed_tokens=0,
        lora_request=None,
        prefill_token_ids=[0] * n,
        prompt_embeds=embeds,
        prompt_is_token_ids=is_token_ids,
    )


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
        pytest.param(None, id="presented"),
    ],
)
def test_apply_prompt_embeds_placed(ptrport_device, host_without_uva, monkeypatch, where):
    device = ptrport_device.device
    torch.manual_seed(0)
    # On the host, as the request carries them. Slot 2: 10 prompt rows, rows 4 and 8 token ids.
    embeds_a = torch.randn(10, HIDDEN, dtype=DTYPE, device="cpu")
    mask_a = [i in (4, 8) for i in range(10)]
    # Slot 0: 6 prompt rows, no mask.
    embeds_b = torch.randn(6, HIDDEN, dtype=DTYPE, device="cpu")
    # The copies in the order add_request makes them: slot 2's embeddings, its mask, slot 0's.
    sizes = [_nbytes(embeds_a), len(mask_a), _nbytes(embeds_b)]
    if where == "2**63":
        at = [AT_2_63, AT_2_63 + (1 << 16), AT_2_63 + (1 << 20)]
    elif where == "top":
        # Slot 2's embeddings end exactly at 2**64, its mask and slot 0's just below.
        top_a = _top_address(sizes[0])
        top_mask = _top_address(sizes[1], below=top_a - 4096)
        at = [top_a, top_mask, _top_address(sizes[2], below=top_mask - 4096)]
    else:
        at = [None, None, None]
    allocator = _PlacingAllocator(ptrport_device, at)
    monkeypatch.setattr(prompt_embeds_module, "async_tensor_h2d", allocator)

    state = PromptEmbedsState(MAX_NUM_REQS, HIDDEN, DTYPE, device)
    state.add_request(2, _request("a", embeds_a, mask_a))
    state.add_request(0, _request("b", embeds_b, None))
    state.add_request(1, _request("c", None, None))
    assert len(allocator.copies) == 3 and not allocator.addresses
    copy_a, copy_mask, copy_b = allocator.copies
    assert copy_mask.device == device and copy_mask.dtype == torch.uint8
    # The state keeps the engine's copies (the tensors behind the pointer table).
    kept_a, kept_mask = state.gpu_tensors["a"]
    kept_b, no_mask = state.gpu_tensors["b"]
    assert kept_a is copy_a and kept_mask is copy_mask and kept_b is copy_b and no_mask is None
    if where is not None:
        assert [copy_a.data_ptr(), copy_mask.data_ptr(), copy_b.data_ptr()] == at
    assert _as_u64(state.embeds_ptrs.np)[2] == copy_a.data_ptr()
    assert _as_u64(state.mask_ptrs.np)[2] == copy_mask.data_ptr()
    assert _as_u64(state.embeds_ptrs.np)[0] == copy_b.data_ptr()
    assert _as_u64(state.mask_ptrs.np)[0] == 0
    state.apply_staged_writes()

    # Batch order: slot 2 (rows 3..9 of its prompt), slot 0 (its whole prompt), slot 1 (3
    # sampled tokens, no embeddings).
    num_scheduled = np.array([7, 6, 3], dtype=np.int32)
    query_start_loc = torch.tensor([0, 7, 13, 16], dtype=torch.int32, device=device)
    num_computed = torch.zeros(MAX_NUM_REQS, dtype=torch.int32, device=device)
    num_computed[2] = 3
    input_batch = SimpleNamespace(
        num_reqs=3,
        num_scheduled_tokens=num_scheduled,
        idx_mapping=torch.tensor([2, 0, 1], dtype=torch.int32, device=device),
        query_start_loc=query_start_loc,
    )
    inputs_embeds = torch.full((16, HIDDEN), SENTINEL, dtype=DTYPE, device=device)

    state.apply(input_batch, num_computed, inputs_embeds)

    expected = torch.full((16, HIDDEN), SENTINEL, dtype=DTYPE)
    for t in range(7):
        if not mask_a[3 + t]:
            expected[t] = embeds_a[3 + t]
    expected[7:13] = embeds_b
    assert torch.equal(inputs_embeds.cpu(), expected)
