"""MkDocs hook: what of reStructuredText our docstrings use and mkdocstrings leaves as text. A
role (``:func:`addresses```, ``:class:`~ptrport.device.presentation.PlacementError```) is shown
as the code it names (``addresses``, ``PlacementError``); the ``::`` that opens a literal block
as one colon before the code block."""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):<code>(~?)([^<]*)</code>")
LITERAL_BLOCK = re.compile(r"::</p>(\s*<div class=\"highlight\">)")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return LITERAL_BLOCK.sub(r":</p>\1", ROLE.sub(_code, html))


def _code(found: re.Match[str]) -> str:
    short, name = found.groups()
    return f"<code>{name.rpartition('.')[2] if short else name}</code>"
