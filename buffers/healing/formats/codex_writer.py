"""Codex CLI rollouts written back (``write_native``) from what ``codex`` kept: the rollout
``codex resume`` loads, healed calls answered in Codex's own lines.

The reader keeps every object line that is not a message's, in place, under the
``codex.before`` of the row (or call) whose line comes next, and those after the last one
under its ``codex.after``, so that ``write_native`` writes the rollout back: the
``session_meta`` line as read, then every kept line and every message's item lines in
order, items rebuilt in Codex's own key order, all as Codex writes them (compact JSON);
a message from another agent is written as it was read (its ``agent_message`` item, or
its ``inter_agent_communication`` line), and so is every line of a rolled-back turn.
A clean rollout comes back as it was read; on PostgreSQL, whose ``jsonb`` keeps no key
order, with the keys inside the kept lines and items in its order. Not written back:
blank lines, lines that are not JSON or not objects (Codex skips them too) and the cut-off
last line; paginated files (``ordinal``) are renumbered ``0..n-1``. A healed placeholder
is written as Codex's own result line, ``{"timestamp", "type": "response_item",
"payload": {"type": "function_call_output" (``custom_tool_call_output`` for a custom
call), "call_id", "output": <its text>}}``, directly after its turn's lines (before the
bookkeeping that follows them), with the timestamp of the line before it; a message made
in the app is written as a ``response_item``. A legacy rollout is not written back
(refused): only 2025 builds of the Codex CLI resume one, and a current-layout header would
need fields it does not hold (``cwd``, ``originator``, ``cli_version``); nor is a
fragment, which has no ``session_meta`` line for Codex to resume from.

The file name (``native_name``) is Codex's, ``rollout-<time>-<id>.jsonl``, every character
of the time and the id but ASCII letters, digits, ``.``, ``_`` and ``-`` made a ``-``:
they come from the file's own data and name a download.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from buffers.healing import jsontext
from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import is_placeholder, usable_id
from buffers.healing.messages import Message

from . import openai_responses
from .common import Call, declared, namespace, without

SPACE = "codex"
"""The metadata key of what the reader keeps for the writer (per message, per call, per
conversation)."""


def native_refusal(metadata: Mapping[str, Any]) -> str | None:
    """Why a conversation read from a Codex rollout, whose metadata this is, cannot be
    written back as one; None when it can."""
    kept = namespace(metadata, SPACE)
    if kept.get("layout") == "legacy":
        return (
            "was read from a 2025 Codex rollout (a bare header and bare items), which no "
            "current Codex CLI resumes; it is not written back in that layout (export it as "
            "OpenAI Responses instead)"
        )
    if not isinstance(kept.get("session_meta_line"), str):
        return (
            "has no Codex session_meta line (it was not read from a whole Codex rollout), "
            "and Codex resumes no rollout without one"
        )
    return None


def write_native(messages: Sequence[Message], metadata: Mapping[str, Any]) -> str:
    """The conversation as a Codex rollout's text (JSONL, ending with a newline)."""
    if (refusal := native_refusal(metadata)) is not None:
        raise InvalidInput([Problem("conversation", refusal)])
    kept = namespace(metadata, SPACE)
    header = kept["session_meta_line"]
    writer = _Writer(header, paginated=kept.get("paginated") is True)
    for message in messages:
        writer.message(message)
    writer.flush()
    return "\n".join(writer.lines) + "\n"


class _Writer:
    def __init__(self, header: str, *, paginated: bool) -> None:
        self.lines = [header]
        self.paginated = paginated
        try:
            stamp = json.loads(header).get("timestamp")
        except (ValueError, AttributeError):
            stamp = None
        self.timestamp: str = stamp if isinstance(stamp, str) else ""
        self.after: list[Any] = []
        self.custom: set[str] = set()
        """The ids of custom tool calls, answered by ``custom_tool_call_output``."""

    def message(self, message: Message) -> None:
        kept = namespace(message, SPACE)
        if is_placeholder(message) and not kept:
            self.item(self.timestamp, self.output(message, {}))
            return
        self.flush()
        self.kept(kept.get("before"))
        time = namespace(message, "facts").get("time")
        stamp = time if isinstance(time, str) else self.timestamp
        line = kept.get("line")
        if isinstance(line, dict):
            self.kept([line])
        elif (own := self.own_item(message, kept)) is not None:
            self.item(stamp, own)
        for call in declared(message):
            on_call = namespace(call.entry, SPACE)
            self.kept(on_call.get("before"))
            at = on_call.get("timestamp")
            self.item(at if isinstance(at, str) else self.timestamp, self.call_item(call, on_call))
        after = kept.get("after")
        self.after = after if isinstance(after, list) else []

    def flush(self) -> None:
        self.kept(self.after)
        self.after = []

    def own_item(self, message: Message, kept: Mapping[str, Any]) -> dict[str, Any] | None:
        if message.role == "tool":
            return self.output(message, kept)
        foreign = message.metadata.get("responses_item")
        if isinstance(foreign, dict):
            return foreign
        original = kept.get("item")
        if isinstance(original, dict):
            return original
        extras = namespace(message, "responses")
        if message.content is None and not extras and declared(message):
            return None
        developer = message.metadata.get("openai_role") == "developer"
        role = "developer" if message.role == "system" and developer else message.role
        rest = without(extras, "type", "id", "role", "content")
        return {
            "type": "message",
            **({"id": extras["id"]} if "id" in extras else {}),
            "role": role,
            "content": _content(message.content, role),
            **rest,
        }

    def output(self, message: Message, kept: Mapping[str, Any]) -> dict[str, Any]:
        call_id = message.metadata.get("tool_call_id")
        extras = {**namespace(message, "responses"), **namespace(kept, "item")}
        kind = extras.get("type")
        if not isinstance(kind, str):
            custom = usable_id(call_id) in self.custom
            kind = "custom_tool_call_output" if custom else "function_call_output"
        output = openai_responses.content(message.content, "tool")
        return {
            "type": kind,
            "call_id": call_id,
            "output": "" if output is None else output,
            **without(extras, "type", "call_id", "output"),
        }

    def call_item(self, call: Call, kept: Mapping[str, Any]) -> dict[str, Any]:
        original = kept.get("item")
        if isinstance(original, dict):
            if original.get("type") == "custom_tool_call" and (cid := usable_id(call.id)):
                self.custom.add(cid)
            return original
        extras = namespace(call.entry, "responses")
        return {
            "type": "function_call",
            **({"id": extras["id"]} if "id" in extras else {}),
            "name": call.name,
            **without(extras, "type", "id"),
            "arguments": call.arguments,
            "call_id": call.id,
        }

    def item(self, timestamp: str, payload: dict[str, Any]) -> None:
        line: dict[str, Any] = {"timestamp": timestamp}
        if self.paginated:
            line["ordinal"] = len(self.lines)
        line["type"] = "response_item"
        line["payload"] = payload
        self.write(line)

    def kept(self, lines: object) -> None:
        for line in lines if isinstance(lines, list) else ():
            if not isinstance(line, dict):
                continue
            if self.paginated:
                line = _numbered(line, len(self.lines))
            self.write(line)

    def write(self, line: dict[str, Any]) -> None:
        stamp = line.get("timestamp")
        if isinstance(stamp, str):
            self.timestamp = stamp
        self.lines.append(jsontext.dumps(line))


def _numbered(line: dict[str, Any], ordinal: int) -> dict[str, Any]:
    """A kept line with its ``ordinal`` (placed after ``timestamp``, as Codex writes it)."""
    if "ordinal" in line:
        return {**line, "ordinal": ordinal}
    numbered: dict[str, Any] = {}
    for key, value in line.items():
        numbered[key] = value
        if key == "timestamp":
            numbered["ordinal"] = ordinal
    return numbered if "ordinal" in numbered else {"ordinal": ordinal, **numbered}


def _content(content: object, role: str) -> list[Any]:
    """Message content as Codex writes it: a list of parts."""
    part = "output_text" if role == "assistant" else "input_text"
    if isinstance(content, str):
        return [{"type": part, "text": content}]
    written = openai_responses.content(content, role)
    if isinstance(written, list):
        return written
    return [{"type": part, "text": written}] if isinstance(written, str) and written else []


def native_name(metadata: Mapping[str, Any]) -> str:
    """``rollout-<time>-<id>.jsonl``, as Codex names the file of the session written back:
    its time is the session's start, in Codex's ``YYYY-MM-DDThh-mm-ss``."""
    kept = metadata.get(SPACE)
    meta = kept.get("session_meta") if isinstance(kept, dict) else None
    if not isinstance(meta, dict):
        return ""
    session, started = meta.get("id"), meta.get("timestamp")
    if not isinstance(session, str) or not isinstance(started, str) or len(started) < 19:
        return ""
    return f"rollout-{_safe(started[:19])}-{_safe(session)}.jsonl"


def _safe(name: str) -> str:
    """``name`` for a file name (and a download's header): ASCII letters, digits, ``.``,
    ``_`` and ``-``, every other character a ``-``; at most 200 characters."""
    return _UNSAFE.sub("-", name[:200])


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
