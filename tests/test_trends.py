"""Nights as a trend: real runs of the plugin, merged and kept night after night
(:mod:`ptrport.report.history`), drawn as step lines (:mod:`ptrport.report.trend_chart`)."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sample_reports import measurement

from ptrport.cli import main
from ptrport.report import history, measurements, render
from ptrport.report.history import Night, PlatformNight
from ptrport.report.matrix import build_matrix
from ptrport.report.platform_report import PlatformReport, load_reports, rewrite_report
from ptrport.report.trend_chart import platform_trend_svg, trends_html, trends_markdown
from tests.scenario_runs import use_profile

SVG = "{http://www.w3.org/2000/svg}"
PLATFORM = "lab-1"
HOSTILE = '<script>alert("x")</script>'

# Which night this is comes from night.txt beside the scenario; the copy check breaks on the
# third night.
SCENARIO = """
from pathlib import Path

from hypothesis import given, strategies as st

NIGHT = Path(__file__).with_name("night.txt")


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_an_address_round_trips(backend, address):
    assert int.from_bytes(address.to_bytes(8, "little"), "little") == address


def test_the_copy_holds(backend):
    assert int(NIGHT.read_text()) < 3, "the copy broke on night 3"


def test_the_table_holds(backend):
    pass
"""


def _night(number: int) -> str:
    return f"2026-12-0{number}T02:15:00+00:00"


def _run_night(pytester: pytest.Pytester, number: int) -> Path:
    """One night's run of the plugin, its report's start moved to that night (the runs of a
    test are seconds apart); the report's path."""
    (pytester.path / "night.txt").write_text(str(number))
    result = pytester.runpytest("--backend=cpu", f"--platform-name={PLATFORM}")
    assert result.ret == (1 if number >= 3 else 0), result.stdout.str()
    path = pytester.path / "reports" / f"{PLATFORM}.json"
    _move_to(path, number)
    return path


def _move_to(path: Path, number: int) -> None:
    """The report at ``path`` as if its run had started on night ``number``."""

    def on_that_night(report: PlatformReport) -> PlatformReport:
        return replace(report, run={**report.run, "started": _night(number)})

    rewrite_report(path, on_that_night)


def _merge(report: Path, out: Path) -> Path:
    render.write(build_matrix(load_reports([report])), out)
    return out


@pytest.fixture
def scenario(pytester: pytest.Pytester) -> pytest.Pytester:
    use_profile(pytester, max_examples=5)
    pytester.makepyfile(test_scenario=SCENARIO)
    return pytester


def _points(polyline: ET.Element) -> list[tuple[float, float]]:
    return [
        (float(x), float(y)) for x, y in (p.split(",") for p in polyline.attrib["points"].split())
    ]


def _lines(root: ET.Element, css: str) -> list[ET.Element]:
    return root.findall(f".//{SVG}polyline[@class='{css}']")


def _assert_static_svg(svg: str) -> ET.Element:
    __tracebackhide__ = True
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    for element in root.iter():
        assert not element.tag.endswith("script"), "a script element"
        for name, value in element.attrib.items():
            assert not name.lower().startswith("on"), f"event handler {name}={value!r}"
            assert not name.endswith("href"), f"a link {name}={value!r}"
    assert "<script" not in svg
    return root


def _counts(passes: int, failures: int, *, known: int = 0, **ratios: float) -> PlatformNight:
    return PlatformNight(passes, failures, known, passes + failures + known, ratios)


def _made(day: int, platforms: dict[str, PlatformNight]) -> Night:
    started = datetime(2026, 12, day, 2, 15, tzinfo=UTC)
    return Night(started=started, path=Path(f"{day}.json"), platforms=platforms)


class TestThreeNights:
    def test_a_failure_on_the_third_night_is_a_step_in_the_series_and_the_chart(
        self, scenario: pytest.Pytester, tmp_path: Path
    ) -> None:
        kept = tmp_path / "history"
        for number in (1, 2, 3):
            report = _run_night(scenario, number)
            merged = _merge(report, tmp_path / f"merged-{number}.json")
            path = history.keep(merged, kept)
            assert path.name == f"2026-12-0{number}T021500Z.json"
        messages: list[str] = []
        nights = history.load(kept, say=messages.append)
        assert messages == []
        assert [n.name for n in nights] == [f"2026-12-0{d}T021500Z" for d in (1, 2, 3)]
        series = [(n.platforms[PLATFORM].passes, n.platforms[PLATFORM].failures) for n in nights]
        # Three checks on cpu: all pass, all pass, then the copy check fails.
        assert series == [(3, 0), (3, 0), (2, 1)]
        assert {n.platforms[PLATFORM].total for n in nights} == {3}

        root = _assert_static_svg(platform_trend_svg(PLATFORM, nights))
        (failures,) = _lines(root, "failures")
        points = _points(failures)
        assert points[-1][1] < points[0][1], "the failure line ends higher than it starts"
        assert points[-2][0] == points[-1][0], "a vertical step on the night it broke"
        labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "night"]
        assert labels == ["2026-12-01", "2026-12-02", "2026-12-03"]
        assert PLATFORM in (root.findtext(f"{SVG}title") or "")

        table = trends_markdown(nights)
        assert "| 2026-12-03T021500Z | 2 | 1 (+1) |" in table
        assert "| 2026-12-01T021500Z | 3 | 0 |" in table

    def test_merge_keeps_the_night_and_keep_drops_the_oldest(
        self, scenario: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        report = _run_night(scenario, 1)
        kept = tmp_path / "history"
        for day in (4, 5, 6, 7):
            _move_to(report, day)
            out = tmp_path / f"matrix-{day}.md"
            assert (
                main(["report", "merge", str(report), "-o", str(out), "--history", str(kept)]) == 0
            )
        assert "kept the night as" in capsys.readouterr().out
        assert len(list(kept.iterdir())) == 4
        newest = _merge(report, tmp_path / "newest.json")
        history.keep(newest, kept, limit=2)
        assert sorted(p.name for p in kept.iterdir()) == [
            "2026-12-06T021500Z.json",
            "2026-12-07T021500Z.json",
        ]
        umask = os.umask(0o022)
        os.umask(umask)
        # As a plain open() writes them, as the reports and the page are.
        assert {oct(p.stat().st_mode & 0o777) for p in kept.iterdir()} == {oct(0o666 & ~umask)}
        assert main(["report", "merge", str(report), "-o", str(out), "--keep", "2"]) == 2
        assert "name the DIR" in capsys.readouterr().err

    def test_an_unreadable_night_is_skipped_with_one_line(
        self, scenario: pytest.Pytester, tmp_path: Path
    ) -> None:
        kept = tmp_path / "history"
        history.keep(_merge(_run_night(scenario, 2), tmp_path / "m.json"), kept)
        (kept / "2026-11-30T021500Z.json").write_text('{"schema": "ptrport.matrix/1", "rep')
        (kept / "stray.json").write_text("[]")
        messages: list[str] = []
        nights = history.load(kept, say=messages.append)
        assert [n.date for n in nights] == ["2026-12-02"]
        assert len(messages) == 2
        assert all("\n" not in m and m.endswith("night skipped") for m in messages)
        assert "2026-11-30T021500Z.json: not valid JSON" in messages[0]

    def test_benchmark_ratios_are_a_second_chart_with_names_escaped(
        self, scenario: pytest.Pytester, tmp_path: Path
    ) -> None:
        report = _run_night(scenario, 1)
        kept = tmp_path / "history"
        for day, ratio in ((1, 1.0), (2, 0.5)):
            _move_to(report, day)
            measured = [measurement(ratio), measurement(ratio * 2, name=HOSTILE)]
            section = {
                "measured": _night(day),
                "torch": "2.13.0+cpu",
                "quick": True,
                "argv": ["bench"],
                "measurements": [m.to_record() for m in measured],
            }
            measurements.record(report, section, ["cpu"])
            history.keep(_merge(report, tmp_path / f"m{day}.json"), kept)
        nights = history.load(kept)
        label = history.measurement_label("execute.torch", "cpu", "4 x 4 MiB")
        assert [n.platforms[PLATFORM].ratios[label] for n in nights] == [1.0, 0.5]
        svg = platform_trend_svg(PLATFORM, nights)
        root = _assert_static_svg(svg)
        assert len(_lines(root, "ratio")) == 2
        assert HOSTILE not in svg
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in svg
        texts = {t.text for t in root.iter(f"{SVG}text")}
        assert history.measurement_label(HOSTILE, "cpu", "4 x 4 MiB") in texts


class TestCharts:
    def test_a_hostile_platform_id_comes_out_as_text(self) -> None:
        nights = [_made(1, {HOSTILE: _counts(3, 0)}), _made(2, {HOSTILE: _counts(1, 2)})]
        svg = platform_trend_svg(HOSTILE, nights)
        root = _assert_static_svg(svg)
        assert root.get("aria-label", "").startswith(HOSTILE)
        page = trends_html(nights)
        assert "<script" not in page
        section = ET.fromstring(page)
        assert section.get("id") == "trends"
        assert section.find("figure/figcaption").text == HOSTILE  # type: ignore[union-attr]
        assert not any("<script" in line for line in trends_markdown(nights))

    def test_platforms_are_in_a_stable_order_and_a_missing_night_breaks_the_line(self) -> None:
        nights = [
            _made(1, {"zeta": _counts(2, 0), "alpha": _counts(2, 0)}),
            _made(2, {"alpha": _counts(2, 0)}),
            _made(3, {"alpha": _counts(1, 1), "zeta": _counts(1, 1)}),
        ]
        section = ET.fromstring(trends_html(nights))
        captions = [f.findtext("figcaption") for f in section.iter("figure")]
        assert captions == ["alpha", "zeta"]
        root = ET.fromstring(platform_trend_svg("zeta", nights))
        assert len(_lines(root, "failures")) == 2

    def test_known_failures_get_their_own_line_and_column(self) -> None:
        nights = [_made(1, {"lab": _counts(2, 0)}), _made(2, {"lab": _counts(1, 0, known=1)})]
        root = ET.fromstring(platform_trend_svg("lab", nights))
        assert _lines(root, "known-failures")
        assert "| night | passes | failures | known failures |" in trends_markdown(nights)

    def test_no_nights_is_a_sentence_not_an_empty_chart(self) -> None:
        assert "No nights kept yet." in trends_html([])
        assert trends_markdown([])[-1] == "No nights kept yet."
        _assert_static_svg(platform_trend_svg("lab", []))

    @pytest.mark.parametrize("limit", [0, -1])
    def test_a_limit_below_one_is_refused(self, tmp_path: Path, limit: int) -> None:
        with pytest.raises(ValueError, match=re.escape(f"Cannot have limit={limit} < 1")):
            history.keep(tmp_path / "m.json", tmp_path / "history", limit=limit)
