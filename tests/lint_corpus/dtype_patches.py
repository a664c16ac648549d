"""Patches that a backend plug-in applies over an engine's buffer factory where an operation
lacks uint64: one undoes the engine's uint64 fix for its pointer tables, the others change
dtypes that hold no address."""

from __future__ import annotations

import torch


def make_buffer(n: int, dtype: torch.dtype, device: str = "cpu") -> torch.Tensor:
    return torch.empty(n, dtype=dtype, device=device)


patched_make_buffer = lambda n, dtype: make_buffer(  # noqa: E731
    n,
    dtype=torch.int64 if dtype == torch.uint64 else dtype,  # expect: signed-storage
)


def patched_make_buffer_def(n: int, dtype: torch.dtype) -> torch.Tensor:
    chosen = torch.int64 if dtype is torch.uint64 else dtype  # expect: signed-storage
    return make_buffer(n, chosen)


def patched_keeps_unsigned(n: int, dtype: torch.dtype) -> torch.Tensor:
    chosen = torch.uint64 if dtype == torch.int64 else dtype  # clean
    return make_buffer(n, chosen)


def patched_narrows_positions(n: int, dtype: torch.dtype) -> torch.Tensor:
    chosen = torch.int32 if dtype == torch.int64 else dtype  # clean
    return make_buffer(n, chosen)


def patched_keeps_uint64(n: int, dtype: torch.dtype) -> torch.Tensor:
    chosen = dtype if dtype == torch.uint64 else torch.int64  # clean
    return make_buffer(n, chosen)
