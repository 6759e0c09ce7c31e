"""A transcript as the readers see it, and what reading it gave.

A transcript is one JSON ``document`` (a ``.json`` file, an API request's document), or
the ``lines`` of a JSONL file, each parsed on its own. Agent runtimes write their logs
line by line from processes that crash, so a line that is not JSON is not fatal here: it
is kept aside in ``unreadable``, and a reader for a log format skips it and says so,
while a reader of one document per line (OpenAI fine-tuning files, the stored JSONL)
refuses it as before. A line that names a key twice in one object is one of those: JSON
leaves it without a meaning (``jsontext.DuplicateKey``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from buffers.healing import jsontext
from buffers.healing.errors import Problem
from buffers.healing.messages import Message, describe, json_problem, storable_copy

from .common import Converted


class Entry(NamedTuple):
    """One value of a transcript: a JSONL line's (``where`` is ``line 7``) or a JSON list's
    item (``where`` is ``[7]``). A tuple: a log has hundreds of thousands."""

    where: str
    value: object
    storable: bool = False
    """Known, from the text it was read from, to pass ``json_problem`` (``jsontext``), so
    that neither it nor anything inside it needs walking again."""

    def problem(self, value: object = None) -> str | None:
        """``json_problem`` of this entry's value, or of ``value`` inside it."""
        if self.storable:
            return None
        return json_problem(self.value if value is None else value)


@dataclass(frozen=True)
class Skipped:
    """Something of a log that was not read, and why: a line that is not JSON, an event of
    a type no reader uses."""

    where: str
    why: str
    column: int = 0
    """Where on its line a line that is not JSON stops being JSON."""

    def __str__(self) -> str:
        return f"{self.problem()}"

    def problem(self) -> Problem:
        return Problem(
            f"{self.where}, column {self.column}" if self.column else self.where, self.why
        )


@dataclass(frozen=True)
class Altered:
    """A log's line read with characters no database stores replaced (where, and why): its
    entry holds the copy, ``original`` the value as written, which a strict reader of one
    document per line refuses."""

    where: str
    why: str
    original: object

    def problem(self) -> Problem:
        return Problem(self.where, self.why)


@dataclass(frozen=True)
class Source:
    """One transcript: a JSON ``document``, or a JSONL file's parsed ``lines`` and the
    ones that are not JSON (``unreadable``)."""

    document: object = None
    lines: tuple[Entry, ...] | None = None
    unreadable: tuple[Skipped, ...] = ()
    altered: tuple[Altered, ...] = ()
    """Lines (or places of the document) read with characters no database stores replaced
    (``storable_copy``)."""
    may_hold_unstorable: bool = True
    """False when the text was seen to spell neither U+0000 nor a lone surrogate, so that
    ``storable_document`` need not walk the document to find one."""
    storable: bool = False
    """True when every value of the ``document`` is known to be storable (``json_problem``
    finds nothing in any: ``jsontext.known_storable_document``), so that its messages
    need not be walked to find out."""

    @property
    def is_lines(self) -> bool:
        return self.lines is not None

    def entries(self) -> list[Entry] | None:
        """The values a log format reads one by one: the JSONL lines, or the items of a
        document that is a list (a log sent as a JSON array); None for any other document."""
        if self.lines is not None:
            return list(self.lines)
        if isinstance(self.document, list):
            return [Entry(f"[{index}]", value) for index, value in enumerate(self.document)]
        return None

    def objects(self) -> list[dict[str, Any]] | None:
        """The values of ``entries`` that are objects (None when there are no entries)."""
        entries = self.entries()
        if entries is None:
            return None
        return [entry.value for entry in entries if isinstance(entry.value, dict)]

    def looks(self) -> str:
        """What this transcript looks like, for a refusal: "an object with keys history,
        info, trajectory", "JSONL of 40 lines whose objects have keys payload, timestamp,
        type"."""
        if self.lines is not None:
            count = len(self.lines) + len(self.unreadable)
            keys = _keys([e.value for e in self.lines if isinstance(e.value, dict)])
            shapes = "" if keys else "; " + _kinds([e.value for e in self.lines])
            return (
                f"JSONL of {count:,} line{'s' if count != 1 else ''}"
                + (f" whose objects have keys {keys}" if keys else shapes)
                + (f" ({len(self.unreadable):,} not JSON)" if self.unreadable else "")
            )
        document = self.document
        if isinstance(document, dict):
            return f"an object with keys {_keys([document]) or 'none'}"
        if isinstance(document, list):
            if not document:
                return "an empty list"
            objects = [v for v in document if isinstance(v, dict)]
            if len(objects) == len(document):
                return f"a list of {len(document):,} objects with keys {_keys(objects) or 'none'}"
            return f"a list of {len(document):,} values ({_kinds(document)})"
        return describe(document)


def _keys(objects: Sequence[Mapping[str, Any]], most: int = 8) -> str:
    seen: dict[str, int] = {}
    for value in objects:
        for key in value:
            seen[str(key)] = seen.get(str(key), 0) + 1
    # The keys most objects share come first: they say what the entries are.
    ordered = sorted(seen, key=lambda key: (-seen[key], key))
    shown = ", ".join(ordered[:most])
    return shown + (f" and {len(ordered) - most} more" if len(ordered) > most else "")


def _kinds(values: Sequence[object]) -> str:
    kinds: dict[str, int] = {}
    for value in values:
        kind = describe(value).removeprefix("a ").removeprefix("an ")
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{count} {kind}" for kind, count in kinds.items())


def parse_lines(text: str, *, long_numbers: bool | None = None) -> Source:
    """A JSONL text as a Source. Lines end at ``\\n`` only: ``str.splitlines()`` would also
    split at U+2028, U+0085 and the like, which JSON strings may hold unescaped.
    ``long_numbers``: ``jsontext.has_long_number`` of the text, when the caller knows it."""
    lines: list[Entry] = []
    unreadable: list[Skipped] = []
    altered: list[Altered] = []
    if long_numbers is None:
        long_numbers = jsontext.has_long_number(text)
    escaped_colons = jsontext.has_escaped_colon(text)
    for number, line in enumerate(_lines(text), start=1):
        if not line or line.isspace():
            continue
        where = f"line {number}"
        try:
            value, storable = jsontext.loads(
                line, long_numbers=long_numbers, escaped_colons=escaped_colons
            )
            if not storable and may_hold_unstorable(line):
                written = value
                value, storable, places = _made_storable(value)
                if places:
                    why = f"{changed(places)} (the rest was read as written)"
                    altered.append(Altered(where, why, original=written))
            lines.append(Entry(where, value, storable))
        except jsontext.DuplicateKey as error:
            unreadable.append(Skipped(where, error.msg, error.colno))
        except json.JSONDecodeError as error:
            unreadable.append(Skipped(where, _not_json(error, line), error.colno))
        except RecursionError:
            unreadable.append(Skipped(where, "nests arrays or objects too deeply to read"))
        except ValueError as error:  # e.g. an integer of more than 4,300 digits
            unreadable.append(Skipped(where, f"cannot be read: {error}"))
    return Source(lines=tuple(lines), unreadable=tuple(unreadable), altered=tuple(altered))


# How U+0000 and lone surrogates come in JSON text: escaped; or a surrogate as it is (a
# text that came inside another JSON value). A raw U+0000 is not JSON text.
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def may_hold_unstorable(text: str) -> bool:
    """Whether JSON ``text`` may spell U+0000 or a lone surrogate. Fast: a search for an
    escape, and for a surrogate as it is only in a text that is not ASCII (UTF-8 cannot
    encode one)."""
    if _UNSTORABLE_ESCAPE.search(text) is not None:
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _made_storable(value: object) -> tuple[object, bool, list[tuple[str, str]]]:
    """``value``, whether it is storable, and the places changed to make it so: as it is
    when it holds nothing no database stores; else with its U+0000 and lone surrogates
    replaced by U+FFFD (``storable_copy``), when that makes it storable; else as it is,
    for its reader to refuse."""
    if json_problem(value) is None:
        return value, True, []
    copy, places = storable_copy(value)
    if not places or json_problem(copy) is not None:
        return value, False, []
    return copy, True, places


def changed(places: Sequence[tuple[str, str]], within: str = "") -> str:
    """Why a line (or an entry ``within`` a document) was changed: "payload.output: held
    U+0000, which no database stores: replaced by U+FFFD"."""
    within_entry = (place.removeprefix(within).lstrip(".") for place, _ in places)
    paths = list(dict.fromkeys(path for path in within_entry if path))
    shown = ", ".join(paths[:3])
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    found = " and ".join(sorted({found for _, found in places}))
    held = f"held {found}, which no database stores: replaced by U+FFFD"
    return f"{shown}{more}: {held}" if shown else held


_ENTRY = re.compile(r"^(\.[^.\[]+)?(\[\d+\])?")


def storable_document(source: Source) -> Source:
    """A runtime's log sent as one document (a Gemini CLI chat, a trajectory), with what no
    database stores replaced, as ``parse_lines`` replaces it in a log's line, named by the
    document's entry each place is in (``messages[3]``); ``source`` itself when there is
    none, or when replacing would not do."""
    document = source.document
    if document is None or not source.may_hold_unstorable:
        return source
    copy, _, places = _made_storable(document)
    if not places:
        return source
    by_entry: dict[str, list[tuple[str, str]]] = {}
    for place, found in places:
        entry = _ENTRY.match(place)
        by_entry.setdefault(entry.group() if entry else "", []).append((place, found))
    altered = tuple(
        Altered(entry.lstrip(".") or "file", changed(held, within=entry), document)
        for entry, held in by_entry.items()
    )
    return replace(source, document=copy, altered=altered)


def _lines(text: str) -> Iterator[str]:
    """``text.split("\\n")``, a line at a time: a long log's lines are not all held at
    once beside its text."""
    start = 0
    while (end := text.find("\n", start)) >= 0:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def parse_values(text: str) -> Source:
    """JSON values written one after another, each over as many lines as it likes (the
    Python SDK's console exporters indent every record): one entry each, named by the
    line it starts on. What is not JSON ends the values (a record cut off mid-write) and
    is kept aside, as ``parse_lines`` keeps a line that is not JSON; so is a value that
    names a key twice, and the values go on after it."""
    decoder = json.JSONDecoder()
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    position, line = 0, 1
    while True:
        start = _SPACE.match(text, position)
        assert start is not None
        line += text.count("\n", position, start.end())
        position = start.end()
        if position >= len(text):
            return Source(lines=tuple(entries), unreadable=tuple(skipped))
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            cut = Skipped(f"line {line}", f"is not JSON: {error.msg} (from here to the end)")
            return Source(lines=tuple(entries), unreadable=(*skipped, cut))
        except (RecursionError, ValueError):
            cut = Skipped(f"line {line}", "cannot be read as JSON (from here to the end)")
            return Source(lines=tuple(entries), unreadable=(*skipped, cut))
        try:
            jsontext.unique_keys(text[position:end], value)
        except jsontext.DuplicateKey as error:
            # Skipped whole, as ``parse_lines`` skips such a line; named by where it is.
            column = error.colno
            if error.lineno == 1:  # on the line the value starts on, after what is before it
                column += position - text.rfind("\n", 0, position) - 1
            skipped.append(Skipped(f"line {line + error.lineno - 1}", error.msg, column))
        else:
            entries.append(Entry(f"line {line}", value))
        line += text.count("\n", position, end)
        position = end


_SPACE = re.compile(r"\s*")


def _not_json(error: json.JSONDecodeError, line: str) -> str:
    """Why a line is not JSON; a line that opens an object or a list and stops before
    closing it is said to be cut off (a crash mid-write leaves one last)."""
    text = line.strip()
    opened = text.startswith(("{", "["))
    closed = text.endswith(("}", "]"))
    if opened and (not closed or error.pos >= len(line.rstrip())):
        return f"is not JSON: {error.msg} (the line is cut off: its writer stopped mid-line?)"
    return f"is not JSON: {error.msg}"


@dataclass(frozen=True)
class Reading:
    """What a reader made of a transcript: its conversations, what it skipped, and how
    many entries (lines, events, messages) it read."""

    conversations: list[Converted]
    skipped: list[Skipped] = field(default_factory=list)
    entries: int = 0
    unit: str = "line"


@dataclass(frozen=True)
class Format:
    """A transcript format: its name (``--format``), how it is named to a person, where
    its files are found, what a transcript must look like to be read as it (``needs``,
    decided by ``fits``), and its reader. ``fits`` is a signature, not a guess: no
    transcript of another format fits it (tests/test_runtime_formats.py holds every
    fixture to that). ``write_native`` writes a conversation back as the runtime's own
    file, for the formats that have one."""

    name: str
    label: str
    where: str
    needs: str
    fits: Callable[[Source], bool]
    read: Callable[[Source], Reading]
    provider: str = ""
    """The provider format the runtime talks to (its API), for the export people want back."""
    article: str = ""
    """How a sentence names one: "read as *a* Claude Code session", "as *the* stored shape"."""
    lines: bool = False
    """Whether a JSONL file is one transcript of this format (a log); otherwise each line
    of a JSONL file is a document of its own."""
    write_native: Callable[[Sequence[Message], Mapping[str, Any]], str] | None = None
    native_name: Callable[[Mapping[str, Any]], str] | None = None
    """The file name the runtime gives the file ``write_native`` writes, from the
    conversation's metadata (a Claude Code session is ``<sessionId>.jsonl``)."""
    native_refusal: Callable[[Mapping[str, Any]], str | None] | None = None
    """Why ``write_native`` would refuse a conversation of this format, from its metadata
    alone (None when it would not), so that a page offers no download that cannot work."""

    @property
    def named(self) -> str:
        """The label with its article, for a sentence: "a Claude Code session"."""
        return f"{self.article} {self.label}" if self.article else self.label


_LINE = re.compile(r"^(?P<prefix>(?:.*?: )?)line (?P<number>\d+)(?=: |$)")
_DIGITS = re.compile(r"\d+")


def collapse(problems: Sequence[Problem], *, least: int = 3) -> list[Problem]:
    """Problems with each run of the same problem on consecutive lines said once:
    ``lines 3-101: the same problem on 99 lines; first: line 3: ...``. Two problems are
    the same when they differ only in their numbers (a line, an index); a run goes on
    while each is on the line of the one before or the next (a problem on lines far
    apart is said at each of them)."""
    collapsed: list[Problem] = []
    index = 0
    while index < len(problems):
        first = problems[index]
        key = _sameness(first)
        prefix, line = _split(first)
        lines = 1
        end = index + 1
        while key is not None and end < len(problems) and _sameness(problems[end]) == key:
            _, next_line = _split(problems[end])
            if next_line not in (line, line + 1):
                break
            lines += next_line - line
            line = next_line
            end += 1
        if key is None or lines < least:
            collapsed.extend(problems[index:end])
        else:
            _, first_line = _split(first)
            times = f"{end - index:,} times " if end - index > lines else ""
            collapsed.append(
                Problem(
                    f"{prefix}lines {first_line}-{line}",
                    f"the same problem {times}on {lines:,} lines; first: {first}",
                )
            )
        index = end
    return collapsed


def _split(problem: Problem) -> tuple[str, int]:
    """``("a.jsonl: ", 7)`` for a problem at ``a.jsonl: line 7: ...``."""
    match = _LINE.match(problem.path)
    return (match["prefix"], int(match["number"])) if match else ("", 0)


def _sameness(problem: Problem) -> str | None:
    prefix, line = _split(problem)
    if not line:
        return None
    rest = problem.path[len(prefix) :]
    return prefix + _DIGITS.sub("#", f"{rest}: {problem.message}")
