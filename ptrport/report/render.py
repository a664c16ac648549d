"""Text out of a :class:`~ptrport.report.matrix.Matrix`: Markdown for a CI job summary
(:mod:`ptrport.report.render_markdown`), one self-contained HTML page
(:mod:`ptrport.report.render_html`), JSON; :func:`write` picks one by a file's extension.

Every text that came from a report (messages, ids, versions, examples) can hold anything, so
each one goes through :mod:`ptrport.report.markup` on its way out. The HTML page has no script and
loads nothing; its only external links are issue URLs. What the two say alike is in
:mod:`ptrport.report.render_common`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ptrport.errors import HarnessError
from ptrport.report import trend_chart
from ptrport.report.history import Night
from ptrport.report.matrix import Matrix
from ptrport.report.render_html import to_html
from ptrport.report.render_markdown import to_markdown


class RenderError(HarnessError):
    """A matrix that cannot be written: ``<path>: <problem>``."""


def to_json(matrix: Matrix) -> str:
    """The matrix's record (reports embedded) as indented JSON."""
    return matrix.to_json()


FORMATS: dict[str, Callable[[Matrix], str]] = {
    ".md": to_markdown,
    ".html": to_html,
    ".json": to_json,
}


def write(matrix: Matrix, out: Path, nights: Sequence[Night] = ()) -> None:
    """Write the matrix to ``out`` in the format its extension names (``.md``, ``.html``,
    ``.json``), with the ``nights`` kept so far (:mod:`ptrport.report.history`, oldest first) as a
    trend in the page and the Markdown; raise :class:`RenderError` for any other extension or
    a file that cannot be written."""
    suffix = out.suffix.lower()
    render = FORMATS.get(suffix)
    if render is None:
        raise RenderError(f"{out}: unknown output format '{out.suffix}'; use .md, .html or .json")
    if nights and suffix == ".html":
        text = to_html(matrix, trends=trend_chart.trends_html(nights))
    elif nights and suffix == ".md":
        text = to_markdown(matrix, trend=trend_chart.trends_markdown(nights))
    else:
        text = render(matrix)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as exc:
        raise RenderError(f"{out}: cannot write it: {exc.strerror or exc}") from None
