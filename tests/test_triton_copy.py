"""``interpreted_on_cpu``: a user's Triton kernel interpreted for CPU tensors, compiled for GPU
ones, with ``TRITON_INTERPRET`` left as it was."""

from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("triton")

import triton.language as tl

from harness import triton_copy
from harness.triton_copy import INTERPRET_ENV, interpreted_on_cpu, needs_interpreter


@interpreted_on_cpu
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    """y = x + 1, one block per program."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


def test_a_decorated_kernel_runs_on_cpu_tensors_by_the_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(INTERPRET_ENV, raising=False)
    x = torch.arange(40, dtype=torch.int64)
    y = torch.zeros_like(x)
    add_one[(3,)](x, y, 40, BLOCK=16)
    assert torch.equal(y, x + 1)
    assert type(add_one.variant(interpret=True)).__name__ == "InterpretedFunction"
    assert add_one.variant(interpret=True) is add_one.variant(interpret=True)
    assert INTERPRET_ENV not in os.environ
    assert add_one.__doc__ == "y = x + 1, one block per program."


def test_the_compiled_variant_is_a_jit_function_and_the_environment_is_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(INTERPRET_ENV, "0")
    compiled = triton_copy.jit(add_one.fn, interpret=False)
    assert type(compiled).__name__ == "JITFunction"
    assert os.environ[INTERPRET_ENV] == "0"


@pytest.mark.parametrize(
    ("args", "kwargs", "env", "expected"),
    [
        ((torch.zeros(1),), {}, None, True),
        ((), {"x": torch.zeros(1)}, None, True),
        ((1, 2.0), {}, None, False),
        ((1,), {}, "1", True),
        ((torch.zeros(1, device="meta"),), {}, None, False),
    ],
    ids=["cpu-arg", "cpu-kwarg", "no-tensors", "env-forces", "not-cpu"],
)
def test_a_launch_is_interpreted_for_cpu_tensors_or_when_the_environment_says_so(
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    env: str | None,
    expected: bool,
) -> None:
    if env is None:
        monkeypatch.delenv(INTERPRET_ENV, raising=False)
    else:
        monkeypatch.setenv(INTERPRET_ENV, env)
    assert needs_interpreter(args, kwargs) is expected
