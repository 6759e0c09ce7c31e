"""Reading transcript files, in the stored shape, a provider's or an agent runtime's, with
errors that say where and a report of what each file was read as.

A ``.json`` file holds one document. A ``.jsonl`` file is a log that one format reads
whole (a Claude Code session, a Codex rollout: lines that are not JSON or events no
reader uses are skipped and reported, never fatal), or else one document per line, each
read on its own and strictly. A document is a conversation in the stored shape::

    {"title": "...", "source": "...", "key": "...", "scope": "global", "scope_id": "",
     "messages": [{"role": ..., "content": ..., "metadata": {...}}, ...]}

(only ``messages`` is required; messages in the stored or the flat shape), a list of them,
or a provider document that ``healing.formats`` reads: an OpenAI Chat Completions body or
``messages`` list, OpenAI Responses input items, an Anthropic Messages body, Gemini
``contents``, or a list of such bodies, or an agent runtime's file
(``healing.formats.READABLE``). The format is detected file by file (line by line for
documents per line) unless one is forced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath

from . import healing
from .bulk import cyclic_gc_paused
from .healing import InvalidInput, Problem, formats, jsontext
from .healing.errors import parse_each
from .healing.formats.source import may_hold_unstorable, storable_document
from .healing.messages import describe, json_problem
from .models import Scope
from .services import ConversationIn

TOO_DEEP = "nests arrays or objects too deeply to read"
_FIELDS = {"title", "source", "key", "scope", "scope_id", "metadata", "messages"}
_MAX_TEXT = {"title": 300, "source": 300, "key": 200, "scope_id": 100}


def parse_conversation(
    raw: object, path: str, origin: str | None = None, *, storable: bool = False
) -> ConversationIn:
    """One conversation object; ``path`` names it in errors (``conversation`` or
    ``conversations[2]``), ``origin`` in the file (``line 3: conversation``) when it differs.
    ``storable``: every value in it is known to be storable (``Source.storable``)."""
    if not isinstance(raw, dict):
        raise InvalidInput([Problem(path, "must be an object with a messages list")])
    problems: list[Problem] = []
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        problems.append(
            Problem(path, f"has unknown fields {', '.join(unknown)}; expected {sorted(_FIELDS)}")
        )
    if "messages" not in raw:
        problems.append(Problem(f"{path}.messages", "is missing"))
    text: dict[str, str] = {}
    for name, limit in _MAX_TEXT.items():
        value = raw.get(name, "")
        if name == "key" and value is None:
            continue
        if not isinstance(value, str):
            problems.append(Problem(f"{path}.{name}", f"must be a string, not {describe(value)}"))
        elif problem := json_problem(value):
            problems.append(Problem(f"{path}.{name}", problem))
        elif len(value) > limit:
            problems.append(Problem(f"{path}.{name}", f"is longer than {limit} characters"))
        else:
            text[name] = value
    scope = raw.get("scope", Scope.GLOBAL)
    if scope not in Scope.values:
        allowed = ", ".join(Scope.values)
        problems.append(Problem(f"{path}.scope", f"must be one of {allowed}, not {scope!r}"))
    elif scope == Scope.GLOBAL and text.get("scope_id"):
        problems.append(Problem(f"{path}.scope_id", 'must be empty in the "global" scope'))
    elif scope != Scope.GLOBAL and not text.get("scope_id"):
        problems.append(Problem(f"{path}.scope_id", f'is required in the "{scope}" scope'))
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        problems.append(Problem(f"{path}.metadata", f"must be an object, not {describe(metadata)}"))
    elif problem := json_problem(metadata):
        problems.append(Problem(f"{path}.metadata", problem))
    messages: list[healing.Message] = []
    try:
        messages = healing.parse_messages(
            raw.get("messages", []), f"{path}.messages", storable=storable
        )
    except InvalidInput as error:
        problems.extend(error.problems)
    if problems:
        raise InvalidInput(problems)
    return ConversationIn(
        messages=messages,
        title=text.get("title", ""),
        source=text.get("source", ""),
        key=text.get("key") or None,
        scope=str(scope),
        scope_id=text.get("scope_id", ""),
        origin=origin or path,
        source_format="stored",
        metadata=metadata,
    )


FORMATS: tuple[str, ...] = tuple(formats.READABLE)
"""What a transcript may be read as; ``"auto"`` detects it."""

MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024
"""The largest transcript read from the web (the upload page, the API): it is read whole,
so as to be stored in one transaction."""

MAX_FILE_MB = 512
"""The largest file the ``import_transcripts`` command reads unless told otherwise
(``--max-mb``): an agent runtime's log of 100,000 messages is 40 to 120 MB, and reading
takes about seven times a file's size in memory."""


@dataclass(frozen=True)
class TranscriptReading:
    """What one transcript held: its conversations, and what it was read as, for the
    import's report ("read as a Claude Code session (40 lines, 2 skipped)")."""

    name: str
    conversations: list[ConversationIn]
    read_as: list[str]
    """The formats it was read as, by name: one, or several for documents per line."""
    entries: int = 0
    unit: str = "conversation"
    skipped: list[Problem] = field(default_factory=list)
    changed: list[Problem] = field(default_factory=list)
    """Lines read with characters no database stores replaced (``formats.Source.altered``)."""

    def summary(self) -> str:
        """ "read as a Claude Code session (40 lines, 2 skipped, 1 changed)", "read as the
        stored shape"."""
        read_as = " and ".join(dict.fromkeys(formats.named(f) for f in self.read_as))
        changed = f", {len(self.changed):,} changed" if self.changed else ""
        if self.unit == "conversation":
            return f"read as {read_as or 'nothing'}" + (f" ({changed[2:]})" if changed else "")
        counted = f"{self.entries:,} {self.unit}{'' if self.entries == 1 else 's'}"
        skipped = f", {len(self.skipped):,} skipped" if self.skipped else ""
        return f"read as {read_as} ({counted}{skipped}{changed})"


def read_transcript_file(
    path: Path, format: str = "auto", *, max_bytes: int | None = None
) -> TranscriptReading:
    """Every conversation in one file, or InvalidInput naming the file and each place.
    ``max_bytes``: the largest file read (``MAX_TRANSCRIPT_BYTES`` if not given)."""
    # The bytes are handed over, not kept here: ``read_transcript`` lets them go once decoded.
    return read_transcript(
        _file_bytes(path, max_bytes), name=str(path), format=format, max_bytes=max_bytes
    )


def _file_bytes(path: Path, max_bytes: int | None) -> bytes:
    try:
        check_size(str(path), path.stat().st_size, max_bytes)
        return path.read_bytes()
    except OSError as error:
        raise InvalidInput([Problem(str(path), error.strerror or str(error))]) from None


def read_transcript(
    data: bytes, *, name: str, format: str = "auto", max_bytes: int | None = None
) -> TranscriptReading:
    """Every conversation in one transcript's bytes; ``name`` (a path or an uploaded file's
    name) starts each error, and its suffix says whether the text is JSONL."""
    check_format(format)
    check_size(name, len(data), max_bytes)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidInput([Problem(name, f"is not UTF-8 text (byte {error.start})")]) from None
    long_numbers = jsontext.has_long_number(data)
    # Each form of a transcript is let go once the next is made (unless the caller holds
    # it): the bytes, the text, then what it holds; a long one is large in each.
    del data
    try:
        with cyclic_gc_paused():
            source = text_source(text, jsonl=name.endswith(".jsonl"), long_numbers=long_numbers)
            del text
            reading = read_source(source, format, PurePath(name).stem)
    except InvalidInput as error:
        raise InvalidInput(formats.collapse(error.within(f"{name}: ").problems)) from None
    # So that what the import service finds wrong (a key already stored) names the file too.
    return replace(
        reading,
        name=name,
        conversations=[replace(c, origin=f"{name}: {c.origin}") for c in reading.conversations],
        skipped=formats.collapse([p.within(f"{name}: ") for p in reading.skipped]),
        changed=[p.within(f"{name}: ") for p in reading.changed],
    )


def check_format(format: str) -> None:
    if format != "auto" and format not in FORMATS:
        allowed = ", ".join(("auto", *FORMATS))
        raise InvalidInput([Problem("format", f"must be one of {allowed}, not {format!r}")])


def check_size(name: str, size: int, max_bytes: int | None = None, *, advice: str = "") -> None:
    """InvalidInput if a transcript of ``size`` bytes is more than ``max_bytes``
    (``MAX_TRANSCRIPT_BYTES`` if not given); ``advice`` ends the sentence (what to do)."""
    limit = MAX_TRANSCRIPT_BYTES if max_bytes is None else max_bytes
    if size > limit:
        sentence = (
            f"is {size / 1024 / 1024:.1f} MB; the largest transcript this reads is "
            f"{limit / 1024 / 1024:,.0f} MB ({advice or 'split it into several files'})"
        )
        raise InvalidInput([Problem(name, sentence)])


def text_source(text: str, *, jsonl: bool, long_numbers: bool | None = None) -> formats.Source:
    """A transcript's text as the readers see it: JSONL lines, or one JSON document. A
    ``.json`` file that holds several JSON values one after another is read as lines: one
    value per line, or values spread over lines each (what OpenTelemetry's console
    exporters print). ``long_numbers``: whether the text may hold a number of 19 digits
    or more (``jsontext.has_long_number``), when the caller asked already."""
    if jsonl:
        return formats.parse_lines(text, long_numbers=long_numbers)
    try:
        document, storable = jsontext.loads(
            text, document=True, long_numbers=long_numbers is not False
        )
        return formats.Source(
            document=document, may_hold_unstorable=may_hold_unstorable(text), storable=storable
        )
    except json.JSONDecodeError as error:
        if error.msg == "Extra data" or (
            isinstance(error, jsontext.DuplicateKey) and _several_values(text)
        ):
            lines = formats.parse_lines(text, long_numbers=long_numbers)
            return lines if lines.lines else formats.parse_values(text)
        place = f"line {error.lineno}, column {error.colno}"
        if isinstance(error, jsontext.DuplicateKey):
            raise InvalidInput([Problem(place, error.msg)]) from None
        raise InvalidInput([Problem(place, f"is not JSON: {error.msg}")]) from None
    except RecursionError:
        raise InvalidInput([Problem("file", TOO_DEEP)]) from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise InvalidInput([Problem("file", f"cannot be read: {error}")]) from None


def _several_values(text: str) -> bool:
    """Whether ``text``, whose first value names a key twice, holds more values after it
    (read as lines, which skip the one as a log skips a line that is not JSON)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        return error.msg == "Extra data"
    except (RecursionError, ValueError):
        return False
    return False


def read_source(source: formats.Source, format: str, title: str) -> TranscriptReading:
    """Every conversation ``source`` holds, read as ``format`` or as the format it fits."""
    check_format(format)
    forced = format != "auto"
    if source.is_lines and (format == "auto" or not formats.READABLE[format].lines):
        found = formats.detect_source(source) if format == "auto" else None
        if found is None:
            return _documents_per_line(source, format, title)
        format = found.name
    if format == "auto":
        found = formats.detect_source(source)
        assert found is not None
        format = found.name
    if format == "stored":
        conversations = _stored(source.document, "", storable=source.storable)
        return TranscriptReading("", conversations, ["stored"], len(conversations))
    chosen = formats.READABLE[format]
    # A detected format fits (``detect_source`` asked it): a forced one is asked here.
    if forced and format not in _FAMILY and not chosen.fits(source):
        raise InvalidInput(
            [
                Problem(
                    "file",
                    f"was to be read as {chosen.named} (format {format}), but it is not "
                    f"one: found {source.looks()}; {chosen.named} is {chosen.needs}",
                )
            ]
        )
    if format not in _FAMILY:  # a runtime's log, read leniently: see storable_document
        source = storable_document(source)
    reading = chosen.read(source)
    return TranscriptReading(
        "",
        _conversations(reading.conversations, format, title, origin=""),
        [format],
        reading.entries,
        reading.unit,
        [skipped.problem() for skipped in reading.skipped],
        [altered.problem() for altered in source.altered],
    )


_FAMILY = frozenset({"stored", *formats.FORMATS})
"""Formats read as before when forced: their readers say what is wrong, place by place."""


def _documents_per_line(source: formats.Source, format: str, title: str) -> TranscriptReading:
    """A JSONL file whose every line is a document of its own (a conversation in the stored
    shape, an OpenAI Chat body...), read strictly: a line that is not JSON is an error, and
    so is a file without a line (as an empty ``.json`` file is)."""
    if not source.lines and not source.unreadable:
        raise InvalidInput([Problem("file", "holds no lines")])
    problems = [skipped.problem() for skipped in source.unreadable]
    conversations: list[ConversationIn] = []
    read_as: list[str] = []
    skipped: list[Problem] = []
    changed: list[Problem] = []
    # Each line as written, as a .json file would hold it: a runtime's document has what no
    # database stores replaced by its own reading (storable_document), any other is refused.
    written = {altered.where: altered.original for altered in source.altered}
    for entry in source.lines or ():
        number = entry.where.removeprefix("line ")
        document = written.get(entry.where, entry.value)
        try:
            reading = read_source(
                formats.Source(document=document), format, f"{title} line {number}"
            )
        except InvalidInput as error:
            problems.extend(error.within(f"{entry.where}: ").problems)
            continue
        read_as.extend(reading.read_as)
        conversations.extend(
            replace(c, origin=f"{entry.where}: {c.origin}") for c in reading.conversations
        )
        skipped.extend(p.within(f"{entry.where}: ") for p in reading.skipped)
        changed.extend(p.within(f"{entry.where}: ") for p in reading.changed)
    problems.sort(key=lambda problem: _line_number(problem.path))
    if problems:
        raise InvalidInput(problems)
    return TranscriptReading(
        "", conversations, read_as, len(conversations), skipped=skipped, changed=changed
    )


def _line_number(path: str) -> int:
    number = path.removeprefix("line ").split(",")[0].split(":")[0]
    return int(number) if number.isdigit() else 0


def read_document(
    document: object, format: str = "auto", title: str = "", origin: str = ""
) -> list[ConversationIn]:
    """The conversations one JSON document holds, read as ``format`` or as detected;
    ``title`` names those whose format has no title, ``origin`` starts their places."""
    reading = read_source(formats.Source(document=document), format, title)
    return [replace(c, origin=f"{origin}{c.origin}") for c in reading.conversations]


def _conversations(
    converted: list[formats.Converted], read_as: str, title: str, origin: str
) -> list[ConversationIn]:
    several = len(converted) > 1
    conversations: list[ConversationIn] = []
    problems: list[Problem] = []
    for index, conversation in enumerate(converted):
        path = f"conversations[{index}]" if several else "conversation"
        try:
            messages = healing.parse_messages(
                conversation.messages, f"{path}.messages", json_checked=True
            )
        except InvalidInput as error:
            problems.extend(error.problems)
            continue
        own_title = conversation.title or (f"{title} #{index + 1}" if several else title)
        conversations.append(
            ConversationIn(
                messages=messages,
                title=own_title[:300],
                source_format=read_as,
                metadata=conversation.metadata,
                origin=f"{origin}{path}",
            )
        )
    if problems:
        raise InvalidInput(problems)
    return conversations


def _stored(document: object, origin: str, *, storable: bool = False) -> list[ConversationIn]:
    if isinstance(document, dict):
        return [
            parse_conversation(
                document, "conversation", origin=f"{origin}conversation", storable=storable
            )
        ]
    if not isinstance(document, list):
        raise InvalidInput(
            [
                Problem(
                    "file",
                    f"must hold a conversation object or a list of them, not {describe(document)}",
                )
            ]
        )
    return parse_each(
        document,
        lambda raw, path: parse_conversation(
            raw, path, origin=f"{origin}{path}", storable=storable
        ),
        "conversations",
    )
