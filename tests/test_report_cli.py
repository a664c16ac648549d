"""``ptrport report`` end to end, on reports from real runs of the scenarios."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ptrport.cli import main

SCENARIOS = Path(__file__).resolve().parent.parent / "ptrport" / "scenarios"
PROFILE = """
from hypothesis import settings

_previous = settings.get_current_profile_name()
settings.register_profile("pytester", max_examples=10, deadline=None, derandomize=True,
                          database=None)
settings.load_profile("pytester")


def pytest_unconfigure(config):
    settings.load_profile(_previous)
"""
FLIPPED = "batch_copy::test_real_entries_are_copied_exactly"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Reports of two real runs: platform ``a`` with three subjects, ``b`` with one of them
    deselected."""
    where = tmp_path_factory.mktemp("runs")
    for name in ("test_table_round_trip", "test_batch_copy", "test_mixed_batches"):
        shutil.copy(SCENARIOS / f"{name}.py", where / f"{name}.py")
    (where / "conftest.py").write_text(PROFILE)
    for platform, subjects in (
        ("a", "uint64/torch,int64-bitcast/ctypes,int64/torch"),
        ("b", "uint64/torch,int64/torch"),
    ):
        done = subprocess.run(
            [
                *(sys.executable, "-m", "pytest", "--backend=cpu"),
                *(f"--platform-name={platform}", f"--subject={subjects}", "-q"),
            ],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    yield where / "reports"


def _run(*argv: str | Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _flip_one_passed_to_failed(report: Path, out: Path, message: str) -> dict[str, Any]:
    document = json.loads(report.read_text())
    (flipped,) = [
        r for r in document["results"] if r["check"] == FLIPPED and r["subject"] == "uint64/torch"
    ]
    assert flipped["outcome"] == "passed"
    flipped["outcome"] = "failed"
    flipped["message"] = message
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document))
    return flipped


class TestMerge:
    @pytest.mark.parametrize("extension", [".md", ".html", ".json"])
    def test_two_real_reports_merge_into_a_matrix_with_both_platforms_and_their_versions(
        self, runs: Path, tmp_path: Path, extension: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        out = tmp_path / f"matrix{extension}"
        code, printed, _ = _run(
            "report", "merge", runs / "a.json", runs / "b.json", "-o", out, capsys=capsys
        )
        assert code == 0
        assert printed.startswith(f"ptrport: wrote {out}: 2 columns from 2 reports")
        text = out.read_text()
        torch_version = json.loads((runs / "a.json").read_text())["platform"]["fingerprint"][
            "software"
        ]["torch"]
        if extension == ".json":
            matrix = json.loads(text)
            assert [(c["platform"], c["backend"]) for c in matrix["columns"]] == [
                ("a", "cpu"),
                ("b", "cpu"),
            ]
            assert all(c["versions"]["torch"] == torch_version for c in matrix["columns"])
            deselected = [r for r in matrix["rows"] if r["subject"] == "int64-bitcast/ctypes"]
            assert deselected and all(r["cells"][1]["state"] == "not run" for r in deselected)
        else:
            assert "a / cpu" in text and "b / cpu" in text
            assert f"torch {torch_version}" in text

    def test_a_report_truncated_in_the_middle_is_refused_in_one_line(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        truncated = tmp_path / "a.json"
        text = (runs / "a.json").read_text()
        truncated.write_text(text[: len(text) // 2])
        code, _, err = _run("report", "merge", truncated, "-o", tmp_path / "m.md", capsys=capsys)
        assert code == 2
        assert err.startswith(f"ptrport: {truncated}: not valid JSON (")
        assert err.count("\n") == 1
        assert not (tmp_path / "m.md").exists()

    def test_a_run_killed_midway_is_merged_and_marked_incomplete(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tmp_path / "conftest.py").write_text(PROFILE)
        (tmp_path / "test_kill.py").write_text(
            "import pathlib, time\n\nimport pytest\n\n"
            "pytestmark = pytest.mark.ptrport_scenario\n\n"
            "def test_done(backend):\n    assert True\n\n"
            "def test_hangs(backend):\n"
            "    pathlib.Path('hanging').touch()\n    time.sleep(300)\n"
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--backend=cpu", "--platform-name=killed"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while not (tmp_path / "hanging").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        out = tmp_path / "matrix.json"
        code, printed, _ = _run(
            "report", "merge", tmp_path / "reports" / "killed.json", "-o", out, capsys=capsys
        )
        assert code == 0
        assert "incomplete: killed" in printed
        matrix = json.loads(out.read_text())
        assert [c["complete"] for c in matrix["columns"]] == [False]
        assert [r["cells"][0]["state"] for r in matrix["rows"]] == ["passed"]

    def test_two_reports_with_one_platform_id_are_refused(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        copy = tmp_path / "again.json"
        shutil.copy(runs / "a.json", copy)
        code, _, err = _run(
            "report", "merge", runs / "a.json", copy, "-o", tmp_path / "m.md", capsys=capsys
        )
        assert code == 2
        assert err == (
            f"ptrport: {copy}: platform id 'a' is also the id of {runs / 'a.json'}; "
            "give each platform its own --platform-name\n"
        )


class TestDiff:
    def test_flipping_one_passed_result_to_failed_is_a_regression(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        current = tmp_path / "current" / "b.json"
        _flip_one_passed_to_failed(runs / "b.json", current, "AssertionError: <b>bytes</b>")
        code, printed, _ = _run(
            "report", "diff", "--baseline", runs / "b.json", current, capsys=capsys
        )
        assert code == 1
        assert printed.startswith("## ptrport diff: 1 regression")
        assert "batch_copy::test_real_entries_are_copied_exactly" in printed
        assert "&lt;b&gt;bytes&lt;/b&gt;" in printed

    def test_the_same_regression_listed_in_the_expectations_is_known_and_exits_0(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        current = tmp_path / "current" / "b.json"
        _flip_one_passed_to_failed(runs / "b.json", current, "AssertionError: broke")
        expectations = tmp_path / "expectations.toml"
        expectations.write_text(
            f'[[known]]\ncheck = "{FLIPPED}"\nsubjects = ["uint64/torch"]\n'
            'reason = "uint64 copy is broken here"\n'
        )
        out = tmp_path / "diff.md"
        code, printed, _ = _run(
            "report", "diff", "--baseline", runs / "b.json", current,
            "--expectations", expectations, "-o", out, capsys=capsys,
        )  # fmt: skip
        assert code == 0
        assert printed == "ptrport diff: no regressions\n"
        assert "Known failures (1)" in out.read_text()
        assert "uint64 copy is broken here" in out.read_text()

    def test_an_unknown_check_in_the_expectations_is_bad_input(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        expectations = tmp_path / "expectations.toml"
        expectations.write_text('[[known]]\ncheck = "no_such::check"\nreason = "typo"\n')
        code, _, err = _run(
            "report", "diff", "--baseline", runs / "b.json", runs / "b.json",
            "--expectations", expectations, capsys=capsys,
        )  # fmt: skip
        assert code == 2
        assert err.startswith(f"ptrport: {expectations}: known[0]: check 'no_such::check'")

    def test_one_platform_of_a_merged_baseline_is_compared_and_the_other_left_out(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        baseline = tmp_path / "matrix.json"
        _run("report", "merge", runs / "a.json", runs / "b.json", "-o", baseline, capsys=capsys)
        current = tmp_path / "current" / "b.json"
        _flip_one_passed_to_failed(runs / "b.json", current, "AssertionError: broke")
        diff = ("report", "diff", "--baseline", baseline, "--platform", "b")
        code, printed, _ = _run(*diff, current, capsys=capsys)
        assert code == 1
        assert printed.startswith("## ptrport diff: 1 regression\n")
        assert "Not compared (only the platforms named were): a." in printed
        assert FLIPPED in printed
        code, printed, _ = _run(*diff, runs / "b.json", capsys=capsys)
        assert (code, printed.splitlines()[0]) == (0, "## ptrport diff: no regressions")

    def test_a_named_platform_that_the_current_reports_lack_is_bad_input(
        self, runs: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, _, err = _run(
            "report", "diff", "--baseline", runs / "a.json", runs / "b.json", "--platform", "a",
            capsys=capsys,
        )  # fmt: skip
        assert code == 2
        assert err == (
            "ptrport: platform 'a' has no current report (the current ones: b); run it with "
            "--platform-name=a\n"
        )

    def test_a_baseline_directory_with_no_reports_is_bad_input(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        empty = tmp_path / "baseline"
        empty.mkdir()
        code, _, err = _run("report", "diff", "--baseline", empty, runs, capsys=capsys)
        assert code == 2
        assert err == f"ptrport: {empty}: no reports (*.json) in this directory\n"


class TestRepro:
    def test_the_int64_controls_repro_script_fails_the_same_way_and_prints_hex(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        script = tmp_path / "repro.py"
        code, printed, _ = _run(
            "report", "repro", runs / "a.json",
            "--check", "table_round_trip::test_an_entry_reads_back_bit_exact",
            "--subject", "int64/torch", "-o", script, capsys=capsys,
        )  # fmt: skip
        assert code == 0, printed
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 1, done.stdout + done.stderr
        assert "0x8000000000000000" in done.stdout
        assert "FAILED: OverflowError: Python int too large to convert to C long" in done.stdout
        assert "the same failure as reported" in done.stdout

    def test_repro_all_writes_one_script_per_failure(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, printed, _ = _run(
            "report", "repro", runs / "a.json", "--all", "--out-dir", tmp_path, capsys=capsys
        )
        assert code == 0
        assert printed == f"ptrport: wrote 3 repro scripts under {tmp_path}\n"
        assert len(list(tmp_path.glob("*.py"))) == 3

    def test_a_repro_for_a_check_without_a_failure_is_bad_input(
        self, runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, _, err = _run(
            "report", "repro", runs / "a.json", "--check", "nope::x", "-o", tmp_path / "n.py",
            capsys=capsys,
        )  # fmt: skip
        assert code == 2
        said = f"ptrport: {runs / 'a.json'}: no failure with an example for check 'nope::x'; "
        assert err.startswith(said + "its failures: ") and err.endswith("\n"), err
        assert sorted(err.removeprefix(said + "its failures: ").strip().split(", ")) == [
            "mixed_batches::test_a_mixed_batch_is_held_exactly_and_only_real_entries_are_copied",
            "table_round_trip::test_an_entry_reads_back_bit_exact",
            "table_round_trip::test_batches_staged_step_by_step_read_back_bit_exact",
        ]
        assert not (tmp_path / "n.py").exists()


PARAMETRIZED = """
import pytest
import torch


@pytest.mark.ptrport
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_a_table_of(ptrport_device, dtype):
    # An int32 table overflows at any 64-bit address, an int64 one at an upper-half address.
    t = torch.zeros(4, device=ptrport_device.device)
    torch.tensor([t.data_ptr()], dtype=getattr(torch, dtype))


@pytest.mark.ptrport
@pytest.mark.parametrize("address", ["data_ptr", "zero"])
def test_an_int64_table_holds(ptrport_device, address):
    t = torch.zeros(4, device=ptrport_device.device)
    torch.tensor([t.data_ptr() if address == "data_ptr" else 0], dtype=torch.int64)
"""


def _rerun(command: str) -> list[str]:
    """The node id and the backend option of a printed pytest command."""
    words = shlex.split(command)
    at = words.index("pytest")
    return words[at + 1 : at + 3]


class TestReproOfAParametrizedTest:
    @pytest.fixture
    def report(self, pytester: pytest.Pytester) -> Path:
        """The report of a real run of marked parametrized tests on cpu and cpu-usm (in a
        process of its own: torch, once imported, cannot be dropped and imported again)."""
        pytester.makepyfile(test_tables=PARAMETRIZED)
        done = pytester.runpytest_subprocess("--backend=cpu,cpu-usm", "--platform-name=lab")
        done.assert_outcomes(passed=4, failed=4)
        return pytester.path / "reports" / "lab.json"

    def test_its_id_without_parameters_names_the_one_parameter_id_that_failed(
        self, report: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        base = "test_tables.py::test_an_int64_table_holds"
        code, printed, _ = _run("report", "repro", report, "--check", base, capsys=capsys)
        assert code == 0
        assert _rerun(printed) == [f"{base}[cpu-usm-data_ptr]", "--backend=cpu-usm"]
        # Narrowed to one backend, one parameter id of several is left.
        base = "test_tables.py::test_a_table_of"
        code, printed, _ = _run(
            "report", "repro", report, "--check", base, "--backend", "cpu", capsys=capsys
        )
        assert code == 0 and _rerun(printed) == [f"{base}[cpu-int32]", "--backend=cpu"]

    def test_its_id_without_parameters_lists_the_ids_where_several_failed(
        self, report: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        base = "test_tables.py::test_a_table_of"
        out = tmp_path / "rerun.sh"
        code, printed, err = _run(
            "report", "repro", report, "--check", base, "-o", out, capsys=capsys
        )
        assert (code, printed) == (2, "")
        said = f"ptrport: {report}: '{base}' failed as "
        assert err.startswith(said) and err.endswith("; name one with --check\n"), err
        listed = err.removeprefix(said).removesuffix("; name one with --check\n")
        assert sorted(listed.split(", ")) == [f"{base}[int32]", f"{base}[int64]"]
        assert not out.exists()
        code, printed, _ = _run(
            "report", "repro", report, "--check", f"{base}[int64]", "-o", out, capsys=capsys
        )
        assert code == 0
        assert _rerun(out.read_text().split("\nexec ")[1]) == [
            f"{base}[cpu-usm-int64]",
            "--backend=cpu-usm",
        ]
        # The script runs as sh runs it, finding the pytest of this interpreter's environment.
        bin_dir = os.path.dirname(sys.executable)
        rerun = subprocess.run(
            ["sh", str(out)],
            capture_output=True,
            text=True,
            check=False,
            cwd=report.parent.parent,
            env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")},
        )
        assert rerun.returncode == 1 and "1 failed" in rerun.stdout, rerun.stdout + rerun.stderr

    def test_the_node_id_pytest_printed_names_its_failure(
        self, report: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        node = "test_tables.py::test_a_table_of[cpu-usm-int32]"
        code, printed, _ = _run("report", "repro", report, "--check", node, capsys=capsys)
        assert code == 0 and _rerun(printed) == [node, "--backend=cpu-usm"]
