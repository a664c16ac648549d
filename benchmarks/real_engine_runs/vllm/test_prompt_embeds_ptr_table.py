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
# Here the embeddings and the mask are presented at 2**63 and at the top of the 64-bit space with
# ``ptrport_device.place()``; they are handed to ``add_request`` already on the device and in
# the model's dtype, so the state keeps those very tensors (as it does for any request whose
# embeddings arrive so), and the test checks the table and the rows the kernel wrote.

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import vllm.v1.worker.gpu.buffer_utils as buffer_utils
from vllm.platforms import current_platform
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


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def _top_address(t: torch.Tensor, *, below: int = TOP) -> int:
    """The highest multiple of 64 at which ``t``'s storage ends at or below ``below``."""
    return (below - _nbytes(t)) // 64 * 64


def _as_u64(column) -> list[int]:
    return np.asarray(column).view(np.uint64).tolist()


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("2**63", id="at_2_63"),
        pytest.param("top", id="at_top"),
    ],
)
def test_apply_prompt_embeds_placed(ptrport_device, host_without_uva, where):
    device = ptrport_device.device
    torch.manual_seed(0)
    # Request slot 2: 10 prompt rows, a mask marking rows 4 and 8 as token ids.
    embeds_a = torch.randn(10, HIDDEN, dtype=DTYPE, device=device)
    mask_a = torch.zeros(10, dtype=torch.uint8, device=device)
    mask_a[[4, 8]] = 1
    # Request slot 0: 6 prompt rows, no mask.
    embeds_b = torch.randn(6, HIDDEN, dtype=DTYPE, device=device)
    if where == "2**63":
        at = {"a": AT_2_63, "mask": AT_2_63 + (1 << 16), "b": AT_2_63 + (1 << 20)}
    else:
        # Slot 2's embeddings end exactly at 2**64, its mask and slot 0's just below.
        top_a = _top_address(embeds_a)
        top_mask = _top_address(mask_a, below=top_a - 4096)
        at = {"a": top_a, "mask": top_mask, "b": _top_address(embeds_b, below=top_mask - 4096)}
    ptrport_device.place(embeds_a, at=at["a"])
    ptrport_device.place(mask_a, at=at["mask"])
    ptrport_device.place(embeds_b, at=at["b"])

    state = PromptEmbedsState(MAX_NUM_REQS, HIDDEN, DTYPE, device)
    state.add_request(
        2,
        SimpleNamespace(req_id="a", prompt_embeds=embeds_a, prompt_is_token_ids=mask_a),
    )
    state.add_request(
        0,
        SimpleNamespace(req_id="b", prompt_embeds=embeds_b, prompt_is_token_ids=None),
    )
    state.add_request(
        1,
        SimpleNamespace(req_id="c", prompt_embeds=None, prompt_is_token_ids=None),
    )
    assert _as_u64(state.embeds_ptrs.np)[0] == at["b"]
    assert _as_u64(state.embeds_ptrs.np)[2] == at["a"]
    assert _as_u64(state.mask_ptrs.np)[2] == at["mask"]
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
        if mask_a[3 + t] == 0:
            expected[t] = embeds_a[3 + t].cpu()
    expected[7:13] = embeds_b.cpu()
    assert torch.equal(inputs_embeds.cpu(), expected)
