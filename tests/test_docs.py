"""The documentation: README.md is a door of at most 200 lines whose first screen shows the
three ways in; every relative link of README.md and docs/ leads to a file that exists (and to a
heading of it, where it names one); and the site builds with ``mkdocs build --strict``, its
landing page, served over HTTP and loaded in headless Chromium, showing the heading and the
navigation mkdocs.yml gives it, and a page's long code lines wrapped in the content column.
Building needs the docs extra: skipped without it, unless PTRPORT_REQUIRE_DOCS=1 (CI), where
the run stops at its start (tests/optional.py)."""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from chromium import dump_dom
from markdown_it import MarkdownIt

from tests.optional import missing_docs_module

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MKDOCS_YML = ROOT / "mkdocs.yml"
PAGES = sorted(
    [
        README,
        *DOCS.rglob("*.md"),
        ROOT / "examples" / "README.md",
        ROOT / "reports" / "README.md",
    ]
)
FIRST_SCREEN = 40


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


# The README.


def test_the_readme_is_a_door_of_at_most_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


@pytest.mark.parametrize("shown", ["pip install ptrport", "@pytest.mark.ptrport", "ptrport lint"])
def test_the_readmes_first_screen_shows_the_install_and_the_ways_in(shown: str) -> None:
    first_screen = README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN]
    assert any(shown in line for line in first_screen)


# Links.


def _links(page: Path) -> Iterator[str]:
    """Every link and image target of ``page``, as Markdown reads it (not those in code)."""

    def walk(tokens: list[Any]) -> Iterator[str]:
        for token in tokens:
            if token.type == "link_open":
                yield str(token.attrs["href"])
            elif token.type == "image":
                yield str(token.attrs["src"])
            if token.children:
                yield from walk(token.children)

    yield from walk(MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8")))


def _slug(heading: str) -> str:
    """A heading's anchor, as Python-Markdown's toc extension (MkDocs) makes it; GitHub's is the
    same for the headings of these pages."""
    text = re.sub(r"[`*]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


@functools.cache
def _anchors(page: Path) -> frozenset[str]:
    """The headings of ``page`` and the objects it documents (``::: ptrport.strategies``)."""
    anchors = set()
    inside_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside_code = not inside_code
        elif not inside_code and (heading := re.match(r"#{1,6} (.+)", line)):
            anchors.add(_slug(heading.group(1)))
        elif not inside_code and (documented := re.match(r"::: (\S+)", line)):
            anchors.add(documented.group(1))
    return frozenset(anchors)


def _broken(page: Path, target: str) -> str | None:
    """Why ``target``, a link of ``page``, leads nowhere; None where it leads somewhere."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return None  # a web address: not ours to check
    linked = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if not linked.exists():
        return f"{target}: no such file"
    if parts.fragment and linked.suffix == ".md" and parts.fragment not in _anchors(linked):
        return f"{target}: {linked.name} has no heading #{parts.fragment}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = [reason for target in _links(page) if (reason := _broken(page, target))]
    assert broken == [], f"{_relative(page)}: {broken}"


def test_a_link_to_a_missing_file_or_heading_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-code-heading) [gone](gone.md) [no heading](other.md#nowhere)\n"
        "`[in code](gone.md)` [web](https://example.org/x.md)\n",
        encoding="utf-8",
    )
    broken = [reason for target in _links(page) if (reason := _broken(page, target))]
    assert broken == ["gone.md: no such file", "other.md#nowhere: other.md has no heading #nowhere"]


# The site.


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with ``mkdocs build --strict``: a warning fails the build."""
    missing = missing_docs_module()
    if missing is not None:
        pytest.skip(f"{missing} is not installed; it builds the site (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file"]
    built = subprocess.run(
        [*command, str(MKDOCS_YML), "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site's address, served from a thread on a free port of this machine."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            thread.join()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _nav(entries: list[Any]) -> list[tuple[str, str]]:
    """mkdocs.yml's navigation, flat: ``("section", title)`` and ``("page", title)``."""
    flat: list[tuple[str, str]] = []
    for entry in entries:
        ((title, target),) = entry.items()
        if isinstance(target, list):
            flat.append(("section", title))
            flat.extend(_nav(target))
        else:
            flat.append(("page", title))
    return flat


VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
)
"""Elements that have no end tag."""


class _Landing(HTMLParser):
    """What a reader sees of a Material page: the article's first heading, and the entries of
    the navigation sidebar (sections and pages; not the table of contents nested in it)."""

    def __init__(self) -> None:
        super().__init__()
        self.heading = ""
        self.nav: list[tuple[str, str]] = []
        self.links: list[str] = []
        self._stack: list[tuple[str, set[str], dict[str, str]]] = []
        self._text: list[str] | None = None
        self._entry: tuple[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        classes = set(attributes.get("class", "").split())
        if tag in VOID:
            return
        self._stack.append((tag, classes, attributes))
        if tag == "h1" and not self.heading and self._within("article"):
            self._text, self._entry = [], ("heading", "")
        elif "md-nav__link" in classes and self._in_navigation():
            if tag == "a":
                self._text, self._entry = [], ("page", attributes.get("href", ""))
            elif tag == "label" and attributes.get("for", "").startswith("__nav_"):
                self._text, self._entry = [], ("section", "")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass  # <path ... />: nothing a reader sees as text

    def handle_endtag(self, tag: str) -> None:
        if tag not in (opened for opened, _, _ in self._stack):
            return
        while self._stack.pop()[0] != tag:
            pass
        if self._entry is not None and self._text is not None and tag in {"h1", "a", "label"}:
            kind, href = self._entry
            text = " ".join("".join(self._text).split())
            if kind == "heading":
                self.heading = text
            else:
                self.nav.append((kind, text))
                if kind == "page":
                    self.links.append(href)
            self._text = self._entry = None

    def handle_data(self, data: str) -> None:
        # A heading's permalink (its "¶") is no part of its text.
        if self._text is not None and not any("headerlink" in c for _, c, _ in self._stack):
            self._text.append(data)

    def _within(self, tag: str) -> bool:
        return any(opened == tag for opened, _, _ in self._stack)

    def _in_navigation(self) -> bool:
        navs = [classes for opened, classes, _ in self._stack if opened == "nav"]
        return (
            bool(navs)
            and "md-nav--primary" in navs[0]
            and not any("md-nav--secondary" in classes for classes in navs)
        )


def test_the_site_builds_with_strict_warnings(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "reference" / "api" / "index.html").is_file()


def test_the_landing_page_shows_its_heading_and_the_navigation_in_a_browser(
    served: str, site: Path, tmp_path: Path
) -> None:
    landing = _Landing()
    landing.feed(dump_dom(served, tmp_path / "profile"))
    config = yaml.safe_load(MKDOCS_YML.read_text(encoding="utf-8"))
    assert landing.heading == "ptrport"
    assert landing.nav == _nav(config["nav"])
    for href in landing.links:
        assert (site / href / "index.html").is_file() or href == ".", href


MEASURE = """
<script>
// Each code block's text against the box it shows in: a line that does not wrap makes the
// text wider than the box, and its end scrolls out of sight.
document.body.dataset.measured = JSON.stringify({
  column: document.querySelector(".md-content").clientWidth,
  clipped: Array.from(document.querySelectorAll(".md-typeset pre > code"))
    .filter((code) => code.scrollWidth > code.clientWidth)
    .map((code) => code.textContent.split("\\n").reduce((a, b) => (b.length > a.length ? b : a))),
});
</script>
"""


def test_a_long_code_line_wraps_in_the_content_column_in_a_browser(
    served: str, site: Path, tmp_path: Path
) -> None:
    """The lint page's finding and its ``fix:`` line, about 170 characters each, read whole in
    the content column that the 1400-px window leaves beside the two sidebars."""
    page = site / "lint" / "index.html"
    assert "fix: create the tensor it views with dtype=torch.uint64" in page.read_text()
    measured_page = page.with_name("measured.html")
    measured_page.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    dom = dump_dom(served + "lint/measured.html", tmp_path / "profile")
    found = re.search(r'data-measured="([^"]*)"', dom)
    assert found, "the measuring script did not run"
    measured = json.loads(html.unescape(found.group(1)))
    assert 600 <= measured["column"] <= 800, measured
    assert measured["clipped"] == []
