"""Registering KV-cache regions with a transfer agent and building (address, length, device)
descriptor lists for remote block reads; modelled on the shape of the disaggregated-prefill
connectors that describe memory to an RDMA transfer library."""

from __future__ import annotations

import array
import struct

import numpy as np
import torch

DESC_DTYPE = np.dtype([("addr", np.uint64), ("len", np.uint64), ("dev", np.int32)])


class TransferAgentRegistry:
    """The regions of one worker's KV caches and the block descriptors built from them."""

    def __init__(self, kv_caches: list[torch.Tensor], device_id: int) -> None:
        self.device_id = device_id
        self.block_bytes = kv_caches[0][0].nbytes
        self.regions = [(t.data_ptr(), t.nbytes, device_id) for t in kv_caches]
        self.by_base = {t.untyped_storage().data_ptr(): t for t in kv_caches}  # clean
        self.descs = np.zeros((len(kv_caches), 3), dtype=np.int64)
        self.descs_u64 = np.zeros((len(kv_caches), 3), dtype=np.uint64)

    def region_array(self) -> np.ndarray:
        return np.array(self.regions, dtype=np.int64)  # expect: signed-storage

    def region_array_u64(self) -> np.ndarray:
        return np.array(self.regions, dtype=np.uint64)  # clean

    def region_array_int64_bits(self) -> np.ndarray:
        return np.array(self.regions, dtype=np.uint64).view(np.int64)  # clean

    def fill_descs(self) -> None:
        for i, (addr, nbytes, dev) in enumerate(self.regions):
            self.descs[i] = (addr, nbytes, dev)  # expect: signed-storage
            self.descs_u64[i] = (addr, nbytes, dev)  # clean

    def block_descs(self, block_ids: list[int]) -> np.ndarray:
        descs = []
        for base, _, dev in self.regions:
            descs.extend([(base + b * self.block_bytes, self.block_bytes, dev) for b in block_ids])
        return np.asarray(descs, dtype=np.intp)  # expect: signed-storage

    def block_descs_u64(self, block_ids: list[int]) -> np.ndarray:
        descs = []
        for base, _, dev in self.regions:
            descs.extend([(base + b * self.block_bytes, self.block_bytes, dev) for b in block_ids])
        return np.asarray(descs, dtype=np.uint64)  # clean

    def pack_descs_legacy(self, block_ids: list[int]) -> bytes:
        out = bytearray()
        for base, _, dev in self.regions:
            for b in block_ids:
                addr = base + b * self.block_bytes
                out += struct.pack("<qqi", addr, self.block_bytes, dev)  # expect: signed-storage
        return bytes(out)

    def pack_descs(self, block_ids: list[int]) -> bytes:
        out = bytearray()
        for base, _, dev in self.regions:
            for b in block_ids:
                addr = base + b * self.block_bytes
                out += struct.pack("<Qqi", addr, self.block_bytes, dev)  # clean
        return bytes(out)

    def base_list_legacy(self) -> array.array:
        return array.array("q", [base for base, _, _ in self.regions])  # expect: signed-storage

    def base_list(self) -> array.array:
        return array.array("Q", [base for base, _, _ in self.regions])  # clean

    def base_of(self, view: torch.Tensor) -> torch.Tensor:
        return self.by_base[view.untyped_storage().data_ptr()]  # clean

    def structured_descs(self) -> np.ndarray:
        return np.array(self.regions, dtype=DESC_DTYPE)  # clean


def remote_read_columns(kv_caches: list[torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
    """Address and length columns, from the CUDA array interface the transfer library reads."""
    addrs = [t.__cuda_array_interface__["data"][0] for t in kv_caches]
    lengths = [t.nbytes for t in kv_caches]
    addr_col = np.fromiter(addrs, dtype=np.int64, count=len(addrs))  # expect: signed-storage
    len_col = np.array(lengths, dtype=np.int64)  # clean
    return addr_col, len_col


def remote_read_columns_u64(kv_caches: list[torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
    addrs = [t.__cuda_array_interface__["data"][0] for t in kv_caches]
    lengths = [t.nbytes for t in kv_caches]
    addr_col = np.fromiter(addrs, dtype=np.uint64, count=len(addrs))  # clean
    len_col = np.array(lengths, dtype=np.int64)  # clean
    return addr_col, len_col


def transfer_header(src: torch.Tensor, dst: torch.Tensor, request_id: int) -> bytes:
    """The fixed header of one block-transfer message: request id, source, destination, length."""
    return struct.pack("<qQQq", request_id, src.data_ptr(), dst.data_ptr(), src.nbytes)  # clean


def transfer_header_legacy(src: torch.Tensor, dst: torch.Tensor, request_id: int) -> bytes:
    return struct.pack(  # expect: signed-storage
        "<qqqq",
        request_id,
        src.data_ptr(),
        dst.data_ptr(),
        src.nbytes,
    )


def descriptor_offsets(kv_caches: list[torch.Tensor]) -> np.ndarray:
    """Each region's offset from the first: a byte count, which int64 holds."""
    first = kv_caches[0].data_ptr()
    return np.array([t.data_ptr() - first for t in kv_caches], dtype=np.int64)  # clean
