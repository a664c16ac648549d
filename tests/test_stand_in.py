"""The CUDA stand-in: what torch.cuda answers, tensors asked for on cuda made on the CPU, streams
and events, undone afterwards; and data_ptr() under any TorchFunctionMode presented once, never
above 2**64 - 1."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.overrides import TorchFunctionMode

from ptrport.addresses import ADDRESS_LIMIT, HIGH_HALF
from ptrport.device import presentation
from ptrport.device.backends import load_backends
from ptrport.device.presentation import AS_IS, PLACED, SPREAD_KINDS, TBI, USM, presenting
from ptrport.device.stand_in import ANSWERS, CAPABILITY, CudaStandIn, Event, Stream
from ptrport.errors import HarnessError

CPU_BACKENDS = ("cpu", "cpu-usm", "cpu-tbi", "cpu-placed")


@pytest.fixture
def stand_in() -> CudaStandIn:
    with CudaStandIn().installed() as installed:
        yield installed


class TestQueries:
    def test_torch_cuda_answers_as_one_device(self, stand_in: CudaStandIn) -> None:
        assert torch.cuda.is_available() is True
        assert torch.cuda.device_count() == 1
        assert torch.cuda.current_device() == 0
        assert torch.cuda.get_device_capability() == CAPABILITY
        assert "stand-in" in torch.cuda.get_device_name(0)
        assert torch.cuda.get_device_properties(0).major == CAPABILITY[0]
        assert torch.cuda.synchronize() is None
        assert torch.accelerator.is_available() is True
        assert torch.accelerator.current_accelerator() == torch.device("cuda")
        assert torch.accelerator.synchronize() is None

    def test_every_answer_is_an_object_of_its_own(self, stand_in: CudaStandIn) -> None:
        # torch.compile's trace rules refuse one object filed under two of torch's names.
        answers = [getattr(torch.cuda, name) for name in ANSWERS]
        answers += [torch.accelerator.synchronize, torch.accelerator.is_available]
        assert len({id(a) for a in answers}) == len(answers)

    def test_it_initializes_no_device(self, stand_in: CudaStandIn) -> None:
        torch.empty(4, device="cuda")
        torch.cuda.synchronize()
        assert not torch.cuda.is_initialized()

    def test_uninstalled_everything_is_as_it_was(self) -> None:
        before = {name: torch.cuda.__dict__.get(name) for name in ANSWERS}
        available = torch.cuda.is_available()
        with CudaStandIn().installed():
            assert torch.cuda.is_available()
            with torch.device("cpu"):  # a mode left above the stand-in's is kept
                pass
        assert torch.cuda.is_available() is available
        assert {name: torch.cuda.__dict__.get(name) for name in ANSWERS} == before
        assert torch.overrides._get_current_function_mode_stack() == []

    def test_a_mode_left_above_it_stays_when_it_is_undone(self) -> None:
        stand_in = CudaStandIn()
        stand_in.install()
        above = torch.device("cpu")
        above.__enter__()
        try:
            stand_in.uninstall()
            stack = torch.overrides._get_current_function_mode_stack()
            assert len(stack) == 1 and type(stack[0]).__name__ == "DeviceContext"
        finally:
            above.__exit__(None, None, None)

    def test_replace_is_undone(self, stand_in: CudaStandIn) -> None:
        class Engine:
            @staticmethod
            def view(t: torch.Tensor) -> str:
                return "driver"

        stand_in.replace(Engine, "view", staticmethod(lambda t: "stood in"))
        assert Engine.view(torch.empty(1)) == "stood in"
        stand_in.uninstall()
        assert Engine.view(torch.empty(1)) == "driver"


class TestTensorsOnCuda:
    @pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda", 0)])
    def test_factories_make_them_on_the_cpu(self, stand_in: CudaStandIn, device: object) -> None:
        for made in (
            torch.empty(3, device=device),
            torch.zeros(3, device=device),
            torch.tensor([1, 2], device=device),
            torch.arange(4, device=device),
            torch.empty(1).new_zeros(2, device=device),
        ):
            assert made.device.type == "cpu"

    def test_to_and_cuda_keep_them_on_the_cpu(self, stand_in: CudaStandIn) -> None:
        t = torch.arange(4)
        assert t.cuda() is t
        assert t.to("cuda").device.type == "cpu"
        assert t.to(torch.device("cuda"), non_blocking=True).device.type == "cpu"
        assert t.to("cuda", torch.float64).dtype == torch.float64
        assert t.to(0).device.type == "cpu"
        assert t.to(device="cuda:0").device.type == "cpu"

    def test_device_contexts_and_the_default_device(self, stand_in: CudaStandIn) -> None:
        with torch.device("cuda"):
            assert torch.empty(2).device.type == "cpu"
        torch.set_default_device("cuda")
        try:
            assert torch.empty(2).device.type == "cpu"
        finally:
            torch.set_default_device(None)

    def test_pinned_memory_is_granted_as_the_cpu_can(self, stand_in: CudaStandIn) -> None:
        host = torch.empty(8, dtype=torch.uint64, pin_memory=True)
        assert host.pin_memory() is host
        copied = torch.arange(8).to("cuda", non_blocking=True)
        copied.record_stream(torch.cuda.current_stream())
        assert copied.tolist() == list(range(8))

    def test_streams_and_events(self, stand_in: CudaStandIn) -> None:
        stream = torch.cuda.Stream()
        assert isinstance(stream, Stream)
        with torch.cuda.stream(stream):
            event = torch.cuda.Event(enable_timing=True)
            event.record()
        assert isinstance(event, Event)
        stream.wait_event(event)
        torch.cuda.current_stream().wait_stream(stream)
        assert event.query() and stream.query()
        assert event.elapsed_time(torch.cuda.Event()) == 0.0


class _Passing(TorchFunctionMode):
    """A user's own mode: it calls every function as asked."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


def _modes() -> dict[str, object]:
    return {
        "torch.device": lambda: torch.device("cpu"),
        "own mode": _Passing,
        "stand-in": lambda: CudaStandIn().installed(),
    }


class TestDataPtrUnderModes:
    """A TorchFunctionMode hands ``TensorBase.data_ptr`` back to ``Tensor.data_ptr``: the
    address must still be presented once."""

    @pytest.mark.parametrize("mode", list(_modes()))
    @pytest.mark.parametrize("name", CPU_BACKENDS)
    def test_once_on_every_cpu_backend(self, name: str, mode: str) -> None:
        backend = load_backends()[name]
        tensor = torch.zeros(16)
        with backend.running():
            outside = tensor.data_ptr()
            with _modes()[mode]():  # type: ignore[operator]
                inside = tensor.data_ptr()
                storage = tensor.untyped_storage().data_ptr()
                made = torch.zeros(4)
                made_inside = made.data_ptr()
            assert made.data_ptr() == made_inside
        assert inside == outside == storage
        assert 0 <= inside < ADDRESS_LIMIT

    @pytest.mark.parametrize("name", CPU_BACKENDS)
    def test_of_a_tensor_subclass_with_its_own_torch_function(self, name: str) -> None:
        class Logged(torch.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                return super().__torch_function__(func, types, args, kwargs or {})

        plain = torch.zeros(4)
        logged = plain.as_subclass(Logged)
        with load_backends()[name].running():
            assert logged.data_ptr() == plain.data_ptr() < ADDRESS_LIMIT

    @pytest.mark.parametrize("name", CPU_BACKENDS)
    def test_under_the_default_device(self, name: str) -> None:
        backend = load_backends()[name]
        torch.set_default_device("cpu")
        try:
            with backend.running():
                address = torch.zeros(4).data_ptr()
        finally:
            torch.set_default_device(None)
        assert 0 <= address < ADDRESS_LIMIT
        assert (address >= HIGH_HALF) == (name in ("cpu-usm", "cpu-tbi"))

    @given(real=st.integers(0, USM.limit - 1))
    def test_a_presented_address_is_a_64_bit_one(self, real: int) -> None:
        for shown in (USM, TBI, AS_IS):
            if real < shown.limit:
                assert 0 <= shown.present(real) < ADDRESS_LIMIT

    def test_an_address_above_2_64_is_refused_not_handed_out(self) -> None:
        with pytest.raises(HarnessError, match="no 64-bit address"):
            presentation._handed(ADDRESS_LIMIT)
        assert presentation._handed(ADDRESS_LIMIT - 1) == ADDRESS_LIMIT - 1


class TestSpread:
    """A whole-suite run's test on cpu-placed: its storages placed without an edit."""

    def _placed(self, seed: int, count: int = 6) -> tuple[list[int], list[str], list[int]]:
        tensors = [torch.zeros(n, dtype=torch.uint8) for n in (1, 64, 100, 4096, 8, 3000)][:count]
        with presenting(PLACED, spread=seed) as memory:
            addresses = [t.data_ptr() for t in tensors]
            again = [t.data_ptr() for t in tensors]
            kinds = [memory.spread_kinds[a] for a in addresses]
        assert again == addresses
        return addresses, kinds, [t.numel() for t in tensors]

    def test_across_2_63_ending_at_2_64_and_at_the_top_in_turn(self) -> None:
        addresses, kinds, sizes = self._placed(seed=7)
        assert set(kinds) == set(SPREAD_KINDS)
        for address, kind, size in zip(addresses, kinds, sizes, strict=True):
            assert address + size <= ADDRESS_LIMIT
            if kind == "at the top":
                assert address >= USM.offset
        # The first of each kind is where it says; a later one goes to the nearest free place.
        first = {kind: kinds.index(kind) for kind in SPREAD_KINDS}
        across = first["across 2**63"]
        assert addresses[across] < HIGH_HALF < addresses[across] + sizes[across]
        ending = first["ending at 2**64"]
        assert ADDRESS_LIMIT - 64 < addresses[ending] + sizes[ending] <= ADDRESS_LIMIT

    def test_the_seed_decides_and_the_same_seed_places_again(self) -> None:
        assert self._placed(seed=1)[0] == self._placed(seed=1)[0]
        assert len({tuple(self._placed(seed=s)[0]) for s in range(6)}) > 1

    def test_it_keeps_the_real_alignment_and_the_bytes(self) -> None:
        tensor = torch.arange(64, dtype=torch.int32)
        real = presentation.real_data_ptr(tensor)
        with presenting(PLACED, spread=3) as memory:
            address = tensor.data_ptr()
            assert (address - real) % 64 == 0
            assert memory.real_address(address + 4, 4, "load") == real + 4
