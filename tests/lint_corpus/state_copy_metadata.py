"""The step metadata of a hybrid-model runner, filled from another module: the copy buffers and
the state table are imported from ``state_copy_dataclasses`` and their dtypes are read there."""

from __future__ import annotations

import torch
from state_copy_dataclasses import (
    LayerStateTable,
    PinnedMirror,
    StateCopyBuffers,
    Uint64StateCopyBuffers,
)


class StepMetadataBuilder:
    def __init__(self, max_copies: int, device: str) -> None:
        self.copy_bufs = StateCopyBuffers.allocate(max_copies, self._make_buffer)
        self.uint64_bufs = Uint64StateCopyBuffers.allocate(max_copies, self._make_buffer)
        self.device = device

    def _make_buffer(self, n: int, dtype: torch.dtype) -> PinnedMirror:
        return PinnedMirror(n, dtype, self.device)

    def fork_prefix(self, state: torch.Tensor, src_slot: int, dst_slot: int) -> None:
        i = self.copy_bufs.count
        self.copy_bufs.src_addrs.np[i] = state[src_slot].data_ptr()  # expect: signed-storage
        self.uint64_bufs.src_addrs.np[i] = state[src_slot].data_ptr()  # clean
        self.copy_bufs.nbytes.np[i] = state[src_slot].nbytes  # clean


def collect_meta(copy_bufs: StateCopyBuffers, state: torch.Tensor, blocks: list[int]) -> int:
    src_addrs_np = copy_bufs.src_addrs.np
    offset = copy_bufs.count
    for block in blocks:
        src_addrs_np[offset] = state[block].data_ptr()  # expect: signed-storage
        copy_bufs.nbytes.np[offset] = state[block].nbytes  # clean
        offset += 1
    return offset


def collect_meta_uint64(
    copy_bufs: Uint64StateCopyBuffers, state: torch.Tensor, blocks: list[int]
) -> int:
    offset = copy_bufs.count
    for block in blocks:
        copy_bufs.src_addrs.np[offset] = state[block].data_ptr()  # clean
        copy_bufs.dst_addrs.gpu[offset] = state[block].data_ptr()  # clean
        offset += 1
    return offset


def refresh_table(table: LayerStateTable, convs: list[torch.Tensor]) -> None:
    for layer, conv in enumerate(convs):
        table.conv_bases[layer] = conv.data_ptr()  # expect: signed-storage
        table.ssm_bases[layer] = conv.data_ptr()  # clean
