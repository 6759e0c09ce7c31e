"""Markdown in transcript text as HTML the page may show. Transcript content is untrusted:
markdown-it-py reads it with raw HTML off, then nh3 keeps only the elements, attributes and
URL schemes listed here. Nothing else in the project marks transcript content safe."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import nh3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

TAGS = frozenset(
    {
        "p", "br", "hr", "blockquote", "ul", "ol", "li", "pre", "code", "em", "strong", "s",
        "a", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
"""The elements rendered markdown may hold. No img (a transcript's image would load from
elsewhere, which the CSP refuses: it becomes a link), no raw HTML of any kind."""
ATTRIBUTES = {"a": frozenset({"href", "title"}), "ol": frozenset({"start"})}
"""The attributes each element may carry; ``rel`` is the sanitizer's own (LINK_REL)."""
URL_SCHEMES = frozenset({"http", "https", "mailto"})
"""The only schemes a link may have. A link with none (relative, into this site) is dropped."""
LINK_REL = "nofollow noopener noreferrer"

MAX_CHARS = 20_000
"""Longer text is shown as text: a text this long is a dump more often than prose, and the
page renders a window of 50 messages. Prose or code of this length takes markdown-it-py
milliseconds; what costs more is bounded by the counts below (on a 2-core machine where
a bare loop of 10 million additions takes 1.6 s, the worst shape found that passes them,
20,000 characters of one-line emphasis, took 0.13 s)."""
MAX_BRACKETS = 1_000
"""Text with more ``[`` is shown as text: link labels cost markdown-it-py the square of
their number (5,000 take a second)."""
MAX_LINES = 1_000
"""Text of more lines (ended by ``\n``, ``\r\n`` or a lone ``\r``, as markdown reads them)
is shown as text: each line of a list or a table costs markdown-it-py and the sanitizer
about 0.1 ms (5,000 list items took 0.58 s)."""
MAX_CELLS = 1_000
"""Text with more ``|`` (a table's cells) is shown as text: each cell costs about 0.05 ms
and 15 times its size in markup (10,000 took 1 s and 300 KB)."""
TABLE_BOX = '<div class="md-table" tabindex="0">'
"""What holds each table: a table of many columns cannot shrink to a phone's width, so it
scrolls sideways in this box (reading.css), which takes the keyboard's focus to scroll by
keys. The renderer's own markup, never the transcript's (no div passes the sanitizer)."""
HEADING_SHIFT = 2
"""A message's ``#`` heading is an h3: the page's own headings stay above its messages."""


def _shift_headings(state: StateCore) -> None:
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + HEADING_SHIFT)}"


def _image_as_link(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """``![alt](src)`` as a link to the image, never an image the page would load."""
    token = tokens[idx]
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    src = str(token.attrGet("src") or "")
    return f'<a href="{escape(src)}">image: {escape(alt or src)}</a>'


_markdown = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
_markdown.core.ruler.push("shift_headings", _shift_headings)
_markdown.add_render_rule("image", _image_as_link)


def _keep_attribute(tag: str, attribute: str, value: str) -> str | None:
    if attribute == "href":
        try:
            scheme = urlsplit(value.strip()).scheme.lower()
        except ValueError:
            return None
        return value if scheme in URL_SCHEMES else None
    return value


_cleaner = nh3.Cleaner(
    tags=set(TAGS),
    clean_content_tags={"script", "style"},
    attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
    attribute_filter=_keep_attribute,
    url_schemes=set(URL_SCHEMES),
    link_rel=LINK_REL,
    strip_comments=True,
)


_TAG = re.compile(r'<[^"<>]*(?:"[^"]*"[^"<>]*)*>')
"""A tag as nh3 writes one: text holds no ``<`` or ``>`` (escaped), and an attribute's value,
always in double quotes, holds no ``"``."""


_BOXED = {"<table>": f"{TABLE_BOX}<table>", "</table>": "</table></div>"}
"""A table's tags (the sanitizer leaves a table no attribute) with its box around it."""


def _quote_text(html: str) -> str:
    """nh3's output with the quotes in its text escaped, as Django escapes text: a hostile
    ``href="javascript:`` in a message reads the same whether shown as markdown or text.
    Each table goes in its box (TABLE_BOX)."""
    out, at = [], 0
    for tag in _TAG.finditer(html):
        text = html[at : tag.start()].replace('"', "&quot;").replace("'", "&#x27;")
        out += [text, _BOXED.get(tag[0], tag[0])]
        at = tag.end()
    out.append(html[at:].replace('"', "&quot;").replace("'", "&#x27;"))
    return "".join(out)


def renders(text: str) -> bool:
    """Whether ``text`` is shown as markdown: not when it is too long to read in time."""
    return (
        len(text) <= MAX_CHARS
        and text.count("[") <= MAX_BRACKETS
        and text.count("\n") + text.count("\r") - text.count("\r\n") <= MAX_LINES
        and text.count("|") <= MAX_CELLS
    )


@lru_cache(maxsize=512)
def markdown(text: str) -> SafeString:
    """``text`` read as CommonMark (with tables and strikethrough) and sanitized: the one
    place transcript content becomes markup. Cached: the answer to a write re-renders the
    rows the reader has loaded."""
    return mark_safe(_quote_text(_cleaner.clean(_markdown.render(text))))
