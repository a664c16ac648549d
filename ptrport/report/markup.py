"""Escaping for text that came from results (exception messages can hold anything) on its way
into Markdown and HTML."""

from __future__ import annotations

import html
import re
import unicodedata

# What could change how GitHub-flavoured Markdown renders one line of inline text, or put
# markup or a link into it. Everything else stays as written, so that ids, versions and
# addresses read the same as plain text: `cpu-x86-64`, `2.13.0+cpu`, `address_arithmetic`.
_MARKDOWN_ESCAPED = re.compile(
    r"""
      (?P<backslash> \\ (?= [!-/:-@\[-`{-~] | $ ) )  # would escape what follows, or break the line
    | (?P<entity> [&<>] )                            # raw HTML, entity references
    | (?P<always> [`*|] )                            # code spans, emphasis, table cells
    | (?P<underscores> _+ )                          # emphasis, where one could open
    | (?P<tildes> ~+ )                               # strikethrough, code fences
    | (?P<link> (?<= \] ) \( | ! (?= \[ ) )          # inline links and images
    | (?P<scheme> (?i: \b (?: https? | ftp | mailto | xmpp ) ) : )  # autolinks
    | (?P<www> (?i: \b www ) \. )
    | (?P<email> (?<= [\w.+-] ) @ (?= [\w-]+ \. \w ) )
    | (?P<closing> (?<= [ ] ) \# (?= \#* $ ) )       # a heading's closing sequence
    """,
    re.VERBOSE,
)
# What starts a block when it starts a line: an ATX heading, a list item, a thematic break or
# setext underline, a link reference definition, an ordered list item.
_LINE_START = re.compile(r"#+(?= |$)|[-+](?= |$)|-(?=-)|=+$|\[(?=[^\]]*\]:)|\d{1,9}(?=[.)]( |$))")


def html_text(text: object) -> str:
    """``text`` safe anywhere in HTML: element content and quoted attribute values."""
    return html.escape(str(text), quote=True)


def _punctuation(char: str) -> bool:
    return unicodedata.category(char)[0] in "PS"


def _can_open(text: str, start: int, end: int, *, underscore: bool) -> bool:
    """Whether the run ``text[start:end]`` of ``_`` or ``~`` could open emphasis or
    strikethrough by CommonMark's flanking rules, taking what is before the text as a space
    and what is after it as a letter, the cases where it could."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else "a"
    left = not after.isspace() and (
        not _punctuation(after) or before.isspace() or _punctuation(before)
    )
    if not (left and underscore):
        return left
    right = not before.isspace() and (
        not _punctuation(before) or after.isspace() or _punctuation(after)
    )
    return not right or _punctuation(before)


def _escaped(match: re.Match[str]) -> str:
    kind, found = match.lastgroup, match[0]
    if kind == "entity":
        return html.escape(found, quote=False)
    if kind in ("scheme", "www"):
        return found[:-1] + "\\" + found[-1]
    if kind in ("underscores", "tildes"):
        # A run that cannot open cannot close anything either: every run that could open
        # one is escaped, and the text around this one makes no emphasis with `_` or `~`.
        text, start, end = match.string, match.start(), match.end()
        if not _can_open(text, start, end, underscore=kind == "underscores"):
            return found
        return "".join("\\" + c for c in found)
    return "\\" + found


def markdown_text(text: object) -> str:
    """``text`` as literal GitHub-flavoured Markdown inline content, safe inside a table cell
    and at the start of a line: HTML is escaped, line breaks folded to spaces, and Markdown
    punctuation backslash-escaped only where it could make markup or a link."""
    flat = " ".join(str(text).split())
    escaped = _MARKDOWN_ESCAPED.sub(_escaped, flat)
    start = _LINE_START.match(flat)
    if start is None:
        return escaped
    # The characters that open a block are never escaped above, so they lead `escaped` too.
    at = start.end() if start[0][:1].isdigit() else 0
    return escaped[:at] + "\\" + escaped[at:]


def markdown_code(text: object) -> str:
    """``text`` in a fenced code block, whatever backticks it holds."""
    body = str(text)
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}\n{body}\n{fence}"


# Only plain https URLs become links: no quotes, brackets, spaces or backslashes, which could
# end a Markdown link destination or an attribute early.
ISSUE_URL = re.compile(r"https://[A-Za-z0-9.-]+(?:/[A-Za-z0-9._~/?#@!$&*+,;=%:-]*)?")


def markdown_issue(issue: str) -> str:
    """An issue as Markdown: a link if it is a plain https URL (shown without its scheme,
    which plain text would have to escape against autolinks), else text."""
    if ISSUE_URL.fullmatch(issue):
        return f"[{markdown_text(issue.removeprefix('https://'))}]({issue})"
    return markdown_text(issue)


def html_issue(issue: str) -> str:
    """An issue as HTML: a link if it is a plain https URL, else text."""
    if ISSUE_URL.fullmatch(issue):
        return f'<a href="{html_text(issue)}">{html_text(issue)}</a>'
    return html_text(issue)
