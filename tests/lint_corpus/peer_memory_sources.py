"""Peer addresses from torch symmetric memory and CUDA IPC, and host addresses from numpy and
ctypes, staged for all-reduce and all-gather kernels; modelled on the shape of the custom
all-reduce communicators' buffer registration. Also bit tests of addresses, which read one bit
and are no reinterpretation."""

from __future__ import annotations

import ctypes

import numpy as np
import torch
import torch.distributed._symmetric_memory as symm_mem

KERNEL_SPACE_BIT = 1 << 63


class PeerBufferTable:
    """The address of every rank's copy of one buffer, for a kernel that reads them all."""

    def __init__(self, buffer: torch.Tensor, group_name: str) -> None:
        self.handle = symm_mem.rendezvous(buffer, group_name)
        handle = self.handle
        self.peers = torch.tensor(handle.buffer_ptrs, dtype=torch.int64)  # expect: signed-storage
        self.peers_ok = torch.tensor(handle.buffer_ptrs, dtype=torch.uint64)  # clean
        self.signals = torch.tensor(handle.signal_pad_ptrs, device="cuda")  # expect: inferred-int64
        self.mc = torch.zeros(2, dtype=torch.int64)
        self.mc[0] = handle.multicast_ptr  # expect: signed-storage
        self.mc[1] = handle.buffer_ptrs_dev  # expect: signed-storage
        self.mc_ok = np.zeros(2, dtype=np.uint64)
        self.mc_ok[0] = handle.multicast_ptr  # clean
        self.mc_ok[1] = handle.signal_pad_ptrs_dev  # clean


def open_peer_buffers(lib: ctypes.CDLL, handles: list[bytes], rank: int) -> torch.Tensor:
    pointers = []
    for i, handle in enumerate(handles):
        if i != rank:
            pointers.append(lib.cudaIpcOpenMemHandle(handle).value)
    table = torch.tensor(pointers, dtype=torch.int64)  # expect: signed-storage
    table_ok = torch.tensor(pointers, dtype=torch.uint64)  # clean
    return table if rank else table_ok


def register_host_staging(lib: ctypes.CDLL, staging: np.ndarray, n: int) -> np.ndarray:
    regions = np.zeros((n, 2), dtype=np.int64)
    regions[0, 0] = staging.ctypes.data  # expect: signed-storage
    regions[0, 1] = staging.nbytes  # clean
    regions[1, 0] = staging.__array_interface__["data"][0]  # expect: signed-storage
    regions_ok = np.zeros((n, 2), dtype=np.uint64)
    regions_ok[0, 0] = staging.ctypes.data  # clean
    argument = ctypes.cast(ctypes.pointer(ctypes.c_int(0)), ctypes.c_void_p)
    regions_ok[1, 0] = argument.value  # clean
    regions[2, 0] = argument.value  # expect: signed-storage
    return regions


def describe_pointer(ptr: int) -> str:
    if ptr & KERNEL_SPACE_BIT:  # clean
        return "kernel space"
    kind = "tagged" if ptr >> 56 else "plain"  # clean
    assert not ptr & (1 << 63)  # clean
    return kind


def split_pointers(tensors: list[torch.Tensor]) -> tuple[list[int], list[int | str]]:
    ptrs = [t.data_ptr() for t in tensors]
    high = [p for p in ptrs if p & (1 << 63)]  # clean
    low = [p for p in ptrs if not bool(p & KERNEL_SPACE_BIT)]  # clean
    bits = [p - (1 << 64) if p & (1 << 63) else p for p in ptrs]  # clean
    wrong = [p - (1 << 63) if p & (1 << 63) else p for p in ptrs]  # expect: bad-bitcast
    kinds = [describe_pointer(p) for p in ptrs]
    return high + bits, low + wrong + kinds
