"""Copy buffers for hybrid-model state held in dataclasses and NamedTuples: built by
classmethods and static factories from a buffer factory the runner passes in, and filled by
module functions that take the dataclass as an annotated parameter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch


class PinnedMirror:
    """A pinned host tensor, its numpy view and its device copy."""

    def __init__(self, n: int, dtype: torch.dtype, device: str = "cuda") -> None:
        self.cpu = torch.zeros(n, dtype=dtype, pin_memory=True)
        self.np = self.cpu.numpy()
        self.gpu = torch.zeros(n, dtype=dtype, device=device)


BufferFactory = Callable[..., PinnedMirror]


@dataclass
class StateCopyBuffers:
    """One entry per state copy of a step: source, destination, byte count."""

    src_addrs: PinnedMirror
    dst_addrs: PinnedMirror
    nbytes: PinnedMirror
    count: int = 0

    @classmethod
    def allocate(cls, max_copies: int, make_buffer: BufferFactory) -> StateCopyBuffers:
        return cls(
            src_addrs=make_buffer(max_copies, dtype=torch.int64),
            dst_addrs=make_buffer(max_copies, dtype=torch.int64),
            nbytes=make_buffer(max_copies, dtype=torch.int32),
        )


@dataclass
class Uint64StateCopyBuffers:
    src_addrs: PinnedMirror
    dst_addrs: PinnedMirror
    nbytes: PinnedMirror
    count: int = 0

    @classmethod
    def allocate(cls, max_copies: int, make_buffer: BufferFactory) -> Uint64StateCopyBuffers:
        return cls(
            make_buffer(max_copies, dtype=torch.uint64),
            make_buffer(max_copies, dtype=torch.uint64),
            make_buffer(max_copies, dtype=torch.int32),
        )


def add_state_copies(
    bufs: StateCopyBuffers, state: torch.Tensor, src_slot: int, dst_slots: list[int]
) -> None:
    src_np = bufs.src_addrs.np
    dst_np = bufs.dst_addrs.np
    slot_bytes = state.stride(0) * state.element_size()
    for dst_slot in dst_slots:
        i = bufs.count
        src_np[i] = state[src_slot].data_ptr()  # expect: signed-storage
        dst_np[i] = state.data_ptr() + dst_slot * slot_bytes  # expect: signed-storage
        bufs.nbytes.np[i] = slot_bytes  # clean
        bufs.count += 1


def add_state_copies_uint64(
    bufs: Uint64StateCopyBuffers, state: torch.Tensor, src_slot: int, dst_slots: list[int]
) -> None:
    slot_bytes = state.stride(0) * state.element_size()
    for dst_slot in dst_slots:
        i = bufs.count
        bufs.src_addrs.np[i] = state[src_slot].data_ptr()  # clean
        bufs.dst_addrs.np[i] = state.data_ptr() + dst_slot * slot_bytes  # clean
        bufs.nbytes.np[i] = slot_bytes  # clean
        bufs.count += 1


@dataclass
class LayerStateTable:
    """The base address of each layer's conv and SSM state, on the device."""

    conv_bases: torch.Tensor
    ssm_bases: torch.Tensor
    layers: list[int] = field(default_factory=list)

    @classmethod
    def for_layers(cls, num_layers: int, device: str) -> LayerStateTable:
        return cls(
            conv_bases=torch.zeros(num_layers, dtype=torch.int64, device=device),
            ssm_bases=torch.zeros(num_layers, dtype=torch.uint64, device=device),
        )

    def record(self, layer: int, conv: torch.Tensor, ssm: torch.Tensor) -> None:
        self.conv_bases[layer] = conv.data_ptr()  # expect: signed-storage
        self.ssm_bases[layer] = ssm.data_ptr()  # clean
        self.layers.append(layer)


class SlotColumns(NamedTuple):
    """Host columns of a slot-to-slot copy batch."""

    addrs: np.ndarray
    lengths: np.ndarray

    @staticmethod
    def empty(n: int) -> SlotColumns:
        return SlotColumns(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))


class Uint64SlotColumns(NamedTuple):
    addrs: np.ndarray
    lengths: np.ndarray

    @staticmethod
    def empty(n: int) -> Uint64SlotColumns:
        return Uint64SlotColumns(np.zeros(n, dtype=np.uint64), np.zeros(n, dtype=np.int64))


def slot_columns(slots: list[torch.Tensor]) -> tuple[SlotColumns, Uint64SlotColumns]:
    signed = SlotColumns.empty(len(slots))
    unsigned = Uint64SlotColumns.empty(len(slots))
    for i, slot in enumerate(slots):
        signed.addrs[i] = slot.data_ptr()  # expect: signed-storage
        signed.lengths[i] = slot.nbytes  # clean
        unsigned.addrs[i] = slot.data_ptr()  # clean
        unsigned.lengths[i] = slot.nbytes  # clean
    return signed, unsigned
