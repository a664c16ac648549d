"""A whole-suite run (``--ptrport-all``): every collected test, marked or not, once per backend in
that backend's scope; with ``--ptrport-stand-in=cuda``, a suite written for CUDA runs on the CPU
backends unchanged. Real inner pytest runs of the plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.scenario_runs import own_tests_project, written_report

BACKENDS = "--backend=cpu,cpu-usm,cpu-tbi"

SUITE = """
import torch

def test_stores_an_address():
    t = torch.zeros(4)
    torch.tensor([t.data_ptr()], dtype=torch.int64)

def test_sees_the_backend():
    assert torch.empty(2).data_ptr() >= 2**63

def test_cannot_run_here():
    raise RuntimeError("needs a driver")
"""

CUDA_SUITE = """
import pytest
import torch
import triton
import triton.language as tl

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="Requires CUDA")


@triton.jit
def gather_kernel(ptrs, out):
    i = tl.program_id(0)
    src = tl.load(ptrs + i).to(tl.pointer_type(tl.float32))
    tl.store(out + i, tl.load(src))


@requires_cuda
def test_kernel_through_a_uint64_table():
    values = [torch.full((1,), float(i), device="cuda") for i in range(3)]
    host = torch.empty(3, dtype=torch.int64, pin_memory=True)
    host.view(torch.uint64).numpy()[:] = [v.data_ptr() for v in values]
    table = host.to("cuda", non_blocking=True)
    out = torch.empty(3, device="cuda")
    gather_kernel[(3,)](table, out)
    torch.cuda.synchronize()
    assert out.tolist() == [0.0, 1.0, 2.0]


@requires_cuda
def test_an_int64_table():
    with torch.device("cuda"):
        t = torch.zeros(4)
    assert torch.tensor([t.data_ptr()], dtype=torch.int64, device="cuda").numel() == 1


@requires_cuda
def test_streams():
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.ones(4, device="cuda").cuda() * 2
    stream.synchronize()
    assert x.sum().item() == 8
"""


def _results(pytester: pytest.Pytester) -> dict[tuple[str, str], str]:
    records: list[dict[str, Any]] = written_report(pytester)["results"]
    return {(r["check"].split("::")[-1], r["backend"]): r["outcome"] for r in records}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return own_tests_project(pytester)


class TestWholeSuite:
    def test_every_test_runs_once_per_backend_in_its_scope_and_carries_the_marker(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(test_suite=SUITE)
        project.makeconftest(
            (project.path / "conftest.py").read_text() + "\ndef pytest_runtest_setup(item):\n"
            "    with open('marked.txt', 'a') as f:\n"
            "        f.write(f\"{item.get_closest_marker('ptrport') is not None}\\n\")\n"
        )
        result = project.runpytest("--ptrport-all", BACKENDS, "--no-isolate")
        outcomes = _results(project)
        assert outcomes[("test_stores_an_address", "cpu")] == "passed"
        assert outcomes[("test_stores_an_address", "cpu-usm")] == "failed"
        assert outcomes[("test_sees_the_backend", "cpu")] == "failed"
        assert outcomes[("test_sees_the_backend", "cpu-tbi")] == "passed"
        assert len(outcomes) == 9
        result.stdout.no_fnmatch_line("*INTERNALERROR*")
        # Whatever reads an item's markers (a conftest here) sees the ones that ran marked.
        assert (project.path / "marked.txt").read_text().split() == ["True"] * 9

    def test_the_ini_asks_as_the_option_does(self, project: pytest.Pytester) -> None:
        project.makepyfile(test_suite=SUITE)
        project.makeini("[pytest]\nptrport_all = true\n")
        project.runpytest(BACKENDS, "--no-isolate")
        assert _results(project)[("test_sees_the_backend", "cpu-usm")] == "passed"

    def test_under_forked_isolation_and_xdist_the_outcomes_are_the_same(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(test_suite=SUITE)
        project.runpytest("--ptrport-all", BACKENDS, "--no-isolate")
        serial = _results(project)
        project.runpytest("--ptrport-all", BACKENDS)
        assert _results(project) == serial
        project.runpytest("--ptrport-all", BACKENDS, "-n", "2")
        assert _results(project) == serial

    def test_spawned_children_run_it_and_the_stand_in_too(self, project: pytest.Pytester) -> None:
        project.makepyfile(test_cuda=CUDA_SUITE)
        run = ("--ptrport-all", "--ptrport-stand-in=cuda", "--backend=cpu,cpu-usm")
        project.runpytest(*run, "--no-isolate")
        in_process = _results(project)
        # A conftest's thread: the run spawns its children rather than fork them.
        project.makeconftest(
            (project.path / "conftest.py").read_text() + "\nimport threading, time\n"
            "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        )
        result = project.runpytest(*run)
        result.stdout.fnmatch_lines(["isolation: *spawned, not forked*"])
        assert _results(project) == in_process
        assert len(in_process) == 6 and "failed" in in_process.values()

    def test_what_a_test_leaves_in_its_process_does_not_decide_the_next_backend(
        self, project: pytest.Pytester
    ) -> None:
        # An engine that warns once per process, and its own test of the warning (LMCache's
        # test_deprecated_two_hs_specs_warn): run on three backends in one process, only the
        # first would see it warn, a false red on the others.
        project.makepyfile(
            test_warn_once="import warnings\n\nimport pytest\n\n_WARNED = []\n\n"
            "def deprecated():\n"
            "    if not _WARNED:\n"
            "        _WARNED.append(True)\n"
            "        warnings.warn('old spec', DeprecationWarning)\n\n"
            "def test_warns():\n"
            "    with pytest.warns(DeprecationWarning):\n        deprecated()\n"
        )
        result = project.runpytest("--ptrport-all", BACKENDS)
        assert set(_results(project).values()) == {"passed"}
        result.stdout.fnmatch_lines(["*0 address-sensitive, 0 fail everywhere*1 pass everywhere*"])

    def test_cpu_is_added_as_the_reference(self, project: pytest.Pytester) -> None:
        project.makepyfile(test_suite=SUITE)
        result = project.runpytest("--ptrport-all", "--backend=cpu-usm", "--no-isolate")
        assert {backend for _, backend in _results(project)} == {"cpu", "cpu-usm"}
        result.stdout.fnmatch_lines(["*cpu added as the reference*"])

    def test_a_marker_added_while_parametrizing_reaches_the_items(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(
            test_late="import torch\n\ndef test_late():\n"
            "    assert torch.empty(2).data_ptr() >= 2**63\n"
        )
        project.makeconftest(
            (project.path / "conftest.py").read_text()
            + "\nimport pytest\n\n@pytest.hookimpl(tryfirst=True)\n"
            "def pytest_generate_tests(metafunc):\n"
            "    metafunc.definition.add_marker(pytest.mark.ptrport)\n"
        )
        project.runpytest("--backend=cpu-usm,cpu-tbi", "--no-isolate")
        assert _results(project) == {
            ("test_late", "cpu-usm"): "passed",
            ("test_late", "cpu-tbi"): "passed",
        }

    def test_cpu_placed_spreads_an_unmarked_tests_storages_named_in_its_failure(
        self, project: pytest.Pytester
    ) -> None:
        # Three storages a test: the run places them in turn across 2**63, ending at 2**64 and
        # at the top (from a kind its seed chooses), so each test meets the boundary it checks.
        project.makepyfile(
            test_end="import torch\n\n"
            "def _three():\n"
            "    return [torch.zeros(256, dtype=torch.uint8) for _ in range(3)]\n\n"
            "def test_end_pointer():\n"
            "    for t in _three():\n"
            "        assert t.data_ptr() + t.numel() < 2**64\n\n"
            "def test_sign():\n"
            "    for t in _three():\n"
            "        assert t.data_ptr() >> 63 == (t.data_ptr() + 255) >> 63\n"
        )
        result = project.runpytest("--ptrport-all", "--backend=cpu,cpu-placed", "--no-isolate")
        assert _results(project) == {
            ("test_end_pointer", "cpu"): "passed",
            ("test_sign", "cpu"): "passed",
            ("test_end_pointer", "cpu-placed"): "failed",
            ("test_sign", "cpu-placed"): "failed",
        }
        result.stdout.fnmatch_lines(
            [
                "*test_end_pointer on cpu-placed*placed at 0x*(ending at 2[*][*]64)*",
                "*test_sign on cpu-placed*placed at 0x*(across 2[*][*]63)*",
            ],
            consecutive=False,
        )


class TestStandIn:
    def test_a_cuda_suite_runs_on_every_cpu_backend_and_only_the_int64_table_fails_high(
        self, project: pytest.Pytester
    ) -> None:
        project.makepyfile(test_cuda=CUDA_SUITE)
        result = project.runpytest("--ptrport-all", "--ptrport-stand-in=cuda", BACKENDS)
        outcomes = _results(project)
        assert outcomes == {
            (test, backend): "failed"
            if test == "test_an_int64_table" and backend != "cpu"
            else "passed"
            for test in (
                "test_kernel_through_a_uint64_table",
                "test_an_int64_table",
                "test_streams",
            )
            for backend in ("cpu", "cpu-usm", "cpu-tbi")
        }
        result.stdout.fnmatch_lines(
            ["ptrport: whole suite, every test once per backend, cuda stood in for"]
        )
        # The failure points into the test's code, not into ptrport's.
        result.stdout.fnmatch_lines(["*test_cuda.py:*: ValueError*"])
        result.stdout.no_fnmatch_line("*ptrport/device/*")

    def test_without_it_the_suite_skips(self, project: pytest.Pytester) -> None:
        project.makepyfile(test_cuda=CUDA_SUITE)
        project.runpytest("--ptrport-all", BACKENDS, "--no-isolate")
        assert set(_results(project).values()) == {"skipped"}

    def test_it_is_undone_when_the_run_ends(self, project: pytest.Pytester) -> None:
        project.makepyfile(test_cuda=CUDA_SUITE)
        available = torch.cuda.is_available()
        project.runpytest_inprocess(
            "--ptrport-all", "--ptrport-stand-in=cuda", "--backend=cpu", "--no-isolate"
        )
        assert torch.cuda.is_available() is available
        assert torch.overrides._get_current_function_mode_stack() == []

    def test_a_conftest_stands_in_for_an_engine_helper(self, project: pytest.Pytester) -> None:
        Path(project.path / "engine.py").write_text(
            "def device_view(t):\n    raise RuntimeError('asks the driver')\n"
        )
        project.makepyfile(
            test_view="import torch, engine\n\ndef test_view():\n"
            "    t = torch.zeros(2, device='cuda')\n"
            "    assert engine.device_view(t) is t\n"
        )
        project.makeconftest(
            (project.path / "conftest.py").read_text()
            + "\nimport sys\nsys.path.insert(0, str(__import__('pathlib').Path(__file__).parent))\n"
            "def pytest_ptrport_stand_in(stand_in, config):\n"
            "    import engine\n"
            "    stand_in.replace(engine, 'device_view', lambda t: t)\n"
        )
        project.runpytest("--ptrport-all", "--ptrport-stand-in=cuda", "--backend=cpu,cpu-usm")
        assert set(_results(project).values()) == {"passed"}
