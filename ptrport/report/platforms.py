"""Platform kinds of the nightly matrix: for each, the torch build it installs, the backend its
scenarios run on, and how to tell, before installing anything, whether this machine has the
device at all.

Each kind is a tox environment of the same name. The GPU kinds install their torch build
themselves, after :func:`missing_device` said the device is there, so a machine without it
fails in a second with the reason instead of downloading gigabytes first::

    python -m ptrport.report.platforms require xpu   # exit 1 with the reason if no Intel GPU
    python -m ptrport.report.platforms install xpu   # pip install the torch build, the project
    python -m ptrport.report.platforms run xpu       # pytest --backend=xpu --platform-name=xpu,
                                                     # then ptrport bench --backend=xpu

Standard library only: it runs before torch is installed.
"""

from __future__ import annotations

import glob
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PYTORCH_INDEX = "https://download.pytorch.org/whl"
TORCH_ENV = "PTRPORT_TORCH"
"""Overrides the torch requirement a kind installs itself (the GPU kinds), e.g.
``PTRPORT_TORCH=torch==2.4.1`` for an older XPU build with intel-extension-for-pytorch."""
BENCH_ENV = "PTRPORT_BENCH"
"""How ``run`` benchmarks after the scenarios: ``full`` (the default), ``quick`` or ``off``."""
BENCH_MODES = ("full", "quick", "off")


def _no_nvidia() -> str | None:
    if glob.glob("/dev/nvidia[0-9]*") or Path("/proc/driver/nvidia/version").exists():
        return None
    return "no NVIDIA GPU here: no /dev/nvidia* device node and no /proc/driver/nvidia"


def _no_amd() -> str | None:
    if Path("/dev/kfd").exists():
        return None
    return "no AMD GPU here: no /dev/kfd (the ROCm kernel driver's device node)"


INTEL_DRIVERS = ("i915", "xe")


def _no_intel() -> str | None:
    nodes = sorted(glob.glob("/sys/class/drm/renderD*"))
    drivers = {Path(os.path.realpath(f"{node}/device/driver")).name for node in nodes}
    if drivers & set(INTEL_DRIVERS):
        return None
    if not nodes:
        return "no Intel GPU here: no /dev/dri/renderD* render node"
    found = ", ".join(sorted(drivers)) or "none"
    return f"no Intel GPU here: render nodes are driven by {found}, not i915 or xe"


def _no_apple_gpu() -> str | None:
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        return None
    return f"no Apple GPU here: MPS needs macOS on Apple silicon, this is {platform.system()}"


def _always_there() -> str | None:
    return None


@dataclass(frozen=True)
class PlatformKind:
    """One column kind of the matrix."""

    name: str
    backend: str
    """The ``--backend`` its scenarios run on."""
    torch: str
    """The torch requirement it installs."""
    description: str
    index_url: str | None = None
    """Where that torch build comes from, if not PyPI."""
    packages: tuple[str, ...] = ()
    """Installed beside torch (e.g. intel-extension-for-pytorch)."""
    extras: tuple[str, ...] = ("triton",)
    """The project's extras it installs."""
    constrained: bool = True
    """Whether pip's constraint files apply to its installs. The kind that follows the newest
    torch is not constrained: a machine whose pip configuration caps torch below it (a
    ``constraint`` file) must not hold it back, nor make the project's install downgrade it."""
    device_check: Callable[[], str | None] = field(default=_always_there, compare=False)

    @property
    def gpu(self) -> bool:
        return self.device_check is not _always_there

    def missing_device(self) -> str | None:
        """Why this machine cannot host this kind, or ``None`` if it can."""
        reason = self.device_check()
        return f"{self.name}: {reason}" if reason else None

    def torch_requirement(self) -> str:
        return os.environ.get(TORCH_ENV, "").strip() or self.torch

    def install_commands(self, python: str = sys.executable) -> list[list[str]]:
        """The pip commands that install this kind's torch build, then the project."""
        pip = [python, "-m", "pip", "install"]
        requirement = self.torch_requirement()
        packages = list(self.packages)
        index = ["--index-url", self.index_url] if self.index_url else []
        old_xpu = _xpu_before_2_5(self, requirement)
        if old_xpu is not None:
            # Intel's own index, beside PyPI, as its install guide for these releases has it.
            packages.append(f"intel-extension-for-pytorch~={old_xpu[0]}.{old_xpu[1]}.0")
            index = ["--extra-index-url", INTEL_INDEX]
        commands = [[*pip, requirement, *index]]
        if packages:
            commands.append([*pip, *packages, *index])
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        commands.append([*pip, "-e", f".{extras}"])
        return commands

    def install_environment(self, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
        """``environ`` as the install commands see it: unchanged, but for a kind that is not
        constrained ``PIP_CONSTRAINT`` names the null device, which overrides a constraint file
        of pip's configuration (pip ignores an empty ``PIP_CONSTRAINT``) and keeps its other
        settings, the indexes and links among them."""
        environment = dict(environ)
        if not self.constrained:
            environment["PIP_CONSTRAINT"] = os.devnull
        return environment


INTEL_INDEX = "https://pytorch-extension.intel.com/release-whl/stable/xpu/us/"
"""Where torch and intel-extension-for-pytorch builds for XPU came from before torch 2.5."""


def _torch_minor(requirement: str) -> tuple[int, int] | None:
    """``(2, 4)`` for ``torch==2.4.1``; ``None`` for an unpinned requirement."""
    parts = requirement.partition("==")[2].split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        return int(parts[0]), int(parts[1])
    return None


def _xpu_before_2_5(kind: PlatformKind, requirement: str) -> tuple[int, int] | None:
    minor = _torch_minor(requirement)
    return minor if kind.backend == "xpu" and minor is not None and minor < (2, 5) else None


CPU_BACKENDS = "cpu,cpu-usm,cpu-tbi,cpu-placed"
"""What the CPU kinds run on: the CPU, the upper-half CPU backends that move real bytes through
addresses above ``2**63``, and the one that places each allocation where its check chooses (see
ptrport/device/presentation.py)."""

KINDS: dict[str, PlatformKind] = {
    k.name: k
    for k in (
        PlatformKind("cpu", CPU_BACKENDS, "torch==2.13.0", "torch 2.13, CPU build"),
        PlatformKind(
            "cpu-latest",
            CPU_BACKENDS,
            "torch==2.15.0",
            "torch 2.15, run on the CPU",
            constrained=False,
        ),
        PlatformKind(
            "ipex",
            CPU_BACKENDS,
            "torch==2.8.0",
            "torch 2.8 with intel-extension-for-pytorch 2.8 (CPU build)",
            packages=("intel-extension-for-pytorch==2.8.0",),
        ),
        PlatformKind(
            "cuda", "cuda", "torch", "torch's CUDA build, NVIDIA GPUs", device_check=_no_nvidia
        ),
        PlatformKind(
            "rocm",
            "rocm",
            "torch",
            "torch's ROCm build, AMD GPUs",
            index_url=f"{PYTORCH_INDEX}/rocm6.4",
            device_check=_no_amd,
        ),
        PlatformKind(
            "xpu",
            "xpu",
            "torch",
            "torch's XPU build, Intel GPUs (intel-extension-for-pytorch before torch 2.5)",
            index_url=f"{PYTORCH_INDEX}/xpu",
            device_check=_no_intel,
        ),
        PlatformKind(
            "mps",
            "mps",
            "torch",
            "torch on macOS, Apple GPUs (no Triton)",
            extras=(),
            device_check=_no_apple_gpu,
        ),
    )
}
"""The platform kinds by name, CPU kinds first."""


USAGE = "usage: python -m ptrport.report.platforms require|install|run KIND [PYTEST_ARG...]"


def _platform_id(kind: PlatformKind) -> str:
    return os.environ.get("PTRPORT_PLATFORM", "").strip() or kind.name


def run_command(kind: PlatformKind, more: Sequence[str] = ()) -> list[str]:
    """The pytest command that runs the scenarios for ``kind``: its backend, and its name as
    the platform id unless ``$PTRPORT_PLATFORM`` names another."""
    return [
        sys.executable,
        "-m",
        "pytest",
        f"--backend={kind.backend}",
        f"--platform-name={_platform_id(kind)}",
        *more,
    ]


def bench_command(kind: PlatformKind, more: Sequence[str] = ()) -> list[str] | None:
    """The ``ptrport bench`` command that adds the benchmarks section to the report the
    scenarios wrote (in the ``--report-dir`` that the pytest arguments ``more`` name, if
    any), so that the nightly diff sees performance regressions too; none when
    ``$PTRPORT_BENCH`` is ``off``. Raises :class:`ValueError` for a mode not in
    :data:`BENCH_MODES`."""
    mode = os.environ.get(BENCH_ENV, "").strip() or "full"
    if mode not in BENCH_MODES:
        raise ValueError(f"{BENCH_ENV}={mode!r} is not one of {', '.join(BENCH_MODES)}")
    if mode == "off":
        return None
    return [
        sys.executable,
        "-m",
        "ptrport.cli",
        "bench",
        f"--backend={kind.backend}",
        f"--platform-name={_platform_id(kind)}",
        *_report_dir(more),
        *(["--quick"] if mode == "quick" else []),
    ]


def _report_dir(pytest_args: Sequence[str]) -> list[str]:
    """``--report-dir=DIR`` as the last one in ``pytest_args`` gives it, else nothing."""
    found: list[str] = []
    for i, arg in enumerate(pytest_args):
        if arg.startswith("--report-dir="):
            found = [arg]
        elif arg == "--report-dir" and i + 1 < len(pytest_args):
            found = [f"--report-dir={pytest_args[i + 1]}"]
    return found


def _run(kind: PlatformKind, more: Sequence[str]) -> int:
    """The scenarios, then (when they ran: pytest's exit status 0 or 1) the benchmarks; the
    first non-zero exit status, else 0."""
    try:
        bench = bench_command(kind, more)
    except ValueError as exc:
        print(f"ptrport: {exc}", file=sys.stderr)
        return 2
    code = _call(run_command(kind, more))
    if bench is None or code not in (0, 1):
        return code
    benched = _call(bench)
    return code or benched


def _call(command: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    changed = [f"{k}={v}" for k, v in (env or {}).items() if os.environ.get(k) != v]
    print("+ " + " ".join([*changed, *command]), flush=True)
    return subprocess.run(command, check=False, env=env).returncode


def main(argv: Sequence[str] | None = None) -> int:
    """``require KIND``: exit 1 with the reason if this machine lacks the device. ``install
    KIND``: that check, then pip installs the kind's torch build and the project. ``run KIND``:
    the scenarios for the kind, further arguments going to pytest, then its benchmarks."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] not in ("require", "install", "run"):
        print(USAGE, file=sys.stderr)
        return 2
    action, name, more = args[0], args[1], args[2:]
    kind = KINDS.get(name)
    if kind is None:
        print(
            f"ptrport: unknown platform kind {name!r}; known: {', '.join(KINDS)}", file=sys.stderr
        )
        return 2
    reason = kind.missing_device()
    if reason:
        print(f"ptrport: {reason}", file=sys.stderr)
        return 1
    if action == "run":
        return _run(kind, more)
    for command in kind.install_commands() if action == "install" else []:
        code = _call(command, kind.install_environment())
        if code != 0:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
