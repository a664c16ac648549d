"""The upper-half CPU backends through the plugin: real copies at addresses above ``2**63``, a
device fault instead of a dereference, and ``data_ptr`` put back after every check, however it
ended, in this process, in isolated children and in pytest-xdist workers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from ptrport.addresses import HIGH_HALF
from tests.scenario_runs import copy_scenarios, use_profile

pytest.importorskip("triton")

HERE = Path(__file__).resolve().parent

RESTORED_CHECK = """
import os

import torch


def pytest_runtest_teardown(item):
    classes = (torch.Tensor, torch.UntypedStorage)
    patched = [cls.__name__ for cls in classes if "data_ptr" in vars(cls)]
    state = f"patched: {patched}" if patched else "restored"
    with open(os.environ["RESTORED_LOG"], "a") as log:
        log.write(f"{item.nodeid} {state}\\n")
"""


@pytest.fixture
def stray(pytester: pytest.Pytester) -> pytest.Pytester:
    use_profile(pytester)
    pytester.makepyfile(stray_subjects=(HERE / "stray_subjects.py").read_text())
    copy_scenarios(pytester, "test_batch_copy")
    return pytester


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((pytester.path / "reports" / "plat.json").read_text())
    return found


def _outcomes(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["subject"], r["backend"]): r for r in report["results"]}


def test_a_kernel_that_strays_from_presented_memory_fails_naming_the_address_and_the_run_goes_on(
    stray: pytest.Pytester,
) -> None:
    result = stray.runpytest(
        "--backend=cpu,cpu-usm,cpu-tbi",
        "--subject=stray_subjects:numpy_address_copy,uint64/triton",
        "--no-isolate",
        "--platform-name=plat",
    )
    result.assert_outcomes(passed=4, failed=2)
    found = _outcomes(_report(stray))
    assert found[("numpy-address-copy", "cpu")]["outcome"] == "passed"
    for backend in ("cpu-usm", "cpu-tbi"):
        failed = found[("numpy-address-copy", backend)]
        assert failed["outcome"] == "failed"
        message = failed["message"]
        assert message.startswith(f"DeviceFault: device fault on {backend}: load of "), message
        # The address numpy gave: the real one, which no upper-half address is.
        address = int(re.search(r" at (0x[0-9a-f]{16})", message).group(1), 16)  # type: ignore[union-attr]
        assert address < HIGH_HALF
        assert found[("uint64/triton", backend)]["outcome"] == "passed"


def test_data_ptr_is_put_back_after_every_check_however_it_ended(
    stray: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = stray.path / "restored.log"
    monkeypatch.setenv("RESTORED_LOG", str(log))
    stray.makepyfile(restored_check=RESTORED_CHECK)
    stray.syspathinsert()
    # Passing (uint64), expected to fail by raising (int64), failing with a device fault.
    result = stray.runpytest(
        "-p",
        "restored_check",
        "--backend=cpu-usm",
        "--subject=uint64/torch,int64/torch,stray_subjects:numpy_address_copy",
        "--no-isolate",
        "--platform-name=plat",
    )
    result.assert_outcomes(passed=1, xfailed=1, failed=1)
    lines = log.read_text().splitlines()
    assert len(lines) == 3
    assert all(line.endswith(" restored") for line in lines), lines
    # The run was in this process: it left torch as it found it.
    assert torch.Tensor.data_ptr is torch._C.TensorBase.data_ptr
    assert "data_ptr" not in vars(torch.UntypedStorage)


def test_data_ptr_is_put_back_in_each_xdist_worker(
    stray: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    log = stray.path / "restored.log"
    monkeypatch.setenv("RESTORED_LOG", str(log))
    stray.makepyfile(restored_check=RESTORED_CHECK)
    result = stray.runpytest_subprocess(
        "-n",
        "2",
        "-p",
        "restored_check",
        "--backend=cpu-usm,cpu-tbi",
        "--subject=uint64/torch,int64/torch,stray_subjects:numpy_address_copy",
        "--no-isolate",
        "--platform-name=plat",
    )
    lines = log.read_text().splitlines()
    # A batch copy check x three subjects x two backends.
    assert len(lines) == 3 * 2, result.stdout.str()
    result.stdout.fnmatch_lines(["*2 workers*"])
    assert all(line.endswith(" restored") for line in lines), lines
