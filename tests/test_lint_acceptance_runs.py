"""The acceptance cases of ``ptrport lint`` (:mod:`tests.lint_acceptance`) run: with CPU memory
presented at upper-half addresses every flagged variant breaks and every clean one keeps each
address bit for bit, while at plain CPU addresses the flagged ones seem to work, which is why
such code ships. Addresses are only stored and compared here, never dereferenced."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ptrport.addresses import HIGH_HALF
from ptrport.device.presentation import TBI, USM, Presentation, presenting
from tests.lint_acceptance import (
    BitcastPointerBuffers,
    Int64PointerBuffers,
    Uint64PointerBuffers,
    bitcast_pointer_table,
    block_addresses_signed,
    block_addresses_unsigned,
    int64_pointer_table,
    uint64_pointer_table,
)

UPPER_HALF = pytest.mark.parametrize("presentation", [USM, TBI], ids=lambda p: p.name)
BLOCK_BYTES = 4096 + 16
BLOCK_IDS = [1, 3, 7]
"""In ``[2**63, 2**64)`` float64 keeps addresses to multiples of 2048 only. Blocks 1 and 3 lie
``2 * 4112 = 8224`` bytes apart, 32 modulo 2048, so at most one of them is such a multiple:
whatever the base, a float64 result rounds at least one of the three addresses."""


def _tensors() -> list[torch.Tensor]:
    """Three small CPU tensors with storages of their own."""
    return [torch.zeros(4, dtype=torch.float32) for _ in range(3)]


def _addresses(tensors: list[torch.Tensor], *, upper: bool) -> list[int]:
    """The ``data_ptr()`` of each tensor as code sees it here, in the half the test expects."""
    addresses = [t.data_ptr() for t in tensors]
    assert all((a >= HIGH_HALF) == upper for a in addresses)
    return addresses


def _exact_blocks(base: int) -> list[int]:
    return [base + i * BLOCK_BYTES for i in BLOCK_IDS]


class TestPointerBuffers:
    @UPPER_HALF
    def test_an_int64_pointer_buffer_overflows_on_an_upper_half_address(
        self, presentation: Presentation
    ) -> None:
        tensors = _tensors()
        buffers = Int64PointerBuffers(len(tensors))
        with presenting(presentation):
            _addresses(tensors, upper=True)
            with pytest.raises(OverflowError, match="too large to convert to C long"):
                buffers.stage(tensors)

    @UPPER_HALF
    def test_a_uint64_pointer_buffer_holds_every_upper_half_address(
        self, presentation: Presentation
    ) -> None:
        tensors = _tensors()
        buffers = Uint64PointerBuffers(len(tensors))
        with presenting(presentation):
            addresses = _addresses(tensors, upper=True)
            buffers.stage(tensors)
        assert buffers.src_ptrs_np.dtype == np.uint64
        assert [int(v) for v in buffers.src_ptrs_np] == addresses
        assert buffers.src_ptrs.tolist() == addresses

    @UPPER_HALF
    def test_a_bitcast_pointer_buffer_holds_every_upper_half_addresses_bits(
        self, presentation: Presentation
    ) -> None:
        tensors = _tensors()
        buffers = BitcastPointerBuffers(len(tensors))
        with presenting(presentation):
            addresses = _addresses(tensors, upper=True)
            buffers.stage(tensors)
        assert buffers.src_ptrs.dtype == torch.int64
        assert all(v < 0 for v in buffers.src_ptrs.tolist())
        assert buffers.src_ptrs_np.view(np.uint64).tolist() == addresses
        assert buffers.src_ptrs.view(torch.uint64).tolist() == addresses

    def test_an_int64_pointer_buffer_seems_to_work_at_lower_half_addresses(self) -> None:
        tensors = _tensors()
        buffers = Int64PointerBuffers(len(tensors))
        buffers.stage(tensors)
        assert buffers.src_ptrs.tolist() == _addresses(tensors, upper=False)


class TestPointerTables:
    @UPPER_HALF
    def test_an_int64_pointer_table_refuses_an_upper_half_address(
        self, presentation: Presentation
    ) -> None:
        tensors = _tensors()
        with presenting(presentation):
            _addresses(tensors, upper=True)
            with pytest.raises(ValueError, match="Overflow when unpacking long long"):
                int64_pointer_table(tensors)

    @UPPER_HALF
    def test_a_uint64_pointer_table_holds_every_upper_half_address(
        self, presentation: Presentation
    ) -> None:
        tensors = _tensors()
        with presenting(presentation):
            addresses = _addresses(tensors, upper=True)
            table = uint64_pointer_table(tensors)
        assert table.dtype == torch.uint64
        assert table.tolist() == addresses
        assert table.numpy().tolist() == addresses

    @UPPER_HALF
    def test_a_bitcast_pointer_table_holds_every_upper_half_addresses_bits(
        self, presentation: Presentation
    ) -> None:
        tensors = _tensors()
        with presenting(presentation):
            addresses = _addresses(tensors, upper=True)
            table = bitcast_pointer_table(tensors)
        assert table.dtype == torch.int64
        assert all(v < 0 for v in table.tolist())
        assert table.view(torch.uint64).tolist() == addresses
        assert table.numpy().view(np.uint64).tolist() == addresses

    def test_an_int64_pointer_table_seems_to_work_at_lower_half_addresses(self) -> None:
        tensors = _tensors()
        table = int64_pointer_table(tensors)
        assert table.dtype == torch.int64
        assert table.tolist() == _addresses(tensors, upper=False)


class TestBlockAddresses:
    @UPPER_HALF
    def test_signed_block_ids_turn_upper_half_addresses_into_rounded_floats(
        self, presentation: Presentation
    ) -> None:
        base = torch.zeros(4, dtype=torch.float32)
        with presenting(presentation):
            (address,) = _addresses([base], upper=True)
            blocks = block_addresses_signed(base, BLOCK_IDS, BLOCK_BYTES)
        exact = _exact_blocks(address)
        computed = [int(v) for v in blocks.tolist()]
        assert blocks.dtype == np.float64
        assert computed != exact
        # Only the low bits are lost: each is a multiple of 2048 (the spacing of float64 there),
        # within 2048 of the address (the base rounds, then the sum: half a step each).
        assert all(
            abs(c - e) <= 2048 and c % 2048 == 0 for c, e in zip(computed, exact, strict=True)
        )

    @UPPER_HALF
    def test_unsigned_block_ids_keep_every_upper_half_block_address_exact(
        self, presentation: Presentation
    ) -> None:
        base = torch.zeros(4, dtype=torch.float32)
        with presenting(presentation):
            (address,) = _addresses([base], upper=True)
            blocks = block_addresses_unsigned(base, BLOCK_IDS, BLOCK_BYTES)
        assert blocks.dtype == np.uint64
        assert blocks.tolist() == _exact_blocks(address)

    def test_signed_block_ids_seem_to_work_at_lower_half_addresses(self) -> None:
        base = torch.zeros(4, dtype=torch.float32)
        blocks = block_addresses_signed(base, BLOCK_IDS, BLOCK_BYTES)
        (address,) = _addresses([base], upper=False)
        # Still float64, but a lower-half address is below 2**53, where float64 is exact.
        assert blocks.dtype == np.float64
        assert [int(v) for v in blocks.tolist()] == _exact_blocks(address)
