"""Host code that hands addresses to kernels compiled by the CuTe DSL and TVM-FFI: CuTe's
``Int64`` keeps an address's 64 bits (as ctypes does), its ``Int32`` cuts them, and a TVM-FFI
``Shape`` holds int64 elements (``ValueError`` at ``2**63``)."""

from __future__ import annotations

from typing import cast

import torch
import tvm_ffi
from cutlass import Int32, Int64


def launch_args(compiled, mailbox: torch.Tensor, stage: torch.Tensor) -> None:
    compiled(Int64(mailbox.data_ptr()), Int32(stage.numel()))  # clean


def launch_args_narrow(compiled, mailbox: torch.Tensor) -> None:
    compiled(Int32(mailbox.data_ptr()))  # expect: narrow-storage


def peer_table(handle, world_size: int, words: int):
    peers = tuple(
        int(handle.get_buffer(peer, (words,), torch.uint32, 0).data_ptr())
        for peer in range(world_size)
    )
    return tvm_ffi.Shape(peers)  # expect: signed-storage


def shape_of(t: torch.Tensor):
    return tvm_ffi.Shape(tuple(t.shape))  # clean


def optional_base(t: torch.Tensor | None) -> torch.Tensor:
    base = t.data_ptr() if t is not None else None
    return torch.tensor([cast(int, base)], dtype=torch.int64)  # expect: signed-storage
