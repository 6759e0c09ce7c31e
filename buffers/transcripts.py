"""Reading transcript files in the stored shape, with errors that say where.

A ``.json`` file holds one conversation (``{"title", "messages", ...}``) or a list
of them; a ``.jsonl`` file holds one conversation per line. Each conversation::

    {"title": "...", "source": "...", "key": "...", "scope": "global", "scope_id": "",
     "messages": [{"role": ..., "content": ..., "metadata": {...}}, ...]}

Only ``messages`` is required. Messages may be in the stored or the flat shape.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import healing
from .healing import InvalidInput, Problem
from .healing.errors import parse_each
from .healing.messages import describe, json_problem
from .models import Scope
from .services import ConversationIn

TOO_DEEP = "nests arrays or objects too deeply to read"
_FIELDS = {"title", "source", "key", "scope", "scope_id", "messages"}
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
    )


def read_transcript_file(path: Path) -> list[ConversationIn]:
    """Every conversation in one file, or InvalidInput naming the file and each place."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidInput(
            [Problem(str(path), f"is not UTF-8 text (byte {error.start})")]
        ) from None
    except OSError as error:
        raise InvalidInput([Problem(str(path), error.strerror or str(error))]) from None
    try:
        if path.suffix == ".jsonl":
            return _read_jsonl(text)
        return _read_json(text)
    except InvalidInput as error:
        raise error.within(f"{path}: ") from None


def _read_json(text: str) -> list[ConversationIn]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(
            [Problem(f"line {error.lineno}, column {error.colno}", f"is not JSON: {error.msg}")]
        ) from None
    except RecursionError:
        raise InvalidInput([Problem("file", TOO_DEEP)]) from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise InvalidInput([Problem("file", f"cannot be read: {error}")]) from None
    if isinstance(data, dict):
        return [parse_conversation(data, "conversation")]
    if not isinstance(data, list):
        raise InvalidInput(
            [
                Problem(
                    "file",
                    f"must hold a conversation object or a list of them, not {describe(data)}",
                )
            ]
        )
    return parse_each(data, parse_conversation, "conversations")


def _read_jsonl(text: str) -> list[ConversationIn]:
    problems: list[Problem] = []
    conversations: list[ConversationIn] = []
    # Lines end at "\n" only: str.splitlines() would also split at U+2028, U+0085 and the
    # like, which JSON strings may hold unescaped.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(
                Problem(f"line {number}, column {error.colno}", f"is not JSON: {error.msg}")
            )
            continue
        except RecursionError:
            problems.append(Problem(f"line {number}", TOO_DEEP))
            continue
        except ValueError as error:  # e.g. an integer of more than 4,300 digits
            problems.append(Problem(f"line {number}", f"cannot be read: {error}"))
            continue
        try:
            conversations.append(
                parse_conversation(data, "conversation", origin=f"line {number}: conversation")
            )
        except InvalidInput as error:
            problems.extend(error.within(f"line {number}: ").problems)
    if problems:
        raise InvalidInput(problems)
    return conversations
