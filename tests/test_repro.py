"""Repro scripts: examples rebuilt from their records, scripts that rerun the failing check."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from ptrport.check.batches import Batch, Entry
from ptrport.check.replay import ReplayData, rebuild
from ptrport.device.allocations import allocate
from ptrport.device.backends import CpuBackend, CpuPlacedBackend, CpuUsmBackend
from ptrport.report.platform_report import PlatformReport
from ptrport.report.records import Outcome, Result, describe_example
from ptrport.report.repro import ReproError, command, script, select, write_scripts

CPU = CpuBackend()
INT64_FAILURE = {"src": "0x0000000000000000", "dst": "0x8000000000000000", "nbytes": 0}
OVERFLOW = "OverflowError: Python int too large to convert to C long"


def _result(
    subject_name: str,
    example: dict[str, Any],
    *,
    body: str = "ptrport.check.checks:an_entry_reads_back_bit_exact",
    check: str = "table_round_trip::test_an_entry_reads_back_bit_exact",
    outcome: Outcome = Outcome.XFAILED,
) -> Result:
    return Result(
        check=check,
        scenario=check.split("::")[0],
        subject=subject_name,
        backend="cpu",
        outcome=outcome,
        message=OVERFLOW,
        example=example,
        body=body,
    )


def _report(*results: Result) -> PlatformReport:
    return PlatformReport(
        path=Path("reports/lab-1.json"),
        platform_id="lab-1",
        fingerprint={"software": {"torch": str(torch.__version__)}, "system": {}, "backends": {}},
        execution_target={"kind": "cpu", "backend": "cpu", "runtime": {}, "driver": None},
        run={},
        complete=True,
        results=results,
    )


def _run(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=300, check=False
    )


def test_rebuild_reads_hex_addresses_as_ints_and_leaves_other_values() -> None:
    assert rebuild(INT64_FAILURE, CPU) == {"src": 0, "dst": 2**63, "nbytes": 0}
    assert rebuild({"steps": [["0xffffffffffffffff", 3]]}, CPU) == {"steps": [[2**64 - 1, 3]]}


def test_rebuild_makes_real_entries_again_with_the_same_bytes_at_the_same_offsets() -> None:
    src = allocate(CPU, dtype=torch.float32, numel=16, offset=3, fill_seed=11)
    dst = allocate(CPU, dtype=torch.int64, numel=4, offset=1, fill_seed=12)
    batch = Batch((Entry(src.address + 5, dst.address + 2, 7, src, dst), Entry(2**63, 2**63, 0)))
    rebuilt = rebuild(describe_example({"batch": batch}), CPU)["batch"]
    assert isinstance(rebuilt, Batch)
    real, synthetic = rebuilt.entries
    assert real.src_allocation is not None and real.dst_allocation is not None
    assert torch.equal(real.src_allocation.snapshot(), src.snapshot())
    assert torch.equal(real.dst_allocation.snapshot(), dst.snapshot())
    assert real.src_allocation.dtype == torch.float32
    assert (real.src - real.src_allocation.address, real.dst - real.dst_allocation.address) == (
        5,
        2,
    )
    assert real.nbytes == 7
    assert (synthetic.src, synthetic.dst, synthetic.nbytes, synthetic.synthetic) == (
        2**63,
        2**63,
        0,
        True,
    )


def test_replayed_draws_come_back_by_label_and_a_missing_one_is_refused() -> None:
    data = ReplayData({"batch": 1, "n": 2})
    assert data.draw(object(), label="n") == 2
    assert data.draw(object(), label="batch") == 1
    with pytest.raises(ReproError, match="no draw labelled 'spare'"):
        data.draw(object(), label="spare")


def test_the_int64_controls_repro_fails_the_same_way_and_prints_the_example_in_hex(
    tmp_path: Path,
) -> None:
    path = tmp_path / "repro.py"
    path.write_text(script(_result("int64/torch", INT64_FAILURE), _report()))
    done = _run(path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "'dst': '0x8000000000000000'" in done.stdout
    assert f"FAILED: {OVERFLOW}" in done.stdout
    assert "the same failure as reported" in done.stdout


def test_the_same_example_on_the_uint64_fix_does_not_reproduce(tmp_path: Path) -> None:
    path = tmp_path / "repro.py"
    path.write_text(script(_result("uint64/torch", INT64_FAILURE), _report()))
    done = _run(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed: the failure did not reproduce here" in done.stdout


def test_a_repro_of_a_batch_with_real_entries_runs_the_copy_again(tmp_path: Path) -> None:
    src = allocate(CPU, dtype=torch.uint8, numel=64, fill_seed=1)
    dst = allocate(CPU, dtype=torch.uint8, numel=64, fill_seed=2)
    batch = Batch((Entry(src.address + 8, dst.address, 32, src, dst),))
    result = _result(
        "uint64/ctypes",
        describe_example({"batch": batch}),
        body="ptrport.check.checks:real_entries_are_copied_exactly",
        check="batch_copy::test_real_entries_are_copied_exactly",
        outcome=Outcome.FAILED,
    )
    path = tmp_path / "repro.py"
    path.write_text(script(result, _report()))
    done = _run(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "'nbytes': 32" in done.stdout


def test_a_repro_on_cpu_usm_rebuilds_real_entries_at_presented_addresses(tmp_path: Path) -> None:
    usm = CpuUsmBackend()
    with usm.running():
        src = allocate(usm, dtype=torch.uint8, numel=64, fill_seed=1)
        dst = allocate(usm, dtype=torch.uint8, numel=64, fill_seed=2)
        batch = Batch((Entry(src.address + 8, dst.address, 32, src, dst),))
        example = describe_example({"batch": batch})
    assert int(example["batch"]["entries"][0]["src"], 16) >= 2**63
    result = dataclasses.replace(
        _result(
            "int64/torch",
            example,
            body="ptrport.check.checks:real_entries_are_copied_exactly",
            check="batch_copy::test_real_entries_are_copied_exactly",
        ),
        backend="cpu-usm",
    )
    path = tmp_path / "repro.py"
    path.write_text(script(result, _report()))
    done = _run(path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the same failure as reported" in done.stdout
    rebuilt = done.stdout.split("as rebuilt here", 1)[1]
    assert "'src': '0xffff" in rebuilt


def test_a_repro_names_what_is_missing_when_it_cannot_run(tmp_path: Path) -> None:
    path = tmp_path / "repro.py"
    result = _result("int64/torch", INT64_FAILURE, body="ptrport.check.checks:no_such_check")
    path.write_text(script(result, _report()))
    done = _run(path)
    assert done.returncode == 2
    assert (
        "cannot load check body 'ptrport.check.checks:no_such_check': "
        "module 'ptrport.check.checks' has no attribute 'no_such_check'" in done.stdout
    )


def test_select_needs_a_failure_and_names_the_candidates_when_several_match() -> None:
    report = _report(_result("int64/torch", INT64_FAILURE), _result("int64/ctypes", INT64_FAILURE))
    check = "table_round_trip::test_an_entry_reads_back_bit_exact"
    assert select(report, check=check, subject="int64/ctypes").subject == "int64/ctypes"
    with pytest.raises(ReproError, match="failed for int64/torch on cpu, int64/ctypes on cpu"):
        select(report, check=check)
    with pytest.raises(ReproError, match="no failure with an example for check 'nope'"):
        select(report, check="nope")


def test_a_check_with_no_failure_is_refused_with_the_first_five_ids_that_failed() -> None:
    checks = [f"table_round_trip::test_x[{n}]" for n in range(7)]
    report = _report(*(_result("int64/torch", INT64_FAILURE, check=c) for c in checks))
    with pytest.raises(ReproError) as refused:
        select(report, check="nope")
    assert str(refused.value) == (
        "reports/lab-1.json: no failure with an example for check 'nope'; its failures: "
        + ", ".join(checks[:5])
        + " and 2 more"
    )


def test_a_kept_results_command_reruns_it_with_the_seed_of_the_run_that_found_it() -> None:
    """A partial run keeps the results of an earlier one; the same examples come back only
    with that run's profile and seed. Every command names the report's platform, so that a
    rerun on cpu-usm merges into it rather than into a report of its own."""
    found = dataclasses.replace(
        _result("own test", INT64_FAILURE, check="test_t.py::test_x", outcome=Outcome.FAILED),
        backend="cpu-usm",
        nodeid="test_t.py::test_x[cpu-usm]",
    )
    kept = dataclasses.replace(
        found,
        from_run={
            "started": "2026-12-06T01:00:00+00:00",
            "hypothesis_profile": "nightly",
            "seed": "99",
        },
    )
    report = dataclasses.replace(_report(), run={"hypothesis_profile": "dev", "seed": "1234"})
    assert command(found, report) == (
        "HYPOTHESIS_PROFILE=dev pytest 'test_t.py::test_x[cpu-usm]' --backend=cpu-usm "
        "--platform-name=lab-1 --hypothesis-seed=1234"
    )
    assert command(kept, report) == (
        "HYPOTHESIS_PROFILE=nightly pytest 'test_t.py::test_x[cpu-usm]' --backend=cpu-usm "
        "--platform-name=lab-1 --hypothesis-seed=99"
    )


def test_write_scripts_writes_one_file_per_failure(tmp_path: Path) -> None:
    passed = Result("a::b", "a", "uint64/torch", "cpu", Outcome.PASSED)
    report = _report(
        _result("int64/torch", INT64_FAILURE), _result("int64/ctypes", INT64_FAILURE), passed
    )
    written = write_scripts(report, tmp_path / "repros")
    assert [p.name for p in written] == [
        "table_round_trip-test_an_entry_reads_back_bit_exact-int64_torch-cpu.py",
        "table_round_trip-test_an_entry_reads_back_bit_exact-int64_ctypes-cpu.py",
    ]
    assert all("run_check(" in p.read_text() for p in written)


def test_text_from_the_report_cannot_break_out_of_the_scripts_comments(tmp_path: Path) -> None:
    result = _result("int64/torch", INT64_FAILURE)
    hostile = Result(**{**result.__dict__, "message": "x\nimport os; os._exit(7)\n"})
    path = tmp_path / "repro.py"
    path.write_text(script(hostile, _report()))
    done = _run(path)
    assert done.returncode == 1, done.stdout + done.stderr


def test_a_repro_on_cpu_placed_places_the_allocations_where_the_report_says(
    tmp_path: Path,
) -> None:
    placed = CpuPlacedBackend()
    with placed.running():
        src = allocate(placed, numel=32, at=2**63 - 16, placed="across 2**63", fill_seed=1)
        dst = allocate(placed, numel=32, at=2**63 + 4096, placed="across 2**63", fill_seed=2)
        batch = Batch((Entry(2**63, dst.address, 8, src, dst),))
        example = describe_example({"batch": batch})
    result = dataclasses.replace(
        _result(
            "signed-bounds",
            example,
            body="ptrport.check.checks:real_entries_are_copied_exactly",
            check="batch_copy::test_real_entries_are_copied_exactly",
        ),
        backend="cpu-placed",
        message="AssertionError: entry 0",
    )
    path = tmp_path / "repro.py"
    path.write_text(script(result, _report()))
    done = _run(path)
    assert done.returncode == 1, done.stdout + done.stderr
    rebuilt = done.stdout.split("as rebuilt here", 1)[1]
    assert "'address': '0x7ffffffffffffff0'" in rebuilt
    assert "'placed': 'across 2**63'" in rebuilt
    assert "FAILED: AssertionError" in done.stdout


def test_a_repro_of_a_user_subject_loads_it_again_and_fails_the_same_way(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    reports = tmp_path / "reports"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--backend=cpu-usm",
            "--subject=examples.batched_copy_buffers:broken",
            "-k",
            "batch_copy",
            f"--report-dir={reports}",
            "--platform-name=lab",
            "--pyargs",
            "ptrport.scenarios",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    path = tmp_path / "repro.py"
    wrote = subprocess.run(
        [
            sys.executable,
            "-m",
            "ptrport.cli",
            "report",
            "repro",
            str(reports / "lab.json"),
            "--check",
            "batch_copy::test_real_entries_are_copied_exactly",
            "-o",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert wrote.returncode == 0, wrote.stderr
    assert "subject_spec='examples.batched_copy_buffers:broken'" in path.read_text()
    done = subprocess.run(
        [sys.executable, str(path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the same failure as reported" in done.stdout
