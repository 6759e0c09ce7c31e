"""OpenAI Responses: an ``input`` list of items, a plain ``input`` string, or a request
body around either.

A ``message`` item is a row (its ``type``, ``id`` and ``status`` under
``metadata.responses``). A run of ``function_call`` items joins the assistant row just
before it (a message or another item), else makes an assistant row of its own with
null content; each call is canonical with ``id`` = the item's ``call_id`` (what a
``function_call_output`` answers) and the item's own ``id`` (``fc_...``) under the
call's ``responses``. A ``function_call_output`` is a tool row. Any other item
(``reasoning``, ``web_search_call``...) is an assistant row with null content that keeps
the item verbatim under ``metadata.responses_item``: written back in place here, left
out by the other formats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from buffers.healing.messages import Message, describe

from . import media
from .common import (
    Call,
    Converted,
    Problems,
    Row,
    as_string,
    body_and_entries,
    declared,
    fields_of,
    has_choice,
    has_id,
    has_text,
    is_object,
    namespace,
    openai_names,
    row,
    storable,
    text_of,
    without,
    written_id,
)

ROLES = ("user", "assistant", "system", "developer")
INPUT_IS_TEXT = "input_is_text"
"""Marks the one user row read from a plain ``input`` string, to write it back as one."""


def read(document: object) -> Converted:
    problems = Problems()
    if isinstance(document, dict) and isinstance(document.get("input"), str):
        fields = fields_of(document, ("input",), problems)
        storable(document["input"], "input", problems)
        problems.raise_if_any()
        text_row = row("user", document["input"], {"responses": {INPUT_IS_TEXT: True}})
        return Converted([text_row], fields)
    fields, items = body_and_entries(
        document, "input", (), problems, "a string or a list of input items"
    )
    rows: list[Row] = []
    for index, item in enumerate(items):
        read_item(item, f"input[{index}]", rows, problems)
    problems.raise_if_any()
    return Converted(rows, fields)


def read_item(item: object, where: str, rows: list[Row], problems: Problems) -> None:
    if not is_object(item, where, problems) or not storable(item, where, problems):
        return
    assert isinstance(item, dict)
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        problems.add(f"{where}.type", f"must be a string, not {describe(kind)}")
    elif kind == "message":
        read_message(item, where, rows, problems)
    elif kind == "function_call":
        read_call(item, where, rows, problems)
    elif kind == "function_call_output":
        read_output(item, where, rows, problems)
    else:
        rows.append(row("assistant", None, {"responses_item": item}))


def read_message(item: dict[str, Any], where: str, rows: list[Row], problems: Problems) -> None:
    role_ok = has_choice(item, "role", where, ROLES, problems)
    content = item.get("content")
    if "content" not in item:
        problems.add(f"{where}.content", "is missing")
    elif not isinstance(content, str | list):
        problems.add(
            f"{where}.content",
            f"must be a string or a list of content parts, not {describe(content)}",
        )
    elif role_ok:
        extras = without(item, "role", "content")
        metadata: dict[str, Any] = {"responses": extras} if extras else {}
        role = item["role"]
        if role == "developer":
            role, metadata["openai_role"] = "system", "developer"
        rows.append(row(role, content, metadata))


def read_call(item: dict[str, Any], where: str, rows: list[Row], problems: Problems) -> None:
    checks = [
        has_id(item, "call_id", where, problems),
        has_text(item, "name", where, problems),
        has_text(
            item, "arguments", where, problems, wanted="a string (the arguments as JSON text)"
        ),
    ]
    if not all(checks):
        return
    call = {
        "id": item["call_id"],
        "type": "function",
        "function": {"name": item["name"], "arguments": item["arguments"]},
        "responses": without(item, "call_id", "name", "arguments"),
    }
    if rows and rows[-1]["role"] == "assistant":
        rows[-1]["metadata"].setdefault("tool_calls", []).append(call)
    else:
        rows.append(row("assistant", None, {"tool_calls": [call]}))


def read_output(item: dict[str, Any], where: str, rows: list[Row], problems: Problems) -> None:
    id_ok = has_id(item, "call_id", where, problems)
    output = item.get("output")
    if "output" not in item:
        problems.add(f"{where}.output", "is missing")
    elif not isinstance(output, str | list):
        problems.add(
            f"{where}.output",
            f"must be a string or a list of content parts, not {describe(output)}",
        )
    elif id_ok:
        metadata = {
            "tool_call_id": item["call_id"],
            "responses": without(item, "call_id", "output"),
        }
        rows.append(row("tool", output, metadata))


def write(messages: Sequence[Message], fields: Mapping[str, Any]) -> dict[str, Any]:
    if len(messages) == 1 and _was_input_text(messages[0]):
        return {**fields, "input": messages[0].content}
    items = [item for m in messages for item in write_items(m)]
    calls = [item for item in items if item.get("type") == "function_call"]
    fitted = openai_names(call["name"] for call in calls if isinstance(call.get("name"), str))
    return {**fields, "input": [_fitted_name(item, fitted) for item in items]}


def _fitted_name(item: dict[str, Any], fitted: Mapping[str, str]) -> dict[str, Any]:
    """A function call with its name as OpenAI takes it (``common.openai_names``, as the
    OpenAI Chat export writes it); a copy, since a kept item is the stored one."""
    if item.get("type") != "function_call" or item.get("name") not in fitted:
        return item
    return {**item, "name": fitted[item["name"]]}


def _was_input_text(message: Message) -> bool:
    return (
        message.role == "user"
        and isinstance(message.content, str)
        and namespace(message, "responses").get(INPUT_IS_TEXT) is True
    )


def write_items(message: Message) -> list[dict[str, Any]]:
    extras = without(namespace(message, "responses"), INPUT_IS_TEXT)
    if message.role == "tool":
        output = content(message.content, "tool")
        return [
            {
                "type": "function_call_output",
                **extras,
                "call_id": written_id(message.metadata.get("tool_call_id")),
                "output": "" if output is None else output,
            }
        ]
    items: list[dict[str, Any]] = []
    kept = message.metadata.get("responses_item")
    calls = declared(message)
    if isinstance(kept, dict):
        items.append(kept)
    elif message.content is not None or extras or not calls:
        developer = message.metadata.get("openai_role") == "developer"
        role = "developer" if message.role == "system" and developer else message.role
        body = content(message.content, role)
        items.append({**extras, "role": role, "content": "" if body is None else body})
    items.extend(function_call(call) for call in calls)
    return items


def content(value: object, role: str) -> object:
    if not isinstance(value, list):
        return as_string(value)
    return [_part(part, role) for part in value]


def _part(part: object, role: str) -> object:
    text = text_of(part)
    if text is None:  # a developer message is a system row
        return media.written(part, "openai-responses", "system" if role == "developer" else role)
    if isinstance(part, dict) and part.get("type") in ("input_text", "output_text"):
        return part
    if role == "assistant":
        return {"type": "output_text", "text": text, "annotations": []}
    return {"type": "input_text", "text": text}


def function_call(call: Call) -> dict[str, Any]:
    return {
        "type": "function_call",
        **namespace(call.entry, "responses"),
        "call_id": written_id(call.id),
        "name": call.name,
        "arguments": call.arguments,
    }
