"""JSON text in and out, fast where the standard library is slow, and exactly as it reads.

orjson parses and writes several times faster than ``json`` on the long transcripts this
app imports (benchmarks/exchange.py), but differs from it on three things: it reads an
integer beyond 64 bits as a float, and it refuses NaN, the infinities and lone
surrogates, which ``json`` reads. So a text orjson refuses, or one holding a number of
19 digits or more, is read by ``json``: every text means what ``json`` makes of it, and
errors are ``json``'s own. A value orjson cannot write (an integer beyond 64 bits) is
written by ``json``.

What ``loads`` reads by orjson is also known to be free of NaN, infinities and lone
surrogates, which ``messages.json_problem`` would otherwise walk the value to find: see
``known_storable``.
"""

from __future__ import annotations

import json

import orjson

from .messages import MAX_DEPTH

_NUL = "\\u0000"
_BEFORE_A_NUMBER = b":[, \t\r\n-"
_SHAPES = bytes(
    ord("0") if chr(byte).isdigit() else ord(":") if byte in _BEFORE_A_NUMBER else ord("a")
    for byte in range(256)
)
_LONG_RUN = b":" + b"0" * 19


def has_long_number(text: str) -> bool:
    """Whether ``text`` may hold a number of 19 digits or more: a run of 19 digits right
    after what may come before a number (``:``, ``[``, ``,``, a space, ``-``). A run inside
    a string after a letter or a quote is not one (a nanosecond timestamp in quotes, an id
    like ``msg_000…``); one after a space in a string is taken for one, which only costs
    the slower reading. Fast: one pass in C over the whole text."""
    shapes = text.encode("utf-8", "surrogatepass").translate(_SHAPES)
    return _LONG_RUN in shapes or shapes.startswith(_LONG_RUN[1:])


def loads(text: str, *, long_numbers: bool = True) -> tuple[object, bool]:
    """The value of ``text``, as ``json.loads`` reads it (raising its errors), and whether
    it is known to be storable (``known_storable``) without walking it. A caller that
    knows ``text`` holds no long number (``has_long_number`` of a whole file) says so
    with ``long_numbers=False``, saving the check."""
    if not (long_numbers and has_long_number(text)):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        else:
            return value, known_storable(text)
    return json.loads(text), False


def known_storable(text: str) -> bool:
    """Whether the value orjson read from ``text`` passes ``messages.json_problem``: it holds
    no U+0000 (spelled ``\\u0000`` in JSON: a raw one is not JSON), and cannot nest
    ``MAX_DEPTH`` deep, having fewer brackets than that. orjson refused the rest."""
    return _NUL not in text and text.count("[") + text.count("{") < MAX_DEPTH


def dumps(value: object) -> str:
    """Compact JSON text of a storable value."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer beyond 64 bits
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
