"""The platform: what a run happened on, and the stable id its report is filed under.

The fingerprint records versions (they change from night to night); the platform id does not
contain them, so a machine's reports line up across torch and driver upgrades.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
from collections.abc import Sequence
from typing import Any

import numpy
import torch

from ptrport.device.backends import Backend, ipex_version

PLATFORM_ENV = "PTRPORT_PLATFORM"
_PLATFORM_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _triton_version() -> str | None:
    # Triton ships under other distribution names on ROCm and XPU.
    for name in ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu"):
        found = _version(name)
        if found:
            return found
    return None


def software_versions() -> dict[str, str | None]:
    """Versions of everything on the path from a Python int to a kernel."""
    accelerator = getattr(torch, "accelerator", None)
    built_for = None
    if accelerator is not None:
        # This names what torch was built for, not what is present.
        current = accelerator.current_accelerator()
        built_for = current.type if current is not None else None
    return {
        "ptrport": _version("ptrport"),
        "torch": str(torch.__version__),
        "torch_built_for": built_for,
        "triton": _triton_version(),
        "ipex": ipex_version(),
        "numpy": str(numpy.__version__),
        "hypothesis": _version("hypothesis"),
        "python": platform.python_version(),
    }


def system() -> dict[str, str]:
    return {
        "os": platform.system(),
        "os_release": platform.release(),
        "arch": platform.machine(),
    }


def platform_fingerprint(backends: Sequence[Backend]) -> dict[str, Any]:
    """Software, system, and each backend's hardware and runtime."""
    return {
        "software": software_versions(),
        "system": system(),
        "backends": {
            b.name: {
                "available": b.is_available(),
                "reason": b.unavailable_reason,
                **(b.fingerprint() if b.is_available() else {}),
            }
            for b in backends
        },
    }


def primary_backend(backends: Sequence[Backend]) -> Backend | None:
    """The backend a platform is named after: the first available accelerator, else the first
    available backend."""
    present = [b for b in backends if b.is_available()]
    accelerators = [b for b in present if b.kind != "cpu"]
    found = accelerators or present
    return found[0] if found else None


def execution_target(backends: Sequence[Backend]) -> dict[str, Any]:
    """What the run executed on: kind (cpu/gpu/other), backend, device model, runtime and
    driver versions where known; and, by name, the backends that simulate another kind of
    device (the upper-half CPU backends) with what they simulate."""
    primary = primary_backend(backends)
    simulated = {b.name: b.simulated for b in backends if b.simulated and b.is_available()}
    if primary is None:
        return {
            "kind": "other",
            "backend": None,
            "device_model": None,
            "runtime": {},
            "driver": None,
            "simulated": simulated,
        }
    found = primary.fingerprint()
    runtime = {
        key.removesuffix("_runtime"): value
        for key, value in found.items()
        if key.endswith("_runtime")
    }
    return {
        "kind": primary.kind,
        "backend": primary.name,
        "device_model": found.get("device_model"),
        "runtime": runtime,
        "driver": found.get("driver"),
        "simulated": simulated,
    }


def default_platform_id(backends: Sequence[Backend]) -> str:
    """``cpu-x86-64``, ``cuda-nvidia-h100-80gb-hbm3``...: from the available selected backends.
    A simulated backend runs on the machine another one names, so it names the platform only
    when it runs alone (``cpu-usm-x86-64``): the default CPU run stays ``cpu-x86-64``."""
    present = [b for b in backends if b.is_available()]
    real = [b for b in present if not b.simulated] or present
    return "_".join(b.platform_slug() for b in real) if real else "none"


def check_platform_id(value: str) -> str:
    """Return ``value`` if it can name a report file, else raise ``ValueError`` saying why."""
    if not _PLATFORM_ID.fullmatch(value):
        raise ValueError(
            f"platform id {value!r} must be 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def platform_id_from_env() -> str | None:
    value = os.environ.get(PLATFORM_ENV)
    return check_platform_id(value) if value else None


def resolve_platform_id(given: str | None, backends: Sequence[Backend]) -> str:
    """The platform id a run files its report under: ``given`` (``--platform-name``), else
    ``$PTRPORT_PLATFORM``, else :func:`default_platform_id`. A bad ``$PTRPORT_PLATFORM`` is a
    ``ValueError`` naming it."""
    if given:
        return given
    try:
        from_env = platform_id_from_env()
    except ValueError as exc:
        raise ValueError(f"{PLATFORM_ENV}: {exc}") from None
    return from_env or default_platform_id(backends)
