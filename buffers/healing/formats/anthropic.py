"""Anthropic Messages: ``{"system", "messages", ...}`` or a bare list of messages.

``system`` (a string or a list of text blocks, kept as given) is a leading system row;
writing puts every system row back there, wherever it stands in the buffer.
An assistant message's text blocks are its content and its ``tool_use`` blocks its
canonical ``tool_calls`` (``arguments`` = the JSON text of ``input``); any other block
(``thinking``...) and an order other than text-then-calls are kept in
``metadata.anthropic.layout``. A user message becomes one tool row per ``tool_result``
block, in order, then one user row for its other blocks if it has any. Writing
regroups consecutive tool rows and the user row right after them into one user
message, results first, as Anthropic requires.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from buffers.healing.ids import usable_id
from buffers.healing.messages import Message, describe

from . import media
from .common import (
    Call,
    Converted,
    Problems,
    Row,
    arguments_object,
    arrange,
    as_parts,
    body_and_entries,
    declared,
    has_choice,
    has_id,
    has_text,
    inner,
    is_foreign_item,
    is_object,
    joins_results,
    json_text,
    layout,
    mark_new_turn,
    namespace,
    row,
    storable,
    text_of,
    without,
)

NEW_MESSAGE = "new_message"


def read(document: object) -> Converted:
    problems = Problems()
    fields, messages = body_and_entries(
        document, "messages", ("system",), problems, "a list of messages"
    )
    rows: list[Row] = []
    if isinstance(document, dict) and "system" in document:
        read_system(document["system"], rows, problems)
    for index, raw in enumerate(messages):
        read_message(raw, f"messages[{index}]", rows, problems)
    problems.raise_if_any()
    return Converted(rows, fields)


def read_system(system: object, rows: list[Row], problems: Problems) -> None:
    if isinstance(system, list):
        blocks = [is_object(b, f"system[{i}]", problems) for i, b in enumerate(system)]
        if all(blocks) and storable(system, "system", problems):
            rows.append(row("system", system))
    elif not isinstance(system, str):
        problems.add("system", f"must be a string or a list of text blocks, not {describe(system)}")
    elif storable(system, "system", problems):
        rows.append(row("system", system))


def read_message(raw: object, where: str, rows: list[Row], problems: Problems) -> None:
    if not is_object(raw, where, problems) or not storable(raw, where, problems):
        return
    assert isinstance(raw, dict)
    if raw.get("role") == "system":
        problems.add(
            f"{where}.role",
            "is 'system', which Anthropic does not take as a message: the system prompt "
            "is the top-level system field",
        )
        return
    role_ok = has_choice(raw, "role", where, ("user", "assistant"), problems)
    content = raw.get("content")
    if "content" not in raw:
        problems.add(f"{where}.content", "is missing")
        return
    if not isinstance(content, str | list):
        problems.add(
            f"{where}.content",
            f"must be a string or a list of content blocks, not {describe(content)}",
        )
        return
    if not role_ok:
        return
    first = len(rows)
    if isinstance(content, str):
        rows.append(row(raw["role"], content))
    elif raw["role"] == "assistant":
        read_assistant_blocks(content, where, rows, problems)
    else:
        read_user_blocks(content, where, rows, problems)
    if len(rows) > first:
        mark_new_turn(rows, first, "anthropic", NEW_MESSAGE)
        if extras := without(raw, "role", "content"):
            rows[first]["metadata"].setdefault("anthropic", {})["message"] = extras


def _block_type(block: object, where: str, problems: Problems) -> str | None:
    if not is_object(block, where, problems):
        return None
    assert isinstance(block, dict)
    return str(block["type"]) if has_text(block, "type", where, problems) else None


def read_assistant_blocks(
    blocks: list[Any], where: str, rows: list[Row], problems: Problems
) -> None:
    texts: list[Any] = []
    calls: list[dict[str, Any]] = []
    kinds: list[Any] = []
    for index, block in enumerate(blocks):
        at = f"{where}.content[{index}]"
        kind = _block_type(block, at, problems)
        if kind == "text":
            texts.append(block)
            kinds.append("content")
        elif kind == "tool_use":
            call = read_tool_use(block, at, problems)
            if call is not None:
                calls.append(call)
                kinds.append("call")
        elif kind == "tool_result":
            problems.add(at, "is a tool_result block, which belongs in a user message")
        elif kind is not None:
            kinds.append(block)
    metadata: dict[str, Any] = {"tool_calls": calls} if calls else {}
    order = layout(kinds)
    if order is not None:
        metadata["anthropic"] = {"layout": order}
    rows.append(row("assistant", texts or (None if kinds else []), metadata))


def read_tool_use(block: dict[str, Any], at: str, problems: Problems) -> dict[str, Any] | None:
    checks = [has_id(block, "id", at, problems), has_text(block, "name", at, problems)]
    if "input" not in block:
        problems.add(f"{at}.input", "is missing")
        return None
    if not is_object(block["input"], f"{at}.input", problems) or not all(checks):
        return None
    arguments = json_text(block["input"])
    if arguments is None:
        problems.add(f"{at}.input", "cannot be written as JSON text")
        return None
    call = {
        "id": block["id"],
        "type": "function",
        "function": {"name": block["name"], "arguments": arguments},
    }
    if extras := without(block, "type", "id", "name", "input"):
        call["anthropic"] = extras
    return call


def read_user_blocks(blocks: list[Any], where: str, rows: list[Row], problems: Problems) -> None:
    others: list[Any] = []
    results = 0
    for index, block in enumerate(blocks):
        at = f"{where}.content[{index}]"
        kind = _block_type(block, at, problems)
        if kind == "tool_result":
            results += 1
            result = read_tool_result(block, at, problems)
            if result is not None:
                rows.append(result)
        elif kind == "tool_use":
            problems.add(at, "is a tool_use block, which belongs in an assistant message")
        elif kind is not None:
            others.append(block)
    if others or not results:
        rows.append(row("user", others))


def read_tool_result(block: dict[str, Any], at: str, problems: Problems) -> Row | None:
    checks = [has_id(block, "tool_use_id", at, problems)]
    content = block.get("content")
    if content is not None and not isinstance(content, str | list):
        problems.add(
            f"{at}.content",
            f"must be a string or a list of content blocks, not {describe(content)}",
        )
        checks.append(False)
    if "is_error" in block and not isinstance(block["is_error"], bool):
        problems.add(f"{at}.is_error", f"must be true or false, not {describe(block['is_error'])}")
        checks.append(False)
    if not all(checks):
        return None
    metadata: dict[str, Any] = {"tool_call_id": block["tool_use_id"]}
    if "is_error" in block:
        metadata["is_error"] = block["is_error"]
    # An explicit null content is kept with the block's other keys: the row's null
    # content would otherwise write back as no content key at all.
    consumed = ("content",) if content is not None else ()
    if extras := without(block, "type", "tool_use_id", "is_error", *consumed):
        metadata["anthropic"] = {"block": extras}
    return row("tool", content, metadata)


def write(messages: Sequence[Message], fields: Mapping[str, Any]) -> dict[str, Any]:
    """Every system row, wherever it stands, goes into the top-level ``system`` (Anthropic
    has no system message): written in place as a user message, one between a call and
    its results would split them, which the sendability check counts on not happening."""
    body = dict(fields)
    instructions = [message for message in messages if message.role == "system"]
    if instructions:
        body["system"] = system(instructions)
    written: list[dict[str, Any]] = []
    previous: Message | None = None
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "assistant":
            if is_foreign_item(message) and not declared(message):
                continue
            written.append(start(message, "assistant", assistant_content(message)))
        elif joins_results(message, previous, "anthropic", NEW_MESSAGE):
            written[-1]["content"].extend(user_blocks(message))
        elif message.role == "tool":
            written.append(start(message, "user", [tool_result(message)]))
        else:
            written.append(start(message, "user", user_content(message.content)))
        previous = message
    _write_ids(written)
    body["messages"] = written
    return body


_TAKEN_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_TAKEN = re.compile(r"[^a-zA-Z0-9_-]")


def _write_ids(messages: list[dict[str, Any]]) -> None:
    """Tool ids as Anthropic takes them: letters, digits, ``_`` and ``-`` only (it answers
    400 to ``^[a-zA-Z0-9_-]+$`` not matched), each ``tool_use``'s its own (it answers 400 to
    "tool_use ids must be unique"). An id of another shape (another provider's, an integer,
    the ``#2`` a reader gives an id declared again) becomes its text with each other
    character a ``_``; an id declared again (some models number calls per turn, and an id
    comes back turn after turn) is numbered past every id in the body. A result answers the
    first call of the turn before it that its id names and no result has answered yet;
    else the id's last call (a result answering again, which the verdict refuses), read as
    healing pairs them (``usable_id``). An id that fits, declared once, is written as it is."""
    turns = [
        (
            message["role"],
            [
                (block, "id" if block["type"] == "tool_use" else "tool_use_id")
                for block in message["content"]
                if isinstance(block, dict) and block.get("type") in ("tool_use", "tool_result")
            ],
        )
        for message in messages
        if isinstance(message["content"], list)
    ]
    texts = [usable_id(block.get(key)) for _, blocks in turns for block, key in blocks]
    taken = {text for text in texts if text is not None and _TAKEN_ID.fullmatch(text)}
    fitted: dict[str, str] = {}
    latest: dict[str, str] = {}
    """Each id's last call, as written."""
    waiting: dict[str, deque[str]] = {}
    """The calls of the last assistant turn that no result has answered yet, by id."""

    def numbered(stem: str) -> str:
        fitting, n = stem, 1
        while fitting in taken:
            n += 1
            fitting = f"{stem}_{n}"
        taken.add(fitting)
        return fitting

    def fit(text: str) -> str:
        if text not in fitted:
            fitted[text] = text if text in taken else numbered(_NOT_TAKEN.sub("_", text) or "toolu")
        return fitted[text]

    for role, blocks in turns:
        if role == "assistant":
            waiting = {}
        for block, key in blocks:
            text = usable_id(block.get(key))  # None: names no call
            if text is None:
                continue
            if key == "id":
                written = numbered(fit(text)) if text in latest else fit(text)
                latest[text] = written
                waiting.setdefault(text, deque()).append(written)
            else:
                queue = waiting.get(text)
                written = queue.popleft() if queue else latest.get(text) or fit(text)
            block[key] = written


def start(message: Message, role: str, content: object) -> dict[str, Any]:
    return {**inner(namespace(message, "anthropic"), "message"), "role": role, "content": content}


def system(messages: Sequence[Message]) -> object:
    if len(messages) == 1 and isinstance(messages[0].content, str):
        return messages[0].content
    return [block for m in messages for block in blocks(as_parts(m.content), "system")]


def blocks(parts: list[Any], role: str) -> list[Any]:
    """Parts as Anthropic blocks in a ``role`` message: text parts of other spellings
    become text blocks, other providers' media Anthropic's where it takes them there."""
    return [
        media.written(part, "anthropic", role)
        if text_of(part) is None
        else part
        if isinstance(part, dict) and part.get("type") == "text"
        else {"type": "text", "text": text_of(part)}
        for part in parts
    ]


def user_content(content: object, role: str = "user") -> object:
    return content if isinstance(content, str) else blocks(as_parts(content), role)


def user_blocks(message: Message) -> list[Any]:
    if message.role == "tool":
        return [tool_result(message)]
    return blocks(as_parts(message.content), message.role)


def assistant_content(message: Message) -> object:
    calls = [tool_use(call) for call in declared(message)]
    order = namespace(message, "anthropic").get("layout")
    if isinstance(order, list):
        order = [kind for kind in order if not unsigned_thinking(kind)]
    if isinstance(message.content, str) and not calls and order is None:
        return message.content
    return arrange(order, blocks(as_parts(message.content), "assistant"), calls)


def unsigned_thinking(block: object) -> bool:
    """A thinking block without its signature (a string, not empty), which Anthropic
    refuses ("thinking.signature: Field required"): the export leaves it out of the turn
    that kept it, and sendability judges the turn without it."""
    return (
        isinstance(block, dict)
        and block.get("type") == "thinking"
        and not (isinstance(block.get("signature"), str) and block["signature"])
    )


def tool_use(call: Call) -> dict[str, Any]:
    return {
        "type": "tool_use",
        **namespace(call.entry, "anthropic"),
        "id": call.id,
        "name": call.name,
        "input": arguments_object(call.arguments),
    }


def tool_result(message: Message) -> dict[str, Any]:
    block = {
        "type": "tool_result",
        **inner(namespace(message, "anthropic"), "block"),
        "tool_use_id": message.metadata.get("tool_call_id"),
    }
    if message.content is not None:
        block["content"] = user_content(message.content, "tool")
    if "is_error" in message.metadata:
        block["is_error"] = message.metadata["is_error"]
    return block
