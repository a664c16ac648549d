"""``benchmarks/real_engine_runs.py``: its corpus (the pinned releases and the expectations
tables), the comparison of a real pytest run's report with a table, and its exits that need no
engine: a release that cannot be installed (skipped, or a failure under ``--require``), and a
malformed corpus."""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
import time
import venv
import zipfile
from pathlib import Path

import pytest

from tests import benchmark_scripts

runs = benchmark_scripts.load("real_engine_runs")
BACKENDS = runs.BACKENDS
UPPER_HALF = ("cpu-usm", "cpu-tbi", "cpu-placed")
HEADER = "version,test,backend,expected,path,reason,message\n"
INT64_ROW = (
    "1.0,test_table.py::test_table[int64],*,failed,table,toy #1: int64 overflows,"
    "OverflowError: Python int too large\n"
)
ENGINES = benchmark_scripts.TOY_ENGINES

TOY_TEST = """\
import numpy as np
import pytest
import torch

pytestmark = pytest.mark.ptrport


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
def test_table(ptrport_device, dtype):
    data = torch.arange(64, dtype=torch.uint8, device=ptrport_device.device)
    ptrport_device.place(data, at=1 << 63)
    table = np.zeros(1, dtype=dtype)
    table[0] = data.data_ptr()
    assert int(table.view(np.uint64)[0]) == 1 << 63


def test_not_in_the_table(ptrport_device):
    assert ptrport_device.device.type == "cpu"
"""


def toy_corpus(root: Path, expectations: str, engines: str = ENGINES) -> Path:
    (root / "toy").mkdir(parents=True)
    (root / "engines.toml").write_text(engines)
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "toy" / "test_table.py").write_text(TOY_TEST)
    (root / "toy" / "expectations.csv").write_text(HEADER + expectations)
    return root


def cached_release(corpus: Path, cache: Path) -> None:
    """The corpus's one release as an earlier run leaves it in ``cache``: its virtualenv over
    a base whose packages are those of this test run (torch, numpy, pytest), both stamped, so
    that ``main()`` installs only this checkout's ptrport before it runs the tests."""
    (release,), _ = runs.load_corpus(corpus)
    base = cache / "bases" / release.base.name
    venv.create(base, symlinks=True)
    packages = runs._site_packages(base)
    packages.rmdir()
    packages.symlink_to(sysconfig.get_path("purelib"))
    (base / "ptrport-recipe.json").write_text(json.dumps(release.base.recipe()))
    here = cache / release.name
    venv.create(here, symlinks=True)
    (runs._site_packages(here) / "ptrport-base.pth").write_text(f"{packages}\n")
    runs.stamp(here, release)


class TestCorpus:
    def test_a_star_row_is_every_backend_and_a_backend_row_overrides_it(self) -> None:
        rows = runs.parse_expectations(
            HEADER
            + "1.0,t.py::test[a],*,failed,table,toy #1: int64,Overflow\n"
            + "1.0,t.py::test[a],cpu,passed,table,toy #1: real addresses fit,\n",
            "e.csv",
            "toy",
            ["1.0"],
        )
        assert [(r.backend, r.expected) for r in rows] == [
            ("cpu", "passed"),
            ("cpu-usm", "failed"),
            ("cpu-tbi", "failed"),
            ("cpu-placed", "failed"),
        ]

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("version,test\n", "e.csv:1: the header must be"),
            (HEADER + "2.0,t.py::a,*,passed,p,r,\n", "e.csv:2: toy 2.0 is not pinned"),
            (HEADER + "1.0,t.py,*,passed,p,r,\n", "e.csv:2: test 't.py' is not a node id"),
            (HEADER + "1.0,t.py::a,gpu,passed,p,r,\n", "e.csv:2: backend 'gpu' is not"),
            (HEADER + "1.0,t.py::a,*,red,p,r,\n", "e.csv:2: expected 'red' is not one of"),
            (HEADER + "1.0,t.py::a,*,passed,p,,\n", "e.csv:2: the path and the reason"),
            (HEADER + "1.0,t.py::a,*,passed,p,r\n", "e.csv:2: 6 columns, expected 7"),
            (HEADER + "1.0,t.py::a,*,failed,p,r,\n", "e.csv:2: a failed row needs the message"),
            (HEADER + "1.0,t.py::a,*,failed,p,r,(\n", "e.csv:2: message '(' is no regular"),
            (HEADER + "1.0,t.py::a,*,passed,p,r,x\n", "e.csv:2: a message is for failed rows"),
            (
                HEADER + "1.0,t.py::a,cpu,passed,p,r,\n\n1.0,t.py::a,cpu,failed,p,r,x\n",
                "e.csv:4: a second row for t.py::a on cpu in 1.0",
            ),
            (
                HEADER + "1.0,t.py::a,cpu,passed,p,r,\n1.0,t.py::a,*,passed,q,r,\n",
                "e.csv: t.py::a in 1.0 has two paths",
            ),
        ],
    )
    def test_a_malformed_expectations_file_names_the_file_and_row(
        self, text: str, message: str
    ) -> None:
        with pytest.raises(runs.CorpusError, match="^" + re.escape(message)):
            runs.parse_expectations(text, "e.csv", "toy", ["1.0"])

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("[bases.a]\npackages = []\n", "bases.a: give packages or requirements_of"),
            ('[bases.a]\nrequirements_of = "vllm"\n', "bases.a: requirements_of must be"),
            (
                ENGINES.replace('base = "here"', 'base = "there"'),
                "releases[1]: base 'there' is not one of ['here']",
            ),
            (ENGINES.replace('deps = "none"', 'deps = "some"'), "releases[1]: deps must be"),
            (ENGINES + ENGINES.split("\n\n", 1)[1], "releases[2]: a second entry for toy 1.0"),
            ("[engines]\n", "unknown table 'engines'"),
        ],
    )
    def test_a_malformed_engines_file_names_the_entry(self, text: str, message: str) -> None:
        with pytest.raises(runs.CorpusError, match=message.replace("[", r"\[")):
            runs.parse_engines(text, "engines.toml")

    def test_requirements_come_from_the_wheel_less_extras_and_the_left_out(
        self, tmp_path: Path
    ) -> None:
        wheel = tmp_path / "eng-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(
                "eng-1.0.dist-info/METADATA",
                "Name: eng\nRequires-Dist: torch==2.14.0\nRequires-Dist: flashinfer_python"
                "==0.7.3\nRequires-Dist: numpy; python_version >= '3.9'\n"
                "Requires-Dist: pytest; extra == 'test'\n",
            )
        listed = runs.wheel_requirements(wheel)
        numpy = "numpy; python_version >= '3.9'"
        assert listed == ["torch==2.14.0", "flashinfer_python==0.7.3", numpy]
        kept = runs._requirements_file(listed, ["flashinfer-python"], tmp_path / "r.txt")
        assert kept.read_text() == f"torch==2.14.0\n{numpy}\n"
        with pytest.raises(runs.CannotInstall, match="leave_out names triton, which"):
            runs._requirements_file(listed, ["triton"], tmp_path / "r.txt")

    def test_the_committed_corpus_counts_ten_paths_from_three_engines(self) -> None:
        """Each counted path is a release pair (a release that passes on all four backends, one
        that fails on an upper-half one) or an open finding of the newest release; every red
        names what it fails with."""
        releases, expectations = runs.load_corpus(runs.CORPUS)
        pairs, found = runs.counted_paths(expectations)
        counted = set(pairs) | {(engine, path) for engine, path, _ in found}
        assert len(counted) >= 10, sorted(counted)
        assert {engine for engine, _ in counted} == {"vllm", "sglang", "lmcache"}
        newest = {}
        for release in releases:
            newest.setdefault(release.engine, release.version)
            if tuple(map(int, release.version.split("."))) > tuple(
                map(int, newest[release.engine].split("."))
            ):
                newest[release.engine] = release.version
        # An open finding is open in the newest release pinned, and its reason says so.
        for engine, path, version in found:
            assert version == newest[engine], (engine, path, version)
        assert ("vllm", "kda-base-addresses", "0.34.0") in found
        assert all(e.message for e in expectations if e.expected == "failed")


def _expectations(text: str) -> list[runs.Expectation]:
    return runs.parse_expectations(HEADER + text, "e.csv", "toy", ["1.0", "2.0"])


def test_a_path_counts_as_a_release_pair_or_as_an_open_finding() -> None:
    pair = _expectations(
        "1.0,t.py::a,*,failed,fixed,toy #1: int64,Overflow\n"
        "1.0,t.py::a,cpu,passed,fixed,toy #1: low addresses fit,\n"
        "2.0,t.py::a,*,passed,fixed,toy #1: uint64,\n"
        "2.0,t.py::b,*,skipped,fixed,toy #1: the old line is gone,\n"
    )
    assert runs.counted_paths(pair) == ([("toy", "fixed")], [])
    # Red in one release and never green: neither, unless its reason says it is open.
    red = "2.0,t.py::c,*,failed,still,toy #2: int64,Overflow\n"
    assert runs.counted_paths(_expectations(red)) == ([], [])
    found = red.replace("toy #2", "open in 2.0: toy.py:12")
    assert runs.counted_paths(_expectations(found)) == ([], [("toy", "still", "2.0")])
    # Red on cpu alone is no address bug; green on three backends is no green release.
    only_cpu = "1.0,t.py::a,cpu,failed,p,toy #3,Overflow\n2.0,t.py::a,cpu,passed,p,toy #3,\n"
    assert runs.counted_paths(_expectations(only_cpu)) == ([], [])
    # A failure at any address is no red of its path.
    any_address = _expectations(
        "1.0,t.py::a,*,failed,fixed,at any address: toy #4: CUDA only,AssertionError\n"
        "2.0,t.py::a,*,passed,fixed,toy #4,\n"
    )
    assert runs.counted_paths(any_address) == ([], [])


def test_releases_over_one_base_run_together_and_prune_removes_each_and_then_the_base(
    tmp_path: Path,
) -> None:
    one, two = runs.Base("one", ("a",)), runs.Base("two", ("b",))
    releases = runs.by_base(
        [
            runs.Release("x", "1", one, "none"),
            runs.Release("y", "1", two, "none"),
            runs.Release("x", "2", one, "none"),
        ]
    )
    assert [r.name for r in releases] == ["x-1", "x-2", "y-1"]
    for name in ("x-1", "x-2", "y-1", "bases/one", "bases/two"):
        (tmp_path / name / "bin").mkdir(parents=True)

    def left() -> list[str]:
        return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob("*/*") if p.is_dir())

    runs.prune(tmp_path, releases, 0)
    assert left() == ["bases/one", "bases/two", "x-2/bin", "y-1/bin"]
    runs.prune(tmp_path, releases, 1)
    assert left() == ["bases/two", "y-1/bin"]
    runs.prune(tmp_path, releases, 2)
    assert left() == []


def test_the_disk_peak_counts_what_was_written_and_removed_during_the_run(tmp_path: Path) -> None:
    with runs.DiskPeak(tmp_path / "not-yet", every_s=0.01) as disk:
        written = tmp_path / "big"
        with written.open("wb") as out:
            out.write(os.urandom(32 << 20))
            out.flush()
            os.fsync(out.fileno())
        time.sleep(0.2)
        written.unlink()
    assert disk.grew >= 16 << 20


class TestRun:
    def test_a_run_is_compared_with_the_table(self, tmp_path: Path) -> None:
        corpus = toy_corpus(
            tmp_path / "corpus",
            INT64_ROW
            + "1.0,test_table.py::test_table[uint64],*,passed,table,toy #1: uint64 holds it,\n"
            "1.0,test_table.py::test_renamed,cpu,passed,table,toy #2: gone,\n",
        )
        releases, expectations = runs.load_corpus(corpus)
        rows, wall = runs.run_release(
            releases[0], Path(sys.prefix), expectations, corpus, tmp_path / "scratch"
        )
        assert wall > 0
        by = {(r.test, r.backend): r for r in rows}
        for backend in BACKENDS:
            failed = by[("test_table.py::test_table[int64]", backend)]
            assert (failed.outcome, failed.unexpected) == ("failed", False)
            assert "0x8000000000000000" in failed.message
            passed = by[("test_table.py::test_table[uint64]", backend)]
            assert (passed.outcome, passed.unexpected, passed.path) == ("passed", False, "table")
            assert passed.seconds > 0
            unlisted = by[("test_table.py::test_not_in_the_table", backend)]
            assert (unlisted.outcome, unlisted.expected, unlisted.unexpected) == (
                "passed", "not listed", True,
            )  # fmt: skip
        gone = by[("test_table.py::test_renamed", "cpu")]
        assert (gone.outcome, gone.unexpected) == ("error", True)
        assert "not collected" in gone.message
        printed = runs.table([runs.ReleaseRun(releases[0], rows)])
        assert "toy-1.0" in printed and "FAIL" in printed and "pass!" in printed
        # Per path: the int64 and uint64 variants (and the unlisted test) on each backend.
        table_rows = runs.markdown(rows).splitlines()[2:]
        assert table_rows == [
            "| toy | 1.0 | - | passed (unexpected) | passed (unexpected) | passed (unexpected) "
            f"| passed (unexpected) | {sum(r.seconds for r in rows if r.path == '-') / 4:.2f} |",
            "| toy | 1.0 | table | 1 error, 1 failed, 1 passed (unexpected) | 1 failed, 1 passed "
            "| 1 failed, 1 passed | 1 failed, 1 passed | "
            f"{sum(r.seconds for r in rows if r.path == 'table') / 9:.2f} |",
        ]

    def test_main_exits_1_for_an_unexpected_outcome_and_0_when_all_are_expected(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        as_expected = (
            INT64_ROW
            + "1.0,test_table.py::test_table[uint64],*,passed,table,toy #1: uint64 holds it,\n"
            "1.0,test_table.py::test_not_in_the_table,*,passed,device,toy #2: on the CPU,\n"
        )
        corpus = toy_corpus(tmp_path / "corpus", as_expected)
        cache = tmp_path / "cache"
        cached_release(corpus, cache)
        argv = ["--corpus", str(corpus), "--cache", str(cache)]
        assert runs.main(argv) == 0
        assert "UNEXPECTED" not in capsys.readouterr().out
        # The table now says the int64 table holds the address: the run shows it does not.
        table = corpus / "toy" / "expectations.csv"
        passing = as_expected.replace("int64],*,failed", "int64],*,passed")
        table.write_text(HEADER + passing.replace(",OverflowError: Python int too large", ","))
        assert runs.main(argv) == 1
        printed = capsys.readouterr().out
        assert printed.count("UNEXPECTED toy 1.0 test_table.py::test_table[int64]") == 4
        # A failure for another reason: the int64 table is never written, a method is missing.
        table.write_text(HEADER + as_expected)
        test = corpus / "toy" / "test_table.py"
        test.write_text(test.read_text().replace("table[0] = ", "table.store_address("))
        test.write_text(test.read_text().replace("data.data_ptr()\n", "data.data_ptr())\n"))
        out = tmp_path / "rows.json"
        assert runs.main([*argv, "--json", str(out)]) == 1
        printed = capsys.readouterr().out
        wrong = (
            "UNEXPECTED toy 1.0 test_table.py::test_table[int64] on cpu-usm: failed for "
            "another reason (its message does not match 'OverflowError: Python int too large') "
        )
        assert printed.count(wrong) == 1, printed
        rows = [r for r in json.loads(out.read_text()) if r["test"].endswith("[int64]")]
        assert len(rows) == 4 and all(r["outcome"] == "failed" for r in rows)
        assert all("AttributeError" in r["message"] for r in rows)
        assert all(r["wrong_reason"].startswith("its message does not match") for r in rows)

    @pytest.mark.parametrize(
        ("outcome", "message", "wrong"),
        [
            ("failed", "OverflowError: int too big (placed at 0x8000000000000000)", ""),
            ("failed", "OverflowError: int too big (last presented at 0xffffd5a6e5718280)", ""),
            ("failed", "AttributeError: no_such (placed at 0x8000000000000000)", "does not match"),
            ("failed", "OverflowError: int too big", "names no address at or above 2**63"),
            ("failed", "OverflowError: int too big at 0x7fffffffffffffff", "names no address"),
            ("passed", "", ""),
        ],
    )
    def test_an_expected_failure_is_one_for_its_reason_at_an_upper_half_address(
        self, outcome: str, message: str, wrong: str
    ) -> None:
        row = runs.Row(
            "toy", "1.0", "t.py::a", "cpu-usm", 0.1, "toy #1", "table", "failed", outcome,
            message, pattern="^OverflowError",
        )  # fmt: skip
        assert (wrong in row.wrong_reason) if wrong else row.wrong_reason == ""
        assert row.unexpected == (outcome != "failed" or bool(wrong))

    def test_a_failure_at_any_address_need_not_name_one(self) -> None:
        row = runs.Row(
            "toy", "1.0", "t.py::a", "cpu", 0.1, "at any address: toy #1: CUDA only", "table",
            "failed", "failed", "AssertionError: The device should be CUDA.",
            pattern="^AssertionError: The device should be CUDA",
        )  # fmt: skip
        assert (row.wrong_reason, row.unexpected) == ("", False)

    def test_a_release_that_cannot_be_installed_is_skipped_unless_required(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        corpus = toy_corpus(
            tmp_path / "corpus",
            INT64_ROW,
            ENGINES.replace('"toy"', '"ptrport-no-such-engine"'),
        )
        (corpus / "toy").rename(corpus / "ptrport-no-such-engine")
        # No index: pip finds nothing, at once and without the network.
        monkeypatch.setenv("PIP_NO_INDEX", "1")
        monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
        out = tmp_path / "rows.json"
        argv = ["--corpus", str(corpus), "--cache", str(tmp_path / "cache"), "--json", str(out)]
        assert runs.main(argv) == 0
        printed = capsys.readouterr().out
        assert "skipped: ptrport-no-such-engine-1.0: pip download ptrport-no-such-engine==1.0" in (
            printed
        )
        rows = json.loads(out.read_text())
        assert [(r["backend"], r["outcome"], r["expected"]) for r in rows] == [
            (b, "skipped", "failed") for b in BACKENDS
        ]
        assert set(rows[0]) >= {"engine", "version", "test", "backend", "seconds", "reason",
                                "path", "expected", "outcome", "installed_as"}  # fmt: skip
        assert runs.main([*argv, "--require"]) == 1

    def test_a_malformed_corpus_exits_2_with_one_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        corpus = toy_corpus(tmp_path / "corpus", "1.0,test_gone.py::test,*,passed,p,toy #1,\n")
        assert runs.main(["--corpus", str(corpus), "--cache", str(tmp_path / "cache")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].endswith("no test file toy/test_gone.py")
