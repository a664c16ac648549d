"""Per-layer KV-cache base addresses and per-token slot addresses handed to attention and transfer
kernels next to int32 block tables; modelled on the shape of attention-metadata builders that
keep a device tensor of layer base addresses."""

from __future__ import annotations

import numpy as np
import torch

PTR_DTYPE = torch.int64
BASE_DTYPE = torch.uint64


class LayerBaseTable:
    """Base address of each layer's KV cache, mirrored to the device once the caches exist."""

    def __init__(self, num_layers: int, max_reqs: int, device: torch.device) -> None:
        self.bases_cpu = torch.zeros(num_layers, dtype=PTR_DTYPE)
        self.bases_gpu = torch.zeros(num_layers, dtype=PTR_DTYPE, device=device)
        self.block_table = torch.zeros((max_reqs, 512), dtype=torch.int32, device=device)
        self.num_blocks = torch.zeros(max_reqs, dtype=torch.int32)

    def bind_layer(self, layer: int, kv_cache: torch.Tensor) -> None:
        self.bases_cpu[layer] = kv_cache.data_ptr()  # expect: signed-storage

    def bind_all(self, kv_caches: list[torch.Tensor]) -> None:
        """A uint64 tensor copied into the int64 table keeps every bit."""
        bases = [kv.data_ptr() for kv in kv_caches]
        self.bases_cpu.copy_(torch.tensor(bases, dtype=torch.uint64))  # clean
        self.bases_gpu.copy_(self.bases_cpu, non_blocking=True)

    def unbind_all(self, null_block: torch.Tensor) -> None:
        """Points every layer at a null block until the caches are reallocated."""
        self.bases_cpu.fill_(null_block.data_ptr())  # expect: signed-storage
        self.bases_gpu.copy_(self.bases_cpu, non_blocking=True)

    def set_blocks(self, req: int, block_ids: list[int]) -> None:
        n = len(block_ids)
        self.block_table[req, :n] = torch.tensor(block_ids, dtype=torch.int32)  # clean
        self.num_blocks[req] = n  # clean


class Uint64LayerBaseTable:
    def __init__(self, num_layers: int, device: torch.device) -> None:
        self.bases_cpu = torch.zeros(num_layers, dtype=BASE_DTYPE)
        self.bases_gpu = torch.zeros(num_layers, dtype=BASE_DTYPE, device=device)

    def bind_all(self, kv_caches: list[torch.Tensor]) -> None:
        self.bases_cpu.numpy()[:] = [kv.data_ptr() for kv in kv_caches]  # clean
        self.bases_gpu.copy_(self.bases_cpu, non_blocking=True)

    def unbind_all(self, null_block: torch.Tensor) -> None:
        self.bases_cpu.fill_(null_block.data_ptr())  # clean


def layer_bases_tensor(kv_caches: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    bases = [kv.data_ptr() for kv in kv_caches]
    return torch.as_tensor(bases, device=device)  # expect: inferred-int64


def layer_bases_on(kv_caches: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    bases = [kv.data_ptr() for kv in kv_caches]
    return torch.tensor(bases, device=device)  # expect: inferred-int64


def layer_bases_long(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    return torch.LongTensor([kv.data_ptr() for kv in kv_caches])  # expect: signed-storage


def layer_bases_u64(kv_caches: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    bases = [kv.data_ptr() for kv in kv_caches]
    return torch.tensor(bases, dtype=torch.uint64, device=device)  # clean


def broadcast_base(kv: torch.Tensor, num_tokens: int) -> torch.Tensor:
    """One base per token, for a kernel that is indexed by token."""
    return torch.full((num_tokens,), kv.data_ptr(), dtype=torch.long)  # expect: signed-storage


def broadcast_base_u64(kv: torch.Tensor, num_tokens: int) -> torch.Tensor:
    return torch.full((num_tokens,), kv.data_ptr(), dtype=torch.uint64)  # clean


def pack_decode_metadata(
    kv_cache: torch.Tensor, seq_lens: list[int], block_ids: list[int]
) -> torch.Tensor:
    """Everything a decode kernel reads, in one int32 tensor: the base address does not fit."""
    meta = torch.zeros(2 + len(seq_lens) + len(block_ids), dtype=torch.int32)
    meta[0] = len(seq_lens)  # clean
    meta[1] = kv_cache.data_ptr()  # expect: narrow-storage
    meta[2 : 2 + len(seq_lens)] = torch.tensor(seq_lens, dtype=torch.int32)  # clean
    meta[2 + len(seq_lens) :] = torch.tensor(block_ids, dtype=torch.int32)  # clean
    return meta


def layer_bases_compact(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    bases = [kv.data_ptr() for kv in kv_caches]
    return torch.tensor(bases, dtype=torch.int)  # expect: narrow-storage


def copy_bases_into_meta(kv_caches: list[torch.Tensor], meta: torch.Tensor) -> None:
    """A uint64 column copied into an int32 one keeps only the low 32 bits of each address."""
    bases = torch.tensor([kv.data_ptr() for kv in kv_caches], dtype=torch.uint64)  # clean
    column = torch.zeros(len(kv_caches), dtype=torch.int32)
    column.copy_(bases)  # expect: narrow-storage
    meta[: len(kv_caches)] = column


def slot_addresses(kv_cache: torch.Tensor, slot_mapping: torch.Tensor) -> np.ndarray:
    """Absolute address of each token's slot, for a host-side transfer engine."""
    slot_bytes = kv_cache[0, 0].nbytes
    base = np.uint64(kv_cache.data_ptr())  # clean
    slots = slot_mapping.to(torch.int64).numpy()
    return base + slots * slot_bytes  # expect: mixed-sign-numpy


def slot_addresses_u64(kv_cache: torch.Tensor, slot_mapping: torch.Tensor) -> np.ndarray:
    slot_bytes = kv_cache[0, 0].nbytes
    base = np.uint64(kv_cache.data_ptr())  # clean
    slots = slot_mapping.to(torch.int64).numpy().astype(np.uint64)
    return base + slots * slot_bytes  # clean
