"""OpenAI Chat Completions: a ``messages`` array, or a request body around one.

The stored shape is this format with every key but role and content moved under
``metadata``, so a message reads exactly as the stored importer reads it, and
``tool_calls`` are already canonical.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from buffers.healing.messages import Message, describe

from . import media
from .common import (
    NAMESPACES,
    Call,
    Converted,
    Problems,
    Row,
    as_string,
    body_and_entries,
    declared,
    has_choice,
    has_id,
    has_text,
    is_foreign_item,
    is_object,
    openai_names,
    row,
    storable,
    text_of,
    without,
    written_id,
)

ROLES = ("system", "developer", "user", "assistant", "tool")

NOT_SENT = frozenset({"healed", "is_error", "openai_role", *NAMESPACES})
"""Metadata keys that are the app's or another format's, never an OpenAI message key."""


def read(document: object) -> Converted:
    problems = Problems()
    fields, messages = body_and_entries(document, "messages", (), problems, "a list of messages")
    rows = [read_message(raw, f"messages[{index}]", problems) for index, raw in enumerate(messages)]
    problems.raise_if_any()
    return Converted([r for r in rows if r is not None], fields)


def read_message(raw: object, where: str, problems: Problems) -> Row | None:
    if not is_object(raw, where, problems) or not storable(raw, where, problems):
        return None
    assert isinstance(raw, dict)
    before = len(problems)
    if raw.get("role") == "function":
        problems.add(
            f"{where}.role",
            "is 'function', the legacy function-calling role, which names no call to pair "
            "with; send a 'tool' message with a tool_call_id instead",
        )
    else:
        has_choice(raw, "role", where, ROLES, problems)
    content = raw.get("content")
    if content is not None and not isinstance(content, str | list):
        problems.add(
            f"{where}.content",
            f"must be a string, a list of content parts or null, not {describe(content)}",
        )
    if raw.get("role") == "tool":
        has_id(raw, "tool_call_id", where, problems)
    if raw.get("tool_calls") is not None:
        check_calls(raw["tool_calls"], f"{where}.tool_calls", problems)
    if len(problems) > before:
        return None
    metadata = {key: value for key, value in raw.items() if key not in ("role", "content")}
    role = raw["role"]
    if role == "developer":
        role, metadata["openai_role"] = "system", "developer"
    return row(role, content, metadata)


def check_calls(calls: object, path: str, problems: Problems) -> None:
    if not isinstance(calls, list):
        problems.add(path, f"must be a list of calls, not {describe(calls)}")
        return
    for index, call in enumerate(calls):
        where = f"{path}[{index}]"
        if not is_object(call, where, problems):
            continue
        has_id(call, "id", where, problems)
        if "function" not in call:
            problems.add(f"{where}.function", "is missing")
        elif is_object(call["function"], f"{where}.function", problems):
            has_text(call["function"], "name", f"{where}.function", problems)
            has_text(
                call["function"],
                "arguments",
                f"{where}.function",
                problems,
                wanted="a string (the arguments as JSON text)",
            )


def write(messages: Sequence[Message], fields: Mapping[str, Any]) -> dict[str, Any]:
    written = [write_message(m) for m in messages if not (is_foreign_item(m) and not declared(m))]
    _write_names(written)
    return {**fields, "messages": written}


def _write_names(messages: list[dict[str, Any]]) -> None:
    """Function names as OpenAI takes them (``common.openai_names``): a call's, and a tool
    message's ``name``, which names its function."""
    functions = [call["function"] for m in messages for call in m.get("tool_calls", ())]
    tools = [m for m in messages if m["role"] == "tool" and isinstance(m.get("name"), str)]
    holders = [*functions, *tools]
    fitted = openai_names(holder["name"] for holder in holders)
    for holder in holders:
        holder["name"] = fitted.get(holder["name"], holder["name"])


def write_message(message: Message) -> dict[str, Any]:
    developer = message.role == "system" and message.metadata.get("openai_role") == "developer"
    written: dict[str, Any] = {
        "role": "developer" if developer else message.role,
        "content": content(message.content, message.role),
    }
    written.update((k, v) for k, v in message.metadata.items() if k not in NOT_SENT)
    if message.role == "tool" and "tool_call_id" in written:
        written["tool_call_id"] = written_id(written["tool_call_id"])
    calls = declared(message)
    if calls:
        written["tool_calls"] = [tool_call(call) for call in calls]
    else:  # kept as read, ``[]`` is refused: "empty array. Expected ... minimum length 1"
        written.pop("tool_calls", None)
        if written["content"] is None:  # "Invalid value for 'content': expected a string,
            written["content"] = ""  # got null": only a turn that makes calls may have none
    return written


def content(value: object, role: str) -> object:
    """Content in OpenAI's spelling: text parts of other spellings become text parts, other
    providers' media OpenAI's where it takes them in a ``role`` message."""
    if not isinstance(value, list):
        return as_string(value)
    return [_part(part, role) for part in value]


def _part(part: object, role: str) -> object:
    if not isinstance(part, dict) or part.get("type") == "text":
        return part
    if text_of(part) is None:
        return media.written(part, "openai-chat", role)
    return _text_part(part)


def _text_part(part: object) -> dict[str, Any]:
    return {"type": "text", "text": text_of(part)}


def tool_call(call: Call) -> dict[str, Any]:
    """A declared call in OpenAI's spelling, built from its parts (``common.Call``): type
    ``function``, the function's name and its arguments as JSON text, whatever the stored
    entry lacks (OpenAI answers "Missing required parameter: '...tool_calls[0].type'" to a
    call sent as stored without it). A call stored in OpenAI's spelling keeps its other
    keys, and its function's, less the other formats'."""
    entry = call.entry
    function = entry.get("function")
    if not isinstance(function, dict):
        function, kept = {}, {}
    else:
        kept = {key: value for key, value in entry.items() if key not in _CALL_KEYS}
    return {
        **kept,
        "id": written_id(call.id),
        "type": "function",
        "function": {
            **without(function, "name", "arguments"),
            "name": call.name,
            "arguments": call.arguments,
        },
    }


_CALL_KEYS = frozenset(
    {"id", "type", "function", "tool_call_id", "name", "arguments", "args", "input", *NAMESPACES}
)
"""A stored call's keys that are not its own to send: what its parts are read from
(``common.Call``), and the other formats'."""
