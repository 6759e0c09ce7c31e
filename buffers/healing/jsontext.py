"""JSON text in and out, fast where the standard library is slow, and exactly as it reads
(but for a key named twice, which is refused).

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

One thing ``loads`` refuses that ``json`` reads: an object that names a key twice, which
JSON leaves without a meaning (RFC 8259, section 4) and both parsers read as its last
value, silently. ``DuplicateKey`` names the object and the key. orjson has no hook, so
``unique_keys`` proves a text free of them by counting colons (see there), and only a
text it cannot prove so is read again by ``json`` with a hook that sees every object's
pairs.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

import orjson

from .messages import MAX_DEPTH

_NUL = "\\u0000"
_BEFORE_A_NUMBER = b":[, \t\r\n-"
_SHAPES = bytes(
    ord("0") if chr(byte).isdigit() else ord(":") if byte in _BEFORE_A_NUMBER else ord("a")
    for byte in range(256)
)
_LONG_RUN = b":" + b"0" * 19


def has_long_number(text: str | bytes) -> bool:
    """Whether ``text`` may hold a number of 19 digits or more: a run of 19 digits right
    after what may come before a number (``:``, ``[``, ``,``, a space, ``-``). A run inside
    a string after a letter or a quote is not one (a nanosecond timestamp in quotes, an id
    like ``msg_000…``); one after a space in a string is taken for one, which only costs
    the slower reading. Fast: one pass in C over the whole text. A file is asked as the
    UTF-8 bytes it came in, BOM or not, sparing the text's encoding."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    shapes = raw.translate(_SHAPES)
    first = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    return _LONG_RUN in shapes or shapes.startswith(_LONG_RUN[1:], first)


def loads(
    text: str, *, long_numbers: bool = True, escaped_colons: bool = True, document: bool = False
) -> tuple[object, bool]:
    """The value of ``text``, as ``json.loads`` reads it (raising its errors, and
    ``DuplicateKey``), and whether it is known to be storable (``known_storable``, or for a
    whole ``document`` of any length ``known_storable_document``) without walking it. A
    caller that knows ``text`` holds no long number (``has_long_number`` of a whole file)
    or no escaped colon (``has_escaped_colon``) says so, saving the check."""
    if not (long_numbers and has_long_number(text)):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        else:
            unique_keys(text, value, escaped_colons=escaped_colons)
            storable = known_storable_document if document else known_storable
            return value, storable(text)
    return _strict(text), False


def loads_stored(text: str) -> object:
    """The value of a JSON text read back from the database, as ``loads`` reads it, but
    without looking for a key named twice: the app stores only what it writes from values
    it has read (a value holds each key once), and PostgreSQL's ``jsonb`` keeps one of each
    anyway. Reading the last rows of a buffer, an append spent 5% of its time on it."""
    if not has_long_number(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


class DuplicateKey(json.JSONDecodeError):
    """A JSON text in which one object names a key twice: ``path`` names the object
    (``messages[2].content[0]``; empty for the outermost value), ``key`` the key, and
    ``pos`` (``lineno``, ``colno``) where it is named the second time. A
    ``JSONDecodeError``, so that whatever refuses a text that is not JSON refuses this."""

    def __init__(self, path: str, key: str, doc: str, pos: int) -> None:
        self.path, self.key = path, key
        super().__init__(f"{path}: {self.why}" if path else self.why, doc, pos)

    @property
    def why(self) -> str:
        return f"the key {self.shown_key} appears twice"

    @property
    def shown_key(self) -> str:
        """The key as JSON spells it (shortened past 100 characters), for a sentence."""
        return json.dumps(self.key if len(self.key) <= 100 else self.key[:100] + "...")

    def under(self, where: str) -> str:
        """The object's path in a value found at ``where`` (an attribute holding JSON text)."""
        if not where or not self.path:
            return where or self.path
        return f"{where}{self.path}" if self.path.startswith("[") else f"{where}.{self.path}"

    def __reduce__(self) -> tuple[Any, ...]:
        return self.__class__, (self.path, self.key, self.doc, self.pos)


def has_escaped_colon(text: str | bytes) -> bool:
    """Whether ``text`` may spell a colon in a string as ``\\u003a``, which no JSON writer
    does unasked (``unique_keys`` needs the colons counted as written). One pass over a
    text that has neither (a session log's 113 MB: 0.09 s a pass)."""
    if isinstance(text, bytes):
        return b"\\u003" in text and (b"\\u003a" in text or b"\\u003A" in text)
    return "\\u003" in text and ("\\u003a" in text or "\\u003A" in text)


def unique_keys(text: str | bytes, value: object, *, escaped_colons: bool = True) -> None:
    """Raise ``DuplicateKey`` if ``text``, which was read as ``value`` (the last of each
    key's values, as orjson and ``json`` read it), names a key twice in one object.

    Fast and sound: every key of ``text`` is followed by one colon outside strings, and
    every string of ``value`` is one of ``text``'s, so ``text`` holds at least as many
    colons as orjson writes for ``value`` (it never escapes one), and exactly as many
    unless a key was named twice and one of the two dropped, taking its colon with it. So
    equal counts prove every key unique; only a text whose strings spell a colon as
    ``\\u003a`` (which a writer may do, but none does unasked) or whose counts differ is
    read again by ``json``, with a hook that sees every object's pairs."""
    try:
        written = orjson.dumps(value).count(b":")
    except orjson.JSONEncodeError:  # nested too deep for orjson to write
        written = -1
    written_as = text.count(":") if isinstance(text, str) else text.count(b":")
    if written == written_as and not (escaped_colons and has_escaped_colon(text)):
        return
    if isinstance(text, bytes):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    _strict(text)


class _Repeated(Exception):
    pass


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Repeated
    return value


def _strict(text: str) -> object:
    """``json.loads(text)``, or ``DuplicateKey`` for the first key ``text`` names twice."""
    try:
        return json.loads(text, object_pairs_hook=_once)
    except _Repeated:
        raise _first_duplicate(text) from None


_SPACE = re.compile(r"[ \t\n\r]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _first_duplicate(text: str) -> DuplicateKey:
    """The first key named twice in ``text`` (known to hold one), with the path of its
    object. A walk of the text in Python, iterative so that any nesting ``json`` reads
    does not overflow it, taking each scalar whole with ``json``'s own scanner; only ever
    run on a text to be refused."""
    scalar = json.JSONDecoder().raw_decode
    # Each open container: its path, and its keys so far (an object) or its index (an array).
    stack: list[tuple[str, set[str] | list[int]]] = []
    position, path = _space(text, 0), ""
    while True:  # a value starts at ``position``; ``path`` names it
        opening = text[position]
        if opening in "{[":
            position = _space(text, position + 1)
            if text[position] not in "}]":
                stack.append((path, set() if opening == "{" else [0]))
                if opening == "{":
                    position, path = _key(text, position, *stack[-1])
                else:
                    path = f"{path}[0]"
                continue
            position += 1  # an empty one
        else:
            position = scalar(text, position)[1]
        while stack:  # a value ended: the next one in its container, or the container's end
            outer, seen = stack[-1]
            position = _space(text, position)
            if text[position] == ",":
                position = _space(text, position + 1)
                if isinstance(seen, set):
                    position, path = _key(text, position, outer, seen)
                else:
                    seen[0] += 1
                    path = f"{outer}[{seen[0]}]"
                break
            stack.pop()
            position += 1
        else:
            raise AssertionError("a text said to name a key twice names none")


def _key(text: str, position: int, outer: str, seen: set[str] | list[int]) -> tuple[int, str]:
    """The key that starts at ``position`` in the object at ``outer`` whose keys so far are
    ``seen``: where its value starts, and the value's path."""
    assert isinstance(seen, set)
    key, end = json.decoder.scanstring(text, position + 1)  # type: ignore[attr-defined]
    if key in seen:
        raise DuplicateKey(outer, key, text, position)
    seen.add(key)
    if _NAME.fullmatch(key):
        path = f"{outer}.{key}" if outer else key
    else:
        path = f"{outer}[{json.dumps(key)}]"
    return _space(text, _space(text, end) + 1), path


def _space(text: str, position: int) -> int:
    found = _SPACE.match(text, position)
    assert found is not None
    return found.end()


def known_storable(text: str) -> bool:
    """Whether the value orjson read from ``text`` passes ``messages.json_problem``: it holds
    no U+0000 (spelled ``\\u0000`` in JSON: a raw one is not JSON), and cannot nest
    ``MAX_DEPTH`` deep, having fewer brackets than that. orjson refused the rest."""
    return _NUL not in text and text.count("[") + text.count("{") < MAX_DEPTH


_NOT_STRUCTURE = bytes(c for c in range(256) if chr(c) not in '"[]{}')
_AS_BRACES = bytes.maketrans(b"[]", b"{}")
_STRING = re.compile(rb'"[^"]*"')


def nests_at_most(text: str, levels: int, *, thorough: bool = True) -> bool:
    """Whether the JSON ``text`` (one that parses) nests arrays and objects at most
    ``levels`` deep (``[]`` is one level, ``{"a": []}`` two). Without reading it into
    values: in passes over the text in C, 0.04 s for a 15 MB transcript, against 0.17 s for
    ``messages.json_problem`` to walk what it holds. Not ``thorough``: False also as soon
    as a pass takes out less than an eighth of what is left (a transcript's passes take
    out most of it), so that a text built to need many long passes (29 MB of towers of
    brackets 63 deep: 3.0 s to read to the end) costs about one (0.2 s).

    The escapes that could hide a quote go first (``\\`` then ``\"``, as a reader meets
    them left to right); then all but quotes and brackets. Two quotes side by side then
    either close a string and open the next, or make an empty one: taking them out leaves
    every bracket as much inside a string as it was, and leaves few strings, each holding
    a bracket, which a pattern takes out. What is left is the brackets outside strings,
    balanced, all written as braces: each pass takes out the innermost pairs, so the
    passes needed are the depth."""
    unescaped = text.replace("\\\\", "").replace('\\"', "")
    shape = unescaped.encode("utf-8", "surrogatepass").translate(_AS_BRACES, _NOT_STRUCTURE)
    braces = _STRING.sub(b"", shape.replace(b'""', b""))
    for _ in range(levels):
        if not braces:
            return True
        inner = braces.replace(b"{}", b"")
        if not thorough and len(inner) > len(braces) * 7 // 8:
            return False
        braces = inner
    return not braces


def known_storable_document(text: str) -> bool:
    """``known_storable`` for a whole document read by orjson, of any length: it holds no
    U+0000 and nests no deeper than ``MAX_DEPTH``, so no value in it does either. Read
    not ``thorough``ly: a document whose nesting would cost many long passes to read is
    walked instead, as before (a review found a 30 MB file of towers 63 deep took 3.0 s
    to read to its depth, and the walk it saves 3.8 s)."""
    return _NUL not in text and nests_at_most(text, MAX_DEPTH, thorough=False)


def dumps(value: object) -> str:
    """Compact JSON text of a storable value."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer beyond 64 bits
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
