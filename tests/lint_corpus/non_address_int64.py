"""Input preparation that keeps token positions, sequence lengths, slot mappings, block ids and
byte offsets in int64 and int32 tensors, beside code that reads addresses; modelled on the shape
of a model runner's prepare-inputs step. No value stored here is an address: no finding."""

from __future__ import annotations

import struct

import numpy as np
import torch


class InputBatch:
    def __init__(self, max_reqs: int, max_tokens: int, max_blocks: int) -> None:
        self.positions = torch.zeros(max_tokens, dtype=torch.int64)
        self.positions_np = self.positions.numpy()
        self.seq_lens = torch.zeros(max_reqs, dtype=torch.int32)
        self.seq_lens_np = self.seq_lens.numpy()
        self.query_start_loc = torch.zeros(max_reqs + 1, dtype=torch.int32)
        self.query_start_loc_np = self.query_start_loc.numpy()
        self.slot_mapping = torch.zeros(max_tokens, dtype=torch.int64)
        self.slot_mapping_np = self.slot_mapping.numpy()
        self.block_table = torch.zeros((max_reqs, max_blocks), dtype=torch.int32)
        self.block_table_np = self.block_table.numpy()

    def prepare(
        self, num_computed: list[int], num_scheduled: list[int], block_size: int
    ) -> tuple[int, int]:
        num_reqs = len(num_scheduled)
        total = sum(num_scheduled)
        req_indices = np.repeat(np.arange(num_reqs), num_scheduled)
        cu = np.cumsum(num_scheduled)
        offsets_in_req = np.arange(total) - np.repeat(cu - num_scheduled, num_scheduled)
        self.positions_np[:total] = np.asarray(num_computed)[req_indices] + offsets_in_req
        self.seq_lens_np[:num_reqs] = np.asarray(num_computed) + np.asarray(num_scheduled)
        self.query_start_loc_np[0] = 0
        self.query_start_loc_np[1 : num_reqs + 1] = cu
        positions = self.positions_np[:total]
        block_ids = self.block_table_np[req_indices, positions // block_size].astype(np.int64)
        self.slot_mapping_np[:total] = block_ids * block_size + positions % block_size
        return num_reqs, total

    def set_blocks(self, req: int, block_ids: list[int]) -> None:
        self.block_table_np[req, : len(block_ids)] = block_ids


def layer_offsets(kv_caches: list[torch.Tensor], pool: torch.Tensor) -> torch.Tensor:
    """Each layer's byte offset inside one pool: a difference of two addresses."""
    base = pool.data_ptr()
    return torch.tensor([t.data_ptr() - base for t in kv_caches], dtype=torch.int64)  # clean


def misalignment(tensors: list[torch.Tensor]) -> torch.Tensor:
    """How far each buffer sits past a 4 KiB boundary: a remainder, below 4096."""
    return torch.tensor([t.data_ptr() % 4096 for t in tensors], dtype=torch.int32)  # clean


def page_numbers(tensors: list[torch.Tensor]) -> np.ndarray:
    """4 KiB page frame of each buffer: below 2**52 for any 64-bit address, so int64 holds it."""
    return np.array([t.data_ptr() >> 12 for t in tensors], dtype=np.int64)  # clean


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()  # clean


def group_by_storage(tensors: list[torch.Tensor]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i, t in enumerate(tensors):
        groups.setdefault(t.untyped_storage().data_ptr(), []).append(i)  # clean
    return groups


def request_lengths(prompts: list[list[int]]) -> torch.Tensor:
    return torch.tensor([len(p) for p in prompts])  # clean


def token_ids(prompts: list[list[int]]) -> torch.Tensor:
    flat = [tok for p in prompts for tok in p]
    return torch.as_tensor(flat, dtype=torch.long)


def block_sizes(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    return torch.full((len(kv_caches),), kv_caches[0][0].nbytes, dtype=torch.int64)  # clean


def message_header(request_id: int, num_blocks: int, nbytes: int) -> bytes:
    return struct.pack("<qiq", request_id, num_blocks, nbytes)


def sampling_offsets(num_reqs: int, vocab_size: int) -> np.ndarray:
    """Start of each request's row in the flattened logits."""
    return np.arange(num_reqs, dtype=np.int64) * vocab_size
