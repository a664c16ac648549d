"""Placement: real memory presented at an address the check chooses (an interval map, not one
offset), the guard around it, the strategies that draw placements, and the controls only a
placement exposes."""

from __future__ import annotations

import ctypes

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ptrport.addresses import ADDRESS_LIMIT, HIGH_HALF, INT64_MAX, MAX_ADDRESS, PAGE_SIZE, to_hex
from ptrport.check import controls
from ptrport.check import strategies as hst
from ptrport.check.batches import Batch, Entry
from ptrport.check.placements import ACROSS, ENDING_AT_TOP, GUARD_BELOW_TOP, Layout, placements
from ptrport.check.tables import UINT64, PointerTable
from ptrport.device.allocations import (
    allocate,
    allocation_from_record,
    release,
)
from ptrport.device.backends import CpuBackend, CpuPlacedBackend, CpuUsmBackend
from ptrport.device.presentation import (
    AS_IS,
    USM,
    DeviceFault,
    PlacementError,
    presenting,
    real_data_ptr,
)

CPU = CpuBackend()
USM_BACKEND = CpuUsmBackend()
PLACED = CpuPlacedBackend()


def _storage_start(tensor: torch.Tensor) -> int:
    return int(torch._C.StorageBase.data_ptr(tensor.untyped_storage()))


class TestPlace:
    @pytest.mark.parametrize("at", [INT64_MAX, HIGH_HALF, MAX_ADDRESS], ids=to_hex)
    def test_a_tensor_is_presented_at_exactly_the_address_asked_for(self, at: int) -> None:
        block = torch.arange(64, dtype=torch.uint8)
        tensor = block[at % 64 :]  # the real address then has the low bits of at
        if _storage_start(block) % 64:
            pytest.skip("the allocator gave a storage that is not 64-byte aligned")
        with presenting(USM) as memory:
            memory.place(tensor, at)
            assert tensor.data_ptr() == at
            assert block.data_ptr() == at - at % 64
            assert memory.real_address(at, 1, "load") == real_data_ptr(tensor)
            assert memory.real_address(at - at % 64, 64, "load") == _storage_start(block)

    @pytest.mark.parametrize("presentation", [AS_IS, USM], ids=lambda p: p.name)
    def test_1_lsh_63_works_for_any_tensor_torch_allocates(self, presentation: object) -> None:
        tensor = torch.full((100,), 7, dtype=torch.float32)
        with presenting(presentation) as memory:  # type: ignore[arg-type]
            memory.place(tensor, 1 << 63)
            assert tensor.data_ptr() == 1 << 63
            assert tensor[10:].data_ptr() == (1 << 63) + 40

    @pytest.mark.parametrize(
        ("place", "at", "why"),
        [
            pytest.param(None, HIGH_HALF + 1, r"must keep its real address's alignment",
                         id="misaligned"),
            pytest.param(None, HIGH_HALF + 128, r"overlaps memory at \[0x8000000000000000",
                         id="overlapping"),
            pytest.param(None, ADDRESS_LIMIT - 64, r"would run past 2\*\*64", id="past-2-64"),
            pytest.param(None, ADDRESS_LIMIT, "not a 64-bit address", id="too-high"),
            pytest.param(None, -64, "not a 64-bit address", id="negative"),
            pytest.param("x", HIGH_HALF, r"cannot place str 'x': place\(\) takes a torch.Tensor",
                         id="not-a-tensor"),
            pytest.param(torch.zeros(8, device="meta"), HIGH_HALF, "only CPU memory",
                         id="not-cpu-memory"),
        ],
    )  # fmt: skip
    def test_a_bad_placement_is_refused_in_one_line_and_changes_nothing(
        self, place: object, at: int, why: str
    ) -> None:
        placed = torch.zeros(256, dtype=torch.uint8)
        tensor = torch.zeros(256, dtype=torch.uint8)
        with presenting(USM) as memory:
            memory.place(placed, HIGH_HALF)
            before = tensor.data_ptr()
            with pytest.raises(PlacementError, match=why) as refused:
                memory.place(tensor if place is None else place, at)  # type: ignore[arg-type]
            assert "\n" not in str(refused.value)
            assert (placed.data_ptr(), tensor.data_ptr()) == (HIGH_HALF, before)
            assert memory.placements() == [HIGH_HALF]
            memory.place(tensor, HIGH_HALF + 256)  # the next good one is taken
            assert tensor.data_ptr() == HIGH_HALF + 256

    def test_placing_again_moves_the_storage_and_its_old_range_faults(self) -> None:
        tensor = torch.zeros(64, dtype=torch.uint8)
        with presenting(USM) as memory:
            memory.place(tensor, HIGH_HALF)
            memory.place(tensor, HIGH_HALF + PAGE_SIZE)
            assert tensor.data_ptr() == HIGH_HALF + PAGE_SIZE
            with pytest.raises(DeviceFault, match="where no memory of the check lies"):
                memory.real_address(HIGH_HALF, 1, "load")

    def test_a_released_placement_is_no_memory_any_more(self) -> None:
        tensor = torch.zeros(64, dtype=torch.uint8)
        with presenting(USM) as memory:
            memory.place(tensor, HIGH_HALF)
            memory.release(tensor)
            with pytest.raises(DeviceFault):
                memory.real_address(HIGH_HALF, 1, "load")
            assert tensor.data_ptr() == USM.present(real_data_ptr(tensor))


class TestGuard:
    def test_the_gap_between_two_placements_is_a_device_fault(self) -> None:
        first = torch.zeros(64, dtype=torch.uint8)
        second = torch.zeros(64, dtype=torch.uint8)
        with presenting(USM) as memory:
            memory.place(first, HIGH_HALF - 64)
            memory.place(second, HIGH_HALF + 64)
            assert memory.real_address(HIGH_HALF - 1, 1, "load") == real_data_ptr(first) + 63
            with pytest.raises(DeviceFault, match=f"load of 1 byte at {to_hex(HIGH_HALF)},"):
                memory.real_address(HIGH_HALF, 1, "load")
            with pytest.raises(DeviceFault, match="store of 8 bytes"):
                memory.real_address(HIGH_HALF + 60, 8, "store")

    def test_one_byte_past_a_placed_allocations_guard_band_is_a_device_fault(self) -> None:
        with PLACED.running():
            allocation = allocate(PLACED, numel=16, at=HIGH_HALF - 8, placed="across 2**63")
            assert allocation.address == HIGH_HALF - 8
            guard_end = allocation.end + allocation.guard_after
            memory = _active()
            memory.real_address(guard_end - 1, 1, "load")
            with pytest.raises(DeviceFault, match=f"at {to_hex(guard_end)}, where no memory"):
                memory.real_address(guard_end, 1, "load")
            front = allocation.address - allocation.guard_nbytes
            memory.real_address(front, 1, "load")
            with pytest.raises(DeviceFault):
                memory.real_address(front - 1, 1, "load")

    def test_a_stray_copy_into_the_gap_faults_and_memory_is_never_corrupted(self) -> None:
        with PLACED.running():
            src = allocate(PLACED, numel=64, at=HIGH_HALF - 32, placed="across 2**63")
            dst = allocate(PLACED, numel=64, at=HIGH_HALF + PAGE_SIZE, placed="across 2**63")
            before = (src.buffer.clone(), dst.buffer.clone())
            memory = _active()
            with pytest.raises(DeviceFault):
                # A copy that runs past dst's guard band, into the unmapped gap after it.
                memory.real_address(dst.address, 64 + dst.guard_after + 1, "store")
            assert torch.equal(src.buffer, before[0]) and torch.equal(dst.buffer, before[1])


def _active():  # type: ignore[no-untyped-def]
    from ptrport.device import presentation

    memory = presentation.active()
    assert memory is not None
    return memory


class TestPlacedAllocations:
    def test_an_allocation_keeps_its_offset_within_a_page(self) -> None:
        with PLACED.running():
            for at in (HIGH_HALF - 8, (1 << 48) - 1000, ADDRESS_LIMIT - 24):
                allocation = allocate(
                    PLACED, numel=24, at=at, placed="test", guard_after=0 if at > 1 << 63 else None
                )
                real = real_data_ptr(allocation.tensor)
                assert allocation.tensor.data_ptr() == at
                assert real % PAGE_SIZE == at % PAGE_SIZE

    def test_an_allocation_ending_at_2_64_copies_real_bytes_through_a_triton_kernel(self) -> None:
        pytest.importorskip("triton")
        from ptrport.check.engines import ENGINES

        with PLACED.running():
            src = allocate(PLACED, numel=40, at=ADDRESS_LIMIT - 40, placed="t", guard_after=0)
            dst = allocate(PLACED, numel=40, at=HIGH_HALF - 20, placed="t", fill_seed=1)
            assert src.end == ADDRESS_LIMIT and dst.address < HIGH_HALF < dst.end
            entry = Entry(src.address, dst.address, 40, src, dst)
            table = PointerTable(1, UINT64, PLACED)
            table.stage([entry])
            table.transfer(1)
            registry = _registry(src, dst)
            ENGINES["triton"].execute(table, 1, registry)
            assert torch.equal(dst.payload, src.payload)
            assert src.guards_intact() and dst.guards_intact()

    def test_a_placed_allocation_is_made_again_at_its_address_from_its_record(self) -> None:
        with PLACED.running():
            first = allocate(PLACED, numel=8, at=HIGH_HALF - 4, placed="across 2**63", fill_seed=3)
            record = first.to_record()
            release(first)
            again = allocation_from_record(record, PLACED)
            assert record["placed"] == "across 2**63" and record["address"] == "0x7ffffffffffffffc"
            assert again.address == first.address and again.placed == "across 2**63"
            assert torch.equal(again.payload, first.payload)

    def test_placing_outside_a_cpu_backends_scope_is_refused(self) -> None:
        with pytest.raises(PlacementError, match="in a CPU backend's scope"):
            allocate(CPU, numel=8, at=HIGH_HALF)


def _registry(*allocations):  # type: ignore[no-untyped-def]
    from ptrport.device.allocations import AllocationRegistry

    return AllocationRegistry(allocations)


# -- the strategies ---------------------------------------------------------------------------


LAYOUTS = st.builds(
    Layout,
    nbytes=st.integers(0, 4096),
    itemsize=st.sampled_from([1, 2, 4, 8]),
    guard_nbytes=st.just(64),
)


@given(layout=LAYOUTS, alignment=st.sampled_from([1, 8, 64]), data=st.data())
def test_every_placement_is_aligned_fits_and_meets_its_boundary(
    layout: Layout, alignment: int, data: st.DataObject
) -> None:
    placement = data.draw(placements(layout, alignment=alignment))
    end = placement.at + layout.nbytes
    assert placement.at % alignment == 0
    assert placement.at - layout.guard_nbytes >= 0 and end + placement.guard_after <= ADDRESS_LIMIT
    if placement.kind in ACROSS and layout.nbytes > alignment:
        assert placement.at < ACROSS[placement.kind] < end
    if placement.kind == ENDING_AT_TOP:
        assert end + placement.guard_after == ADDRESS_LIMIT and placement.guard_after < alignment
    if placement.kind == GUARD_BELOW_TOP:
        assert end + placement.guard_after == ADDRESS_LIMIT
        assert placement.guard_after >= layout.guard_nbytes


def test_placements_shrink_to_starting_just_below_2_63() -> None:
    from hypothesis import find

    layout = Layout(64, 1, 64)
    found = find(placements(layout), lambda p: p.at < HIGH_HALF)
    assert (found.kind, found.at) == ("across 2**63", HIGH_HALF - 1)


def test_allocations_on_cpu_placed_are_placed_and_released_after_each_example() -> None:
    seen: list[tuple[int, str | None]] = []
    with PLACED.running():

        @settings(max_examples=100, database=None, derandomize=True)
        @given(hst.allocations(PLACED, min_numel=1))
        def check(allocation):  # type: ignore[no-untyped-def]
            assert allocation.placed is not None
            assert allocation.tensor.data_ptr() == allocation.address
            assert allocation.address % allocation.dtype.itemsize == 0
            seen.append((allocation.address, allocation.placed))

        check()
        memory = _active()
        for address, _ in seen:
            with pytest.raises(DeviceFault):
                memory.real_address(address, 1, "load")
    assert {kind for _, kind in seen} >= {"across 2**63", ENDING_AT_TOP}


def test_the_same_seed_draws_the_same_allocations_on_every_cpu_backend() -> None:
    def draws(backend: object) -> list[tuple[str, int, int]]:
        found: list[tuple[str, int, int]] = []
        with backend.running():  # type: ignore[attr-defined]

            @settings(max_examples=20, database=None, derandomize=True)
            @given(hst.copy_batches(backend, real=True, synthetic=True))  # type: ignore[arg-type]
            def check(batch: Batch) -> None:
                found.extend((str(e.synthetic), e.nbytes, e.src * e.synthetic) for e in batch)

            check()
        return found

    assert draws(CPU) == draws(PLACED) == draws(USM_BACKEND)


# -- the controls only placement exposes ------------------------------------------------------


@pytest.mark.parametrize("name", ["end-mask-wrap", "signed-bounds"])
def test_a_placed_only_control_must_be_caught_only_where_allocations_are_placed(
    name: str,
) -> None:
    control = controls.catalogue()[name]
    assert controls.must_catch(control, PLACED) == {"batch_copy", "mixed_batches"}
    for backend in (CPU, USM_BACKEND):
        assert controls.must_catch(control, backend) == frozenset()
        assert "no allocation on" in str(controls.cannot_show(control, backend))


@pytest.mark.parametrize(
    ("name", "at", "offset"),
    [
        # The copy reaches 2**64: its end wraps to 0.
        ("end-mask-wrap", ADDRESS_LIMIT - 48, 16),
        # The copy starts at 2**63 in an allocation that starts below it: base <= src fails.
        ("signed-bounds", HIGH_HALF - 16, 16),
    ],
)
def test_a_placed_only_control_loses_a_copy_at_its_boundary_and_not_below_it(
    name: str, at: int, offset: int
) -> None:
    if name == "end-mask-wrap":
        pytest.importorskip("triton")
    for where, broken in ((at, True), (HIGH_HALF - PAGE_SIZE * 4, False)):
        control = controls.catalogue()[name]
        with PLACED.running():
            after = 0 if where + 48 == ADDRESS_LIMIT else None
            src = allocate(PLACED, numel=48, at=where, placed="t", guard_after=after)
            dst = allocate(PLACED, numel=48, at=HIGH_HALF + PAGE_SIZE * 8, placed="t", fill_seed=1)
            entry = Entry(src.address + offset, dst.address + offset, 32, src, dst)
            control.create(1, PLACED)
            control.stage(Batch((entry,)))
            control.transfer(1)
            control.execute(1)
            copied = torch.equal(dst.payload[offset:], src.payload[offset:])
            assert copied is not broken, (name, to_hex(where))


def test_the_real_memory_scenarios_are_the_ones_marked_so() -> None:
    import ast
    from pathlib import Path

    import ptrport.scenarios

    marked = set()
    for path in Path(ptrport.scenarios.__file__).parent.glob("test_*.py"):
        if "real_memory=True" in ast.unparse(ast.parse(path.read_text())):
            marked.add(path.stem.removeprefix("test_"))
    assert marked == controls.REAL_MEMORY_SCENARIOS


def test_ctypes_memmove_from_a_placed_address_is_never_handed_the_presented_one() -> None:
    from ptrport.check.engines import ENGINES

    with PLACED.running():
        src = allocate(PLACED, numel=16, at=HIGH_HALF - 8, placed="t", fill_seed=5)
        dst = allocate(PLACED, numel=16, at=(1 << 48) - 8, placed="t")
        table = PointerTable(1, UINT64, PLACED)
        table.stage([Entry(src.address, dst.address, 16, src, dst)])
        table.transfer(1)
        ENGINES["ctypes"].execute(table, 1, _registry(src, dst))
        assert torch.equal(dst.payload, src.payload)
    assert ctypes.sizeof(ctypes.c_void_p) == 8


# -- where it runs ----------------------------------------------------------------------------


def test_cpu_placed_runs_only_the_scenarios_that_copy_real_memory(
    pytester: pytest.Pytester,
) -> None:
    import json

    from tests.scenario_runs import copy_scenarios, use_profile

    use_profile(pytester, max_examples=5)
    copy_scenarios(pytester, "test_batch_copy", "test_table_round_trip")
    result = pytester.runpytest(
        "--backend=cpu,cpu-placed",
        "--subject=uint64/torch",
        "--platform-name=plat",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "reports" / "plat.json").read_text())
    ran = sorted((r["scenario"], r["backend"]) for r in report["results"])
    assert ("batch_copy", "cpu-placed") in ran and ("table_round_trip", "cpu") in ran
    assert ("table_round_trip", "cpu-placed") not in ran
    only = pytester.runpytest("--backend=cpu-placed", "-k", "round_trip", "-p", "no:cacheprovider")
    only.assert_outcomes()


def test_a_passing_example_log_keeps_a_copy_per_placement_preferring_one_at_its_boundary() -> None:
    from ptrport.check.examples import ExampleLog

    log = ExampleLog()
    with PLACED.running():
        across = allocate(PLACED, numel=64, at=HIGH_HALF - 32, placed="across 2**63")
        top = allocate(PLACED, numel=64, at=ADDRESS_LIMIT - 64, placed=ENDING_AT_TOP, guard_after=0)
        dst = allocate(PLACED, numel=64, at=HIGH_HALF + PAGE_SIZE, placed="x86-kernel")
        entries = (
            Entry(across.address, dst.address, 40, across, dst),  # crosses 2**63
            Entry(across.address + 40, dst.address, 24, across, dst),  # above it only
            Entry(top.address, dst.address, 48, top, dst),  # stops short of 2**64
            Entry(top.address + 48, dst.address, 16, top, dst),  # ends at 2**64
        )
        log.passed({"batch": Batch(entries)})
    placed = {r["placed"]: r for r in log.copied_records() if "placed" in r}
    assert placed["across 2**63"] == {
        "src": to_hex(HIGH_HALF - 32),
        "dst": to_hex(dst.address),
        "nbytes": 40,
        "placed": "across 2**63",
    }
    assert int(placed[ENDING_AT_TOP]["src"], 16) + placed[ENDING_AT_TOP]["nbytes"] == ADDRESS_LIMIT
