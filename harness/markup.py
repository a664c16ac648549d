"""Escaping for text that came from results (exception messages can hold anything) on its way
into Markdown and HTML."""

from __future__ import annotations

import html
import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")


def html_text(text: object) -> str:
    """``text`` safe anywhere in HTML: element content and quoted attribute values."""
    return html.escape(str(text), quote=True)


def markdown_text(text: object) -> str:
    """``text`` as literal Markdown inline content, safe inside a table cell: HTML is escaped,
    Markdown punctuation backslash-escaped, line breaks folded to spaces."""
    flat = " ".join(str(text).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(flat, quote=False))


def markdown_code(text: object) -> str:
    """``text`` in a fenced code block, whatever backticks it holds."""
    body = str(text)
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}\n{body}\n{fence}"
