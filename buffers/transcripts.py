"""Reading transcript files, in the stored shape or a provider's, with errors that say where.

A ``.json`` file holds one document; a ``.jsonl`` file one document per line. A document
is a conversation in the stored shape::

    {"title": "...", "source": "...", "key": "...", "scope": "global", "scope_id": "",
     "messages": [{"role": ..., "content": ..., "metadata": {...}}, ...]}

(only ``messages`` is required; messages in the stored or the flat shape), a list of them,
or a provider document that ``healing.formats`` reads: an OpenAI Chat Completions body or
``messages`` list, OpenAI Responses input items, an Anthropic Messages body, Gemini
``contents``, or a list of such bodies. The format is detected document by document
unless one is forced.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path, PurePath

from . import healing
from .bulk import cyclic_gc_paused
from .healing import InvalidInput, Problem, formats
from .healing.errors import parse_each
from .healing.messages import describe, json_problem
from .models import Scope
from .services import ConversationIn

TOO_DEEP = "nests arrays or objects too deeply to read"
_FIELDS = {"title", "source", "key", "scope", "scope_id", "metadata", "messages"}
_MAX_TEXT = {"title": 300, "source": 300, "key": 200, "scope_id": 100}


def parse_conversation(raw: object, path: str, origin: str | None = None) -> ConversationIn:
    """One conversation object; ``path`` names it in errors (``conversation`` or
    ``conversations[2]``), ``origin`` in the file (``line 3: conversation``) when it differs."""
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
    for field, limit in _MAX_TEXT.items():
        value = raw.get(field, "")
        if field == "key" and value is None:
            continue
        if not isinstance(value, str):
            problems.append(Problem(f"{path}.{field}", f"must be a string, not {describe(value)}"))
        elif problem := json_problem(value):
            problems.append(Problem(f"{path}.{field}", problem))
        elif len(value) > limit:
            problems.append(Problem(f"{path}.{field}", f"is longer than {limit} characters"))
        else:
            text[field] = value
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
        messages = healing.parse_messages(raw.get("messages", []), f"{path}.messages")
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


FORMATS: tuple[str, ...] = ("stored", *formats.FORMATS)
"""What a transcript may be read as; ``"auto"`` detects it document by document."""

MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024
"""The largest transcript read: it is read whole, so as to be stored in one transaction."""


def read_transcript_file(path: Path, format: str = "auto") -> list[ConversationIn]:
    """Every conversation in one file, or InvalidInput naming the file and each place."""
    try:
        check_size(str(path), path.stat().st_size)
        data = path.read_bytes()
    except OSError as error:
        raise InvalidInput([Problem(str(path), error.strerror or str(error))]) from None
    return read_transcript(data, name=str(path), format=format)


def read_transcript(data: bytes, *, name: str, format: str = "auto") -> list[ConversationIn]:
    """Every conversation in one transcript's bytes; ``name`` (a path or an uploaded file's
    name) starts each error, and its suffix says whether the text is JSONL."""
    if format != "auto" and format not in FORMATS:
        allowed = ", ".join(("auto", *FORMATS))
        raise InvalidInput([Problem("format", f"must be one of {allowed}, not {format!r}")])
    check_size(name, len(data))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidInput([Problem(name, f"is not UTF-8 text (byte {error.start})")]) from None
    title = PurePath(name).stem
    try:
        read = _read_jsonl if name.endswith(".jsonl") else _read_json
        with cyclic_gc_paused():
            conversations = read(text, format, title)
    except InvalidInput as error:
        raise error.within(f"{name}: ") from None
    # So that what the import service finds wrong (a key already stored) names the file too.
    return [replace(c, origin=f"{name}: {c.origin}") for c in conversations]


def check_size(name: str, size: int) -> None:
    """InvalidInput if a transcript of ``size`` bytes is too big to read."""
    if size > MAX_TRANSCRIPT_BYTES:
        sentence = (
            f"is {size / 1024 / 1024:.1f} MB; the largest transcript this reads is "
            f"{MAX_TRANSCRIPT_BYTES // 1024 // 1024} MB (split it into several files)"
        )
        raise InvalidInput([Problem(name, sentence)])


def _load(text: str, where: str) -> object:
    """The JSON value of ``text``, or InvalidInput saying where it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        line = where or f"line {error.lineno}"
        place = f"{line}, column {error.colno}"
        raise InvalidInput([Problem(place, f"is not JSON: {error.msg}")]) from None
    except RecursionError:
        raise InvalidInput([Problem(where or "file", TOO_DEEP)]) from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise InvalidInput([Problem(where or "file", f"cannot be read: {error}")]) from None


def _read_json(text: str, format: str, title: str) -> list[ConversationIn]:
    return read_document(_load(text, ""), format, title, origin="")


def _read_jsonl(text: str, format: str, title: str) -> list[ConversationIn]:
    problems: list[Problem] = []
    conversations: list[ConversationIn] = []
    # Lines end at "\n" only: str.splitlines() would also split at U+2028, U+0085 and the
    # like, which JSON strings may hold unescaped.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            document = _load(line, f"line {number}")
        except InvalidInput as error:
            problems.extend(error.problems)
            continue
        try:
            conversations.extend(
                read_document(document, format, f"{title} line {number}", f"line {number}: ")
            )
        except InvalidInput as error:
            problems.extend(error.within(f"line {number}: ").problems)
    if problems:
        raise InvalidInput(problems)
    return conversations


def read_document(
    document: object, format: str = "auto", title: str = "", origin: str = ""
) -> list[ConversationIn]:
    """The conversations one JSON document holds, read as ``format`` or as detected;
    ``title`` names those whose format has no title, ``origin`` starts their places."""
    read_as = formats.detect(document) if format == "auto" else format
    if read_as == "stored":
        return _stored(document, origin)
    converted = formats.read(document, read_as)
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
        conversations.append(
            ConversationIn(
                messages=messages,
                title=(f"{title} #{index + 1}" if several else title)[:300],
                source_format=read_as,
                metadata=conversation.metadata,
                origin=f"{origin}{path}",
            )
        )
    if problems:
        raise InvalidInput(problems)
    return conversations


def _stored(document: object, origin: str) -> list[ConversationIn]:
    if isinstance(document, dict):
        return [parse_conversation(document, "conversation", origin=f"{origin}conversation")]
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
        lambda raw, path: parse_conversation(raw, path, origin=f"{origin}{path}"),
        "conversations",
    )
