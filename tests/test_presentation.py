"""Presented addresses: what ``data_ptr()`` returns inside a presentation, that it is undone on
any exit, and the device-memory guard that refuses an access outside the check's memory."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ptrport.addresses import HIGH_HALF, INT64_MAX, MAX_ADDRESS, to_hex
from ptrport.device.presentation import (
    AS_IS,
    TBI,
    USM,
    DeviceFault,
    DeviceMemory,
    Presentation,
    active,
    presenting,
)
from ptrport.errors import HarnessError

PRESENTATIONS = [AS_IS, USM, TBI]
UPPER_HALF = [USM, TBI]


def _unpatched() -> bool:
    return "data_ptr" not in vars(torch.Tensor) and "data_ptr" not in vars(torch.UntypedStorage)


class TestPresentation:
    @pytest.mark.parametrize(
        ("presentation", "real", "presented"),
        [
            (USM, 0, 0xFFFF_8000_0000_0000),
            (USM, 0x5CCB_8523_1CC0, 0xFFFF_DCCB_8523_1CC0),
            (USM, (1 << 47) - 1, MAX_ADDRESS),
            (TBI, 0, 0xB400_0000_0000_0000),
            (TBI, 0x7757_036010, 0xB400_0077_5703_6010),
            (TBI, (1 << 56) - 1, 0xB4FF_FFFF_FFFF_FFFF),
            (AS_IS, INT64_MAX, INT64_MAX),
            (AS_IS, HIGH_HALF, HIGH_HALF),
            (AS_IS, MAX_ADDRESS, MAX_ADDRESS),
        ],
        ids=lambda v: v.name if isinstance(v, Presentation) else to_hex(v),
    )
    def test_it_presents_the_shapes_of_the_devices_it_stands_for(
        self, presentation: Presentation, real: int, presented: int
    ) -> None:
        assert presentation.present(real) == presented
        back, valid = presentation.unpresented(np.array([presented], dtype=np.uint64))
        assert bool(valid[0]) and int(back[0]) == real

    @pytest.mark.parametrize(
        ("presentation", "real"), [(USM, 1 << 47), (TBI, 1 << 56), (USM, -1)], ids=str
    )
    def test_a_real_address_it_cannot_present_is_refused_in_one_line(
        self, presentation: Presentation, real: int
    ) -> None:
        with pytest.raises(HarnessError, match=f"cannot present .* as a {presentation.name}"):
            presentation.present(real)

    @pytest.mark.parametrize("presentation", UPPER_HALF, ids=lambda p: p.name)
    @given(data=st.data())
    def test_every_presented_address_is_in_the_upper_half_and_comes_back(
        self, presentation: Presentation, data: st.DataObject
    ) -> None:
        real = data.draw(st.integers(0, presentation.limit - 1))
        presented = presentation.present(real)
        assert presented >= HIGH_HALF
        back, valid = presentation.unpresented(np.array([presented], dtype=np.uint64))
        assert bool(valid[0]) and int(back[0]) == real

    @pytest.mark.parametrize("presentation", UPPER_HALF, ids=lambda p: p.name)
    @given(address=st.integers(0, INT64_MAX))
    def test_no_lower_half_address_is_a_presented_one(
        self, presentation: Presentation, address: int
    ) -> None:
        _, valid = presentation.unpresented(np.array([address], dtype=np.uint64))
        assert not bool(valid[0])


class TestPresenting:
    @pytest.mark.parametrize("presentation", PRESENTATIONS, ids=lambda p: p.name)
    def test_data_ptr_is_presented_inside_and_real_outside(
        self, presentation: Presentation
    ) -> None:
        tensor = torch.arange(16, dtype=torch.int64)
        real = tensor.data_ptr()
        storage_real = tensor.untyped_storage().data_ptr()
        with presenting(presentation):
            assert tensor.data_ptr() == presentation.present(real)
            assert tensor[3:].data_ptr() == presentation.present(real + 24)
            assert tensor.untyped_storage().data_ptr() == presentation.present(storage_real)
        assert tensor.data_ptr() == real
        assert _unpatched()

    def test_numpy_views_and_torch_operations_are_unaffected(self) -> None:
        tensor = torch.arange(8, dtype=torch.int64)
        real = tensor.data_ptr()
        with presenting(USM):
            view = tensor.numpy()
            assert view.ctypes.data == real
            view[2] = 40
            assert (tensor + 1)[2].item() == 41
            assert torch.equal(tensor.clone(), tensor)

    def test_an_empty_tensor_and_a_meta_tensor_keep_their_data_ptr(self) -> None:
        with presenting(USM):
            assert torch.zeros(0).data_ptr() == 0
            assert torch.zeros(4, device="meta").data_ptr() == 0

    def test_it_is_undone_when_the_code_inside_raises(self) -> None:
        with pytest.raises(ZeroDivisionError), presenting(USM):
            assert not _unpatched()
            _ = 1 / 0
        assert _unpatched()
        assert torch.Tensor.data_ptr is torch._C.TensorBase.data_ptr
        assert active() is None

    def test_nested_scopes_present_with_the_innermost_and_undo_at_the_outermost(self) -> None:
        tensor = torch.zeros(4)
        real = tensor.data_ptr()
        with presenting(USM) as outer:
            with presenting(TBI) as inner:
                assert active() is inner
                assert tensor.data_ptr() == TBI.present(real)
            assert active() is outer
            assert tensor.data_ptr() == USM.present(real)
        assert tensor.data_ptr() == real
        assert _unpatched()

    def test_a_data_ptr_patched_by_someone_else_is_put_back(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def theirs(tensor: torch.Tensor) -> int:
            return 7

        monkeypatch.setattr(torch.Tensor, "data_ptr", theirs, raising=False)
        with presenting(USM):
            assert torch.Tensor.data_ptr is not theirs
        assert vars(torch.Tensor)["data_ptr"] is theirs


class TestDeviceMemory:
    def test_an_address_handed_out_is_device_memory_to_its_storage_end(self) -> None:
        tensor = torch.zeros(64, dtype=torch.uint8)
        real = _real(tensor)
        with presenting(USM) as memory:
            start = tensor.data_ptr()
            assert memory.real_address(start, 64, "load") == real
            assert memory.real_address(start + 63, 1, "store") == real + 63
            with pytest.raises(DeviceFault, match=f"load of 2 bytes at {to_hex(start + 63)}"):
                memory.real_address(start + 63, 2, "load")

    def test_memory_never_handed_out_is_a_device_fault_naming_the_address(self) -> None:
        handed = torch.zeros(8, dtype=torch.uint8)
        other = torch.zeros(8, dtype=torch.uint8)
        with presenting(USM) as memory:
            handed.data_ptr()
            elsewhere = USM.present(_real(other))
            with pytest.raises(DeviceFault, match=f"at {to_hex(elsewhere)}, where no memory"):
                memory.real_address(elsewhere, 1, "load")

    @pytest.mark.parametrize("presentation", UPPER_HALF, ids=lambda p: p.name)
    def test_a_real_address_on_an_upper_half_backend_is_no_address_of_it(
        self, presentation: Presentation
    ) -> None:
        tensor = torch.zeros(8, dtype=torch.uint8)
        with presenting(presentation) as memory:
            tensor.data_ptr()
            real = _real(tensor)
            with pytest.raises(
                DeviceFault, match=f"{to_hex(real)}, which is no {presentation.name}"
            ):
                memory.real_address(real, 1, "load")

    def test_a_fault_counts_the_other_lanes_that_fault(self) -> None:
        memory = DeviceMemory(USM)
        lanes = np.array([USM.present(0x1000 + i) for i in range(4)], dtype=np.uint64)
        with pytest.raises(DeviceFault, match=r"0xffff800000001000.*\(and 3 more lanes\)"):
            memory.translate(lanes, 1, "load")

    def test_it_keeps_the_last_three_storages_handed_out_the_newest_last(self) -> None:
        tensors = [torch.zeros(64, dtype=torch.uint8) for _ in range(5)]
        placed = torch.zeros(64, dtype=torch.uint8)
        with presenting(USM) as memory:
            memory.place(placed, at=1 << 63)
            addresses = [t.data_ptr() for t in tensors]
            assert placed.data_ptr() == 1 << 63
            assert memory.presented_last() == addresses[2:]
            # Asked again, a storage is the newest; a view of it is the same storage.
            assert tensors[2][8:].data_ptr() == addresses[2] + 8
            assert memory.presented_last() == [addresses[3], addresses[4], addresses[2]]

    def test_storage_handed_out_stays_alive_until_the_scope_ends(self) -> None:
        with presenting(USM) as memory:
            tensor = torch.full((32,), 7, dtype=torch.uint8)
            address = tensor.data_ptr()
            storage = tensor.untyped_storage()
            del tensor
            assert memory.real_address(address, 32, "load") == _real_storage(storage)
            # The registry holds the storage: after the check's own references go, its bytes
            # are still the tensor's, not freed memory another allocation may take.
            assert sys.getrefcount(storage) > 2

    def test_a_storage_resized_since_is_no_memory_at_its_old_range(self) -> None:
        tensor = torch.zeros(16, dtype=torch.uint8)
        with presenting(USM) as memory:
            address = tensor.data_ptr()
            tensor.untyped_storage().resize_(1 << 20)
            if USM.present(_real(tensor)) == address:
                pytest.skip("the allocator grew the block in place")
            with pytest.raises(DeviceFault):
                memory.real_address(address, 1, "load")


def _real_storage(storage: torch.UntypedStorage) -> int:
    return int(torch._C.StorageBase.data_ptr(storage))


def _real(tensor: torch.Tensor) -> int:
    return int(torch._C.TensorBase.data_ptr(tensor))
