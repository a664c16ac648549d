"""Debug checks that read a staged pointer table back and compare it with the addresses staged;
modelled on the shape of the self-checks engines run after building the int64 pointer tables of
their copy kernels (the table itself is filled correctly here; the comparisons are the point)."""

from __future__ import annotations

import numpy as np
import torch


def to_int64_bits(address: int) -> int:
    return address - 2**64 if address >= 2**63 else address  # clean


def from_int64_bits(value: int) -> int:
    return value + 2**64 if value < 0 else value  # clean


def lookup_key(address: int) -> int:
    """The key under which a table entry's read-back value is looked up."""
    return address - 2**64  # expect: bad-bitcast


class PointerTable:
    """Host and device copies of an int64 pointer table and its int64 sizes column."""

    def __init__(self, capacity: int, device: torch.device) -> None:
        self.host = torch.zeros(capacity, dtype=torch.int64)
        self.host_np = self.host.numpy()
        self.device_table = torch.zeros(capacity, dtype=torch.int64, device=device)
        self.sizes = torch.zeros(capacity, dtype=torch.int64)
        self.n = 0

    def stage(self, tensors: list[torch.Tensor]) -> None:
        n = len(tensors)
        ptrs = np.array([t.data_ptr() for t in tensors], dtype=np.uint64)  # clean
        self.host_np[:n] = ptrs.view(np.int64)  # clean
        self.sizes[:n] = torch.tensor([t.nbytes for t in tensors], dtype=torch.int64)  # clean
        self.device_table[:n].copy_(self.host[:n], non_blocking=True)
        self.n = n

    def verify_legacy(self, tensors: list[torch.Tensor]) -> None:
        expected = [t.data_ptr() for t in tensors]
        held = self.device_table[: self.n].cpu().tolist()
        if held != expected:  # expect: signed-compare
            raise AssertionError("pointer table does not hold the staged addresses")

    def verify(self, tensors: list[torch.Tensor]) -> None:
        expected = [t.data_ptr() for t in tensors]
        held = self.device_table[: self.n].cpu().view(torch.uint64).tolist()
        if held != expected:  # clean
            raise AssertionError("pointer table does not hold the staged addresses")

    def verify_masked(self, tensors: list[torch.Tensor]) -> None:
        expected = [t.data_ptr() for t in tensors]
        held = [v & 0xFFFF_FFFF_FFFF_FFFF for v in self.host[: self.n].tolist()]
        assert held == expected  # clean

    def verify_signed(self, tensors: list[torch.Tensor]) -> None:
        """Compares in the signed domain: both sides are int64 bit patterns."""
        expected = [to_int64_bits(t.data_ptr()) for t in tensors]
        assert self.host[: self.n].tolist() == expected  # clean

    def verify_sizes(self, tensors: list[torch.Tensor]) -> None:
        assert self.sizes[: self.n].tolist() == [t.nbytes for t in tensors]  # clean

    def index_of(self, t: torch.Tensor) -> int:
        p = t.data_ptr()
        for i in range(self.n):
            if int(self.host[i]) == p:  # expect: signed-compare
                return i
        return -1

    def index_of_fixed(self, t: torch.Tensor) -> int:
        p = t.data_ptr()
        for i in range(self.n):
            if int(self.host[i]) % 2**64 == p:  # clean
                return i
        return -1

    def live_entries(self, tensors: list[torch.Tensor]) -> list[int]:
        live = {t.data_ptr() for t in tensors}
        return [v for v in self.host[: self.n].tolist() if v in live]  # expect: signed-compare

    def live_entries_fixed(self, tensors: list[torch.Tensor]) -> list[int]:
        live = {t.data_ptr() for t in tensors}
        return [v for v in self.host[: self.n].view(torch.uint64).tolist() if v in live]  # clean

    def owner(self, i: int, regions: list[torch.Tensor]) -> torch.Tensor | None:
        p = self.host[i].item()
        for r in regions:
            if r.data_ptr() <= p < r.data_ptr() + r.nbytes:  # expect: signed-compare
                return r
        return None

    def owner_fixed(self, i: int, regions: list[torch.Tensor]) -> torch.Tensor | None:
        p = from_int64_bits(self.host[i].item())
        for r in regions:
            if r.data_ptr() <= p < r.data_ptr() + r.nbytes:  # clean
                return r
        return None

    def first_is(self, t: torch.Tensor) -> bool:
        return self.host[0].item() == t.data_ptr()  # expect: signed-compare

    def entries_by_tensor(self, tensors: list[torch.Tensor]) -> list[torch.Tensor | None]:
        by_value = {lookup_key(t.data_ptr()): t for t in tensors}
        return [by_value.get(v) for v in self.host[: self.n].tolist()]


def roundtrip_check(tensors: list[torch.Tensor]) -> None:
    """The table a kernel with an int64 parameter gets, checked on the host before launch."""
    ptrs = [t.data_ptr() for t in tensors]
    table = torch.tensor(ptrs, dtype=torch.uint64).view(torch.int64)  # clean
    assert table.tolist() == ptrs  # expect: signed-compare
    assert table.view(torch.uint64).tolist() == ptrs  # clean
    assert [v % 2**64 for v in table.tolist()] == ptrs  # clean


def aliasing_check(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.data_ptr() == b.data_ptr()  # clean
