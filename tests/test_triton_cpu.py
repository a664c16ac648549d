"""Plain ``@triton.jit`` kernels on CPU tensors: interpreted within ``cpu_launches`` without
``TRITON_INTERPRET``, every memory access translated from presented to real addresses, and a
device fault (never a dereference) for an address that is no memory of the check."""

from __future__ import annotations

import inspect
import os

import pytest
import torch

pytest.importorskip("triton")

import triton
import triton.language as tl
from triton.runtime import interpreter
from triton.runtime.jit import JITFunction

from ptrport.addresses import to_hex
from ptrport.device import triton_cpu
from ptrport.device.presentation import AS_IS, TBI, USM, DeviceFault, Presentation, presenting
from ptrport.device.triton_cpu import cpu_launches, on_cpu

INTERPRET_ENV = "TRITON_INTERPRET"
PRESENTATIONS = [AS_IS, USM, TBI]


@triton.jit
def plus_one(value):  # type: ignore[no-untyped-def]
    return value + 1


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    """y = x + 1, one block per program, through a @triton.jit helper."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, plus_one(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


@triton.jit
def load_from_table(table, out, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    """out[i] = *table[i] (a byte), for the addresses a table holds."""
    index = tl.arange(0, BLOCK)
    mask = index < n
    pointers = tl.load(table + index, mask=mask).to(tl.pointer_type(tl.uint8))
    tl.store(out + index, tl.load(pointers, mask=mask), mask=mask)


@triton.jit
def store_to_table(table, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    """*table[i] = 0x5a, for the addresses a table holds."""
    index = tl.arange(0, BLOCK)
    mask = index < n
    pointers = tl.load(table + index, mask=mask).to(tl.pointer_type(tl.uint8))
    tl.store(pointers, tl.full((BLOCK,), 0x5A, tl.uint8), mask=mask)


@triton.jit
def count_and_swap(counter, slot):  # type: ignore[no-untyped-def]
    tl.atomic_add(counter, 1)
    tl.atomic_cas(slot, 0, 9)


def test_a_plain_jit_kernel_runs_on_cpu_tensors_without_triton_interpret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(INTERPRET_ENV, raising=False)
    assert isinstance(add_one, JITFunction)
    x = torch.arange(40, dtype=torch.int64)
    y = torch.zeros_like(x)
    with cpu_launches():
        add_one[(3,)](x, y, 40, BLOCK=16)
    assert torch.equal(y, x + 1)
    assert INTERPRET_ENV not in os.environ


def _patchable() -> tuple[object, ...]:
    builder = interpreter.InterpreterBuilder
    return (JITFunction.run, JITFunction.__call__, builder.create_masked_load)


def test_everything_it_patched_is_put_back_also_after_an_exception() -> None:
    before = _patchable()
    with pytest.raises(ZeroDivisionError), cpu_launches(), cpu_launches():
        assert JITFunction.run is not before[0]
        _ = 1 / 0
    assert _patchable() == before


@pytest.mark.parametrize("presentation", PRESENTATIONS, ids=lambda p: p.name)
def test_loads_and_stores_through_presented_addresses_reach_the_real_bytes(
    presentation: Presentation,
) -> None:
    source = torch.arange(100, 116, dtype=torch.uint8)
    target = torch.zeros(16, dtype=torch.uint8)
    out = torch.zeros(16, dtype=torch.uint8)
    with presenting(presentation), cpu_launches():
        addresses = [source.data_ptr() + i for i in range(16)]
        table = torch.tensor(addresses, dtype=torch.uint64)
        load_from_table[(1,)](table, out, 16, BLOCK=16)
        store_to_table[(1,)](torch.tensor([target.data_ptr() + 3], dtype=torch.uint64), 1, BLOCK=16)
    assert out.tolist() == list(range(100, 116))
    assert target.tolist() == [0, 0, 0, 0x5A] + [0] * 12


@pytest.mark.parametrize("presentation", [USM, TBI], ids=lambda p: p.name)
def test_a_load_from_an_unpresented_address_is_a_device_fault_naming_it(
    presentation: Presentation,
) -> None:
    source = torch.arange(8, dtype=torch.uint8)
    out = torch.zeros(8, dtype=torch.uint8)
    real = int(torch._C.TensorBase.data_ptr(source))
    with presenting(presentation), cpu_launches():
        source.data_ptr()
        table = torch.tensor([real], dtype=torch.uint64)
        with pytest.raises(DeviceFault, match=f"load of 1 byte at {to_hex(real)}"):
            load_from_table[(1,)](table, out, 1, BLOCK=8)
    assert out.tolist() == [0] * 8


def test_a_store_outside_the_checks_memory_is_a_device_fault_and_writes_nothing() -> None:
    target = torch.zeros(4, dtype=torch.uint8)
    with presenting(USM), cpu_launches():
        past_the_end = target.data_ptr() + target.untyped_storage().nbytes()
        with pytest.raises(DeviceFault, match=f"store of 1 byte at {to_hex(past_the_end)}"):
            store_to_table[(1,)](torch.tensor([past_the_end], dtype=torch.uint64), 1, BLOCK=8)
    assert target.tolist() == [0, 0, 0, 0]


def test_masked_off_lanes_are_not_accessed_wherever_they_point() -> None:
    source = torch.arange(8, dtype=torch.uint8)
    out = torch.zeros(8, dtype=torch.uint8)
    with presenting(USM), cpu_launches():
        table = torch.tensor([source.data_ptr() + 2] + [0x1000] * 7, dtype=torch.uint64)
        load_from_table[(1,)](table, out, 1, BLOCK=8)
    assert out[0].item() == 2


def test_atomics_go_through_the_presentation_too() -> None:
    counter = torch.zeros(1, dtype=torch.int32)
    slot = torch.zeros(1, dtype=torch.int32)
    with presenting(TBI), cpu_launches():
        count_and_swap[(5,)](counter, slot)
    assert counter.item() == 5
    assert slot.item() == 9


def test_a_kernel_made_by_the_interpreter_itself_is_translated_as_well() -> None:
    kernel = interpreter.InterpretedFunction(load_from_table.fn)
    source = torch.arange(50, 54, dtype=torch.uint8)
    out = torch.zeros(4, dtype=torch.uint8)
    with presenting(USM), cpu_launches():
        table = torch.tensor([source.data_ptr() + i for i in range(4)], dtype=torch.uint64)
        kernel[(1,)](table, out, 4, BLOCK=4)
    assert out.tolist() == [50, 51, 52, 53]


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((torch.zeros(1),), {}, True),
        ((), {"x": torch.zeros(1)}, True),
        ((1, 2.0), {}, False),
        ((torch.zeros(1, device="meta"),), {}, False),
        ((triton.reinterpret(torch.zeros(1, dtype=torch.int8), tl.uint8),), {}, True),
    ],
    ids=["cpu-arg", "cpu-kwarg", "no-tensors", "not-cpu", "reinterpreted"],
)
def test_a_launch_is_interpreted_where_a_tensor_is_on_the_cpu(
    args: tuple[object, ...], kwargs: dict[str, object], expected: bool
) -> None:
    assert on_cpu(args, kwargs) is expected


@pytest.mark.parametrize(
    ("method", "leading"),
    [
        ("create_masked_load", ["self", "ptrs", "mask"]),
        ("create_masked_store", ["self", "ptrs", "value", "mask"]),
        ("create_atomic_cas", ["self", "ptr"]),
        ("create_atomic_rmw", ["self", "rmwOp", "ptr", "val", "mask"]),
    ],
)
def test_the_interpreter_accesses_memory_where_the_translation_expects(
    method: str, leading: list[str]
) -> None:
    parameters = list(inspect.signature(triton_cpu._ORIGINAL_ACCESSES[method]).parameters)
    assert parameters[: len(leading)] == leading


def test_the_installed_triton_is_one_the_translation_was_tested_on() -> None:
    major_minor = ".".join(triton.__version__.split(".")[:2])
    if major_minor not in triton_cpu.TESTED:
        pytest.skip(
            f"Triton {triton.__version__} is new to ptrport.device.triton_cpu: "
            "if the other tests here pass on it, add it to TESTED"
        )
    assert all(v.count(".") == 1 for v in triton_cpu.TESTED)
