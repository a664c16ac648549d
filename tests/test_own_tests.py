"""A user's own tests marked ``@pytest.mark.ptrport``: collected once per backend, run in its
scope with the ``ptrport_device`` fixture, recorded like scenario checks, and rerun by command."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.scenario_runs import own_tests_project, use_profile, written_report

KERNEL = """
import ctypes

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptrs, dst_ptrs, sizes, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    n = tl.load(sizes + i)
    src = tl.load(src_ptrs + i).to(tl.pointer_type(tl.uint8))
    dst = tl.load(dst_ptrs + i).to(tl.pointer_type(tl.uint8))
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def copy_through_a_table(src, dst, dtype):
    table = torch.tensor([[src.data_ptr()], [dst.data_ptr()], [src.numel()]], dtype=dtype)
    table = table.to(dtype)
    copy_kernel[(1,)](table[0], table[1], table[2], BLOCK=32)
"""


def _report(pytester: pytest.Pytester, reports: str = "reports") -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = written_report(pytester, reports)["results"]
    return results


def _outcomes(pytester: pytest.Pytester, reports: str = "reports") -> list[tuple[str, str, str]]:
    return sorted((r["check"], r["backend"], r["outcome"]) for r in _report(pytester, reports))


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return own_tests_project(pytester, max_examples=30)


class TestCollection:
    def test_a_marked_test_runs_once_per_backend_and_the_others_once(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            test_mixed=KERNEL
            + """
@pytest.fixture
def backend():
    return "sqlite"


@pytest.mark.ptrport
def test_copy(ptrport_device):
    src = torch.arange(64, dtype=torch.uint8, device=ptrport_device.device)
    dst = torch.zeros(64, dtype=torch.uint8, device=ptrport_device.device)
    copy_through_a_table(src, dst, torch.uint64)
    assert torch.equal(src, dst)


def test_plain():
    assert True


def test_their_backend(backend):
    assert backend == "sqlite"
"""
        )
        result = project.runpytest("--backend=cpu,cpu-usm,cpu-tbi", "--no-isolate")
        result.assert_outcomes(passed=5)
        result.stdout.no_fnmatch_line("*test_plain[[]*")
        assert _outcomes(project) == [
            ("test_mixed.py::test_copy", backend, "passed")
            for backend in ("cpu", "cpu-tbi", "cpu-usm")
        ]
        assert {r["subject"] for r in _report(project)} == {"own test"}

    def test_a_marker_on_a_class_or_a_module_marks_its_tests_and_backends_restrict_them(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            test_marked="""
import pytest

pytestmark = pytest.mark.ptrport(backends=["cpu-usm"])


def test_module_level(ptrport_device):
    assert ptrport_device.name == "cpu-usm" and ptrport_device.presented


class TestGroup:
    def test_in_class(self, ptrport_device):
        assert ptrport_device.kind == "cpu" and not ptrport_device.can_pin
"""
        )
        result = project.runpytest("--backend=cpu,cpu-usm", "--no-isolate")
        result.assert_outcomes(passed=2)
        assert [(c, b) for c, b, _ in _outcomes(project)] == [
            ("test_marked.py::TestGroup::test_in_class", "cpu-usm"),
            ("test_marked.py::test_module_level", "cpu-usm"),
        ]

    def test_the_fixture_without_the_marker_is_an_error_saying_to_add_it(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile("def test_x(ptrport_device):\n    pass\n")
        result = project.runpytest()
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(
            ["*the ptrport_device fixture is for tests marked @pytest.mark.ptrport: add the*"]
        )

    def test_a_backends_keyword_that_is_not_a_list_is_a_usage_error(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            "import pytest\n\n@pytest.mark.ptrport(backends='cpu')\ndef test_x():\n    pass\n"
        )
        result = project.runpytest()
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*takes a list of backend names, not 'cpu'"])


class TestPlacement:
    def test_a_tensor_placed_at_2_63_is_copied_there_and_an_int64_table_names_it(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            test_place=KERNEL
            + """
@pytest.mark.ptrport
@pytest.mark.parametrize("dtype", [torch.uint64, torch.int64], ids=["uint64", "int64"])
def test_copy_at_2_63(ptrport_device, dtype):
    src = torch.arange(64, dtype=torch.uint8)
    dst = torch.zeros(64, dtype=torch.uint8)
    ptrport_device.place(src, at=1 << 63)
    assert src.data_ptr() == 1 << 63
    copy_through_a_table(src, dst, dtype)
    assert torch.equal(src, dst)
"""
        )
        project.runpytest("--backend=cpu,cpu-usm", "--no-isolate")
        by_check = {(r["check"], r["backend"]): r for r in _report(project)}
        for backend in ("cpu", "cpu-usm"):
            assert (
                by_check[("test_place.py::test_copy_at_2_63[uint64]", backend)]["outcome"]
                == "passed"
            )
            failed = by_check[("test_place.py::test_copy_at_2_63[int64]", backend)]
            assert failed["outcome"] == "failed"
            assert "Overflow" in failed["message"]
            # The overflow names no address: the message says where the test placed memory,
            # and on an upper-half backend where dst, taken after src, was presented.
            named = re.search(r" \((.*)\)$", failed["message"])
            assert named is not None, failed["message"]
            if backend == "cpu":
                assert named[1] == "placed at 0x8000000000000000"
            else:
                assert re.fullmatch(
                    "placed at 0x8000000000000000; last presented at 0xffff[0-9a-f]{12}", named[1]
                ), named[1]

    def test_a_hypothesis_failure_names_where_its_example_placed_memory(
        self, project: pytest.Pytester
    ) -> None:
        # The example's placements end with it, before the failure is reported.
        project.makepyfile(
            test_drawn="""
import pytest
import torch
from hypothesis import given, settings

from ptrport.strategies import allocations


@pytest.mark.ptrport
@settings(max_examples=5, deadline=None)
@given(drawn=allocations(dtypes=[torch.uint8], min_numel=64, max_numel=64, max_offset=0))
def test_a_table_of_one(ptrport_device, drawn):
    torch.tensor([drawn.tensor.data_ptr()], dtype=torch.int64)
"""
        )
        project.runpytest("--backend=cpu-placed", "--no-isolate")
        (failed,) = _report(project)
        assert failed["outcome"] == "failed", failed
        assert re.search(r"Overflow.* \(placed at 0x[89a-f][0-9a-f]{15}\b", failed["message"]), (
            failed["message"]
        )

    def test_a_failure_names_the_four_lowest_placed_addresses_and_counts_the_rest(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            test_many="""
import pytest
import torch


@pytest.mark.ptrport
def test_six_tables(ptrport_device):
    tensors = [torch.zeros(64, dtype=torch.uint8) for _ in range(6)]
    for i, t in enumerate(reversed(tensors)):
        ptrport_device.place(t, at=(1 << 63) + (i << 12))
    torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64)
"""
        )
        project.runpytest("--backend=cpu", "--no-isolate")
        (failed,) = _report(project)
        assert failed["outcome"] == "failed"
        assert failed["message"].endswith(
            "(placed at 0x8000000000000000, 0x8000000000001000, 0x8000000000002000, "
            "0x8000000000003000 and 2 more)"
        )

    def test_placement_where_memory_cannot_be_placed_skips_the_test(self) -> None:
        from ptrport.device.backends import CudaBackend
        from ptrport.run.own_tests import PtrportDevice

        torch = pytest.importorskip("torch")
        with pytest.raises(pytest.skip.Exception, match="cannot place memory on cuda"):
            PtrportDevice(CudaBackend()).place(torch.zeros(8), at=1 << 63)


class TestResults:
    def test_a_crash_is_one_result_and_the_run_goes_on_to_a_complete_report(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            test_crash="""
import ctypes

import pytest
import torch


@pytest.mark.ptrport(backends=["cpu-usm"])
def test_memmove_at_a_presented_address(ptrport_device):
    src = torch.arange(64, dtype=torch.uint8)
    dst = torch.zeros(64, dtype=torch.uint8)
    ctypes.memmove(dst.data_ptr(), src.data_ptr(), 64)


@pytest.mark.ptrport(backends=["cpu-usm"])
def test_after_it(ptrport_device):
    assert ptrport_device.presented
"""
        )
        project.runpytest("--backend=cpu-usm")
        (path,) = (project.path / "reports").glob("*.json")
        assert json.loads(path.read_text())["complete"] is True
        assert _outcomes(project) == [
            ("test_crash.py::test_after_it", "cpu-usm", "passed"),
            ("test_crash.py::test_memmove_at_a_presented_address", "cpu-usm", "crashed"),
        ]

    def test_a_hypothesis_test_shrinks_to_2_63_and_the_report_has_the_counterexample(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            test_given="""
import pytest
from hypothesis import given

import ptrport.strategies


@pytest.mark.ptrport
@given(address=ptrport.strategies.addresses(), batch=ptrport.strategies.copy_batches())
def test_fits_int64(ptrport_device, address, batch):
    assert address < 2**63
"""
        )
        project.runpytest("--backend=cpu,cpu-placed", "--no-isolate")
        results = _report(project)
        assert [r["outcome"] for r in results] == ["failed", "failed"]
        assert all(r["example"]["address"] == "0x8000000000000000" for r in results)

    def test_xdist_gives_the_same_results_as_a_serial_run(self, project: pytest.Pytester) -> None:
        project.makepyfile(
            test_spread="""
import pytest


@pytest.mark.ptrport
@pytest.mark.parametrize("n", range(3))
def test_n(ptrport_device, n):
    assert n != 2 or ptrport_device.name != "cpu-tbi"
"""
        )
        run = ("--backend=cpu,cpu-usm,cpu-tbi",)
        serial_run = project.runpytest(*run, "--no-isolate", "--report-dir=serial")
        spread_run = project.runpytest(*run, "-n", "2", "--report-dir=parallel")
        # Each run's own exit status and its own report: a parallel run that fails to start
        # (exit 4, no report) cannot pass on the serial run's.
        assert serial_run.ret == spread_run.ret == pytest.ExitCode.TESTS_FAILED
        serial = _outcomes(project, "serial")
        assert _outcomes(project, "parallel") == serial
        assert ("test_spread.py::test_n[2]", "cpu-tbi", "failed") in serial

    def test_repro_prints_the_command_that_reruns_one_failure(
        self, project: pytest.Pytester
    ) -> None:
        import os
        import subprocess
        import sys

        project.makepyfile(
            test_fails="""
import pytest


@pytest.mark.ptrport
def test_not_on_usm(ptrport_device):
    assert ptrport_device.name != "cpu-usm"
"""
        )
        project.runpytest("--backend=cpu,cpu-usm", "--no-isolate")
        (report,) = (project.path / "reports").glob("*.json")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ptrport.cli",
                "report",
                "repro",
                str(report),
                "--check",
                "test_fails.py::test_not_on_usm",
            ],
            capture_output=True,
            text=True,
            check=False,
            cwd=project.path,
        )
        assert done.returncode == 0, done.stderr
        command = done.stdout.strip()
        # Into the report it came from: the backend alone would name another platform.
        assert command.endswith(
            "pytest 'test_fails.py::test_not_on_usm[cpu-usm]' --backend=cpu-usm "
            f"--platform-name={report.stem}"
        )
        # The command's `pytest` as a user's shell finds it, in this interpreter's environment
        # as if activated (the suite may be run as venv/bin/pytest with another pytest first).
        bin_dir = os.path.dirname(sys.executable)
        rerun = subprocess.run(
            command + " -p no:cacheprovider",
            shell=True,
            capture_output=True,
            text=True,
            check=False,
            cwd=project.path,
            env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")},
        )
        assert rerun.returncode == 1 and "1 failed" in rerun.stdout, rerun.stdout
        # The rerun merged into that report, which keeps the test's result on cpu.
        assert list((project.path / "reports").glob("*.json")) == [report]
        kept = json.loads(report.read_text())["results"]
        assert sorted((r["backend"], r["outcome"]) for r in kept) == [
            ("cpu", "passed"),
            ("cpu-usm", "failed"),
        ]

    def test_one_cause_on_four_backends_is_one_group_on_the_page_rerun_by_its_pytest_command(
        self, project: pytest.Pytester
    ) -> None:
        from ptrport.cli import main

        project.makepyfile(
            test_table="""
import pytest
import torch


@pytest.mark.ptrport
def test_pointer_table(ptrport_device):
    src = torch.zeros(64, dtype=torch.uint8)
    dst = torch.zeros(64, dtype=torch.uint8)
    ptrport_device.place(src, at=1 << 63)
    torch.tensor([src.data_ptr(), dst.data_ptr()], dtype=torch.int64)
"""
        )
        backends = ("cpu", "cpu-usm", "cpu-tbi", "cpu-placed")
        project.runpytest(f"--backend={','.join(backends)}", "--no-isolate", "--platform-name=lab")
        results = _report(project)
        assert [(r["backend"], r["outcome"]) for r in results] == [(b, "failed") for b in backends]
        # Each backend says where it held the memory, in its own words and addresses.
        assert len({r["message"] for r in results}) > 1
        report = project.path / "reports" / "lab.json"
        run = json.loads(report.read_text())["run"]
        for page in ("matrix.md", "matrix.html"):
            assert main(["report", "merge", str(report), "-o", str(project.path / page)]) == 0
        markdown = (project.path / "matrix.md").read_text()
        html = (project.path / "matrix.html").read_text()

        # The headline speaks of the marked test, not of pointer tables or encodings.
        headline = markdown.split("\n\n")[1]
        assert headline.endswith(
            "; marked tests: **1 of 1 fails** (on cpu, cpu-usm, cpu-tbi, cpu-placed)"
        ), headline
        assert "marked tests: 1 of 1 fails (on cpu, cpu-usm, cpu-tbi, cpu-placed)" in html
        for text in (markdown, html):
            assert "uint64 pointer tables" not in text and "encodings that break" not in text

        # One group naming the four backends, each backend's message and pytest command.
        failures = markdown.split("## Failures\n\n")[1].split("\n## ")[0]
        assert re.findall("^### .*", failures, flags=re.MULTILINE) == [
            "### (1) **FAIL** test_table.py::test_pointer_table · own test · lab: "
            "cpu, cpu-usm, cpu-tbi, cpu-placed"
        ]
        seed = f" --hypothesis-seed={run['seed']}" if run["seed"].isdigit() else ""
        for result in results:
            assert f"- {result['backend']}: {result['message']}\n" in failures
            command = (
                f"HYPOTHESIS_PROFILE={run['hypothesis_profile']} pytest "
                f"'test_table.py::test_pointer_table[{result['backend']}]' "
                f"--backend={result['backend']} --platform-name=lab{seed}"
            )
            assert command + "\n" in failures
        assert "ptrport report repro" not in markdown
        section = html.split('id="failures"')[1].split('id="grid"')[0]
        assert section.count('class="failure"') == 1
        assert "<code>cpu, cpu-usm, cpu-tbi, cpu-placed · test_table.py::test_pointer_table" in (
            section
        )
        assert section.count('<pre class="repro">') == 1
        assert section.count("pytest &#x27;test_table.py::test_pointer_table[") == 4


class TestSummary:
    def test_the_summary_names_the_marked_tests_modules_apart_from_the_scenarios(
        self, pytester: pytest.Pytester
    ) -> None:
        use_profile(pytester, max_examples=5)
        pytester.makepyfile(
            test_counting="""
from hypothesis import given, strategies as st


@given(x=st.integers())
def test_any_int(backend, x):
    assert isinstance(x, int)
""",
            test_table="""
import pytest


@pytest.mark.ptrport
def test_marked(ptrport_device):
    pass
""",
        )
        result = pytester.runpytest("--backend=cpu", "--no-isolate")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(
            [
                "scenarios, slowest first: counting * s (* examples/s)",
                "marked tests' modules, slowest first: test_table.py * s",
            ]
        )
        result.stdout.no_fnmatch_line("scenarios, slowest first:*test_table.py*")

    def test_a_module_that_fails_to_collect_is_named_an_error_not_a_missing_scenario(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            test_broken="""
import pytest

import a_module_that_is_not_installed


@pytest.mark.ptrport
def test_marked(ptrport_device):
    pass
"""
        )
        result = project.runpytest("--backend=cpu", "--no-isolate")
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(
            ["ptrport: 1 error during collection; no check ran, no report written"]
        )
        result.stdout.no_fnmatch_line("*no scenario*")
        assert not (project.path / "reports").exists() or not any(
            (project.path / "reports").glob("*.json")
        )


def test_a_run_with_marked_and_unmarked_tests_leaves_the_unmarked_ones_as_they_are(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_both="""
import sys

import pytest

seen = []


def test_unmarked(request):
    seen.append(request.node.nodeid)
    assert not hasattr(request.node, "callspec")


@pytest.mark.ptrport(backends=["cpu"])
def test_marked():
    pass


def test_unmarked_ran_once():
    assert seen == ["test_both.py::test_unmarked"]
"""
    )
    result = pytester.runpytest("-p", "no:randomly", "--no-isolate")
    result.assert_outcomes(passed=3)
    assert [r["check"] for r in _report(pytester)] == ["test_both.py::test_marked"]


def test_the_docs_document_the_public_api() -> None:
    """The page on users' own tests names each part of the public API, and the README's first
    screen shows the marker and the fixture."""
    root = Path(__file__).resolve().parent.parent
    page = (root / "docs" / "own-tests.md").read_text(encoding="utf-8")
    for name in ("@pytest.mark.ptrport", "ptrport_device", "ptrport.strategies", ".place("):
        assert name in page
    first_screen = "".join((root / "README.md").read_text(encoding="utf-8").splitlines(True)[:40])
    for name in ("@pytest.mark.ptrport", "ptrport_device", ".place("):
        assert name in first_screen
