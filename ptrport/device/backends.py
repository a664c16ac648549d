"""Backends: the torch device kinds a run can target, whether each is present here, and why not.

Built in: ``cpu``; the upper-half CPU backends ``cpu-usm`` and ``cpu-tbi`` (CPU memory whose
addresses are presented above ``2**63``, :mod:`ptrport.device.presentation`), always
available; ``cuda``, ``rocm`` (torch's ``cuda`` device on a HIP build), ``xpu`` (native
``torch.xpu``, with intel-extension-for-pytorch imported first when it is installed) and
``mps``. Others come from
installed distributions through the entry-point group ``ptrport.backends``; each entry point
names a :class:`Backend` subclass or instance.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import importlib.util
import platform
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import torch

from ptrport.device.fork_safety import ask_in_fork
from ptrport.device.presentation import (
    AS_IS,
    PLACED,
    TBI,
    USM,
    Presentation,
    presenting,
    real_data_ptr,
)
from ptrport.errors import HarnessError, UnknownName, exception_message

ENTRY_POINT_GROUP = "ptrport.backends"

Fingerprint = dict[str, str | None]


def _torch_version() -> str:
    return str(torch.__version__)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class Backend:
    """A torch device kind. Subclasses set ``name`` and ``device_type`` and say why they are
    unavailable; everything else has a default that suits accelerators."""

    name: str = ""
    device_type: str = ""
    kind: str = "other"
    """What reports call its execution target: ``cpu``, ``gpu`` or ``other``."""
    addresses_are_device_pointers: bool = True
    """False where ``data_ptr()`` is not an address a kernel can use (MPS)."""
    high_addresses: bool | None = None
    """Whether its device addresses lie at or above ``2**63`` (``None``: not known)."""
    simulated: str | None = None
    """For a backend that stands in for another kind of device: what it simulates, and how."""
    places_allocations: bool = False
    """Whether the strategies place each real allocation at an address they draw
    (:meth:`~ptrport.device.presentation.DeviceMemory.place`)."""

    def _unavailable_reason(self) -> str | None:
        raise NotImplementedError

    @cached_property
    def unavailable_reason(self) -> str | None:
        """``None`` when the backend can run here, else why not (without the name)."""
        try:
            return self._unavailable_reason()
        except Exception as exc:  # a broken driver or install is a reason, not a crash
            return f"probing it raised {exception_message(exc)}"

    def is_available(self) -> bool:
        return self.unavailable_reason is None

    def _ask_device(self) -> Fingerprint:
        """What only the initialized device can tell: ``device_model`` and what else its
        fingerprint holds."""
        return {}

    @cached_property
    def device_facts(self) -> Fingerprint:
        """What :meth:`_ask_device` tells, asked once, from a forked child where this process
        can fork: a device initialized here would keep isolated checks from being forked
        (:mod:`ptrport.device.fork_safety`). Where asking fails, ``device_error`` says why."""
        if not self.is_available() or type(self)._ask_device is Backend._ask_device:
            return {}
        try:
            return ask_in_fork(self._ask_device)
        except HarnessError as exc:
            return {"device_error": str(exc)}

    @property
    def device(self) -> torch.device:
        return torch.device(self.device_type, 0)

    @property
    def can_pin(self) -> bool:
        """Whether host memory can be page-locked for transfers to this backend."""
        return self.is_available()

    def synchronize(self) -> None:
        getattr(torch, self.device_type).synchronize()

    @contextlib.contextmanager
    def running(self, spread: int | None = None) -> Iterator[None]:
        """The scope code runs in on this backend (a check, a benchmark, a repro): a plain
        ``@triton.jit`` kernel launched on CPU tensors runs in Triton's interpreter. With
        ``spread`` (a seed), a backend that places allocations places every storage whose
        address is handed out, as :class:`~ptrport.device.presentation.DeviceMemory` spreads
        them; the others ignore it."""
        with _current(self), _cpu_launches():
            yield

    def device_model(self) -> str | None:
        return None

    def triton_driver(self) -> str:
        """The device kind Triton's active driver compiles for here (``cuda``, ``hip``,
        ``xpu``), asked with the device's facts where the backend asks them."""
        facts = self.device_facts
        if facts.get("triton_driver") is not None:
            return str(facts["triton_driver"])
        error = facts.get("triton_driver_error") or facts.get("device_error")
        if error is not None:
            raise HarnessError(error)
        from ptrport.device.triton_cpu import driver_backend

        return driver_backend()

    def fingerprint(self) -> Fingerprint:
        """What identifies this backend's hardware and runtime, as strings."""
        return {"device": str(self.device), "device_model": self.device_model()}

    def platform_slug(self) -> str:
        """The part of a default platform id that this backend contributes."""
        model = self.device_model() if self.is_available() else None
        return f"{self.name}-{_slug(model)}" if model else self.name

    def __repr__(self) -> str:
        return f"<backend {self.name}>"


_running: list[Backend] = []
"""The backends whose scope is open, innermost last."""


def current() -> Backend | None:
    """The backend whose scope (:meth:`Backend.running`) code runs in now, if any."""
    return _running[-1] if _running else None


@contextlib.contextmanager
def _current(backend: Backend) -> Iterator[None]:
    _running.append(backend)
    try:
        yield
    finally:
        _running.pop()


@functools.cache
def _triton_launches() -> Callable[[], contextlib.AbstractContextManager[None]] | None:
    if importlib.util.find_spec("triton") is None:
        return None
    try:
        from ptrport.device.triton_cpu import cpu_launches
    except Exception:  # a broken Triton: its engine says why; checks without it still run
        return None
    return cpu_launches


def warm_up() -> None:
    """Do what a backend's scope does on its first use in a process (import Triton's CPU
    launches, launch a first kernel), so that a process forked from this one has it done."""
    if _triton_launches() is None:
        return
    from ptrport.device.triton_cpu import first_launch

    with contextlib.suppress(Exception):  # a first launch that fails only leaves it undone
        first_launch()


def _cpu_launches() -> contextlib.AbstractContextManager[None]:
    launches = _triton_launches()
    return launches() if launches is not None else contextlib.nullcontext()


class CpuBackend(Backend):
    """The CPU. Its checks run with addresses as they are, but with the same guard as the
    upper-half backends: a Triton kernel that dereferences memory the check was not given
    raises :class:`~ptrport.device.presentation.DeviceFault` instead of touching it."""

    name = "cpu"
    device_type = "cpu"
    kind = "cpu"
    high_addresses = False
    presentation: Presentation = AS_IS

    def _unavailable_reason(self) -> str | None:
        seen = real_data_ptr(torch.empty(1))  # as the CPU sees it, in any scope
        if seen >= self.presentation.limit:
            return (
                f"CPU addresses here (such as {seen:#x}) lie above {self.presentation.limit:#x}, "
                f"the highest {self.name} can present"
            )
        return None

    @contextlib.contextmanager
    def running(self, spread: int | None = None) -> Iterator[None]:
        spread = spread if self.places_allocations else None
        with _current(self), presenting(self.presentation, spread), _cpu_launches():
            yield

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def can_pin(self) -> bool:
        return False

    def synchronize(self) -> None:
        pass

    def device_model(self) -> str | None:
        cpuinfo = Path("/proc/cpuinfo")
        if cpuinfo.exists():
            for line in cpuinfo.read_text(errors="replace").splitlines():
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
        return platform.processor() or None

    def platform_slug(self) -> str:
        # The CPU model string is long and says little about address layout; the ISA does.
        return f"{self.name}-{_slug(platform.machine())}"

    def fingerprint(self) -> Fingerprint:
        found = super().fingerprint()
        if self.simulated:
            found["simulated"] = self.simulated
        return found


class CpuUsmBackend(CpuBackend):
    """CPU memory at Intel Level Zero USM-shaped addresses: real + ``0xffff_8000_0000_0000``."""

    name = "cpu-usm"
    high_addresses = True
    presentation = USM
    simulated = f"an upper-half device: {USM.description}"


class CpuTbiBackend(CpuBackend):
    """CPU memory at Android-tagged ARM64 addresses: the top byte set to ``0xb4``."""

    name = "cpu-tbi"
    high_addresses = True
    presentation = TBI
    simulated = f"an upper-half device: {TBI.description}"


class CpuPlacedBackend(CpuBackend):
    """CPU memory at addresses each check's Hypothesis draws choose, allocation by allocation:
    across ``2**63``, ending at ``2**64``, on the 32-, 48- and 56-bit boundaries, and in the
    upper-half shapes (:data:`~ptrport.device.presentation.PLACED`)."""

    name = "cpu-placed"
    high_addresses = True
    presentation = PLACED
    places_allocations = True
    simulated = f"placed memory: {PLACED.description}"


class CudaBackend(Backend):
    kind = "gpu"
    name = "cuda"
    device_type = "cuda"
    high_addresses = False

    def _unavailable_reason(self) -> str | None:
        if torch.version.hip:
            return f"torch {_torch_version()} is a ROCm build; use --backend=rocm"
        if torch.version.cuda is None:
            return f"torch {_torch_version()} has no CUDA support"
        if _gpu_count() == 0:
            return f"no CUDA device found (torch {_torch_version()}, CUDA {torch.version.cuda})"
        return None

    def _ask_device(self) -> Fingerprint:
        major, minor = torch.cuda.get_device_capability(0)
        return {
            "device_model": str(torch.cuda.get_device_name(0)),
            "compute_capability": f"{major}.{minor}",
            **_triton_driver(),
        }

    def device_model(self) -> str | None:
        return self.device_facts.get("device_model")

    def fingerprint(self) -> Fingerprint:
        found = super().fingerprint()
        found["cuda_runtime"] = torch.version.cuda
        found.update(_fingerprinted(self.device_facts))
        return found


class RocmBackend(CudaBackend):
    name = "rocm"
    device_type = "cuda"

    def _unavailable_reason(self) -> str | None:
        if not torch.version.hip:
            return f"torch {_torch_version()} has no ROCm (HIP) support"
        if _gpu_count() == 0:
            return f"no ROCm device found (torch {_torch_version()}, HIP {torch.version.hip})"
        return None

    def _ask_device(self) -> Fingerprint:
        return {
            "device_model": str(torch.cuda.get_device_name(0)),
            "gcn_arch": str(getattr(torch.cuda.get_device_properties(0), "gcnArchName", "")),
            **_triton_driver(),
        }

    def fingerprint(self) -> Fingerprint:
        found = Backend.fingerprint(self)
        found["hip_runtime"] = torch.version.hip
        found.update(_fingerprinted(self.device_facts))
        return found


def _gpu_count() -> int:
    """How many CUDA (or ROCm) devices torch sees, asked of NVML (or AMD SMI) where it can, so
    that the driver is not initialized here (``torch.cuda.is_available()`` initializes it)."""
    return int(torch.cuda.device_count())


def _triton_driver() -> Fingerprint:
    """The device kind Triton's active driver compiles for, asked where the device may be
    initialized (Triton asks torch for the current device)."""
    if importlib.util.find_spec("triton") is None:
        return {}
    try:
        from ptrport.device.triton_cpu import driver_backend

        return {"triton_driver": driver_backend()}
    except Exception as exc:
        return {"triton_driver_error": exception_message(exc)}


def _fingerprinted(facts: Fingerprint) -> Fingerprint:
    """The device's facts a fingerprint holds: all but its model (the base class's) and
    Triton's driver (the Triton engine's)."""
    return {k: v for k, v in facts.items() if k != "device_model" and not k.startswith("triton")}


def ipex_version() -> str | None:
    """The installed intel-extension-for-pytorch version, or ``None``."""
    try:
        return importlib.metadata.version("intel-extension-for-pytorch")
    except importlib.metadata.PackageNotFoundError:
        return None


class XpuBackend(Backend):
    kind = "gpu"
    name = "xpu"
    device_type = "xpu"
    high_addresses = True

    def _unavailable_reason(self) -> str | None:
        ipex = ipex_version()
        if ipex is not None and importlib.util.find_spec("intel_extension_for_pytorch"):
            try:
                importlib.import_module("intel_extension_for_pytorch")
            except Exception as exc:
                return (
                    f"intel-extension-for-pytorch {ipex} failed to import: {exception_message(exc)}"
                )
        xpu = getattr(torch, "xpu", None)
        runtime = getattr(torch.version, "xpu", None)
        if xpu is None or (runtime is None and not xpu.is_available()):
            beside = f" (intel-extension-for-pytorch {ipex} installed)" if ipex else ""
            return f"torch {_torch_version()} has no XPU support{beside}"
        if not xpu.is_available():
            return f"no XPU device found (torch {_torch_version()}, XPU runtime {runtime})"
        return None

    def _ask_device(self) -> Fingerprint:
        props = torch.xpu.get_device_properties(0)
        return {
            "device_model": str(torch.xpu.get_device_name(0)),
            "driver": str(getattr(props, "driver_version", "")) or None,
            **_triton_driver(),
        }

    def device_model(self) -> str | None:
        return self.device_facts.get("device_model")

    def fingerprint(self) -> Fingerprint:
        found = super().fingerprint()
        found["xpu_runtime"] = getattr(torch.version, "xpu", None)
        found["ipex"] = ipex_version()
        found.update(_fingerprinted(self.device_facts))
        return found


class MpsBackend(Backend):
    kind = "gpu"
    name = "mps"
    device_type = "mps"
    addresses_are_device_pointers = False
    high_addresses = False

    def _unavailable_reason(self) -> str | None:
        if not torch.backends.mps.is_built():
            return f"torch {_torch_version()} has no MPS support"
        if not torch.backends.mps.is_available():
            return "MPS is not available on this machine (needs Apple silicon, macOS 12.3+)"
        return None

    @property
    def can_pin(self) -> bool:
        return False

    def device_model(self) -> str | None:
        return (platform.processor() or "apple") if self.is_available() else None


BUILTIN_BACKENDS: tuple[type[Backend], ...] = (
    CpuBackend,
    CpuUsmBackend,
    CpuTbiBackend,
    CpuPlacedBackend,
    CudaBackend,
    RocmBackend,
    XpuBackend,
    MpsBackend,
)


class _BrokenPlugin(Backend):
    """A third-party backend whose entry point failed to load: unavailable, with the reason."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.device_type = name
        self._reason = reason

    def _unavailable_reason(self) -> str | None:
        return self._reason


def _load_plugin(entry_point: importlib.metadata.EntryPoint) -> Backend:
    try:
        target = entry_point.load()
        backend = target() if isinstance(target, type) else target
    except Exception as exc:
        return _BrokenPlugin(
            entry_point.name,
            f"plug-in {entry_point.value} failed to load: {exception_message(exc)}",
        )
    if not isinstance(backend, Backend):
        return _BrokenPlugin(
            entry_point.name,
            f"plug-in {entry_point.value} is not a ptrport.device.backends.Backend",
        )
    return backend


def load_backends() -> dict[str, Backend]:
    """Every backend known here, built-in ones first, by name."""
    found: dict[str, Backend] = {cls.name: cls() for cls in BUILTIN_BACKENDS}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name not in found:
            found[entry_point.name] = _load_plugin(entry_point)
    return found


SELECT_AVAILABLE = "available"
SELECT_ALL = "all"


@dataclass(frozen=True)
class BackendSelection:
    """What ``--backend`` asked for: ``available``, ``all``, or names given explicitly."""

    spec: str
    names: tuple[str, ...]
    explicit: bool

    def resolve(self, known: dict[str, Backend]) -> list[Backend]:
        if self.spec == SELECT_AVAILABLE:
            return [b for b in known.values() if b.is_available()]
        if self.spec == SELECT_ALL:
            return list(known.values())
        return [known[name] for name in self.names]

    def resolve_present(self, known: dict[str, Backend]) -> list[Backend]:
        """:meth:`resolve`, refusing a backend named explicitly that is not available here:
        a run asked for it, and must not pass without it."""
        backends = self.resolve(known)
        for backend in backends if self.explicit else ():
            if not backend.is_available():
                raise BackendUnavailable(
                    f"backend {backend.name} is not available: {backend.unavailable_reason}"
                )
        return backends


class BackendUnavailable(HarnessError):
    """A backend named explicitly that this machine does not have."""


def parse_backend_spec(spec: str, known: Iterable[str]) -> BackendSelection:
    """Parse ``--backend``: ``available``, ``all`` or comma-separated names."""
    known_names = list(known)
    names = tuple(n.strip() for n in spec.split(",") if n.strip())
    if names in ((SELECT_AVAILABLE,), (SELECT_ALL,)):
        return BackendSelection(names[0], (), explicit=False)
    if not names:
        raise UnknownName(f"no backend named; known: {_choices(known_names)}")
    if SELECT_ALL in names or SELECT_AVAILABLE in names:
        raise UnknownName(f"{SELECT_ALL!r} and {SELECT_AVAILABLE!r} stand alone, not in a list")
    for name in names:
        if name not in known_names:
            raise UnknownName(f"unknown backend {name!r}; known: {_choices(known_names)}")
    return BackendSelection(",".join(names), tuple(dict.fromkeys(names)), explicit=True)


def _choices(names: Sequence[str]) -> str:
    return ", ".join([*names, SELECT_ALL, SELECT_AVAILABLE])
