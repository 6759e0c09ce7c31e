"""What of a message is searchable, as words (``text_of``, ``words_of``), and a query's
words in each database's query syntax. No Django: both backends' index holds these words."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from buffers import healing
from buffers.healing import jsontext
from buffers.healing.messages import storable_text

MAX_QUERY = 200
"""The most characters of a query read; the rest is ignored."""


MAX_TERMS = 8
"""The most words of a query used."""


INDEXED_CHARS = 200_000
"""A message's text is indexed up to this many characters (a tsvector holds 1 MB)."""


@cache
def word_character() -> str:
    """A character class of what a word is made of: letters and digits, and the combining
    marks that are part of a word in many scripts (Devanagari's vowel signs, Hebrew's
    points, a decomposed accent). FTS5 tables read words as the same categories
    (``L* N* Co M*``, migration 0017). Made on first use, from the marks' Unicode category
    (all in planes 0, 1 and 14): 0.06 s."""
    marks = [
        code
        for code in (*range(0x20000), *range(0xE0000, 0xE1000))
        if unicodedata.category(chr(code)).startswith("M")
    ]
    runs: list[list[int]] = []
    for code in marks:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    ranges = "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in runs)
    return f"(?:[^\\W_]|[{ranges}])"


@cache
def _words() -> re.Pattern[str]:
    return re.compile(word_character() + "+")


def nfc(text: str) -> str:
    """``text`` composed (NFC), as words are indexed and searched: a word decomposed, as
    macOS writes file names, is the same word."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


FOLDED = str.maketrans(
    {
        "\u03c2": "\u03c3",  # final sigma: sigma
        "\u00b5": "\u03bc",  # micro sign: mu
        "\u017f": "s",  # long s
        "\u0345": "\u03b9",  # combining ypogegrammeni: iota
        "\u03d0": "\u03b2",  # beta symbol: beta
        "\u03d1": "\u03b8",  # theta symbol: theta
        "\u03d5": "\u03c6",  # phi symbol: phi
        "\u03d6": "\u03c0",  # pi symbol: pi
        "\u03f0": "\u03ba",  # kappa symbol: kappa
        "\u03f1": "\u03c1",  # rho symbol: rho
        "\u03f5": "\u03b5",  # lunate epsilon: epsilon
        "\u1e9b": "\u1e61",  # long s with dot above: s with dot above
    }
)
"""The letters that lowercasing leaves and SQLite's tokenizer (unicode61) folds into
another as it folds case, each to that other. Folded here, both databases hold one word
where SQLite's index found either spelling by the other and its check of each
conversation, like PostgreSQL, did not. Python lowers a capital sigma to the final form or
not by what follows it ("ΟΔΟΣ" to "οδος", "ΟΔΟΣ.COM" to "οδοσ.com"): words hold the middle
form only. Migration 0019 indexes again what held the others."""


def _lowered(text: str) -> str:
    """``text`` composed, lowercased and folded (``FOLDED``): one word whichever of these
    letters it is written with. A dotted capital I is a plain 'i' first: Python lowers it
    to 'i' and a combining dot above, so "İstanbul" was "i̇stanbul", which "istanbul" does
    not begin (migration 0024)."""
    text = nfc(text)
    if "\u0130" in text:
        text = text.replace("\u0130", "i")
    return text.lower().translate(FOLDED)


SOFT_HYPHEN = "\u00ad"
"""Where a word may break at a line's end, not shown: dropped before text is split, so
"Zwei\u00adtausend" is one word (migration 0024)."""


def unhyphenated(text: str) -> str:
    """``text`` without its soft hyphens."""
    return text.replace(SOFT_HYPHEN, "") if SOFT_HYPHEN in text else text


MAX_WORD = 200
"""Longer words (base64, minified code) are not indexed: PostgreSQL takes 2,047 bytes."""


# ASCII text, the common case, in one pass: letters lowercased, all else a space.
_ASCII_WORDS = bytes(
    byte + 32 if 65 <= byte <= 90 else byte if chr(byte).isalnum() and byte < 128 else 32
    for byte in range(256)
)


_PG_MAX_DOCUMENT = 900_000


# Keys of structured content whose values are not text a reader would look for.
_NOT_TEXT = frozenset(
    {
        "type",
        "id",
        "tool_use_id",
        "tool_call_id",
        "call_id",
        "image_url",
        "signature",
        "cache_control",
        "mime_type",
        "media_type",
    }
)
# A media part's bytes are a string under "data" (Gemini's inlineData, Anthropic's source),
# its source an object under "source"; but a REST answer's records are under "data" and a
# record may name its "source" in words: only those shapes are left out.
_BYTES_IF_TEXT = "data"
_BYTES_IF_OBJECT = "source"
_DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+[;,]", re.IGNORECASE)


def text_of(role: str, content: Any, metadata: Mapping[str, Any]) -> str:
    """The searchable text of a message (see the module docstring)."""
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif content is not None:
        _collect(content, parts)
    if role == "assistant":
        calls = metadata.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict):
                    _call_text(call, parts)
    text = parts[0] if len(parts) == 1 else "\n".join(parts)
    return text[:INDEXED_CHARS]


def message_text(message: healing.Message) -> str:
    return text_of(message.role, message.content, message.metadata)


def words_of(text: str) -> str:
    """The words of a text as the index holds them: each once, space-separated, in no
    particular order; "" when there are none."""
    if text.isascii():
        found = set(text.encode().translate(_ASCII_WORDS).split())
        if len(text) > MAX_WORD:
            found = {w for w in found if len(w) <= MAX_WORD}
        return b" ".join(found).decode()
    words = set(_words().findall(_lowered(unhyphenated(text))))
    if len(text) > MAX_WORD:
        words = {w for w in words if len(w) <= MAX_WORD}
    joined = " ".join(words)
    if len(joined) > _PG_MAX_DOCUMENT // 4 and len(joined.encode()) > _PG_MAX_DOCUMENT:
        joined = joined.encode()[:_PG_MAX_DOCUMENT].decode(errors="ignore").rpartition(" ")[0]
    return joined


def _collect(value: Any, parts: list[str]) -> None:
    """The text inside structured content: strings, except under keys that hold none and
    a media part's bytes (a data: URI; ``_BYTES_IF_TEXT``, ``_BYTES_IF_OBJECT``)."""
    if isinstance(value, str):
        if value and not _DATA_URI.match(value):
            parts.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect(item, parts)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in _NOT_TEXT:
                continue
            if key == _BYTES_IF_TEXT and isinstance(item, str):
                continue
            if key == _BYTES_IF_OBJECT and isinstance(item, dict):
                continue
            _collect(item, parts)


def _call_text(call: dict[str, Any], parts: list[str]) -> None:
    """A tool call's name and arguments, in the spellings ``presenters`` reads."""
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    name = call.get("name") or function.get("name")
    if isinstance(name, str):
        parts.append(name)
    arguments = next(
        (call[key] for key in ("args", "arguments", "input") if key in call),
        function.get("arguments"),
    )
    if isinstance(arguments, str):
        text = arguments
        try:
            arguments = jsontext.loads_stored(text)
        except (ValueError, RecursionError):  # not JSON (a call cut short): its text as it is
            parts.append(text)
            return
    if arguments is not None:
        # Read, JSON's escapes are characters, those no database stores among them.
        found: list[str] = []
        _argument_text(arguments, found)
        parts.extend(storable_text(text) for text in found)


def _argument_text(value: Any, parts: list[str]) -> None:
    """The words of a call's arguments, read as JSON: each string as the characters it
    holds (not its JSON escapes: "\\n" is a line break), each number and boolean as JSON
    writes it, and the keys, which the page shows (``city: Zürich``). In order, without
    recursion: arguments may nest as deep as JSON text is read (1,024)."""
    waiting: list[Any] = [value]
    while waiting:
        value = waiting.pop()
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            inner: list[Any] = []
            for key, item in value.items():
                if isinstance(item, dict | list):
                    inner += [f"{key}:", item]
                else:
                    shown = item if isinstance(item, str) else jsontext.dumps(item)
                    inner.append(f"{key}: {shown}")
            waiting.extend(reversed(inner))
        elif isinstance(value, list):
            waiting.extend(reversed(value))
        elif value is not None:
            parts.append(jsontext.dumps(value))


# Queries.


def clean(query: str | None) -> str:
    """A query as it is searched for: at most ``MAX_QUERY`` characters, without control
    characters (U+0000 among them, which PostgreSQL cannot take) and soft hyphens,
    trimmed."""
    if not query:
        return ""
    query = unhyphenated(query[:MAX_QUERY])
    if not query.isprintable():
        query = "".join(c if c.isprintable() else " " for c in query)
    return query.strip()


def terms(query: str) -> list[str]:
    """The words of a query, as ``words_of`` reads text, in their order, at most
    ``MAX_TERMS``; a word too long to be indexed is kept (it then finds nothing)."""
    return list(dict.fromkeys(_words().findall(_lowered(clean(query)))))[:MAX_TERMS]


def is_prefix(term: str) -> bool:
    return len(term) >= 2


def pg_query(words: Sequence[str]) -> str:
    """A tsquery literal (read as is: no parser, no dictionary): words are letters, digits
    and combining marks only, so nothing in them is tsquery syntax."""
    return " & ".join(f"'{w}':*" if is_prefix(w) else f"'{w}'" for w in words)


def fts_body(words: Sequence[str]) -> str:
    """An FTS5 query of the words, each (of two characters or more) as a prefix."""
    # Quoted: a word such as "and" or "near" is a word, not an operator.
    return " AND ".join(f'"{w}"*' if is_prefix(w) else f'"{w}"' for w in words)
