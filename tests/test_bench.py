"""``ptrport bench``: real measurements at tiny sizes, the report's ``benchmarks`` section the
command writes, and the diff's performance regressions. Timings are recorded (as test
properties), never asserted: a busy machine must not fail these tests."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
from sample_reports import CPU_TARGET, document, measurement, result

from ptrport.check import bench
from ptrport.check.bench import Sizes
from ptrport.check.engines import ENGINES
from ptrport.cli import main
from ptrport.device.backends import CpuBackend
from ptrport.errors import HarnessError
from ptrport.report import schema
from ptrport.report.defaults import INTERPRETED_REPEAT
from ptrport.report.diff import diff_reports, to_markdown
from ptrport.report.expectations import Expectations
from ptrport.report.matrix import build_matrix
from ptrport.report.measurements import (
    ENTRIES_PER_S,
    GBPS,
    Measurement,
    measurements_of,
    record,
    section_errors,
)
from ptrport.report.platform_report import (
    RUNNING,
    journal_path,
    load_report,
    load_reports,
    write_json_atomically,
    write_report,
)
from ptrport.report.records import Outcome

CPU = CpuBackend()
TINY = Sizes(table_entries=2000, int_entries=200, batches=((2, 64 * 1024), (32, 256)))
CPU_ENGINES = [e.name for e in ENGINES.values() if e.unavailable_reason(CPU) is None]
BATCHES = ("2 x 65536 B", "32 x 256 B")
CHECK = "table_round_trip::test_an_entry_reads_back_bit_exact"


@pytest.fixture(scope="module")
def measured() -> list[Measurement]:
    return bench.measure(CPU, sizes=TINY, repeat=2)


def _record(record_property: Any, measurements: list[Measurement]) -> None:
    for m in measurements:
        record_property(f"{m.name} {m.size}", f"{m.median:.4g} {m.unit}, ratio {m.ratio:.3g}")


class TestMeasurements:
    def test_every_measurement_has_a_positive_median_spread_and_ratio(
        self, measured: list[Measurement], record_property: Any
    ) -> None:
        _record(record_property, measured)
        for m in measured:
            assert m.median > 0 and m.baseline_median > 0 and m.ratio > 0, m
            assert 0 < m.low <= m.median <= m.high, m
            assert m.backend == "cpu" and m.baseline and m.repeats >= 1
            assert m.unit in (GBPS, ENTRIES_PER_S)
            assert m.timer == "time.perf_counter"

    def test_staging_transfer_and_each_engine_on_each_batch_are_measured(
        self, measured: list[Measurement]
    ) -> None:
        found = [(m.name, m.size) for m in measured]
        assert found == [
            ("staging.numpy", "2000 entries"),
            ("staging.python_ints", "200 entries"),
            ("transfer", "2000 entries"),
            *((f"execute.{e}", size) for e in CPU_ENGINES for size in BATCHES),
        ]
        assert {m.name: m.unit for m in measured}["staging.python_ints"] == ENTRIES_PER_S
        assert {m.name: m.baseline for m in measured}["staging.numpy"] == "numpy.copyto"

    def test_triton_s_interpreter_gets_few_repeats_and_says_so(self) -> None:
        if "triton" not in CPU_ENGINES:
            pytest.skip("triton is not installed")
        found = bench.measure(CPU, sizes=replace(TINY, batches=((1, 256),)), repeat=7)
        repeats = {m.name: m.repeats for m in found}
        assert repeats["execute.triton"] == INTERPRETED_REPEAT
        assert repeats["execute.torch"] == 7
        assert any("interpreter" in note for note in bench.notes(CPU, 7))

    def test_the_quick_sizes_measure_too(self, record_property: Any) -> None:
        found = bench.measure(CPU, sizes=bench.QUICK, repeat=1)
        _record(record_property, found)
        assert len(found) == 3 + 2 * len(CPU_ENGINES)
        assert all(m.median > 0 and m.ratio > 0 for m in found)

    def test_a_record_reads_back_as_the_same_measurement_and_fits_the_schema(
        self, measured: list[Measurement]
    ) -> None:
        section = bench.section(measured, started="2026-12-02T00:00:00+00:00", argv=[], quick=True)
        root = schema.load_schema("report-2")
        assert section_errors(section) == []
        jsonschema.validate(section, {"$ref": "#/$defs/benchmarks", "$defs": root["$defs"]})
        assert [Measurement.from_record(r) for r in section["measurements"]] == measured

    def test_an_engine_that_copies_wrong_is_refused_before_it_is_timed(self) -> None:
        class Idle:
            name = "idle"

            def unavailable_reason(self, where: object) -> None:
                return None

            def execute(self, *args: object) -> list[object]:
                return []

        plan = bench.execute(CPU, Idle(), 2, 256)  # type: ignore[arg-type]
        with pytest.raises(HarnessError, match="idle engine on cpu did not copy exactly"):
            bench._run(plan, CPU, 1)

    def test_the_table_has_a_row_per_measurement_under_its_header(
        self, measured: list[Measurement]
    ) -> None:
        header = bench.table_row(bench.HEADER)
        assert header.split()[:3] == ["measurement", "size", "median"]
        row = bench.format_measurement(measured[0])
        assert row.startswith("staging.numpy ")
        assert "numpy.copyto (" in row


def _bench(directory: Path, *more: str) -> int:
    return main(
        [
            "bench",
            "--backend=cpu",
            "--quick",
            "--repeat=1",
            "--report-dir",
            str(directory),
            "--platform-name=lab-1",
            *more,
        ]
    )


@pytest.fixture
def tiny_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--quick`` at the tiny sizes, so the command's tests stay fast."""
    monkeypatch.setattr(bench, "QUICK", TINY)


@pytest.mark.usefixtures("tiny_quick")
class TestFailures:
    def test_a_benchmark_that_raises_is_handed_over_and_the_others_still_run(self) -> None:
        failures: list[bench.Failure] = []
        sizes = replace(TINY, table_entries=-1)
        found = bench.measure(CPU, sizes=sizes, repeat=1, failed=failures.append)
        assert [(f.name, f.backend, f.size) for f in failures] == [
            ("staging.numpy", "cpu", "-1 entries"),
            ("transfer", "cpu", "-1 entries"),
        ]
        assert {f.error for f in failures} == {"ValueError: capacity=-1 must be >= 0"}
        assert [m.name for m in found][:1] == ["staging.python_ints"]
        assert len(found) == 1 + len(CPU_ENGINES) * len(TINY.batches)

    def test_without_a_handler_the_exception_propagates(self) -> None:
        with pytest.raises(ValueError, match="capacity=-1"):
            bench.measure(CPU, sizes=replace(TINY, table_entries=-1), repeat=1)


class TestBenchCommand:
    def test_it_prints_the_table_and_makes_a_report_with_no_results(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert _bench(tmp_path) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].startswith("cpu (") and lines[0].endswith("quick sizes")
        assert lines[1].split()[0] == "measurement"
        assert lines[2].split()[0] == "staging.numpy"
        path = tmp_path / "lab-1.json"
        assert lines[-1] == f"ptrport: recorded {3 + 2 * len(CPU_ENGINES)} benchmarks in {path}"
        written = json.loads(path.read_text())
        jsonschema.Draft202012Validator(schema.load_schema("report-2")).validate(written)
        report = load_report(path)
        assert report.results == () and report.complete
        section = written["benchmarks"]
        assert section["quick"] is True
        assert section["argv"][:3] == ["bench", "--backend=cpu", "--quick"]
        assert section["torch"] == str(torch.__version__)
        assert len(section["measurements"]) == 3 + 2 * len(CPU_ENGINES)

    def test_it_keeps_the_report_s_results_and_other_backends_benchmarks(
        self, tmp_path: Path
    ) -> None:
        results = [result(CHECK), result(CHECK, Outcome.XFAILED, subject="int64/torch")]
        existing = document("lab-1", results, torch=str(torch.__version__))
        other = replace(measurement(1.0), backend="cuda", timer="torch.cuda.Event")
        existing["benchmarks"] = bench.section(
            [other, replace(measurement(1.0), name="stale")], started="then", argv=[], quick=False
        )
        path = write_report(existing, tmp_path)
        assert _bench(tmp_path) == 0
        assert _bench(tmp_path) == 0
        written = json.loads(path.read_text())
        assert written["results"] == existing["results"]
        assert {k: v for k, v in written.items() if k != "benchmarks"} == {
            k: v for k, v in existing.items() if k != "benchmarks"
        }
        found = [Measurement.from_record(m) for m in written["benchmarks"]["measurements"]]
        assert found[0] == other
        assert "stale" not in [m.name for m in found]
        keys = [m.key for m in found]
        assert len(keys) == len(set(keys)), "the second run replaced the first one's"
        assert sum(m.backend == "cpu" for m in found) == 3 + 2 * len(CPU_ENGINES)
        assert measurements_of(load_report(path)) == found

    def test_a_benchmark_that_raises_is_listed_the_others_recorded_and_the_exit_is_1(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        # A table of -1 entries cannot be made: staging.numpy and transfer fail for real.
        monkeypatch.setattr(bench, "QUICK", replace(bench.QUICK, table_entries=-1))
        assert _bench(tmp_path) == 1
        out, err = capsys.readouterr()
        problem = "not measured: ValueError: capacity=-1 must be >= 0"
        rows = [line.split(maxsplit=3) for line in out.splitlines()]
        assert ["staging.numpy", "-1", "entries", problem] in rows
        assert ["transfer", "-1", "entries", problem] in rows
        assert err.splitlines() == [
            f"ptrport: staging.numpy -1 entries on cpu: {problem}",
            f"ptrport: transfer -1 entries on cpu: {problem}",
        ]
        written = load_report(tmp_path / "lab-1.json")
        names = {m.name for m in measurements_of(written)}
        assert names == {"staging.python_ints", *(f"execute.{e}" for e in CPU_ENGINES)}

    def test_a_probe_afterwards_keeps_the_benchmarks(self, tmp_path: Path) -> None:
        assert _bench(tmp_path) == 0
        path = tmp_path / "lab-1.json"
        section = json.loads(path.read_text())["benchmarks"]
        assert (
            main(["probe", "--backend=cpu", "--report-dir", str(tmp_path), "--platform-name=lab-1"])
            == 0
        )
        written = json.loads(path.read_text())
        assert written["benchmarks"] == section
        assert written["results"] and load_report(path).results

    @pytest.mark.parametrize(
        ("argument", "message"),
        [
            ("--backend=nope", "unknown backend 'nope'"),
            ("--backend=xpu", "backend xpu is not available"),
        ],
    )
    def test_a_bad_backend_is_one_line_and_exit_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], argument: str, message: str
    ) -> None:
        if argument == "--backend=xpu" and torch.xpu.is_available():
            pytest.skip("this machine has an XPU")
        assert main(["bench", argument, "--report-dir", str(tmp_path)]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.count("\n") == 1 and message in err
        assert not any(tmp_path.iterdir())

    def test_it_refuses_a_report_made_with_another_torch(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = write_report(document("lab-1", [result(CHECK)], torch="1.0.0"), tmp_path)
        before = path.read_text()
        assert _bench(tmp_path) == 2
        assert "made with torch 1.0.0" in capsys.readouterr().err
        assert path.read_text() == before


def _benched(directory: Path, *measurements: Measurement) -> Path:
    """A report of ``lab-1`` with passing results and these benchmarks, written."""
    found = document("lab-1", [result(CHECK)])
    found["benchmarks"] = bench.section(list(measurements), started="now", argv=[], quick=False)
    return write_report(found, directory)


class TestRecording:
    def test_it_writes_the_report_it_was_given_and_folds_in_a_killed_run_s_journal(
        self, tmp_path: Path
    ) -> None:
        # Named otherwise than by its platform id, as a copied or downloaded report is.
        path = tmp_path / "copied.json"
        write_json_atomically(path, document("lab-1", [result(CHECK)], status=RUNNING))
        later = result(CHECK, Outcome.XFAILED, subject="int64/torch")
        journal_path(path).write_text(json.dumps(later.to_record()) + "\n")
        section = bench.section([measurement(1.0)], started="now", argv=[], quick=True)
        assert record(path, section, ["cpu"]) == section
        assert [p.name for p in tmp_path.iterdir()] == ["copied.json"]
        written = load_report(path)
        assert written.results == (result(CHECK), later)
        assert measurements_of(written) == [measurement(1.0)]


class TestPerformanceRegressions:
    def _diff(self, tmp_path: Path, was: float, now: float, **options: float) -> Any:
        baseline = _benched(tmp_path / "baseline", measurement(was), measurement(1.0, name="x"))
        current = _benched(tmp_path / "current", measurement(now), measurement(1.0, name="x"))
        return diff_reports(
            load_reports([baseline]),
            load_reports([current]),
            expectations=Expectations.none(),
            **options,
        )

    def test_a_ratio_30_percent_lower_is_a_performance_regression(self, tmp_path: Path) -> None:
        found = self._diff(tmp_path, 1.0, 0.7)
        assert found.regressed and found.regressions == 1
        ((platform_id, regression),) = found.perf_regressions
        assert platform_id == "lab-1"
        assert (regression.was.ratio, regression.now.ratio) == (1.0, 0.7)
        assert regression.drop == pytest.approx(0.3)
        (platform,) = found.platforms
        assert platform.new_failures == () and platform.benchmarks_compared == 2

    def test_a_ratio_10_percent_lower_is_not(self, tmp_path: Path) -> None:
        found = self._diff(tmp_path, 1.0, 0.9)
        assert not found.regressed and found.perf_regressions == ()

    def test_a_faster_run_is_not_and_the_threshold_is_an_option(self, tmp_path: Path) -> None:
        assert not self._diff(tmp_path, 0.5, 0.9).regressed
        assert not self._diff(tmp_path, 1.0, 0.7, perf_drop=0.4).regressed

    def test_reports_without_benchmarks_compare_none(self, tmp_path: Path) -> None:
        bare = write_report(document("lab-1", [result(CHECK)]), tmp_path / "bare")
        benched = _benched(tmp_path / "benched", measurement(0.1))
        for baseline, current in ((bare, benched), (benched, bare)):
            found = diff_reports(
                load_reports([baseline]), load_reports([current]), expectations=Expectations.none()
            )
            assert not found.regressed and found.platforms[0].benchmarks_compared == 0

    def test_a_merged_matrix_as_the_baseline_carries_its_reports_benchmarks(
        self, tmp_path: Path
    ) -> None:
        # The nightly diffs against the previous night's matrix.json, not against reports.
        baseline = load_reports([_benched(tmp_path / "baseline", measurement(1.0))])
        matrix = tmp_path / "matrix.json"
        matrix.write_text(json.dumps(build_matrix(baseline).to_record()))
        current = _benched(tmp_path / "current", measurement(0.7))
        found = diff_reports(
            load_reports([matrix]), load_reports([current]), expectations=Expectations.none()
        )
        assert found.platforms[0].benchmarks_compared == 1
        assert len(found.perf_regressions) == 1

    def test_benchmarks_from_another_device_are_not_compared_and_the_diff_says_so(
        self, tmp_path: Path
    ) -> None:
        def benched(directory: str, model: str, ratio: float) -> Path:
            found = document("lab-1", [result(CHECK)], target={**CPU_TARGET, "device_model": model})
            found["benchmarks"] = bench.section(
                [measurement(ratio)], started="now", argv=[], quick=False
            )
            return write_report(found, tmp_path / directory)

        baseline = benched("baseline", "Intel(R) Xeon(R)", 1.0)
        for model, regressions in (("AMD EPYC", 0), ("Intel(R) Xeon(R)", 1)):
            current = benched(f"current-{regressions}", model, 0.5)
            found = diff_reports(
                load_reports([baseline]), load_reports([current]), expectations=Expectations.none()
            )
            (platform,) = found.platforms
            assert len(platform.perf_regressions) == found.regressions == regressions
            assert platform.benchmarks_compared == regressions
            text = to_markdown(found)
            if regressions:
                assert platform.benchmarks_not_compared is None
                assert "Benchmarks: 1 compared, **1 slower**" in text
            else:
                assert platform.benchmarks_not_compared == (
                    "1 measured on another device, not compared"
                )
                assert "Benchmarks: 1 measured on another device, not compared." in text

    def test_the_markdown_lists_it_apart_from_correctness_and_the_command_exits_1(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        baseline = _benched(tmp_path / "baseline", measurement(1.0))
        current = _benched(tmp_path / "current", measurement(0.7))
        text = to_markdown(
            diff_reports(
                load_reports([baseline]), load_reports([current]), expectations=Expectations.none()
            )
        )
        assert text.startswith("## ptrport diff: 1 regression\n")
        assert "performance regressions: 1" in text
        assert "New failures" not in text
        section = text[text.index("### Performance regressions") :]
        row = "| lab-1 | cpu | execute.torch | 4 x 4 MiB | 1 | 0.7 | -30% | 20 GB/s → 14 GB/s |"
        assert row in section
        assert "more than 20%" in section
        argv = ["report", "diff", "--baseline", str(baseline), str(current)]
        assert main(argv) == 1
        assert main([*argv, "--perf-drop=0.5"]) == 0
        capsys.readouterr()
        with pytest.raises(SystemExit) as refused:
            main([*argv, "--perf-drop=1.5"])
        assert refused.value.code == 2
        assert "--perf-drop: 1.5 is not a fraction" in capsys.readouterr().err
