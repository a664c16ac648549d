"""Pointer tables for batched copies of Mamba conv and SSM state between cache slots; modelled on
the shape of the copy buffers a hybrid-model runner stages for its batch-memcpy kernel."""

from __future__ import annotations

import numpy as np
import torch

PTR_DTYPE = torch.int64
SIZE_DTYPE = torch.int32


def as_int64_bits(address: int) -> int:
    """The int64 with the same 64 bits as ``address``, which the kernel reads back as a pointer."""
    return address - (1 << 64) if address >= 1 << 63 else address  # clean


class StagingBuffer:
    """A host tensor (pinned where it can be), its numpy view and a device mirror."""

    def __init__(self, n: int, dtype: torch.dtype, device: torch.device) -> None:
        self.cpu = torch.zeros(n, dtype=dtype, pin_memory=device.type == "cuda")
        self.np = self.cpu.numpy()
        self.gpu = torch.zeros(n, dtype=dtype, device=device)

    def copy_to_gpu(self, n: int) -> torch.Tensor:
        return self.gpu[:n].copy_(self.cpu[:n], non_blocking=True)


class MambaCopyBuffers:
    """Source address, destination address and byte count of each state copy of one step."""

    def __init__(self, max_copies: int, device: torch.device) -> None:
        self.device = device
        self.src_ptrs = self._make_buffer(max_copies, dtype=torch.int64)
        self.dst_ptrs = self._make_buffer(max_copies, dtype=PTR_DTYPE)
        self.sizes = self._make_buffer(max_copies, dtype=SIZE_DTYPE)
        self.num_copies = 0

    def _make_buffer(self, n: int, dtype: torch.dtype) -> StagingBuffer:
        return StagingBuffer(n, dtype, self.device)

    def add_copy(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        i = self.num_copies
        self.src_ptrs.np[i] = src.data_ptr()  # expect: signed-storage
        self.dst_ptrs.np[i] = dst.data_ptr()  # expect: signed-storage
        self.sizes.np[i] = src.numel() * src.element_size()  # clean
        self.num_copies += 1

    def add_slot_copies(self, state: torch.Tensor, src_slot: int, dst_slots: list[int]) -> None:
        """Forks one request's state into the slots of the requests that share its prefix."""
        slot_bytes = state.stride(0) * state.element_size()
        base = state.data_ptr()
        for dst_slot in dst_slots:
            i = self.num_copies
            self.src_ptrs.np[i] = base + src_slot * slot_bytes  # expect: signed-storage
            self.dst_ptrs.np[i] = base + dst_slot * slot_bytes  # expect: signed-storage
            self.sizes.np[i] = slot_bytes  # clean
            self.num_copies += 1

    def pad_to(self, n: int, scratch: torch.Tensor) -> None:
        """Points the unused entries at a scratch slot so a captured graph can run a fixed grid."""
        start = self.num_copies
        self.src_ptrs.cpu[start:n].fill_(scratch.data_ptr())  # expect: signed-storage
        self.dst_ptrs.cpu[start:n].fill_(scratch.data_ptr())  # expect: signed-storage
        self.sizes.cpu[start:n].fill_(0)

    def prepare(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n = self.num_copies
        self.num_copies = 0
        return self.src_ptrs.copy_to_gpu(n), self.dst_ptrs.copy_to_gpu(n), self.sizes.copy_to_gpu(n)


class Uint64MambaCopyBuffers:
    """The same buffers with uint64 pointer columns; the sizes column stays int32."""

    def __init__(self, max_copies: int, device: torch.device) -> None:
        self.device = device
        self.src_ptrs = self._make_buffer(max_copies, dtype=torch.uint64)
        self.dst_ptrs = self._make_buffer(max_copies, dtype=torch.uint64)
        self.sizes = self._make_buffer(max_copies, dtype=torch.int32)
        self.num_copies = 0

    def _make_buffer(self, n: int, dtype: torch.dtype) -> StagingBuffer:
        return StagingBuffer(n, dtype, self.device)

    def add_copy(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        i = self.num_copies
        self.src_ptrs.np[i] = src.data_ptr()  # clean
        self.dst_ptrs.np[i] = dst.data_ptr()  # clean
        self.sizes.np[i] = src.numel() * src.element_size()  # clean
        self.num_copies += 1

    def add_slot_copies(self, state: torch.Tensor, src_slot: int, dst_slots: list[int]) -> None:
        slot_bytes = state.stride(0) * state.element_size()
        base = state.data_ptr()
        for dst_slot in dst_slots:
            i = self.num_copies
            self.src_ptrs.np[i] = base + src_slot * slot_bytes  # clean
            self.dst_ptrs.np[i] = base + dst_slot * slot_bytes  # clean
            self.sizes.np[i] = slot_bytes  # clean
            self.num_copies += 1

    def pad_to(self, n: int, scratch: torch.Tensor) -> None:
        start = self.num_copies
        self.src_ptrs.cpu[start:n].fill_(scratch.data_ptr())  # clean
        self.dst_ptrs.cpu[start:n].fill_(scratch.data_ptr())  # clean
        self.sizes.cpu[start:n].fill_(0)


class BitcastMambaCopyBuffers:
    """The int64 buffers kept, each address stored as the int64 with the same bits."""

    def __init__(self, max_copies: int, device: torch.device) -> None:
        self.device = device
        self.src_ptrs = self._make_buffer(max_copies, dtype=torch.int64)
        self.dst_ptrs = self._make_buffer(max_copies, dtype=torch.int64)
        self.sizes = self._make_buffer(max_copies, dtype=torch.int32)
        self.num_copies = 0

    def _make_buffer(self, n: int, dtype: torch.dtype) -> StagingBuffer:
        return StagingBuffer(n, dtype, self.device)

    def add_copy(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        i = self.num_copies
        self.src_ptrs.np[i] = as_int64_bits(src.data_ptr())  # clean
        self.dst_ptrs.np[i] = as_int64_bits(dst.data_ptr())  # clean
        self.sizes.np[i] = src.numel() * src.element_size()  # clean
        self.num_copies += 1

    def pad_to(self, n: int, scratch: torch.Tensor) -> None:
        start = self.num_copies
        self.src_ptrs.cpu[start:n].fill_(as_int64_bits(scratch.data_ptr()))  # clean
        self.dst_ptrs.cpu[start:n].fill_(as_int64_bits(scratch.data_ptr()))  # clean
        self.sizes.cpu[start:n].fill_(0)


class StateCopyTable:
    """The table as plain host tensors with cached numpy views, staged a batch at a time."""

    def __init__(self, max_copies: int) -> None:
        self.src_ptrs = torch.zeros(max_copies, dtype=torch.int64)
        self.dst_ptrs = torch.zeros(max_copies, dtype=torch.int64)
        self.sizes = torch.zeros(max_copies, dtype=torch.int64)
        self.src_ptrs_np = self.src_ptrs.numpy()
        self.dst_ptrs_np = self.dst_ptrs.numpy()
        self.sizes_np = self.sizes.numpy()

    def stage(self, srcs: list[torch.Tensor], dsts: list[torch.Tensor]) -> int:
        n = len(srcs)
        self.src_ptrs_np[:n] = [t.data_ptr() for t in srcs]  # expect: signed-storage
        self.dst_ptrs_np[:n] = [t.data_ptr() for t in dsts]  # expect: signed-storage
        self.sizes_np[:n] = [t.nbytes for t in srcs]  # clean
        return n

    def stage_bitcast(self, srcs: list[torch.Tensor], dsts: list[torch.Tensor]) -> int:
        n = len(srcs)
        self.src_ptrs_np[:n] = [as_int64_bits(t.data_ptr()) for t in srcs]  # clean
        dst = np.array([t.data_ptr() for t in dsts], dtype=np.uint64)  # clean
        self.dst_ptrs_np[:n] = dst.view(np.int64)  # clean
        self.sizes_np[:n] = [t.nbytes for t in srcs]  # clean
        return n

    def stage_typed(self, srcs: list[torch.Tensor], dsts: list[torch.Tensor]) -> int:
        """A uint64 array assigned into the int64 view is cast bit for bit."""
        n = len(srcs)
        src = np.array([t.data_ptr() for t in srcs], dtype=np.uint64)  # clean
        self.src_ptrs_np[:n] = src  # clean
        self.dst_ptrs[:n] = torch.tensor([t.data_ptr() for t in dsts], dtype=torch.uint64)  # clean
        self.sizes_np[:n] = [t.nbytes for t in srcs]  # clean
        return n


class Uint64StateCopyTable:
    """The same table with uint64 pointer columns."""

    def __init__(self, max_copies: int) -> None:
        self.src_ptrs = torch.zeros(max_copies, dtype=torch.uint64)
        self.dst_ptrs = torch.zeros(max_copies, dtype=torch.uint64)
        self.sizes = torch.zeros(max_copies, dtype=torch.int64)
        self.src_ptrs_np = self.src_ptrs.numpy()
        self.dst_ptrs_np = self.dst_ptrs.numpy()
        self.sizes_np = self.sizes.numpy()

    def stage(self, srcs: list[torch.Tensor], dsts: list[torch.Tensor]) -> int:
        n = len(srcs)
        self.src_ptrs_np[:n] = [t.data_ptr() for t in srcs]  # clean
        self.dst_ptrs_np[:n] = [t.data_ptr() for t in dsts]  # clean
        self.sizes_np[:n] = [t.nbytes for t in srcs]  # clean
        return n
