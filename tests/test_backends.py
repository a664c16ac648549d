"""Backends and the platform: which device kinds are here, why the others are not, how
``--backend`` is parsed, and the platform id a report is filed under."""

from __future__ import annotations

import pytest
import torch

from ptrport.device.backends import (
    Backend,
    BackendSelection,
    CpuBackend,
    CpuTbiBackend,
    CpuUsmBackend,
    CudaBackend,
    MpsBackend,
    RocmBackend,
    XpuBackend,
    ipex_version,
    load_backends,
    parse_backend_spec,
)
from ptrport.device.fingerprint import (
    PLATFORM_ENV,
    check_platform_id,
    default_platform_id,
    execution_target,
    platform_fingerprint,
    platform_id_from_env,
)
from ptrport.device.presentation import TBI, USM
from ptrport.errors import UnknownName

CPU = CpuBackend()
CPU_USM = CpuUsmBackend()
CPU_TBI = CpuTbiBackend()
BUILTIN_NAMES = ["cpu", "cpu-usm", "cpu-tbi", "cpu-placed", "cuda", "rocm", "xpu", "mps"]
KNOWN_CHOICES = "cpu, cpu-usm, cpu-tbi, cpu-placed, cuda, rocm, xpu, mps, all, available"
TORCH = f"torch {torch.__version__}"
CPU_ONLY_TORCH = (
    torch.version.cuda is None
    and torch.version.hip is None
    and getattr(torch.version, "xpu", None) is None
    and not torch.backends.mps.is_built()
    and ipex_version() is None
)
cpu_only_torch = pytest.mark.skipif(not CPU_ONLY_TORCH, reason="torch here supports a GPU")


class _ExplodingBackend(Backend):
    """A backend whose probe raises, the way a broken driver or install does."""

    name = "exploding"
    device_type = "cpu"

    def __init__(self) -> None:
        self.probes = 0

    def _unavailable_reason(self) -> str | None:
        self.probes += 1
        raise RuntimeError("driver exploded\nsecond line of the driver's message")


class _CpuTwin(CpuBackend):
    name = "cpu-twin"

    def platform_slug(self) -> str:
        return "cpu-twin"


def test_load_backends_has_cpu_cuda_rocm_xpu_mps_in_that_order() -> None:
    found = load_backends()
    assert list(found)[: len(BUILTIN_NAMES)] == BUILTIN_NAMES
    assert all(b.name == name for name, b in found.items())
    assert all(isinstance(b, Backend) for b in found.values())


def test_load_backends_makes_fresh_instances() -> None:
    assert load_backends()["cpu"] is not load_backends()["cpu"]


def test_cpu_is_available() -> None:
    assert CPU.is_available()
    assert CPU.unavailable_reason is None
    assert load_backends()["cpu"].is_available()


def test_cpu_is_the_host_device_and_cannot_pin() -> None:
    assert CPU.device == torch.device("cpu")
    assert CPU.can_pin is False
    CPU.synchronize()


@cpu_only_torch
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("cuda", f"{TORCH} has no CUDA support"),
        ("rocm", f"{TORCH} has no ROCm (HIP) support"),
        ("xpu", f"{TORCH} has no XPU support"),
        ("mps", f"{TORCH} has no MPS support"),
    ],
)
def test_accelerators_are_unavailable_here_with_a_reason_naming_the_torch_version(
    name: str, reason: str
) -> None:
    found = load_backends()[name]
    assert not found.is_available()
    assert found.unavailable_reason == reason


@cpu_only_torch
def test_the_xpu_reason_is_the_one_for_a_cpu_only_build() -> None:
    assert XpuBackend().unavailable_reason == f"torch {torch.__version__} has no XPU support"


@cpu_only_torch
@pytest.mark.parametrize(
    "cls", [CudaBackend, RocmBackend, XpuBackend, MpsBackend], ids=lambda c: c.name
)
def test_an_unavailable_backend_cannot_pin_and_has_no_device_model(cls: type[Backend]) -> None:
    found = cls()
    assert found.can_pin is False
    assert found.device_model() is None
    assert found.platform_slug() == found.name


@pytest.mark.parametrize(
    ("cls", "device"),
    [
        (CudaBackend, torch.device("cuda", 0)),
        (RocmBackend, torch.device("cuda", 0)),
        (XpuBackend, torch.device("xpu", 0)),
        (MpsBackend, torch.device("mps", 0)),
    ],
    ids=lambda value: getattr(value, "name", str(value)),
)
def test_each_accelerator_names_its_first_device(cls: type[Backend], device: torch.device) -> None:
    assert cls().device == device


def test_only_mps_addresses_are_not_device_pointers() -> None:
    flags = {name: b.addresses_are_device_pointers for name, b in load_backends().items()}
    assert [name for name, flag in flags.items() if not flag] == ["mps"]


@pytest.mark.parametrize(
    ("spec", "names", "explicit"),
    [
        ("available", (), False),
        ("all", (), False),
        (" all ", (), False),
        ("cpu", ("cpu",), True),
        ("cuda,cpu", ("cuda", "cpu"), True),
        ("cpu, xpu ,", ("cpu", "xpu"), True),
        ("cpu,cpu", ("cpu",), True),
        ("cpu,mps,cpu", ("cpu", "mps"), True),
    ],
)
def test_parse_backend_spec_reads_a_selection(
    spec: str, names: tuple[str, ...], explicit: bool
) -> None:
    selection = parse_backend_spec(spec, BUILTIN_NAMES)
    assert selection.names == names
    assert selection.explicit is explicit
    if not explicit:
        assert selection.spec == spec.strip()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tpu", f"unknown backend 'tpu'; known: {KNOWN_CHOICES}"),
        ("cpu,tpu", f"unknown backend 'tpu'; known: {KNOWN_CHOICES}"),
        ("", f"no backend named; known: {KNOWN_CHOICES}"),
        (" , ", f"no backend named; known: {KNOWN_CHOICES}"),
        ("all,cpu", "'all' and 'available' stand alone, not in a list"),
        ("cpu,available", "'all' and 'available' stand alone, not in a list"),
        ("all,all", "'all' and 'available' stand alone, not in a list"),
    ],
)
def test_a_bad_backend_spec_raises_unknown_name_saying_why(spec: str, message: str) -> None:
    with pytest.raises(UnknownName) as raised:
        parse_backend_spec(spec, BUILTIN_NAMES)
    assert str(raised.value) == message


def test_resolving_available_keeps_only_the_backends_present_here() -> None:
    known = load_backends()
    resolved = parse_backend_spec("available", known).resolve(known)
    assert known["cpu"] in resolved
    assert all(b.is_available() for b in resolved)
    assert [b.name for b in resolved] == [n for n, b in known.items() if b.is_available()]


def test_resolving_all_keeps_every_backend_in_order() -> None:
    known = load_backends()
    resolved = parse_backend_spec("all", known).resolve(known)
    assert resolved == list(known.values())


def test_resolving_names_returns_those_backends_in_the_order_given_available_or_not() -> None:
    known = load_backends()
    resolved = BackendSelection("cuda,cpu", ("cuda", "cpu"), explicit=True).resolve(known)
    assert resolved == [known["cuda"], known["cpu"]]
    assert resolved[0] is known["cuda"]


def test_a_probe_that_raises_becomes_the_reason() -> None:
    exploding = _ExplodingBackend()
    assert exploding.unavailable_reason == "probing it raised RuntimeError: driver exploded"
    assert not exploding.is_available()
    assert exploding.can_pin is False


def test_a_probe_is_run_once() -> None:
    exploding = _ExplodingBackend()
    for _ in range(3):
        exploding.is_available()
    assert exploding.probes == 1


def test_a_backend_without_a_probe_is_unavailable_rather_than_an_error() -> None:
    class Unfinished(Backend):
        name = "unfinished"
        device_type = "cpu"

    reason = Unfinished().unavailable_reason
    assert reason is not None
    assert reason.startswith("probing it raised NotImplementedError")


def test_the_cpu_platform_slug_names_the_architecture() -> None:
    slug = CPU.platform_slug()
    assert slug.startswith("cpu-")
    assert slug == slug.lower()
    assert check_platform_id(slug) == slug


@pytest.mark.parametrize(
    ("found", "keys"),
    [
        (CPU, {"device", "device_model"}),
        (MpsBackend(), {"device", "device_model"}),
        (CudaBackend(), {"device", "device_model", "cuda_runtime"}),
        (RocmBackend(), {"device", "device_model", "hip_runtime"}),
        (XpuBackend(), {"device", "device_model", "xpu_runtime", "ipex"}),
    ],
    ids=repr,
)
def test_a_fingerprint_has_the_keys_of_its_backend(found: Backend, keys: set[str]) -> None:
    fingerprint = found.fingerprint()
    if CPU_ONLY_TORCH or found is CPU:
        assert set(fingerprint) == keys
    else:
        assert keys <= set(fingerprint)
    assert fingerprint["device"] == str(found.device)
    assert all(value is None or isinstance(value, str) for value in fingerprint.values())


def test_the_cpu_fingerprint_names_the_cpu() -> None:
    assert CPU.fingerprint()["device"] == "cpu"


@pytest.mark.parametrize(
    "value", ["cpu-x86-64", "a.b_c-1", "x", "0", "cuda-nvidia-h100-80gb-hbm3", "a" * 128]
)
def test_check_platform_id_accepts_a_name_a_file_can_have(value: str) -> None:
    assert check_platform_id(value) == value


@pytest.mark.parametrize(
    "value", ["", "../x", "a b", "a/b", "-x", ".hidden", "_x", "a\\b", "a\nb", "a" * 129]
)
def test_check_platform_id_rejects_a_name_no_report_file_should_have(value: str) -> None:
    with pytest.raises(ValueError, match="platform id"):
        check_platform_id(value)


def test_the_default_platform_id_is_the_slugs_of_the_available_backends() -> None:
    assert default_platform_id([CPU]) == CPU.platform_slug()
    assert default_platform_id([CPU, _CpuTwin()]) == f"{CPU.platform_slug()}_cpu-twin"
    assert check_platform_id(default_platform_id([CPU, _CpuTwin()]))


@cpu_only_torch
def test_the_default_platform_id_leaves_unavailable_backends_out() -> None:
    assert default_platform_id([CudaBackend(), CPU, XpuBackend()]) == CPU.platform_slug()
    assert default_platform_id([CudaBackend()]) == "none"


def test_the_upper_half_backends_name_the_platform_only_when_they_run_alone() -> None:
    assert default_platform_id([CPU, CPU_USM, CPU_TBI]) == CPU.platform_slug()
    machine = CPU.platform_slug().removeprefix("cpu-")
    assert default_platform_id([CPU_USM]) == f"cpu-usm-{machine}"
    assert default_platform_id([CPU_USM, CPU_TBI]) == f"cpu-usm-{machine}_cpu-tbi-{machine}"


def test_the_default_platform_id_of_no_backends_is_none() -> None:
    assert default_platform_id([]) == "none"


def test_the_platform_id_comes_from_the_environment_when_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PLATFORM_ENV, "lab-a770")
    assert platform_id_from_env() == "lab-a770"
    monkeypatch.setenv(PLATFORM_ENV, "")
    assert platform_id_from_env() is None
    monkeypatch.delenv(PLATFORM_ENV)
    assert platform_id_from_env() is None
    monkeypatch.setenv(PLATFORM_ENV, "../etc")
    with pytest.raises(ValueError, match=r"'\.\./etc'"):
        platform_id_from_env()


def test_the_platform_fingerprint_records_unavailable_backends_with_their_reason() -> None:
    known = load_backends()
    fingerprint = platform_fingerprint(list(known.values()))
    assert set(fingerprint) == {"software", "system", "backends"}
    assert fingerprint["software"]["torch"] == str(torch.__version__)
    assert list(fingerprint["backends"]) == list(known)
    cpu = fingerprint["backends"]["cpu"]
    assert cpu["available"] is True
    assert cpu["reason"] is None
    assert cpu["device"] == "cpu"
    for name, entry in fingerprint["backends"].items():
        if not entry["available"]:
            assert entry == {"available": False, "reason": known[name].unavailable_reason}


# -- the upper-half CPU backends --------------------------------------------------------------


def test_the_upper_half_backends_are_always_available_cpu_devices_at_high_addresses() -> None:
    for found, presentation in ((CPU_USM, USM), (CPU_TBI, TBI)):
        assert found.is_available()
        assert found.device == torch.device("cpu") and found.kind == "cpu"
        assert found.high_addresses is True and not found.can_pin
        assert found.presentation is presentation
        assert found.simulated is not None and presentation.description in found.simulated
        assert found.fingerprint()["simulated"] == found.simulated
    assert CPU.high_addresses is False and CPU.simulated is None
    assert "simulated" not in CPU.fingerprint()


def test_a_run_on_an_upper_half_backend_presents_addresses_only_inside_its_scope() -> None:
    tensor = torch.zeros(4)
    real = tensor.data_ptr()
    with pytest.raises(KeyError), CPU_USM.running():
        assert tensor.data_ptr() == USM.present(real) >= 2**63
        raise KeyError("the check failed")
    assert tensor.data_ptr() == real
    assert torch.Tensor.data_ptr is torch._C.TensorBase.data_ptr
    with CPU.running():
        assert tensor.data_ptr() == real


def test_the_execution_target_says_which_backends_are_simulated() -> None:
    target = execution_target([CPU, CPU_USM, CPU_TBI])
    assert target["backend"] == "cpu" and target["kind"] == "cpu"
    assert target["simulated"] == {"cpu-usm": CPU_USM.simulated, "cpu-tbi": CPU_TBI.simulated}
    assert execution_target([CPU])["simulated"] == {}
    assert execution_target([CPU_TBI])["backend"] == "cpu-tbi"
