"""Sites a team reviewed and accepted, each suppressed with a reason; modelled on the shape of a
CUDA-only fast path in a model runner that keeps int64 pointer tables on purpose."""

from __future__ import annotations

import ctypes

import torch
from triton_batch_memcpy import block_copy_kernel


class HostPointerTable:
    """Addresses of host staging buffers, which this x86-64-only path allocates itself."""

    def __init__(self, capacity: int) -> None:
        self.ptrs = torch.zeros(capacity, dtype=torch.int64)
        self.ptrs_np = self.ptrs.numpy()
        self.buffers: list[ctypes.Array[ctypes.c_char]] = []

    def add(self, nbytes: int) -> int:
        buf = (ctypes.c_char * nbytes)()
        i = len(self.buffers)
        self.buffers.append(buf)
        p = ctypes.addressof(buf)
        self.ptrs_np[i] = p  # ptrport: ignore[signed-storage] x86-64 host malloc, always < 2**47
        return i


def cuda_layer_ptrs(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    """Only called when ``torch.version.cuda`` is set; CUDA device addresses stay below 2**48."""
    ptrs = [t.data_ptr() for t in kv_caches]
    return torch.tensor(ptrs, dtype=torch.int64)  # ptrport: ignore[signed-storage] CUDA-only path


def cuda_layer_bases(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    bases = [t.data_ptr() for t in kv_caches]
    return torch.as_tensor(bases)  # ptrport: ignore[inferred-int64] CUDA-only path, below 2**48


def cuda_swap(src: torch.Tensor, dst: torch.Tensor, mapping: torch.Tensor) -> None:
    block_copy_kernel[(mapping.shape[1],)](
        src.data_ptr(),  # ptrport: ignore[triton-signed-param] CUDA graphs path only
        dst.data_ptr(),  # ptrport: ignore[triton-signed-param] CUDA graphs path only
        mapping[0],
        mapping[1],
        src[0].nbytes,
        BLOCK=1024,
    )


def trace_label(t: torch.Tensor) -> dict[str, float]:
    return {"base": float(t.data_ptr())}  # ptrport: ignore[float-storage] sort key, never read back


def portable_layer_ptrs(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    """The path every other backend takes."""
    return torch.tensor([t.data_ptr() for t in kv_caches], dtype=torch.uint64)  # clean


def same_buffer(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.data_ptr() == b.data_ptr()  # clean
