"""Converters between the providers' conversation formats and the stored shape.

``read(document, format)`` turns one provider document (a whole ``.json`` file's value,
or one JSONL line's value) into stored-shape rows plus the document's
conversation-level fields; ``write(messages, format, metadata)`` is its inverse:
``write(parse_messages(c.messages), f, c.metadata) == document`` for what ``read`` gave,
key order aside. Any conversation, whatever format it came from, writes to every format.

What every format shares:

- A declared call is stored in OpenAI Chat's spelling, ``{"id", "type": "function",
  "function": {"name", "arguments": "<JSON text>"}}`` under ``metadata.tool_calls``; a
  result names it in ``metadata.tool_call_id``; ``metadata.is_error`` marks a failed
  tool (Anthropic ``is_error``, Gemini ``response.error``; OpenAI has no place for it).
- Nothing is lost: what has no stored-shape place is kept under one metadata key per
  format (``anthropic``, ``gemini``, ``responses``, ``responses_item``), on the row or
  on the call, and only that format writes it back. OpenAI Chat keys (``name``,
  ``refusal``...) sit directly under ``metadata``, as the stored importer keeps them.
- Writing OpenAI Chat sends every metadata key but the app's (``healed``,
  ``is_error``) and the other formats' as a message key, as ``Message.to_flat`` does:
  a key a client stored (``{"run": 7}``) goes out too. A placeholder (``healed``) is written as an
  ordinary tool result with its text. Text parts change spelling between formats;
  other parts (images, files) are copied as they are.
- A request body is ``{**metadata, <messages>}``; a bare list reads like a body with
  no other fields, and writes as a body. A list of bodies is several conversations.
- A result whose call no earlier turn declares is kept, as the stored importer keeps
  it; the analysis reports it. Only the document's shape is checked here.
- Conversation-level fields stay fields: OpenAI Responses ``instructions`` is not made
  a system row (Anthropic ``system`` and Gemini ``systemInstruction`` are, since both
  hold content blocks).
- OpenAI Chat: ``developer`` is a system row with ``metadata.openai_role``; the legacy
  ``function`` role is refused (it names no call id to pair on). A message without
  ``content`` reads as null content and is written with ``content: null``.
- Anthropic: tool results in a user message that come after text are written back
  first, as Anthropic requires.

``detect`` tells the formats apart by their keys. A ``title``, ``source``, ``key``,
``scope`` or ``scope_id`` field is the stored shape whatever else the document holds
(a ``messages`` list or not). Otherwise ``contents`` is Gemini, ``input`` OpenAI
Responses; a ``messages`` list is the stored shape when it carries the stored shape's
other marks (no field but ``metadata`` beside it, a message ``metadata`` or ``healed``
key, or a call spelled ``tool_call_id``); ``metadata`` beside ``model`` is OpenAI's own
request field. Anthropic
when it has Anthropic's marks (a top-level ``system``, ``tool_use``/``tool_result``
blocks, a ``claude`` model...), and OpenAI Chat when it has OpenAI's (a field the stored
shape lacks such as ``model``, a message ``tool_calls`` in OpenAI's spelling or
``tool_call_id``, the ``developer`` or ``function`` role). The stored shape's marks
win, so the stored reader reports what else is wrong. A plain ``{"messages": [{"role",
"content"}]}`` reads the same either way and is called stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.messages import Message, describe

from . import anthropic, gemini, openai_chat, openai_responses
from .common import Converted

__all__ = ["FORMATS", "Converted", "detect", "read", "write"]

FORMATS: tuple[str, ...] = ("openai-chat", "openai-responses", "anthropic", "gemini")

_READERS: dict[str, Callable[[object], Converted]] = {
    "openai-chat": openai_chat.read,
    "openai-responses": openai_responses.read,
    "anthropic": anthropic.read,
    "gemini": gemini.read,
}
_WRITERS: dict[str, Callable[[Sequence[Message], Mapping[str, Any]], dict[str, Any]]] = {
    "openai-chat": openai_chat.write,
    "openai-responses": openai_responses.write,
    "anthropic": anthropic.write,
    "gemini": gemini.write,
}
_ENTRIES = {
    "openai-chat": "messages",
    "openai-responses": "input",
    "anthropic": "messages",
    "gemini": "contents",
}


def _known(format: str) -> None:
    if format not in FORMATS:
        raise InvalidInput(
            [Problem("format", f"must be one of {', '.join(FORMATS)}, not {format!r}")]
        )


def read(document: object, format: str) -> list[Converted]:
    """The conversations one document holds in ``format``: one for a body or a bare list
    of messages, one each for a list of bodies. Raises InvalidInput with every problem."""
    _known(format)
    key = _ENTRIES[format]
    if not _is_list_of_bodies(document, key):
        return [_READERS[format](document)]
    assert isinstance(document, list)
    conversations: list[Converted] = []
    problems: list[Problem] = []
    for index, body in enumerate(document):
        try:
            conversations.append(_READERS[format](body))
        except InvalidInput as error:
            problems.extend(error.within(f"conversations[{index}].").problems)
    if problems:
        raise InvalidInput(problems)
    return conversations


def _is_list_of_bodies(document: object, key: str) -> bool:
    return (
        isinstance(document, list)
        and bool(document)
        and all(isinstance(body, dict) and key in body for body in document)
    )


def write(
    messages: Sequence[Message], format: str, metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The conversation as one ``format`` request body, around ``metadata``'s fields."""
    _known(format)
    return _WRITERS[format](messages, metadata or {})


# Detection.

_STORED_MARKS = frozenset({"title", "source", "key", "scope", "scope_id"})
"""Fields only the stored shape has: a document with one is stored, with messages or not,
so that the stored reader says what else is wrong."""
_STORED_FIELDS = _STORED_MARKS | {"metadata", "messages"}
_ANTHROPIC_FIELDS = frozenset(
    {"system", "anthropic_version", "stop_sequences", "top_k", "thinking", "mcp_servers"}
)
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use"}
)
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
_CANNOT_TELL = (
    "is not a conversation in a format this reads: expected an object with messages "
    "(OpenAI Chat, Anthropic or stored), input (OpenAI Responses) or contents (Gemini), "
    "or a list of messages, input items or contents"
)


def detect(document: object) -> str:
    """Which format one document is in: one of FORMATS, or ``"stored"``. Raises
    InvalidInput when it cannot tell, saying what it saw."""
    if isinstance(document, dict):
        return _detect_body(document)
    if not isinstance(document, list):
        raise _cannot_tell(f"{_CANNOT_TELL}; found {describe(document)}")
    if not document:
        raise _cannot_tell("is an empty list, which could be any format")
    if all(isinstance(body, dict) and body.keys() & _STORED_MARKS for body in document):
        return "stored"
    if all(
        isinstance(body, dict) and set(body) & {"messages", "input", "contents"}
        for body in document
    ):
        found = [_detect_body(body) for body in document]
        if len(set(found)) > 1:
            listed = ", ".join(f"conversations[{i}] is {f}" for i, f in enumerate(found))
            raise _cannot_tell(f"holds conversations in more than one format ({listed})")
        return found[0]
    return _detect_entries([entry for entry in document if isinstance(entry, dict)])


def _cannot_tell(sentence: str) -> InvalidInput:
    return InvalidInput([Problem("file", sentence)])


def _detect_body(body: dict[str, Any]) -> str:
    if body.keys() & _STORED_MARKS:
        return "stored"
    if "contents" in body:
        return "gemini"
    if "input" in body and "messages" not in body:
        return "openai-responses"
    if "messages" not in body:
        keys = ", ".join(sorted(str(k) for k in body)[:8]) or "none"
        raise _cannot_tell(f"{_CANNOT_TELL}; found an object with keys {keys}")
    raw = body["messages"]
    messages = [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
    fields = set(body)
    if (fields <= _STORED_FIELDS and fields != {"messages"}) or _has_stored_marks(messages):
        return "stored"
    model = body.get("model")
    if (
        fields & _ANTHROPIC_FIELDS
        or (isinstance(model, str) and model.startswith("claude"))
        or _has_anthropic_marks(messages)
    ):
        return "anthropic"
    if fields - _STORED_FIELDS or _has_openai_marks(messages):
        return "openai-chat"
    return "stored"


def _detect_entries(entries: list[dict[str, Any]]) -> str:
    if any("parts" in entry for entry in entries):
        return "gemini"
    if any("type" in entry or _part_types(entry) & _RESPONSES_PARTS for entry in entries):
        return "openai-responses"
    if not any("role" in entry for entry in entries):
        keys = ", ".join(sorted({str(k) for e in entries for k in e})[:8]) or "none"
        raise _cannot_tell(f"{_CANNOT_TELL}; found a list of entries with keys {keys}")
    if _has_stored_marks(entries):
        raise _cannot_tell(
            "is a list of messages in the stored shape; a stored file holds conversations, "
            'each {"messages": [...]}'
        )
    return "anthropic" if _has_anthropic_marks(entries) else "openai-chat"


def _part_types(message: dict[str, Any]) -> set[str]:
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    return {p["type"] for p in parts if isinstance(p, dict) and isinstance(p.get("type"), str)}


def _has_stored_marks(messages: list[dict[str, Any]]) -> bool:
    def app_spelled(message: dict[str, Any]) -> bool:
        calls = message.get("tool_calls")
        return isinstance(calls, list) and any(
            isinstance(call, dict) and "tool_call_id" in call for call in calls
        )

    return any("metadata" in m or "healed" in m or app_spelled(m) for m in messages)


def _has_anthropic_marks(messages: list[dict[str, Any]]) -> bool:
    return any(_part_types(m) & _ANTHROPIC_BLOCKS for m in messages)


def _has_openai_marks(messages: list[dict[str, Any]]) -> bool:
    return any(
        "tool_calls" in m or "tool_call_id" in m or m.get("role") in ("developer", "function")
        for m in messages
    )
