"""The CUDA stand-in: code written for CUDA runs on a CPU backend's device, so that an engine's
own tests, which skip or fail without a GPU, run at the addresses the backend presents.

While :meth:`CudaStandIn.installed` is open (a whole run, from before the test modules are
imported to its end):

- ``torch.cuda`` answers as one device would: :data:`ANSWERS` lists each query and its answer
  (``is_available()`` True, ``device_count()`` 1, capability ``(8, 0)``, ...), and
  ``torch.accelerator`` does the same;
- tensors asked for on ``cuda`` or ``cuda:N`` are made on the CPU: a ``TorchFunctionMode``
  rewrites the ``device=`` of factories and ``new_*`` methods, ``.to(...)``, ``.cuda()`` and the
  devices ``with torch.device("cuda"):`` and ``torch.set_default_device`` hand in; a
  ``pin_memory`` request is granted as the CPU can (the tensor is not page-locked, which no
  copy on the CPU needs);
- ``synchronize`` is a no-op, and streams and events are CPU stand-ins (:class:`Stream`,
  :class:`Event`): everything on the CPU is done when the call returns;
- Triton kernels launched on CPU tensors run in Triton's interpreter within a backend's scope
  (:mod:`ptrport.device.triton_cpu`), which needs no ``TRITON_INTERPRET``.

Nothing here touches a real device, so a process with the stand-in installed forks as safely
as one without. What it cannot serve (custom CUDA ops, NCCL, CUDA graphs, an engine's own
helpers that ask the driver) raises as it would on any CPU machine, alike on every backend, so
the verdict by difference leaves it out. A team stands in for such a helper of its own with
:meth:`CudaStandIn.replace` (the ``pytest_ptrport_stand_in`` hook hands it the stand-in).
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import overrides
from torch.overrides import TorchFunctionMode
from torch.utils import _device
from torch.utils._device import _device_constructors

_push_mode: Callable[[TorchFunctionMode], None] = overrides._push_mode
_pop_mode: Callable[[], TorchFunctionMode] = overrides._pop_mode
_mode_stack: Callable[[], list[TorchFunctionMode]] = overrides._get_current_function_mode_stack

CAPABILITY = (8, 0)
DEVICE_NAME = "ptrport CUDA stand-in (CPU)"
_CPU = torch.device("cpu")
_TOTAL_MEMORY = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class Stream:
    """A CUDA stream on the CPU: every call is done when it returns, so there is nothing to
    wait for."""

    def __init__(self, device: object = None, priority: int = 0, **kwargs: object) -> None:
        self.device = torch.device("cuda", 0)
        self.priority = priority
        self.cuda_stream = 0

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream: object) -> None:
        return None

    def wait_event(self, event: object) -> None:
        return None

    def record_event(self, event: Event | None = None) -> Event:
        return event if event is not None else Event()

    def query(self) -> bool:
        return True

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream)

    def __hash__(self) -> int:
        return 0


class Event:
    """A CUDA event on the CPU: recorded means done."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, **kwargs: object):
        self.enable_timing = enable_timing

    def record(self, stream: object = None) -> None:
        return None

    def wait(self, stream: object = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: object) -> float:
        return 0.0


_STREAM = Stream()


class _Device:
    """``torch.cuda.device(i)``: there is one device, so entering it changes nothing."""

    def __init__(self, device: object) -> None:
        self.idx = 0

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _properties(device: object = None) -> types.SimpleNamespace:
    major, minor = CAPABILITY
    return types.SimpleNamespace(
        name=DEVICE_NAME,
        major=major,
        minor=minor,
        total_memory=_TOTAL_MEMORY,
        multi_processor_count=os.cpu_count() or 1,
        is_integrated=True,
        warp_size=32,
        L2_cache_size=0,
        uuid="ptrport-stand-in",
    )


def _none(*args: object, **kwargs: object) -> None:
    return None


def _zero(*args: object, **kwargs: object) -> int:
    return 0


ANSWERS: dict[str, Callable[..., Any]] = {
    "is_available": lambda: True,
    "device_count": lambda: 1,
    "current_device": lambda: 0,
    "get_device_capability": lambda device=None: CAPABILITY,
    "get_device_name": lambda device=None: DEVICE_NAME,
    "get_device_properties": _properties,
    "get_arch_list": lambda: [f"sm_{CAPABILITY[0]}{CAPABILITY[1]}"],
    "is_bf16_supported": lambda including_emulation=True: True,
    "set_device": _none,
    "device": _Device,
    "synchronize": _none,
    "Stream": Stream,
    "Event": Event,
    "ExternalStream": Stream,
    "current_stream": lambda device=None: _STREAM,
    "default_stream": lambda device=None: _STREAM,
    "set_stream": _none,
    "stream": lambda stream=None: contextlib.nullcontext(stream),
    "empty_cache": _none,
    "memory_allocated": _zero,
    "max_memory_allocated": _zero,
    "memory_reserved": _zero,
    "max_memory_reserved": _zero,
    "reset_peak_memory_stats": _none,
    "mem_get_info": lambda device=None: (_TOTAL_MEMORY, _TOTAL_MEMORY),
}
"""``torch.cuda``'s queries the stand-in answers, and how."""

ACCELERATOR_ANSWERS: dict[str, Callable[..., Any]] = {
    "is_available": lambda check_fork_safety=False: True,
    "current_accelerator": lambda check_available=False: torch.device("cuda"),
    "device_count": lambda: 1,
    "current_device_index": lambda: 0,
    "current_device_idx": lambda: 0,
    "set_device_index": _none,
    "set_device_idx": _none,
    "current_stream": lambda device=None: _STREAM,
    "set_stream": _none,
    "synchronize": _none,
    "empty_cache": _none,
}
"""``torch.accelerator``'s, likewise."""


def _cuda(device: object) -> bool:
    """Whether ``device`` (as a ``device=`` argument takes it) asks for CUDA."""
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return False


def _on_cpu(value: object) -> object:
    return _CPU if _cuda(value) else value


class _CudaOnCpu(TorchFunctionMode):
    """The mode that makes on the CPU what is asked for on CUDA."""

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: object,
        args: tuple[object, ...] = (),
        kwargs: dict[str, object] | None = None,
    ) -> Any:
        __tracebackhide__ = True
        kwargs = dict(kwargs) if kwargs else {}
        if func is torch.Tensor.cuda:
            tensor = args[0]
            assert isinstance(tensor, torch.Tensor)
            return tensor
        if func is torch.Tensor.pin_memory:
            return args[0]
        if "device" in kwargs:
            kwargs["device"] = _on_cpu(kwargs["device"])
        elif func in _device_constructors() and _cuda(getattr(_device, "CURRENT_DEVICE", None)):
            # torch.set_default_device("cuda") and ``with torch.device("cuda"):`` put their
            # mode at the bottom of the stack, below this one: the device it would add is
            # given here, as the CPU.
            kwargs["device"] = _CPU
        if kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        if func is torch.Tensor.to and len(args) > 1:
            target = args[1]
            if isinstance(target, int) and not isinstance(target, bool):
                target = _CPU  # .to(0): a device index
            args = (args[0], _on_cpu(target), *args[2:])
        return func(*args, **kwargs)


def _record_stream(tensor: torch.Tensor, stream: object) -> None:
    """``Tensor.record_stream``: a CPU tensor's memory waits for no stream."""
    return None


def _own(answer: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``answer`` as an object of its own: torch.compile files each of torch's functions under
    one rule, and refuses one object found under two names."""
    if isinstance(answer, type):
        return type(answer.__name__, (answer,), {"__qualname__": name})

    def own(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return answer(*args, **kwargs)

    own.__name__ = own.__qualname__ = name.rsplit(".", 1)[1]
    own.__doc__ = f"ptrport's stand-in for {name}"
    return own


class CudaStandIn:
    """CUDA stood in for on the CPU, while :meth:`installed` is open."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._mode = _CudaOnCpu()

    def replace(self, owner: object, name: str, value: object) -> None:
        """Set ``owner.name`` to ``value`` until the stand-in is undone (a module's function,
        a class's method): how a team stands in for an engine helper that asks the driver.
        Replace it where it is looked up: a module that did ``from x import f`` holds its own
        ``f``."""
        missing = object()
        previous = owner.__dict__.get(name, missing) if hasattr(owner, "__dict__") else missing
        setattr(owner, name, value)

        def undo() -> None:
            if previous is missing:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, previous)

        self._undo.append(undo)

    @contextlib.contextmanager
    def installed(self) -> Iterator[CudaStandIn]:
        """Within, CUDA is stood in for; on leaving, everything is as it was."""
        self.install()
        try:
            yield self
        finally:
            self.uninstall()

    def install(self) -> None:
        for name, answer in ANSWERS.items():
            self.replace(torch.cuda, name, _own(answer, f"torch.cuda.{name}"))
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is not None:
            for name, answer in ACCELERATOR_ANSWERS.items():
                if hasattr(accelerator, name):
                    self.replace(accelerator, name, _own(answer, f"torch.accelerator.{name}"))
        self.replace(torch.Tensor, "record_stream", _record_stream)
        _push_mode(self._mode)
        self._undo.append(self._pop_mode)

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _pop_mode(self) -> None:
        """Take the mode off the stack wherever it is (a test may have left ``torch.device``
        or ``set_default_device`` modes above it), the others kept in their order."""
        stack = _mode_stack()
        if self._mode not in stack:
            return
        above = []
        while True:
            mode = _pop_mode()
            if mode is self._mode:
                break
            above.append(mode)
        for mode in reversed(above):
            _push_mode(mode)


STAND_INS: dict[str, Callable[[], CudaStandIn]] = {"cuda": CudaStandIn}
"""What ``--ptrport-stand-in`` can name."""
