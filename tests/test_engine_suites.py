"""``benchmarks/engine_suites.py``: its configuration, the link it picks on a recorded simple
page, the source distribution kept and extracted, the verdicts counted from real report
records, and whole runs of a toy engine's test files (no network, no engine install: the
release's virtualenv is this test run's, its sdist a tarball written here)."""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import benchmark_scripts

suites = benchmark_scripts.load("engine_suites")
runs = suites.engine_runs
ROOT = Path(__file__).resolve().parent.parent
SHIFTED = ("cpu-usm", "cpu-tbi", "cpu-placed")

ENGINES = benchmark_scripts.TOY_ENGINES

SUITE = """\
[[files]]
engine = "toy"
version = "1.0"
path = "tests/worker/test_table.py"
expect = "address-sensitive"
reason = "toy #1: the pointer table is int64"

[[files]]
engine = "toy"
version = "1.0"
path = "tests/"
reason = "the rest"
"""

# Trimmed from https://pypi.org/simple/vllm/ as served with Accept:
# application/vnd.pypi.simple.v1+json: the sdist of 0.3.0 (a prefix of 0.30.0's version), one
# of 0.30.0's wheels and its sdist.
RECORDED_PAGE = {
    "meta": {"api-version": "1.1", "_last-serial": "42393338"},
    "name": "vllm",
    "files": [
        {
            "filename": "vllm-0.3.0.tar.gz",
            "hashes": {
                "sha256": "e0caf6179d35d230b0582390bf5b633159d4a52a9df90cb1eb15c1257ed5f8b3"
            },
            "requires-python": ">=3.8",
            "size": 264725,
            "upload-time": "2024-01-31T10:03:00.631346Z",
            "url": "https://files.pythonhosted.org/packages/37/f6/1d84055439e34953d832daba67c88a073e6880b15ae238d7cb4f459224af/vllm-0.3.0.tar.gz",
            "yanked": False,
        },
        {
            "filename": "vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl",
            "hashes": {
                "sha256": "ef52ee58c410ead0b8afb190838fa4cbcb52075596f67862a03859d984966ac4"
            },
            "requires-python": "<3.15,>=3.10",
            "size": 314883777,
            "upload-time": "2026-09-22T05:22:50.169318Z",
            "url": "https://files.pythonhosted.org/packages/1a/25/f5087a8f382e197a73672768b389d020b9d92e38371c3b0fc6dd883bbb34/vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl",
            "yanked": False,
        },
        {
            "filename": "vllm-0.30.0.tar.gz",
            "hashes": {
                "sha256": "5f8f4e890c042ffa1c3e103f81c35e2d96f60a0a175ac43a4adbae7006bef62b"
            },
            "requires-python": "<3.15,>=3.10",
            "size": 42432229,
            "upload-time": "2026-09-22T05:23:10.039243Z",
            "url": "https://files.pythonhosted.org/packages/3d/88/fc455e2e8cd81764a81027a7464f775a7d613e6c95ac00e23b47824bf10d/vllm-0.30.0.tar.gz",
            "yanked": False,
        },
    ],
}

# Records as a run of vLLM 0.23.0's own tests/v1/worker/test_mamba_utils.py wrote them (one
# test; "where" as the report gives it), and the failure's section of pytest's output.
VLLM_CHECK = (
    "tests/v1/worker/test_mamba_utils.py::TestPostprocessMambaFusedKernel::"
    "test_various_batch_sizes[16]"
)
VLLM_RECORDS: list[dict[str, Any]] = [
    {
        "check": VLLM_CHECK, "scenario": "tests/v1/worker/test_mamba_utils.py",
        "subject": "own test", "backend": "cpu", "outcome": "passed", "message": None,
        "example": None, "examples": 0, "found_after": None, "duration_s": 0.081623,
        "nodeid": VLLM_CHECK.replace("[16]", "[cpu-16]"), "body": None,
    },
    {
        "check": VLLM_CHECK, "scenario": "tests/v1/worker/test_mamba_utils.py",
        "subject": "own test", "backend": "cpu-usm", "outcome": "failed",
        "message": "ValueError: Overflow when unpacking long long (last presented at "
        "0xffffd60ef25de000)",
        "example": None, "examples": 0, "found_after": None, "duration_s": 0.009366,
        "nodeid": VLLM_CHECK.replace("[16]", "[cpu-usm-16]"), "body": None,
        "where": "vllm/v1/worker/mamba_utils.py:412",
    },
]  # fmt: skip
VLLM_OUTPUT = """\
=================================== FAILURES ===================================
_____ TestPostprocessMambaFusedKernel.test_various_batch_sizes[cpu-usm-16] _____

/root/.cache/ptrport/engine-venvs/sdists/vllm-0.23.0/tests/v1/worker/test_mamba_utils.py:677: \n\
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ \n\
/root/.cache/ptrport/engine-venvs/sdists/vllm-0.23.0/tests/v1/worker/test_mamba_utils.py:395: \
in _run_gpu_postprocess
    gpu_ctx.initialize_from_forward_context(
>                   self.state_base_addrs[idx] = state.data_ptr()
E                   ValueError: Overflow when unpacking long long

/root/.cache/ptrport/engine-venvs/vllm-0.23.0/lib/python3.11/site-packages/vllm/v1/worker/\
mamba_utils.py:412: ValueError
=================================== ptrport ====================================
"""

# The toy engine's tests, written for CUDA as an engine's are, and marked nothing.
TOY_CONFTEST = "import a_test_only_package_that_is_not_installed  # noqa: F401\n"
TOY_ENGINE = """\
def store(table, tensor):
    table[0] = tensor.data_ptr()
"""
TOY_TABLE = """\
import numpy as np
import pytest
import torch
from toy_engine import store

from tests.worker.helpers import SIZE


class TestTable:
    @pytest.mark.parametrize("dtype", ["int64", "uint64"])
    def test_table(self, dtype):
        data = torch.empty(SIZE, dtype=torch.uint8, device="cuda")
        table = np.zeros(1, dtype=dtype)
        store(table, data)
        assert int(table.view(np.uint64)[0]) == data.data_ptr()

    def test_address(self):
        assert torch.empty(SIZE, device="cuda").data_ptr() < 2**63


def test_needs_a_real_gpu():
    raise RuntimeError("no NVIDIA driver")


@pytest.mark.skip(reason="not here")
def test_skipped():
    pass
"""
TOY_BROKEN = 'raise RuntimeError("libcuda.so is not here\\nPlease make sure a GPU is set up")\n'
TOY_CUDA_ONLY = """\
import pytest

pytest.skip("the kernels are CUDA only", allow_module_level=True)
"""


def toy_sdist(path: Path) -> Path:
    """A source distribution of the toy engine as the index would serve it: its package (which
    must not be extracted), a root conftest that does not import here, and its tests."""
    files = {
        "toy-1.0/toy/__init__.py": "raise ImportError('the source tree, not the install')\n",
        "toy-1.0/pyproject.toml": "[tool.pytest.ini_options]\nmarkers = ['slow']\n",
        "toy-1.0/setup.cfg": "[egg_info]\ntag_build =\n",
        "toy-1.0/tests/__init__.py": "",
        "toy-1.0/tests/conftest.py": TOY_CONFTEST,
        "toy-1.0/tests/worker/__init__.py": "",
        "toy-1.0/tests/worker/helpers.py": "SIZE = 64\n",
        "toy-1.0/tests/worker/test_table.py": TOY_TABLE,
        "toy-1.0/tests/worker/test_broken.py": TOY_BROKEN,
        "toy-1.0/tests/worker/test_cuda_only.py": TOY_CUDA_ONLY,
    }
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return path


def toy_engine(folder: Path) -> Path:
    """The toy engine, installed: a folder to put on ``PYTHONPATH``."""
    folder.mkdir()
    (folder / "toy_engine.py").write_text(TOY_ENGINE)
    return folder


def toy_corpus(root: Path, engines: str = ENGINES) -> Path:
    (root / "toy").mkdir(parents=True)
    (root / "engines.toml").write_text(engines)
    (root / "toy" / "expectations.csv").write_text(",".join(runs.COLUMNS) + "\n")
    return root


def release() -> Any:
    (toy,) = runs.parse_engines(ENGINES, "engines.toml")
    return toy


class TestSuites:
    def test_the_committed_suites_name_releases_of_engines_toml_and_a_history_pair(self) -> None:
        releases, entries, _ = suites.load(suites.SUITES, runs.CORPUS)
        assert {e.release for e in entries} == {r.name for r in releases}
        yardstick = ("vllm", "0.34.0", "tests/v1/worker/test_mamba_utils.py")
        assert yardstick in {(e.engine, e.version, e.path) for e in entries}
        expected = {(e.version, e.expect) for e in entries if e.expect}
        assert {"address-sensitive", "green"} <= {expect for _, expect in expected}
        assert all("#" in e.reason for e in entries if e.expect)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("[suites]\n", "s.toml: unknown table 'suites' (files)"),
            ("[[files]]\nengine = 'toy'\n", "s.toml: files[1]: engine, version, path and"),
            (SUITE.replace('"1.0"', '"2.0"', 1), "files[1]: toy 2.0 is not a release of"),
            (SUITE.replace("expect = ", "expected = "), "files[1]: keys are engine, expect,"),
            (SUITE.replace('"address-sensitive"', '"red"'), "files[1]: expect must be one of"),
            (SUITE.replace('"tests/"', '"../tests/"'), "files[2]: path '../tests/' is not"),
            (SUITE.replace('"tests/"', '"/tests/"'), "files[2]: path '/tests/' is not"),
            (SUITE.replace('"tests/"', "3"), "files[2]: engine, expect, path, reason, version are"),
            ("[[files]\n", "s.toml: "),
        ],
    )
    def test_a_malformed_suites_file_names_the_entry(self, text: str, message: str) -> None:
        with pytest.raises(suites.SuitesError, match=re.escape(message)):
            suites.parse_suites(text, "s.toml", [release()])

    def test_main_exits_2_with_one_line_on_a_malformed_suites_file_or_bad_arguments(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        corpus = toy_corpus(tmp_path / "corpus")
        bad = tmp_path / "suites.toml"
        bad.write_text(SUITE.replace('"1.0"', '"2.0"', 1))
        argv = ["--corpus", str(corpus), "--suites", str(bad)]
        assert suites.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "files[1]: toy 2.0 is not a release of engines.toml" in err[0]
        assert suites.main(["--corpus", str(corpus), "--suites", str(tmp_path / "no")]) == 2
        assert capsys.readouterr().err.count("\n") == 1
        bad.write_text(SUITE)
        for wrong in (["--engine", "vllm"], ["--timeout", "0"]):
            with pytest.raises(SystemExit) as exited:
                suites.main([*argv, *wrong])
            assert exited.value.code == 2
            assert (
                capsys.readouterr()
                .err.strip()
                .splitlines()[-1]
                .startswith("engine_suites.py: error: --")
            )


class TestSdist:
    def test_the_link_is_the_sdist_of_exactly_that_version(self) -> None:
        url, sha256 = suites.sdist_link(RECORDED_PAGE, "vllm", "0.30.0")
        assert url.endswith("/vllm-0.30.0.tar.gz")
        assert sha256 == "5f8f4e890c042ffa1c3e103f81c35e2d96f60a0a175ac43a4adbae7006bef62b"
        assert suites.sdist_link(RECORDED_PAGE, "VLLM", "0.3.0")[0].endswith("/vllm-0.3.0.tar.gz")
        with pytest.raises(runs.CannotInstall, match=r"no source distribution of vllm 0\.30 "):
            suites.sdist_link(RECORDED_PAGE, "vllm", "0.30")
        with pytest.raises(runs.CannotInstall, match="lists no files"):
            suites.sdist_link({"meta": {}}, "vllm", "0.30.0")

    def test_the_sdist_is_checked_kept_and_its_tests_extracted_without_the_package(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        data = toy_sdist(tmp_path / "toy-1.0.tar.gz").read_bytes()
        listed = {"filename": "toy-1.0.tar.gz", "url": "https://x/toy-1.0.tar.gz",
                  "hashes": {"sha256": hashlib.sha256(data).hexdigest()}}  # fmt: skip
        page: dict[str, Any] = {"files": [listed]}
        fetched: list[str] = []

        def get(url: str, accept: str = "") -> bytes:
            fetched.append(url)
            return json.dumps(page).encode() if "/simple/" in url else data

        monkeypatch.setattr(suites, "_get", get)
        sdist = suites.fetch_sdist("toy", "1.0", tmp_path / "cache")
        assert sdist.read_bytes() == data
        assert suites.fetch_sdist("toy", "1.0", tmp_path / "cache") == sdist
        # The second time from the cache: only the page is fetched.
        page_url = suites.SIMPLE.format(name="toy")
        assert fetched == [page_url, "https://x/toy-1.0.tar.gz", page_url]
        root = suites.extract_tests(sdist, tmp_path / "toy-1.0")
        assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")) == [
            "tests/__init__.py", "tests/conftest.py", "tests/worker/__init__.py",
            "tests/worker/helpers.py", "tests/worker/test_broken.py",
            "tests/worker/test_cuda_only.py", "tests/worker/test_table.py",
        ]  # fmt: skip
        assert suites.pytest_config(root) == root / "pyproject.toml"
        (root / "pytest.ini").write_text("[pytest]\n")
        assert suites.pytest_config(root) == root / "pytest.ini"
        listed["hashes"] = {"sha256": "0" * 64}
        sdist.unlink()
        with pytest.raises(
            runs.CannotInstall, match=r"toy-1\.0\.tar\.gz has sha256 \w+, the index says 0+$"
        ):
            suites.fetch_sdist("toy", "1.0", tmp_path / "cache")

    def test_entries_expand_to_files_each_run_once(self, tmp_path: Path) -> None:
        root = suites.extract_tests(toy_sdist(tmp_path / "toy-1.0.tar.gz"), tmp_path / "root")
        entries = [
            *suites.parse_suites(SUITE, "s.toml", [release()]),
            suites.Entry("toy", "1.0", "tests/worker/test_*.py", "glob"),
            suites.Entry("toy", "1.0", "tests/gone.py", "a file the sdist lacks"),
        ]
        found = [(e.reason[:4], file) for e, file in suites.expand(entries, root)]
        assert found == [
            ("toy ", "tests/worker/test_table.py"),
            ("the ", "tests/worker/test_broken.py"),
            ("the ", "tests/worker/test_cuda_only.py"),
            ("a fi", "tests/gone.py"),
        ]


class TestCounting:
    def test_a_test_that_passes_on_cpu_and_fails_shifted_is_address_sensitive(self) -> None:
        counts = suites.count(VLLM_RECORDS)
        assert (counts.collected, counts.runnable, counts.cannot_run) == (1, 1, 0)
        (finding,) = counts.findings
        assert finding.test == VLLM_CHECK and finding.backends == ("cpu-usm",)
        assert finding.message.startswith("ValueError: Overflow when unpacking long long")
        assert (finding.where, finding.in_code) == ("vllm/v1/worker/mamba_utils.py:412", "engine")

    def test_without_where_the_frame_is_the_crash_line_pytest_printed(self) -> None:
        frames = suites.crash_frames(VLLM_OUTPUT)
        title = "TestPostprocessMambaFusedKernel.test_various_batch_sizes[cpu-usm-16]"
        assert frames == {title: "vllm/v1/worker/mamba_utils.py:412"}
        records = [{k: v for k, v in r.items() if k != "where"} for r in VLLM_RECORDS]
        (finding,) = suites.count(records, frames).findings
        assert finding.where == "vllm/v1/worker/mamba_utils.py:412"
        (unknown,) = suites.count(records).findings
        assert (unknown.where, unknown.in_code) == ("", "?")

    @pytest.mark.parametrize(
        ("outcomes", "verdict"),
        [
            ({"cpu": "passed", "cpu-usm": "passed", "cpu-tbi": "passed"}, "passes"),
            ({"cpu": "failed", "cpu-usm": "failed"}, "cannot run"),
            ({"cpu": "crashed", "cpu-usm": "passed"}, "cannot run"),
            ({"cpu": "skipped", "cpu-usm": "failed"}, "skipped"),
            ({"cpu-usm": "failed"}, "skipped"),
            ({"cpu": "passed", "cpu-placed": "timed out"}, "address-sensitive"),
            ({"cpu": "passed", "cpu-tbi": "error", "cpu-usm": "skipped"}, "address-sensitive"),
        ],
    )
    def test_each_test_gets_one_verdict_from_its_cpu_result(
        self, outcomes: dict[str, str], verdict: str
    ) -> None:
        records = [
            {**VLLM_RECORDS[0], "backend": backend, "outcome": outcome}
            for backend, outcome in outcomes.items()
        ]
        counts = suites.count(records)
        got = {
            "passes": counts.runnable and not counts.findings,
            "cannot run": counts.cannot_run,
            "skipped": counts.skipped,
            "address-sensitive": len(counts.findings),
        }
        assert counts.collected == 1
        assert [name for name, n in got.items() if n] == [verdict]

    def test_the_commonest_reason_to_skip_on_cpu_is_kept(self) -> None:
        records = [
            {**VLLM_RECORDS[0], "check": f"t.py::test_{i}", "outcome": "skipped",
             "message": "Requires CUDA" if i else "needs 2 GPUs\nmore"}
            for i in range(3)
        ]  # fmt: skip
        counts = suites.count(records)
        assert counts.skip_reasons == {"Requires CUDA": 2, "needs 2 GPUs": 1}
        assert counts.skipped_because == "2 of 3: Requires CUDA"
        assert suites.count(records[1:]).skipped_because == "Requires CUDA"

    def test_a_cut_off_run_is_read_from_its_journal(self, tmp_path: Path) -> None:
        journal = tmp_path / "toy-1.0.results.jsonl"
        journal.write_text("".join(json.dumps(r) + "\n" for r in VLLM_RECORDS) + '{"check": ')
        assert suites.report_results(tmp_path, "toy-1.0") == VLLM_RECORDS

    @pytest.mark.parametrize(
        ("broken", "options", "words"),
        [
            ({}, [], "all"),
            ({"other/conftest.py": "E"}, [], "all"),
            (
                {"tests/conftest.py": "ModuleNotFoundError: No module named 'tblib'"},
                ["--confcutdir=/r/tests/v1"],
                "--confcutdir=tests/v1 (tests/conftest.py: ModuleNotFoundError: No module "
                "named 'tblib')",
            ),
            (
                {"tests/conftest.py": "A", "tests/v1/conftest.py": "B"},
                ["--confcutdir=/r/tests/v1/worker"],
                "--confcutdir=tests/v1/worker (tests/v1/conftest.py: B)",
            ),
            ({"tests/v1/worker/conftest.py": "C"}, ["--noconftest"], "--noconftest ("),
        ],
    )
    def test_only_the_conftests_that_do_not_import_are_left_out(
        self, broken: dict[str, str], options: list[str], words: str
    ) -> None:
        got = suites.conftest_options("tests/v1/worker/test_x.py", broken, Path("/r"))
        assert got[0] == options and got[1].startswith(words)


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """The toy's test files run as the benchmark runs them, in this test run's virtualenv
    (ptrport from this checkout), the toy engine's module on ``PYTHONPATH``."""
    tmp = tmp_path_factory.mktemp("toy")
    root = suites.extract_tests(toy_sdist(tmp / "toy-1.0.tar.gz"), tmp / "root")
    broken: dict[str, str] = {}
    scratch = tmp / "scratch"
    scratch.mkdir()
    files = suites.expand(suites.parse_suites(SUITE, "s.toml", [release()]), root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(toy_engine(tmp / "engine")))
        return [
            suites.run_file(release(), Path(sys.prefix), root, entry, file, broken, scratch)
            for entry, file in files
        ]


class TestRun:
    def test_the_engines_own_file_runs_unchanged_and_is_counted(self, toy_runs: list[Any]) -> None:
        table = toy_runs[0]
        counts = table.counts
        assert (counts.collected, counts.runnable, counts.cannot_run, counts.skipped) == (
            5,
            3,
            1,
            1,
        )
        in_test, in_engine = counts.findings
        assert in_engine.test == "tests/worker/test_table.py::TestTable::test_table[int64]"
        # cpu-placed spreads allocations from the run's seed: one may lie below 2**63.
        assert in_engine.backends[:2] == SHIFTED[:2] and set(in_engine.backends) <= set(SHIFTED)
        assert in_engine.message.startswith("OverflowError: Python int too large")
        assert in_engine.where.endswith("toy_engine.py:2") and in_engine.in_code == "engine"
        assert in_test.test == "tests/worker/test_table.py::TestTable::test_address"
        assert (in_test.where, in_test.in_code) == ("tests/worker/test_table.py:18", "test")
        assert table.conftest.startswith("--confcutdir=tests/worker (tests/conftest.py: Module")
        assert not table.problem and table.unmet == "" and table.seconds > 0

    def test_a_file_that_does_not_import_or_skips_itself_is_listed_with_its_reason(
        self, toy_runs: list[Any]
    ) -> None:
        broken, cuda_only = toy_runs[1:]
        assert broken.counts.collected == cuda_only.counts.collected == 0
        # The last line naming the exception, not the last line of its message.
        assert (broken.status, broken.problem) == (
            "cannot import", "RuntimeError: libcuda.so is not here",
        )  # fmt: skip
        assert (cuda_only.status, cuda_only.problem) == (
            "module skipped", "the kernels are CUDA only",
        )  # fmt: skip

    def test_the_table_has_a_line_per_file_and_per_finding(self, toy_runs: list[Any]) -> None:
        skipped = suites.FileRun(
            toy_runs[0].entry, "tests/", status="release skipped", problem="pip download toy: no"
        )
        lines = suites.table([*toy_runs, skipped]).splitlines()
        assert lines[0].split()[:8] == ["release", "file", "tests", "runs", "addr", "cannot",
                                        "skip", "s"]  # fmt: skip
        assert lines[2].split()[:7] == ["toy-1.0", "tests/worker/test_table.py", "5", "3", "2",
                                        "1", "1"]  # fmt: skip
        assert lines[3].startswith("    address-sensitive (test's code) TestTable::test_address ")
        assert lines[4].startswith("    address-sensitive (engine's code) TestTable::test_table")
        assert " on cpu-usm,cpu-tbi" in lines[4] and "toy_engine.py:2: OverflowError" in lines[4]
        assert lines[2].endswith("; skipped on cpu: not here")
        assert lines[5].split(None, 2)[1:] == [
            "tests/worker/test_broken.py", "cannot import: RuntimeError: libcuda.so is not here "
            "[--confcutdir=tests/worker (tests/conftest.py: ModuleNotFoundError: No module named "
            "'a_test_only_package_that_is_not_installed')]",
        ]  # fmt: skip
        assert lines[6].split(None, 2)[1:] == [
            "tests/worker/test_cuda_only.py", "module skipped: the kernels are CUDA only",
        ]  # fmt: skip
        assert lines[7].endswith(" release skipped: pip download toy: no")
        rows = suites.markdown([*toy_runs, skipped]).splitlines()
        assert rows[2].startswith("| toy-1.0 | `tests/worker/test_table.py` | 5 | 3 | 2 | 1 | 1 |")
        assert rows[2].endswith(" | toy #1: the pointer table is int64 |")
        assert rows[5] == (
            "| toy-1.0 | `tests/` | - | - | - | - | - | - | release skipped: pip download toy: no |"
        )
        entries = suites.summary([*toy_runs, skipped]).splitlines()
        assert [row.split(" | ")[1:9] for row in entries[2:]] == [
            ["`tests/worker/test_table.py`", "1 ran, 1 release skipped", "5", "3", "2", "1", "1",
             str(round(toy_runs[0].seconds))],
            ["`tests/`", "1 cannot import, 1 module skipped", "0", "0", "0", "0", "0",
             str(round(toy_runs[1].seconds + toy_runs[2].seconds))],
        ]  # fmt: skip


def test_a_file_that_hangs_is_cut_off_with_every_process_under_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "tests").mkdir(parents=True)
    pid_file = tmp_path / "pid"
    (root / "tests" / "test_hang.py").write_text(
        "import os, time\n\n\ndef test_quick():\n    pass\n\n\ndef test_hang():\n"
        f"    open({str(pid_file)!r}, 'a').write(f'{{os.getpid()}}\\n')\n    time.sleep(600)\n"
    )
    entry = suites.Entry("toy", "1.0", "tests/test_hang.py", "hangs")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    run = suites.run_file(
        release(), Path(sys.prefix), root, entry, entry.path, {}, scratch, timeout=12
    )
    assert run.status == "cut off" and run.problem.startswith("cut off after 12 s (")
    assert 12 <= run.seconds < 60
    for pid in pid_file.read_text().split() if pid_file.exists() else []:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )


class TestMain:
    def test_a_run_writes_its_json_and_exits_1_where_a_file_is_not_as_expected(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        corpus = toy_corpus(tmp_path / "corpus")
        (tmp_path / "suites.toml").write_text(SUITE)
        sdist = toy_sdist(tmp_path / "toy-1.0.tar.gz")
        monkeypatch.setenv("PYTHONPATH", str(toy_engine(tmp_path / "engine")))
        installed: list[Path] = []
        monkeypatch.setattr(suites, "fetch_sdist", lambda name, version, into: sdist)
        monkeypatch.setattr(runs, "build_ptrport", lambda into: tmp_path / "ptrport.whl")
        monkeypatch.setattr(runs, "ensure_release", lambda r, c, d: (Path(sys.prefix), True))
        monkeypatch.setattr(runs, "install_ptrport", lambda venv, wheel: installed.append(venv))
        out = tmp_path / "out.json"
        argv = ["--corpus", str(corpus), "--suites", str(tmp_path / "suites.toml"),
                "--cache", str(tmp_path / "cache"), "--json", str(out),
                "--files", "*/test_table.py"]  # fmt: skip
        assert suites.main(argv) == 0
        assert installed == [Path(sys.prefix)]
        rows = json.loads(out.read_text())
        assert [(r["kind"], r["file"]) for r in rows] == [
            ("file", "tests/worker/test_table.py"),
            ("address-sensitive", "tests/worker/test_table.py"),
            ("address-sensitive", "tests/worker/test_table.py"),
        ]
        assert {k: rows[0][k] for k in ("collected", "runnable", "address_sensitive",
                                        "cannot_run_here", "skipped", "skipped_because",
                                        "status", "unmet")} == {
            "collected": 5, "runnable": 3, "address_sensitive": 2, "cannot_run_here": 1,
            "skipped": 1, "skipped_because": "not here", "status": "ran", "unmet": "",
        }  # fmt: skip
        assert [(r["in"], r["backends"][:2]) for r in rows[1:]] == [
            ("test", list(SHIFTED[:2])), ("engine", list(SHIFTED[:2])),
        ]  # fmt: skip
        assert "toy-1.0 tests/worker/test_table.py: 5 tests, 3 runnable" in capsys.readouterr().out
        # The entry now says the file is green: a test is address-sensitive in the engine's code.
        (tmp_path / "suites.toml").write_text(SUITE.replace('"address-sensitive"', '"green"'))
        assert suites.main(argv) == 1
        assert "UNEXPECTED toy-1.0 tests/worker/test_table.py: expected green, 1 address-" in (
            capsys.readouterr().out
        )
        assert json.loads(out.read_text())[0]["unmet"] == "1 address-sensitive in the engine's code"

    def test_a_release_whose_sdist_cannot_be_had_is_skipped_with_its_reason(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        corpus = toy_corpus(tmp_path / "corpus")
        (tmp_path / "suites.toml").write_text(SUITE)

        def no_page(url: str, accept: str = "") -> bytes:
            raise runs.CannotInstall(f"{url}: <urlopen error no network>")

        monkeypatch.setattr(suites, "_get", no_page)
        monkeypatch.setattr(runs, "build_ptrport", lambda into: tmp_path / "ptrport.whl")
        out = tmp_path / "out.json"
        argv = ["--corpus", str(corpus), "--suites", str(tmp_path / "suites.toml"),
                "--cache", str(tmp_path / "cache"), "--json", str(out)]  # fmt: skip
        assert suites.main(argv) == 0
        printed = capsys.readouterr().out
        assert "skipped: toy-1.0: https://pypi.org/simple/toy/: <urlopen error no network>" in (
            printed
        )
        rows = json.loads(out.read_text())
        assert [(r["file"], r["status"], r["problem"][:5], r["unmet"]) for r in rows] == [
            ("tests/worker/test_table.py", "release skipped", "https", ""),
            ("tests/", "release skipped", "https", ""),
        ]


def test_the_nightly_runs_the_suites_after_the_real_engines_and_uploads_their_json() -> None:
    nightly = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    job = nightly["jobs"]["engine-suites"]
    assert job["needs"] == "engines" and "!cancelled()" in job["if"]
    (run,) = [s for s in job["steps"] if "benchmarks/engine_suites.py" in s.get("run", "")]
    assert "--json engine-suites.json" in run["run"]
    (upload,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-art")]
    assert "always()" in upload["if"] and upload["with"]["path"] == "engine-suites.json"
    assert job["steps"].index(run) < job["steps"].index(upload)
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
