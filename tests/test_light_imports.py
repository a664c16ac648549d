"""Reading reports needs no torch: the report tooling imports none of torch, numpy, pytest,
triton or hypothesis, and ``ptrport report`` and ``ptrport matrix --no-run`` work where none of
them can be imported (the ``report`` tox environment, a CI job that only merges JSON); so does
``ptrport lint`` (a code-scanning job that installs the command alone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sample_reports import OVERFLOW, document, measurement, result

from ptrport.report.platform_report import write_report
from ptrport.report.records import Outcome

HEAVY = ("torch", "numpy", "pytest", "triton", "hypothesis")
LIGHT = (
    "ptrport.addresses",
    "ptrport.cli",
    "ptrport.dtype_names",
    "ptrport.errors",
    "ptrport.lint.checker",
    "ptrport.lint.file_lint",
    "ptrport.lint.formats",
    "ptrport.lint.index_rounds",
    "ptrport.lint.sources",
    "ptrport.lint.workers",
    "ptrport.named",
    "ptrport.report.defaults",
    "ptrport.report.diff",
    "ptrport.report.expectations",
    "ptrport.report.history",
    "ptrport.report.local_matrix",
    "ptrport.report.markup",
    "ptrport.report.matrix",
    "ptrport.report.measurements",
    "ptrport.report.op_support",
    "ptrport.report.platform_report",
    "ptrport.report.platforms",
    "ptrport.report.records",
    "ptrport.report.render",
    "ptrport.report.render_common",
    "ptrport.report.render_html",
    "ptrport.report.render_markdown",
    "ptrport.report.repro",
    "ptrport.report.schema",
    "ptrport.report.summary",
    "ptrport.report.trend_chart",
    "ptrport.run.names",
)
"""Every module on the path of ``ptrport report ...``, ``ptrport matrix --no-run`` and
``ptrport lint``, and the names the plugin's entry module imports."""

COPY = "batch_copy::test_real_entries_are_copied_exactly"
ROUND_TRIP = "table_round_trip::test_an_entry_reads_back_bit_exact"
EXAMPLE = {"src": "0x0000000000000000", "dst": "0x8000000000000000", "nbytes": 0}


@pytest.mark.parametrize("module", LIGHT)
def test_the_module_imports_no_heavy_package(module: str) -> None:
    code = (
        f"import importlib, json, sys; importlib.import_module({module!r}); "
        f"print(json.dumps(sorted(set({HEAVY!r}) & set(sys.modules))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [], f"import {module} loads them"


@pytest.fixture
def blocked(tmp_path: Path) -> dict[str, str]:
    """An environment in which each heavy package is a stand-in that refuses to import, ahead
    of the installed one, as if it were not installed."""
    directory = tmp_path / "blocked"
    for name in HEAVY:
        package = directory / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            f"raise ModuleNotFoundError('{name} is not installed here', name={name!r})\n"
        )
    path = os.pathsep.join(p for p in (str(directory), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _ptrport(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``ptrport ARGS`` in ``env``, from the directory that holds the blocked packages (so
    that no file of this checkout, such as its expectations, is read by default)."""
    return subprocess.run(
        [sys.executable, "-m", "ptrport.cli", *map(str, args)],
        cwd=Path(env["PYTHONPATH"].split(os.pathsep)[0]),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _benchmarks(ratio: float) -> dict[str, object]:
    measured = measurement(ratio)
    return {
        "measured": "2026-12-02T00:00:00+00:00",
        "torch": "2.13.0+cpu",
        "quick": False,
        "argv": ["bench"],
        "measurements": [measured.to_record()],
    }


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """``baseline/`` and ``current/`` reports of platform ``lab1``: the copy check and the
    benchmark's ratio regressed; the round trip failed in both, with a recorded example."""
    failing = result(
        ROUND_TRIP,
        Outcome.FAILED,
        subject="int64/torch",
        message=OVERFLOW,
        example=EXAMPLE,
        body="ptrport.check.checks:an_entry_reads_back_bit_exact",
    )
    for name, copy, ratio in (("baseline", Outcome.PASSED, 1.0), ("current", Outcome.FAILED, 0.5)):
        found = document("lab1", [result(COPY, copy, message="differs"), failing])
        found["benchmarks"] = _benchmarks(ratio)
        write_report(found, tmp_path / name)
    return tmp_path


def test_a_blocked_package_cannot_be_imported(blocked: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import torch"],
        env=blocked,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "ModuleNotFoundError: torch is not installed here" in done.stderr


class TestWithoutTorch:
    def test_merge_writes_the_matrix_in_each_format(
        self, reports: Path, blocked: dict[str, str]
    ) -> None:
        for name in ("matrix.md", "matrix.html", "matrix.json"):
            out = reports / "out" / name
            done = _ptrport(blocked, "report", "merge", reports / "current", "-o", out)
            assert done.returncode == 0, done.stderr
            assert done.stdout.startswith(f"ptrport: wrote {out}: 1 columns from 1 reports")
            assert "lab1" in out.read_text(encoding="utf-8")
        again = reports / "out" / "again.md"
        done = _ptrport(blocked, "report", "render", reports / "out" / "matrix.json", "-o", again)
        assert done.returncode == 0, done.stderr
        assert again.read_text() == (reports / "out" / "matrix.md").read_text()

    def test_diff_finds_the_regression_and_the_slower_benchmark(
        self, reports: Path, blocked: dict[str, str]
    ) -> None:
        out = reports / "diff.md"
        done = _ptrport(
            blocked,
            *("report", "diff", "--baseline", reports / "baseline", reports / "current"),
            *("-o", out),
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr == ""
        summary = out.read_text(encoding="utf-8").splitlines()[2]
        assert "new failures: 1; performance regressions: 1" in summary

    def test_repro_writes_a_script_for_the_failure_with_an_example(
        self, reports: Path, blocked: dict[str, str]
    ) -> None:
        done = _ptrport(
            blocked,
            *("report", "repro", reports / "current" / "lab1.json", "--all"),
            *("--out-dir", reports / "repros"),
        )
        assert done.returncode == 0, done.stderr
        (script,) = (reports / "repros").iterdir()
        assert "from ptrport.check.replay import run_check" in script.read_text()
        assert "'dst': '0x8000000000000000'" in script.read_text()

    def test_matrix_no_run_merges_and_diffs_as_the_report_environment_does(
        self, reports: Path, blocked: dict[str, str]
    ) -> None:
        baseline = reports / "baseline" / "matrix.json"
        merged = _ptrport(
            blocked,
            *("report", "merge", reports / "baseline" / "lab1.json", "-o", baseline),
        )
        assert merged.returncode == 0, merged.stderr
        current = reports / "current"
        done = _ptrport(
            blocked,
            *("matrix", "--no-run", "--reports", current, "--baseline", baseline),
        )
        assert done.returncode == 1, done.stdout + done.stderr
        written = {p.name for p in current.iterdir()}
        assert {"matrix.md", "matrix.html", "matrix.json", "diff.md"} <= written


def test_lint_needs_none_of_them(tmp_path: Path, blocked: dict[str, str]) -> None:
    source = tmp_path / "engine.py"
    source.write_text(
        "import torch\n\n\ndef table(ts):\n"
        "    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n"
    )
    sarif = tmp_path / "lint.sarif"
    done = _ptrport(blocked, "lint", source, "--format=sarif", "-o", sarif)
    assert done.returncode == 1, done.stderr
    assert done.stdout == "ptrport lint: 1 finding (signed-storage 1) in 1 of 1 file\n"
    assert json.loads(sarif.read_text())["runs"][0]["results"][0]["ruleId"] == "signed-storage"


def test_lint_starts_without_the_report_modules(tmp_path: Path) -> None:
    """``ptrport lint`` imports the lint and the report commands' defaults (for the help),
    none of the modules that read, merge or diff reports."""
    source = tmp_path / "engine.py"
    source.write_text("import torch\n\nptrs = torch.tensor([t.data_ptr() for t in ts])\n")
    code = (
        "import json, sys; from ptrport.cli import main; "
        f"code = main(['lint', {str(source)!r}, '--format=json', '-o', {str(tmp_path / 'o')!r}]); "
        "print(json.dumps([code, sorted(m for m in sys.modules if m.startswith('ptrport.'))]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    code, loaded = json.loads(done.stdout.splitlines()[-1])
    assert code == 1
    assert "ptrport.lint.checker" in loaded
    assert [m for m in loaded if m.startswith("ptrport.report")] == [
        "ptrport.report",
        "ptrport.report.defaults",
    ]
