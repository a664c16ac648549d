"""Platform kinds: what each installs, and that a GPU kind on a machine without its device stops
with the reason before installing anything."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ptrport.report import platforms
from ptrport.report.platforms import KINDS
from tests.scenario_runs import copy_scenarios, use_profile

REPO = Path(__file__).resolve().parent.parent
GPU_KINDS = ["cuda", "rocm", "xpu", "mps"]


def test_the_kinds_are_the_cpu_ones_then_the_gpu_ones() -> None:
    assert list(KINDS) == ["cpu", "cpu-latest", "ipex", *GPU_KINDS]
    assert [k.name for k in KINDS.values() if k.gpu] == GPU_KINDS
    assert {k.backend for k in KINDS.values() if not k.gpu} == {"cpu,cpu-usm,cpu-tbi,cpu-placed"}


def test_tox_has_one_environment_per_kind_in_one_factored_section() -> None:
    config = configparser.ConfigParser(interpolation=None)
    config.read(REPO / "tox.ini")
    section = f"testenv:{{{','.join(KINDS)}}}"
    assert config.has_section(section), config.sections()
    assert "ptrport.report.platforms install {env_name}" in config[section]["commands_pre"]
    listed = [e.strip() for e in config["tox"]["env_list"].split(",")]
    assert set(KINDS) | {"tests", "lint", "type", "docs", "report"} == set(listed)


def test_a_cpu_kind_installs_its_pinned_torch_then_the_project() -> None:
    commands = KINDS["cpu"].install_commands("python")
    assert commands == [
        ["python", "-m", "pip", "install", "torch==2.13.0"],
        ["python", "-m", "pip", "install", "-e", ".[triton]"],
    ]
    assert KINDS["cpu-latest"].install_commands("python")[0][-1] == "torch==2.15.0"


def test_cpu_latest_pins_a_newer_torch_than_cpu() -> None:
    def release(kind: str) -> tuple[int, ...]:
        return tuple(int(part) for part in KINDS[kind].torch.partition("==")[2].split("."))

    assert release("cpu-latest") > release("cpu")


def test_only_cpu_latest_switches_pip_constraints_off_keeping_the_rest() -> None:
    environ = {"PATH": "/bin", "PIP_FIND_LINKS": "/wheels", "PIP_CONSTRAINT": ""}
    assert KINDS["cpu"].install_environment(environ) == environ
    lifted = KINDS["cpu-latest"].install_environment(environ)
    assert lifted == {**environ, "PIP_CONSTRAINT": os.devnull}
    assert [k.name for k in KINDS.values() if not k.constrained] == ["cpu-latest"]


def _wheel(directory: Path, name: str, version: str) -> None:
    """The smallest wheel pip resolves: its metadata, nothing to install."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    with zipfile.ZipFile(directory / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)
        wheel.writestr(f"{info}/RECORD", "".join(f"{path},,\n" for path in [*files, info]))


def test_pip_installs_past_a_configured_cap_for_cpu_latest_only(tmp_path: Path) -> None:
    """As on a machine whose pip configuration names a constraint file that caps torch."""
    for version in ("1.0", "2.0"):
        _wheel(tmp_path, "capped", version)
    (tmp_path / "constraints.txt").write_text("capped<=1.0\n")
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nconstraint = {tmp_path / 'constraints.txt'}\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    environ.update(PIP_CONFIG_FILE=str(config), PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path))
    install = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed"]

    def pip(kind: str, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
        command = [*install, "capped==2.0"]
        env = KINDS[kind].install_environment(environment)
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)

    held = pip("cpu", environ)
    assert held.returncode != 0 and "capped<=1.0" in held.stdout + held.stderr
    lifted = pip("cpu-latest", environ)
    assert lifted.returncode == 0, lifted.stderr
    assert "Would install capped-2.0" in lifted.stdout


def test_ipex_installs_torch_2_8_and_the_extension_beside_it() -> None:
    commands = KINDS["ipex"].install_commands("python")
    assert commands[0][-1] == "torch==2.8.0"
    assert commands[1][-1] == "intel-extension-for-pytorch==2.8.0"


def test_gpu_builds_come_from_their_index_and_mps_installs_no_triton() -> None:
    rocm = KINDS["rocm"].install_commands("python")[0]
    assert rocm[-2:] == ["--index-url", f"{platforms.PYTORCH_INDEX}/rocm6.4"]
    assert KINDS["mps"].install_commands("python")[-1][-1] == "."


def test_xpu_before_torch_2_5_adds_intel_extension_for_pytorch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(platforms.TORCH_ENV, "torch==2.4.1")
    commands = KINDS["xpu"].install_commands("python")
    assert commands[0][4] == "torch==2.4.1"
    assert commands[1][4] == "intel-extension-for-pytorch~=2.4.0"
    assert platforms.INTEL_INDEX in commands[1]
    monkeypatch.setenv(platforms.TORCH_ENV, "torch==2.7.0")
    assert len(KINDS["xpu"].install_commands("python")) == 2


def test_the_run_command_names_the_backend_and_the_kind_as_platform(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PTRPORT_PLATFORM", raising=False)
    command = platforms.run_command(KINDS["cpu-latest"], ["-k", "round_trip"])
    assert command[1:] == [
        "-m",
        "pytest",
        "--backend=cpu,cpu-usm,cpu-tbi,cpu-placed",
        "--platform-name=cpu-latest",
        "-k",
        "round_trip",
    ]
    monkeypatch.setenv("PTRPORT_PLATFORM", "lab-7")
    assert "--platform-name=lab-7" in platforms.run_command(KINDS["cpu"])


def test_the_bench_command_adds_to_the_same_report_unless_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PTRPORT_PLATFORM", "lab-7")
    monkeypatch.delenv(platforms.BENCH_ENV, raising=False)
    command = platforms.bench_command(KINDS["ipex"])
    assert command is not None
    assert command[1:] == [
        "-m",
        "ptrport.cli",
        "bench",
        "--backend=cpu,cpu-usm,cpu-tbi,cpu-placed",
        "--platform-name=lab-7",
    ]
    # The report the scenarios write, where pytest's --report-dir puts it.
    for more in (["-x", "--report-dir", "out"], ["--report-dir=elsewhere", "--report-dir=out"]):
        assert platforms.bench_command(KINDS["cpu"], more) == [*command, "--report-dir=out"]
    monkeypatch.setenv(platforms.BENCH_ENV, "quick")
    assert platforms.bench_command(KINDS["cpu"]) == [*command, "--quick"]
    monkeypatch.setenv(platforms.BENCH_ENV, "off")
    assert platforms.bench_command(KINDS["cpu"]) is None
    monkeypatch.setenv(platforms.BENCH_ENV, "fast")
    with pytest.raises(ValueError, match="PTRPORT_BENCH='fast' is not one of full, quick, off"):
        platforms.bench_command(KINDS["cpu"])


def test_run_writes_the_scenarios_and_then_the_benchmarks_into_one_report_even_after_a_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_profile(pytester)
    copy_scenarios(pytester, "test_uint64_operations")
    # A failing test: the benchmarks are measured all the same, and the run still fails.
    pytester.makepyfile(test_failing="def test_fails():\n    assert 1 == 2\n")
    monkeypatch.setenv("PTRPORT_PLATFORM", "lab-7")
    monkeypatch.setenv(platforms.BENCH_ENV, "quick")
    run = pytester.run(sys.executable, "-m", "ptrport.report.platforms", "run", "cpu", timeout=300)
    assert run.ret == 1, run.stdout.str() + run.stderr.str()
    run.stdout.fnmatch_lines(["*1 failed*", "ptrport: recorded * benchmarks in *lab-7.json"])
    report = json.loads((pytester.path / "reports" / "lab-7.json").read_text())
    scenarios = {r["scenario"] for r in report["results"]}
    assert scenarios == {"uint64_operations"}
    assert report["complete"] is True
    benched = report["benchmarks"]["measurements"]
    assert {m["backend"] for m in benched} == {"cpu", "cpu-usm", "cpu-tbi", "cpu-placed"}
    assert {"staging.numpy", "transfer", "execute.torch"} <= {m["name"] for m in benched}
    assert report["benchmarks"]["quick"] is True


def test_run_with_a_bad_bench_mode_is_one_line_and_exit_2_before_the_scenarios(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(platforms.BENCH_ENV, "fast")
    run = pytester.run(sys.executable, "-m", "ptrport.report.platforms", "run", "cpu", timeout=60)
    assert run.ret == 2
    assert run.stderr.lines == ["ptrport: PTRPORT_BENCH='fast' is not one of full, quick, off"]
    assert not (pytester.path / "reports").exists()


def _module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptrport.report.platforms", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("name", GPU_KINDS)
def test_a_missing_device_is_one_line_and_exit_1(name: str) -> None:
    reason = KINDS[name].missing_device()
    if reason is None:
        pytest.skip(f"this machine has the device of {name}")
    done = _module("install", name)
    assert done.returncode == 1
    assert done.stderr == f"ptrport: {reason}\n"
    assert done.stdout == ""


def test_the_cpu_is_always_there() -> None:
    assert KINDS["cpu"].missing_device() is None
    assert _module("require", "cpu").returncode == 0


def test_bad_usage_and_unknown_kinds_exit_2() -> None:
    assert _module("require").returncode == 2
    done = _module("require", "tpu")
    assert done.returncode == 2
    assert "unknown platform kind 'tpu'; known: cpu, cpu-latest" in done.stderr


@pytest.mark.skipif(shutil.which("tox") is None, reason="tox is not installed")
def test_tox_e_xpu_fails_fast_without_installing_torch(tmp_path: Path) -> None:
    if KINDS["xpu"].missing_device() is None:
        pytest.skip("this machine has an Intel GPU")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOX")}
    done = subprocess.run(
        ["tox", "-e", "xpu", "--workdir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 1
    assert "ptrport: xpu: no Intel GPU here" in done.stdout + done.stderr
    site = list(tmp_path.glob("xpu/lib/python*/site-packages"))
    assert site and not list(site[0].glob("torch*"))
