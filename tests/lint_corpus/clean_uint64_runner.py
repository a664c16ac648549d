"""A model runner's per-step staging of KV block copies and Mamba state copies with uint64 pointer
columns throughout; modelled on the shape of a GPU model runner's persistent input buffers.
Everything here keeps addresses above 2**63 intact: no line may produce a finding."""

from __future__ import annotations

import logging

import numpy as np
import torch
from triton_batch_memcpy import batch_memcpy_kernel, gather_rows_kernel

logger = logging.getLogger(__name__)

PTR_DTYPE = torch.uint64
COPY_BLOCK = 1024


class CpuGpuBuffer:
    """A host tensor, its numpy view and a device mirror of the same dtype."""

    def __init__(self, n: int, dtype: torch.dtype, device: torch.device) -> None:
        self.cpu = torch.zeros(n, dtype=dtype, pin_memory=device.type == "cuda")
        self.np = self.cpu.numpy()
        self.gpu = torch.zeros(n, dtype=dtype, device=device)

    def copy_to_gpu(self, n: int) -> torch.Tensor:
        return self.gpu[:n].copy_(self.cpu[:n], non_blocking=True)


class StepRunner:
    def __init__(self, max_copies: int, max_reqs: int, device: torch.device) -> None:
        self.device = device
        self.src_ptrs = self._make_buffer(max_copies, dtype=PTR_DTYPE)
        self.dst_ptrs = self._make_buffer(max_copies, dtype=torch.uint64)
        self.sizes = self._make_buffer(max_copies, dtype=torch.int32)
        self.seq_lens = self._make_buffer(max_reqs, dtype=torch.int64)
        self.slot_of_req = self._make_buffer(max_reqs, dtype=torch.int64)
        self.num_copies = 0
        self.owner: dict[int, str] = {}

    def _make_buffer(self, n: int, dtype: torch.dtype) -> CpuGpuBuffer:
        return CpuGpuBuffer(n, dtype, self.device)

    def add_state_copy(self, src: torch.Tensor, dst: torch.Tensor, req_id: str) -> None:
        if src.data_ptr() == dst.data_ptr():  # clean
            return
        i = self.num_copies
        self.src_ptrs.np[i] = src.data_ptr()  # clean
        self.dst_ptrs.np[i] = dst.data_ptr()  # clean
        self.sizes.np[i] = src.nbytes  # clean
        self.owner[dst.data_ptr()] = req_id  # clean
        self.num_copies += 1

    def add_block_copies(
        self, src_cache: torch.Tensor, dst_cache: torch.Tensor, pairs: list[tuple[int, int]]
    ) -> None:
        start = self.num_copies
        end = start + len(pairs)
        block_bytes = src_cache[0].nbytes
        src_ids = np.array([s for s, _ in pairs], dtype=np.uint64)
        dst_ids = np.array([d for _, d in pairs], dtype=np.uint64)
        src_base = np.uint64(src_cache.data_ptr())  # clean
        dst_base = np.uint64(dst_cache.data_ptr())  # clean
        self.src_ptrs.np[start:end] = src_base + src_ids * block_bytes  # clean
        self.dst_ptrs.np[start:end] = dst_base + dst_ids * np.uint64(block_bytes)  # clean
        self.sizes.np[start:end] = block_bytes  # clean
        self.num_copies = end

    def pad_to(self, n: int, scratch: torch.Tensor) -> None:
        self.src_ptrs.cpu[self.num_copies : n].fill_(scratch.data_ptr())  # clean
        self.dst_ptrs.cpu[self.num_copies : n].fill_(scratch.data_ptr())  # clean
        self.sizes.cpu[self.num_copies : n].fill_(0)

    def set_requests(self, seq_lens: list[int], slots: list[int]) -> None:
        n = len(seq_lens)
        self.seq_lens.np[:n] = seq_lens
        self.slot_of_req.np[:n] = slots
        self.seq_lens.copy_to_gpu(n)
        self.slot_of_req.copy_to_gpu(n)

    def execute(self) -> None:
        n = self.num_copies
        if n == 0:
            return
        src = self.src_ptrs.copy_to_gpu(n)
        dst = self.dst_ptrs.copy_to_gpu(n)
        sizes = self.sizes.copy_to_gpu(n)
        logger.debug("copying %d entries, first from %s", n, hex(int(self.src_ptrs.np[0])))  # clean
        batch_memcpy_kernel[(n,)](src, dst, sizes, BLOCK=COPY_BLOCK)
        self.num_copies = 0

    def verify(self, dsts: list[torch.Tensor]) -> None:
        held = self.dst_ptrs.gpu[: len(dsts)].cpu().tolist()
        assert held == [t.data_ptr() for t in dsts]  # clean
        assert int(self.dst_ptrs.np[0]) == dsts[0].data_ptr()  # clean


def gather_rows(cache: torch.Tensor, row_ids: torch.Tensor) -> torch.Tensor:
    row_bytes = cache[0].nbytes
    assert cache.data_ptr() % 16 == 0, f"cache at {cache.data_ptr():#x} is misaligned"  # clean
    out = torch.empty((row_ids.numel(), row_bytes), dtype=torch.uint8, device=cache.device)
    gather_rows_kernel[(row_ids.numel(),)](
        cache.data_ptr(),  # clean
        row_ids,
        out,
        row_bytes,
        BLOCK=COPY_BLOCK,
    )
    return out


def layer_table(kv_caches: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    ptrs = torch.tensor([t.data_ptr() for t in kv_caches], dtype=torch.uint64)  # clean
    return ptrs.to(device, non_blocking=True)


def layer_table_from_numpy(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    ptrs = np.fromiter((t.data_ptr() for t in kv_caches), dtype=np.uint64)  # clean
    return torch.from_numpy(ptrs)


def lengths_table(kv_caches: list[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([t.nbytes for t in kv_caches])  # clean
