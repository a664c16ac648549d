"""Triton kernels on CPU tensors, as users write them: plain ``@triton.jit``, no
``TRITON_INTERPRET``.

Within :func:`cpu_launches`, a launch (``kernel[grid](...)``) of a ``@triton.jit`` kernel whose
tensor arguments include a CPU tensor runs in Triton's interpreter; launches on GPU tensors
stay compiled. And every load, store and atomic the interpreter makes goes through the device
memory of the active presentation (:mod:`ptrport.device.presentation`): presented addresses become
real ones, and an address that is no device memory of the check raises
:class:`~ptrport.device.presentation.DeviceFault` before anything is touched.

The interpreter turns tensor arguments into pointers with ``data_ptr()`` (so they are presented
like any other) and makes every memory access in four ``InterpreterBuilder`` methods:
``create_masked_load``, ``create_masked_store``, ``create_atomic_cas`` and
``create_atomic_rmw`` (plain, atomic, polling and descriptor loads and stores all end in the
first two). Their leading parameters (``ptrs, mask``; ``ptrs, value, mask``; ``ptr``;
``rmwOp, ptr, val, mask``) are the same from Triton 3.0 to 3.9. Tested (tests/test_triton_cpu.py
and the scenarios) on the Triton releases in :data:`TESTED`. Triton 3.0's interpreter cannot run
these kernels at all (a string ``tl.constexpr`` annotation, ``uint64 % 8``), and before 3.7 it
needs numpy below 2.4 for a loop bound loaded from memory; neither is this module's doing.

Imported only where Triton is installed.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import triton
from triton.runtime import interpreter
from triton.runtime.errors import InterpreterError
from triton.runtime.jit import JITFunction

from ptrport.device import presentation
from ptrport.device.presentation import DeviceFault
from ptrport.device.scoped_patch import ScopedPatch

TESTED = ("3.2", "3.4", "3.6", "3.9")
"""Triton releases (major.minor) the translation was tested on."""

_Builder = interpreter.InterpreterBuilder
_ORIGINAL_RUN = JITFunction.run
_ORIGINAL_CALL = JITFunction.__call__
_ACCESSES = {
    "create_masked_load": "load",
    "create_masked_store": "store",
    "create_atomic_cas": "atomic",
    "create_atomic_rmw": "atomic",
}
_ORIGINAL_ACCESSES: dict[str, Callable[..., Any]] = {
    name: getattr(_Builder, name) for name in _ACCESSES
}


def on_cpu(args: Sequence[object], kwargs: Mapping[str, object]) -> bool:
    """Whether a launch with these arguments has a tensor on the CPU among them."""
    for value in (*args, *kwargs.values()):
        tensor = getattr(value, "base", value)  # triton.reinterpret wraps a tensor
        if isinstance(tensor, torch.Tensor) and tensor.is_cpu:
            return True
    return False


@functools.cache
def _interpreted(fn: Callable[..., object]) -> Any:
    return interpreter.InterpretedFunction(fn)


@contextlib.contextmanager
def _interpreting() -> Iterator[None]:
    """While an interpreted launch runs: ``@triton.jit`` helpers it calls are interpreted too,
    and Triton's own code sees interpreter mode."""
    knobs = getattr(triton, "knobs", None)  # Triton 3.4 and later
    scope = knobs.runtime.scope() if knobs is not None else contextlib.nullcontext()
    with scope:
        if knobs is not None:
            knobs.runtime.interpret = True
        JITFunction.__call__ = _call_interpreted
        try:
            yield
        finally:
            JITFunction.__call__ = _ORIGINAL_CALL


def _call_interpreted(self: JITFunction[Any], *args: Any, **kwargs: Any) -> Any:
    __tracebackhide__ = True  # a failure points into the kernel's code
    return _interpreted(self.fn)(*args, **kwargs)


def _run(self: JITFunction[Any], *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
    __tracebackhide__ = True
    if not on_cpu(args, kwargs):
        return _ORIGINAL_RUN(self, *args, grid=grid, warmup=warmup, **kwargs)
    if warmup:
        return None
    with _interpreting():
        try:
            return _interpreted(self.fn)[grid](*args, **kwargs)
        except InterpreterError as exc:
            fault = _device_fault(exc)
            if fault is None:
                raise
            raise fault from exc


def _device_fault(exc: BaseException) -> DeviceFault | None:
    """The device fault an interpreter error wraps, if it wraps one, as a new exception (the
    same one raised from its own wrapper would be its own cause's cause)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, DeviceFault):
            return DeviceFault(str(seen))
        seen = seen.__cause__
    return None


def _real(handle: Any, mask: Any, access: str) -> Any:
    """``handle`` (a tensor of pointers) with the lanes ``mask`` selects made real, or the
    handle itself where no presentation is active."""
    __tracebackhide__ = True
    memory = presentation.active()
    if memory is None:
        return handle
    element = handle.get_element_ty()
    nbytes = max(1, element.primitive_bitwidth // 8)
    addresses = np.asarray(handle.data, dtype=np.uint64)
    lanes = np.ones(addresses.shape, dtype=bool) if mask is None else mask.data
    lanes = np.broadcast_to(np.asarray(lanes, dtype=bool), addresses.shape)
    real = addresses.copy()
    real[lanes] = memory.translate(addresses[lanes], nbytes, access)
    return type(handle)(real, handle.dtype)


def _masked_load(self: Any, ptrs: Any, mask: Any, *rest: Any) -> Any:
    __tracebackhide__ = True
    original = _ORIGINAL_ACCESSES["create_masked_load"]
    return original(self, _real(ptrs, mask, "load"), mask, *rest)


def _masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
    __tracebackhide__ = True
    original = _ORIGINAL_ACCESSES["create_masked_store"]
    return original(self, _real(ptrs, mask, "store"), value, mask, *rest)


def _atomic_cas(self: Any, ptr: Any, *rest: Any) -> Any:
    __tracebackhide__ = True
    return _ORIGINAL_ACCESSES["create_atomic_cas"](self, _real(ptr, None, "atomic"), *rest)


def _atomic_rmw(self: Any, op: Any, ptr: Any, value: Any, mask: Any, *rest: Any) -> Any:
    __tracebackhide__ = True
    original = _ORIGINAL_ACCESSES["create_atomic_rmw"]
    return original(self, op, _real(ptr, mask, "atomic"), value, mask, *rest)


_TRANSLATED = {
    "create_masked_load": _masked_load,
    "create_masked_store": _masked_store,
    "create_atomic_cas": _atomic_cas,
    "create_atomic_rmw": _atomic_rmw,
}


_LAUNCHES = ScopedPatch(
    (JITFunction, "run", _run),
    *((_Builder, name, replacement) for name, replacement in _TRANSLATED.items()),
)


def cpu_launches() -> contextlib.AbstractContextManager[None]:
    """Within, ``@triton.jit`` kernels launched on CPU tensors run in the interpreter, and the
    interpreter's memory accesses go through the active presentation; nestable, undone on
    leaving the outermost scope (exceptions included)."""
    return _LAUNCHES.applied()


def launch(kernel: Any, grid: object, *args: object, **kwargs: object) -> None:
    """``kernel[grid](*args, **kwargs)``, interpreted where its tensors are on the CPU."""
    with cpu_launches():
        kernel[grid](*args, **kwargs)


@triton.jit
def _one_store(x):  # type: ignore[no-untyped-def]
    triton.language.store(x, 1)


def first_launch() -> None:
    """Launch a kernel of one store on a CPU tensor, outside any presentation: what Triton
    does once in a process on its first launch (it imports most of what it needs then) is done,
    so that a process forked from this one has it already."""
    launch(_one_store, (1,), torch.zeros(1, dtype=torch.int32))


def driver_backend() -> str:
    """The device kind Triton's active driver compiles for (``cuda``, ``hip``, ``xpu``)."""
    return str(triton.runtime.driver.active.get_current_target().backend)
