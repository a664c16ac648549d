"""The ``ptrport`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ptrport.cli import main


def test_backends_lists_each_backend_with_why_it_is_missing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["backends"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = ["cpu", "cpu-usm", "cpu-tbi", "cpu-placed", "cuda", "rocm", "xpu", "mps"]
    assert [line.split()[0] for line in lines] == names
    assert [line.split()[1] for line in lines[:4]] == ["available"] * 4
    assert "simulates" not in lines[0]
    assert all("; simulates an upper-half device: CPU memory presented" in x for x in lines[1:3])
    assert "; simulates placed memory: CPU memory placed where each check's" in lines[3]
    assert f"unavailable  torch {torch.__version__} has no XPU support" in lines[6]


def test_backends_require_exits_1_naming_the_missing_backend(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["backends", "--require", "cpu", "--require", "xpu"]) == 1
    expected = f"ptrport: xpu: torch {torch.__version__} has no XPU support\n"
    assert capsys.readouterr().err == expected


def test_backends_require_of_an_unknown_name_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends", "--require", "bogus"]) == 2
    assert "unknown backend 'bogus'" in capsys.readouterr().err


def test_backends_json_is_the_platform_fingerprint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends", "--json"]) == 0
    fingerprint = json.loads(capsys.readouterr().out)
    assert fingerprint["software"]["torch"] == str(torch.__version__)
    assert fingerprint["backends"]["cpu"]["available"] is True


def test_subjects_lists_the_builtin_ones_then_the_catalogue_marking_the_controls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["subjects"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 9 + 13
    by_default = [line for line in lines if "[control; must" in line]
    assert [line.split()[0] for line in by_default] == [
        "int64/triton",
        "int64/torch",
        "int64/ctypes",
    ]
    assert all("; in the upper half also in batch_copy;" in line for line in by_default)
    catalogue = [line.split()[0] for line in lines if "[control; run with --controls" in line]
    assert len(catalogue) == 13 and catalogue[0] == "float64"
    placed = [line.split()[0] for line in lines if "only where allocations are placed" in line]
    assert placed == ["end-mask-wrap", "signed-bounds"]
    (forty_eight,) = [line for line in lines if line.startswith("48-bit-address ")]
    assert (
        "shows with a real entry at an upper-half address (cpu-usm, cpu-tbi, xpu)]" in forty_eight
    )


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    assert "required: COMMAND" in capsys.readouterr().err


CONSOLE_SCRIPT = Path(sys.executable).with_name("ptrport")


def _console(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if not CONSOLE_SCRIPT.exists():
        pytest.skip(f"no ptrport console script beside {sys.executable}")
    return subprocess.run(
        [str(CONSOLE_SCRIPT), *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_run_help_names_the_command(tmp_path: Path) -> None:
    done = _console("run", "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ptrport run [options]")


def test_a_run_of_a_triton_scenario_ends_without_a_leak_report(tmp_path: Path) -> None:
    """The console script's exit (not pytest's, not main()'s) after Triton kernels ran: no
    nanobind report of objects left alive."""
    pytest.importorskip("triton")
    done = _console("run", "--backend=cpu", "-k", "triton_kernel", "-p", "no:cacheprovider",
                    cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "passed" in done.stdout
    output = done.stdout + done.stderr
    assert "leaked" not in output and "nanobind" not in output, output[-2000:]
