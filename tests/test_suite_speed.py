"""Suite speed as the report records it: per scenario, wall time and Hypothesis examples per
second."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ptrport.report.platform_report import scenario_speed
from ptrport.report.records import Outcome
from ptrport.report.summary import backend_table
from tests.sample_reports import result
from tests.scenario_runs import use_profile


def test_speed_adds_up_each_scenarios_results_slowest_first() -> None:
    results = [
        result("fast::test_a"),
        result("slow::test_b"),
        result("slow::test_c", Outcome.FAILED),
    ]
    timed = [
        dataclasses.replace(r, duration_s=d, examples=n)
        for r, d, n in zip(results, (0.5, 2.0, 2.0), (50, 100, 300), strict=True)
    ]
    speed = scenario_speed(timed)
    assert list(speed) == ["slow", "fast"]
    assert speed["slow"] == {"results": 2, "wall_s": 4.0, "examples": 400, "examples_per_s": 100.0}
    assert speed["fast"]["examples_per_s"] == 100.0


def test_the_summary_table_gives_each_backends_time_so_backends_of_a_run_compare() -> None:
    timed = [
        dataclasses.replace(result("a::test_x", on=on), duration_s=d)
        for on, d in (("cpu", 1.25), ("cpu-usm", 2.0), ("cpu", 0.5))
    ]
    header, cpu, usm = backend_table(timed)
    assert header.split()[-1] == "time"
    assert cpu.split()[0] == "cpu" and cpu.endswith("1.8 s")
    assert usm.split()[0] == "cpu-usm" and usm.endswith("2.0 s")


def test_a_run_records_the_speed_of_each_scenario_and_prints_it(
    pytester: pytest.Pytester,
) -> None:
    use_profile(pytester, max_examples=30)
    pytester.makepyfile(
        test_counting="""
        from hypothesis import given, strategies as st

        @given(x=st.integers())
        def test_any_int(backend, x):
            assert isinstance(x, int)
        """
    )
    result_ = pytester.runpytest("--backend=cpu", "--platform-name=speed")
    result_.stdout.fnmatch_lines(["scenarios, slowest first: counting * s (* examples/s)"])
    report = json.loads((pytester.path / "reports" / "speed.json").read_text())
    speed = report["run"]["scenarios"]["counting"]
    assert speed["results"] == 1 and speed["examples"] == 30
    assert speed["examples_per_s"] > 0 and speed["wall_s"] > 0
