"""The Triton batch copy kernel: one program per table entry, like the batch_memcpy kernels of
inference engines; and :func:`interpreted_on_cpu`, which lets a user's own kernel run the same
way, by the Triton interpreter on CPU tensors and compiled on GPU tensors. Imported only where
Triton is installed."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import triton
import triton.language as tl

INTERPRET_ENV = "TRITON_INTERPRET"


def _batch_copy(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    entry = tl.program_id(0)
    nbytes = tl.load(sizes + entry)
    src_address = tl.load(src_ptrs + entry)
    dst_address = tl.load(dst_ptrs + entry)
    aligned = (src_address % 8 == 0) & (dst_address % 8 == 0) & (nbytes % 8 == 0)
    if aligned:
        src_words = src_address.to(tl.pointer_type(tl.uint64))
        dst_words = dst_address.to(tl.pointer_type(tl.uint64))
        nwords = nbytes // 8
        for start in range(0, nwords, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < nwords
            tl.store(dst_words + offsets, tl.load(src_words + offsets, mask=mask), mask=mask)
    else:
        src_bytes = src_address.to(tl.pointer_type(tl.uint8))
        dst_bytes = dst_address.to(tl.pointer_type(tl.uint8))
        for start in range(0, nbytes, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < nbytes
            tl.store(dst_bytes + offsets, tl.load(src_bytes + offsets, mask=mask), mask=mask)


@functools.cache
def batch_copy_kernel(interpret: bool) -> Any:
    """The kernel, interpreted (CPU tensors) or compiled (GPU tensors).

    Triton reads ``TRITON_INTERPRET`` when a function is decorated, so each variant is decorated
    under the setting it needs and one process can run both.
    """
    return jit(_batch_copy, interpret=interpret)


def jit(fn: Callable[..., object], *, interpret: bool) -> Any:
    """``triton.jit(fn)``, interpreted or compiled as asked, whatever ``TRITON_INTERPRET`` says;
    the environment is left as it was."""
    saved = os.environ.get(INTERPRET_ENV)
    os.environ[INTERPRET_ENV] = "1" if interpret else "0"
    try:
        return triton.jit(fn)
    finally:
        if saved is None:
            del os.environ[INTERPRET_ENV]
        else:
            os.environ[INTERPRET_ENV] = saved


def needs_interpreter(args: Sequence[object], kwargs: Mapping[str, object] | None = None) -> bool:
    """Whether a launch with these arguments must be interpreted: some tensor among them lives on
    the CPU, or ``TRITON_INTERPRET=1`` asks for the interpreter everywhere."""
    if os.environ.get(INTERPRET_ENV) == "1":
        return True
    values = [*args, *(kwargs or {}).values()]
    return any(isinstance(v, torch.Tensor) and v.device.type == "cpu" for v in values)


class PortableKernel:
    """A Triton kernel launched like a ``triton.jit`` one, ``kernel[grid](*args, **kwargs)``,
    that is interpreted when its tensors are on the CPU and compiled when they are on a GPU.
    Each variant is made on first use and kept."""

    def __init__(self, fn: Callable[..., object]) -> None:
        self.fn = fn
        self._variants: dict[bool, Any] = {}
        self.__doc__ = fn.__doc__

    def variant(self, *, interpret: bool) -> Any:
        """The interpreted or the compiled kernel."""
        if interpret not in self._variants:
            self._variants[interpret] = jit(self.fn, interpret=interpret)
        return self._variants[interpret]

    def __getitem__(self, grid: object) -> Callable[..., object]:
        def launch(*args: object, **kwargs: object) -> object:
            kernel = self.variant(interpret=needs_interpreter(args, kwargs))
            return kernel[grid](*args, **kwargs)

        return launch

    def __repr__(self) -> str:
        return f"<portable triton kernel {self.fn.__qualname__}>"


def interpreted_on_cpu(fn: Callable[..., object]) -> PortableKernel:
    """Decorate a Triton kernel in place of ``@triton.jit`` so that it runs on CPU tensors too,
    by the interpreter, as the harness's own kernel does::

        @interpreted_on_cpu
        def batch_memcpy(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr): ...

        batch_memcpy[(n,)](src_ptrs, dst_ptrs, sizes, BLOCK=1024)
    """
    return PortableKernel(fn)


def driver_backend() -> str:
    """The device kind Triton's active driver compiles for (``cuda``, ``hip``, ``xpu``)."""
    return str(triton.runtime.driver.active.get_current_target().backend)
