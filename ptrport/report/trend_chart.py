"""Nights as a trend: each platform's passes and failures across the kept nights
(:mod:`ptrport.report.history`) as step lines, so that a regression shows as a step, and its
benchmark ratios as a second chart; for the HTML page as inline SVG (no script, no external
asset), for Markdown as a table (GitHub does not show inline SVG reliably).

Our own small SVG: the charting libraries that emit static SVG either pull in lxml (svg.charts)
or reference external JavaScript by default (pygal), for what is a few polylines here.
Every text that came from a report is escaped (:func:`ptrport.report.markup.html_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ptrport.report.history import Night
from ptrport.report.markup import html_text, markdown_text

SVG_NS = "http://www.w3.org/2000/svg"
WIDTH = 640
COUNTS_HEIGHT = 180
RATIOS_HEIGHT = 140
LEGEND_ROW = 16
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 40, 24, 28
"""Room around a chart; on the right, for half of the last night's date label."""
_MAX_DATE_LABELS = 8
PASS_COLOUR = "#1a7f37"
FAILURE_COLOUR = "#cf222e"
KNOWN_COLOUR = "#9a6700"
RATIO_COLOURS = ("#0969da", "#8250df", "#bf3989", "#1b7c83", "#953800", "#57606a")


@dataclass(frozen=True)
class _Series:
    name: str
    css: str
    colour: str
    values: tuple[float | None, ...]
    """One a night; ``None`` where the platform did not report that night."""
    steps: bool


def _platforms(nights: Sequence[Night]) -> list[str]:
    return sorted({p for night in nights for p in night.platforms})


def _count_series(platform_id: str, nights: Sequence[Night]) -> list[_Series]:
    held = [n.platforms.get(platform_id) for n in nights]
    passes = tuple(None if p is None else p.passes for p in held)
    failures = tuple(None if p is None else p.failures for p in held)
    known = tuple(None if p is None else p.known_failures for p in held)
    series = [
        _Series("passes", "passes", PASS_COLOUR, passes, True),
        _Series("failures", "failures", FAILURE_COLOUR, failures, True),
    ]
    if any(known):
        series.append(_Series("known failures", "known-failures", KNOWN_COLOUR, known, True))
    return series


def _ratio_series(platform_id: str, nights: Sequence[Night]) -> list[_Series]:
    held = [n.platforms.get(platform_id) for n in nights]
    labels = sorted({label for p in held if p is not None for label in p.ratios})
    return [
        _Series(
            label,
            "ratio",
            RATIO_COLOURS[i % len(RATIO_COLOURS)],
            tuple(None if p is None else p.ratios.get(label) for p in held),
            False,
        )
        for i, label in enumerate(labels)
    ]


def _number(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _x(index: int, count: int) -> float:
    span = WIDTH - _LEFT - _RIGHT
    return _LEFT + (span * index / (count - 1) if count > 1 else span / 2)


@dataclass(frozen=True)
class _Frame:
    """Where one chart sits in the SVG (``top``, ``height``) and the value at its top."""

    top: float
    height: float
    high: float

    @property
    def bottom(self) -> float:
        return self.top + self.height - _BOTTOM

    def y(self, value: float) -> float:
        """SVG's y of ``value``; it grows downwards."""
        return self.bottom - (self.height - _TOP - _BOTTOM) * value / self.high


def _segments(series: _Series, frame: _Frame) -> list[list[tuple[float, float]]]:
    """Each run of nights with a value, as points; a step line holds each value until the
    next night, then steps."""
    count = len(series.values)
    found: list[list[tuple[float, float]]] = []
    current: list[tuple[float, float]] = []
    for index, value in enumerate(series.values):
        if value is None:
            if current:
                found.append(current)
            current = []
            continue
        x, y = _x(index, count), frame.y(value)
        if series.steps and current and current[-1][1] != y:
            current.append((x, current[-1][1]))
        current.append((x, y))
    if current:
        found.append(current)
    return found


def _points(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{_number(x)},{_number(y)}" for x, y in points)


def _axes(title: str, frame: _Frame, ticks: Sequence[float], nights: Sequence[Night]) -> list[str]:
    left, right, bottom = _LEFT, WIDTH - _RIGHT, _number(frame.bottom)
    parts = [
        f'<text x="{left}" y="{_number(frame.top + 14)}" font-size="12" font-weight="bold">'
        f"{html_text(title)}</text>",
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#8c959f"/>',
        f'<line x1="{left}" y1="{_number(frame.top + _TOP)}" x2="{left}" y2="{bottom}" '
        'stroke="#8c959f"/>',
    ]
    for value in dict.fromkeys(ticks):
        parts.append(
            f'<text x="{left - 4}" y="{_number(frame.y(value) + 4)}" font-size="10" '
            f'text-anchor="end">{html_text(_number(value))}</text>'
        )
    parts += [
        f'<text class="night" x="{_number(_x(index, len(nights)))}" '
        f'y="{_number(frame.bottom + 16)}" font-size="10" text-anchor="middle">'
        f"{html_text(nights[index].date)}</text>"
        for index in _labelled(len(nights))
    ]
    return parts


def _labelled(count: int) -> list[int]:
    """Which nights get a date under the axis: evenly spaced, the first and the last always,
    at most :data:`_MAX_DATE_LABELS` so that they do not overlap."""
    every = max(1, -(-count // _MAX_DATE_LABELS))
    found = list(range(0, count, every))
    found[-1] = count - 1
    return found


def _lines(series: list[_Series], frame: _Frame, nights: Sequence[Night]) -> list[str]:
    """A line per series, and a dot per night with the value as its tooltip."""
    parts = []
    for s in series:
        for segment in _segments(s, frame):
            parts.append(
                f'<polyline class="{s.css}" fill="none" stroke="{s.colour}" stroke-width="2" '
                f'points="{_points(segment)}"><title>{html_text(s.name)}</title></polyline>'
            )
        for index, value in enumerate(s.values):
            if value is not None:
                tip = f"{nights[index].name}: {s.name} {_number(value)}"
                parts.append(
                    f'<circle cx="{_number(_x(index, len(nights)))}" '
                    f'cy="{_number(frame.y(value))}" r="3" fill="{s.colour}">'
                    f"<title>{html_text(tip)}</title></circle>"
                )
    return parts


def _legend(series: list[_Series], top: float) -> list[str]:
    return [
        f'<rect x="{_LEFT}" y="{_number(top + row * LEGEND_ROW)}" width="10" height="10" '
        f'fill="{s.colour}"/><text x="{_LEFT + 14}" y="{_number(top + row * LEGEND_ROW + 9)}" '
        f'font-size="11">{html_text(s.name)}</text>'
        for row, s in enumerate(series)
    ]


def _counts_chart(series: list[_Series], nights: Sequence[Night]) -> tuple[list[str], float]:
    high = max([1.0, *(v for s in series for v in s.values if v is not None)])
    frame = _Frame(0.0, COUNTS_HEIGHT, high)
    parts = [
        '<g class="counts">',
        *_axes("passes and failures", frame, (0.0, high), nights),
        *_lines(series, frame, nights),
        *_legend(series, COUNTS_HEIGHT),
        "</g>",
    ]
    return parts, COUNTS_HEIGHT + len(series) * LEGEND_ROW + 8


def _ratios_chart(
    series: list[_Series], nights: Sequence[Night], top: float
) -> tuple[list[str], float]:
    high = max([1.0, *(v for s in series for v in s.values if v is not None)])
    frame = _Frame(top, RATIOS_HEIGHT, high * 1.1)
    parity = _number(frame.y(1.0))
    parts = [
        '<g class="ratios">',
        *_axes("benchmark ratio to baseline (1 = as fast)", frame, (0.0, 1.0, high), nights),
        f'<line class="parity" x1="{_LEFT}" y1="{parity}" x2="{WIDTH - _RIGHT}" y2="{parity}" '
        'stroke="#8c959f" stroke-dasharray="4 3"/>',
        *_lines(series, frame, nights),
        *_legend(series, top + RATIOS_HEIGHT),
        "</g>",
    ]
    return parts, RATIOS_HEIGHT + len(series) * LEGEND_ROW + 8


def platform_trend_svg(platform_id: str, nights: Sequence[Night]) -> str:
    """An inline SVG of ``platform_id`` across ``nights`` (oldest first, as
    :func:`ptrport.report.history.load` returns them): passes and failures as step lines, and the
    benchmark ratios, if any night has some, as a second chart with a dashed line at 1.0."""
    nights = list(nights)
    parts: list[str] = []
    height = 24.0
    if nights:
        label = f"{platform_id}: passes and failures across {len(nights)} nights"
        parts, height = _counts_chart(_count_series(platform_id, nights), nights)
        ratios = _ratio_series(platform_id, nights)
        if ratios:
            more, extra = _ratios_chart(ratios, nights, height)
            parts += more
            height += extra
    else:
        label = f"{platform_id}: no nights kept"
    box = f'viewBox="0 0 {WIDTH} {_number(height)}" width="{WIDTH}" height="{_number(height)}"'
    return (
        f'<svg xmlns="{SVG_NS}" {box} role="img" aria-label="{html_text(label)}" '
        f'font-family="system-ui, sans-serif"><title>{html_text(label)}</title>'
        + "".join(parts)
        + "</svg>"
    )


def trends_html(nights: Sequence[Night]) -> str:
    """The page's section of trends: a heading and a chart per platform, by platform id."""
    nights = list(nights)
    body = ['<section id="trends">', "<h2>Across nights</h2>"]
    if not nights:
        body.append("<p>No nights kept yet.</p>")
    else:
        body.append(
            f"<p>{len(nights)} nights, {html_text(nights[0].date)} to "
            f"{html_text(nights[-1].date)}.</p>"
        )
    for platform in _platforms(nights):
        body.append(
            f"<figure><figcaption>{html_text(platform)}</figcaption>"
            f"{platform_trend_svg(platform, nights)}</figure>"
        )
    body.append("</section>")
    return "\n".join(body)


def _change(value: int, before: int | None) -> str:
    if before is None or value == before:
        return str(value)
    return f"{value} ({value - before:+d})"


def trends_markdown(nights: Sequence[Night]) -> list[str]:
    """The trends as Markdown lines: per platform (by id), a table of night, passes and
    failures (with the change from the night before), known failures where there are some."""
    lines = ["## Across nights", ""]
    if not nights:
        return [*lines, "No nights kept yet."]
    for platform in _platforms(nights):
        held = [(n, n.platforms[platform]) for n in nights if platform in n.platforms]
        known = any(p.known_failures for _, p in held)
        lines += [f"### {markdown_text(platform)}", ""]
        lines.append("| night | passes | failures |" + (" known failures |" if known else ""))
        lines.append("| --- | ---: | ---: |" + (" ---: |" if known else ""))
        before = None
        for night, counts in held:
            cells = [night.name, str(counts.passes), _change(counts.failures, before)]
            if known:
                cells.append(str(counts.known_failures))
            lines.append("| " + " | ".join(cells) + " |")
            before = counts.failures
        lines.append("")
    return lines
