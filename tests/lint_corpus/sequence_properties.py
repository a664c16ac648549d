"""A scheduler's sequences expose their KV base address as a ``@property``; the batch builder
reads it on sequences whose class it knows by annotation, and stores it."""

from __future__ import annotations

import torch


class SequenceState:
    def __init__(self, kv: torch.Tensor, num_tokens: int) -> None:
        self._kv = kv
        self._num_tokens = num_tokens

    @property
    def kv_ptr(self) -> int:
        return self._kv.data_ptr()

    @property
    def num_tokens(self) -> int:
        return self._num_tokens

    @property
    def kv_bits(self) -> int:
        address = self._kv.data_ptr()
        return address - 2**64 if address >= 2**63 else address  # clean


def batch_kv_table(seqs: list[SequenceState]) -> torch.Tensor:
    return torch.tensor([s.kv_ptr for s in seqs])  # expect: inferred-int64


def single_kv_entry(seq: SequenceState, out: torch.Tensor) -> None:
    row = torch.tensor([seq.kv_ptr], dtype=torch.int64)  # expect: signed-storage
    out.copy_(row)


def single_kv_entry_unsigned(seq: SequenceState) -> torch.Tensor:
    return torch.tensor([seq.kv_ptr], dtype=torch.uint64)  # clean


def single_kv_bits(seq: SequenceState) -> torch.Tensor:
    return torch.tensor([seq.kv_bits], dtype=torch.int64)  # clean


def token_counts(seq: SequenceState) -> torch.Tensor:
    return torch.tensor([seq.num_tokens], dtype=torch.int64)  # clean


class BatchBuilder:
    def __init__(self, seq: SequenceState) -> None:
        self.seq = seq

    def base_entry(self) -> torch.Tensor:
        return torch.full((1,), self.seq.kv_ptr, dtype=torch.int64)  # expect: signed-storage
