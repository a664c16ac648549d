"""Handing host staging chunks and device addresses to a native copy library through ctypes;
modelled on the shape of the host-side swap paths of offload connectors that call a C memcpy or
batched-DMA helper with raw addresses."""

from __future__ import annotations

import array
import ctypes
import struct

import numpy as np
import torch


class CopyRequest(ctypes.Structure):
    _fields_ = (
        ("src", ctypes.c_uint64),
        ("dst", ctypes.c_uint64),
        ("nbytes", ctypes.c_uint32),
    )


class HostChunkPool:
    """Fixed-size host chunks carved out of one ctypes buffer."""

    def __init__(self, num_chunks: int, chunk_bytes: int) -> None:
        self.chunk_bytes = chunk_bytes
        self.storage = (ctypes.c_char * (num_chunks * chunk_bytes))()
        self.base = ctypes.addressof(self.storage)
        self.free = list(range(num_chunks))

    def chunk_address(self, chunk: int) -> int:
        return self.base + chunk * self.chunk_bytes

    def copy_in(self, chunk: int, src: torch.Tensor) -> None:
        ctypes.memmove(self.chunk_address(chunk), src.data_ptr(), src.nbytes)  # clean

    def chunk_index(self, address: int) -> int:
        return (address - self.base) // self.chunk_bytes  # clean

    def chunk_table_legacy(self, chunks: list[int]) -> array.array:
        """32-bit entries, as the first version of the native helper took them."""
        return array.array("I", [self.chunk_address(c) for c in chunks])  # expect: narrow-storage

    def chunk_table(self, chunks: list[int]) -> array.array:
        return array.array("Q", [self.chunk_address(c) for c in chunks])  # clean


def submit_copies(lib: ctypes.CDLL, chunks: list[int], tensors: list[torch.Tensor]) -> int:
    pool = HostChunkPool(len(chunks), max(t.nbytes for t in tensors))
    reqs = (CopyRequest * len(chunks))()
    for req, chunk, t in zip(reqs, chunks, tensors, strict=True):
        req.src = t.data_ptr()  # clean
        req.dst = pool.chunk_address(chunk)  # clean
        req.nbytes = t.nbytes  # clean
    return lib.submit_copies(reqs, ctypes.c_uint32(len(chunks)))


def register_regions(lib: ctypes.CDLL, kv_caches: list[torch.Tensor]) -> None:
    for t in kv_caches:
        lib.register_region(ctypes.c_void_p(t.data_ptr()), ctypes.c_size_t(t.nbytes))  # clean


def register_regions_u64(lib: ctypes.CDLL, kv_caches: list[torch.Tensor]) -> None:
    for t in kv_caches:
        lib.register_region_u64(ctypes.c_uint64(t.data_ptr()), ctypes.c_uint32(t.nbytes))  # clean


def register_regions_legacy(lib: ctypes.CDLL, kv_caches: list[torch.Tensor]) -> None:
    """The first binding, whose address argument was declared as a C int."""
    for t in kv_caches:
        handle = ctypes.c_int32(t.data_ptr())  # expect: narrow-storage
        lib.register_region(handle, ctypes.c_uint32(t.nbytes))


def dma_cookie(src: torch.Tensor) -> int:
    """The address the DMA engine is told to poll, as it was passed before the 64-bit ABI."""
    return ctypes.c_uint32(src.data_ptr()).value  # expect: narrow-storage


def copy_message(src: torch.Tensor, dst: torch.Tensor) -> bytes:
    return struct.pack("<QQI", src.data_ptr(), dst.data_ptr(), src.nbytes)  # clean


def copy_message_legacy(src: torch.Tensor, dst: torch.Tensor) -> bytes:
    """Format characters written in the wrong order: the addresses get the 32-bit fields."""
    return struct.pack("<IIQ", src.data_ptr(), dst.data_ptr(), src.nbytes)  # expect: narrow-storage


def pointer_column_u32(tensors: list[torch.Tensor]) -> np.ndarray:
    return np.array([t.data_ptr() for t in tensors], dtype=np.uint32)  # expect: narrow-storage


def pointer_column(tensors: list[torch.Tensor]) -> np.ndarray:
    return np.array([t.data_ptr() for t in tensors], dtype=np.uint64)  # clean


def sizes_column(tensors: list[torch.Tensor]) -> np.ndarray:
    return np.array([t.nbytes for t in tensors], dtype=np.uint32)  # clean
