"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``, one
session per file, one compact JSON object per line.

Layouts. Since September 2025 every line is ``{"timestamp", ["ordinal",] "type",
"payload"}``: a ``session_meta`` header first, then ``response_item`` lines (what the
model saw), ``event_msg`` lines (what the terminal showed), ``turn_context`` lines (the
settings of each model request) and ``compacted`` lines. The 2025 legacy layout is a bare
header ``{id, timestamp, instructions, git?}``, then bare response items and
``{"record_type": "state"}`` lines. A file without its header whose every object line is
a ``{timestamp, type, payload}`` line and which holds response items (a fragment) is read
too. The transitional ``record_type``-tagged layout is not read (no real file of it is
known).

The conversation is the ``response_item`` payloads (the legacy layout's bare items), read
as OpenAI Responses input items with ``openai_responses``' readers: a ``message`` is a row,
a ``function_call`` a canonical call joined to the assistant row just before it (or to an
assistant row of its own), a ``function_call_output`` a tool row. ``custom_tool_call``
(apply_patch's free text, as ``{"input": text}`` arguments) and ``local_shell_call``
(named ``local_shell``, its ``action`` as arguments; its id is ``call_id``, else the
item's ``id``) are canonical calls too, and keep the original item under the call's
``codex.item``; ``custom_tool_call_output`` is a tool row that keeps what makes it one
under ``codex.item``. Calls pair on ``call_id``, never on the item's ``id``; a
``local_shell_call`` is answered by a ``function_call_output``. A call with no output
line anywhere is unanswered. ``reasoning``, ``web_search_call``,
``image_generation_call``, ``compaction`` (and ``compaction_summary``, its name from
November to December 2025), ``context_compaction`` (since May 2026) and
``tool_search_*`` items are kept as the Responses reader keeps items of its own (an
assistant row with null content holding the item under ``responses_item``): they never
take a result. A message from another agent is a user row, as the model reads it: it
starts a turn (a sub-agent's task, or a message its parent or a peer sent it). An
``agent_message`` item (since June 24, 2026) shows its ``input_text`` parts (its
``encrypted_content`` parts are kept, never shown: null content when it has no other);
an ``inter_agent_communication`` line (June 12 to 24, 2026) shows what Codex made of it
for the model (``to_model_input_item``): its ``content``, or when it is encrypted, the
envelope Codex writes before the ciphertext. Both keep ``author`` and ``recipient``
under ``codex``, and what to write back as it was: the item under ``codex.item``, the
line under ``codex.line``. User and developer messages Codex injects
(``<environment_context>``, AGENTS.md, ``<permissions instructions>``,
``<turn_aborted>``...) stay messages, since the model was sent them, and are flagged
with ``codex.injected``. Each ``response_item`` line is read once, into exactly one
message: nothing of the other lines makes a message, so the copies a rollout holds of
each moment (the ``user_message`` and ``agent_message`` events, ``task_complete``'s last
message, the AGENTS.md of every ``turn_context``, the history a ``compacted`` line
repeats) are never messages; the context a resume re-injects is, once per time it was
sent.

Bookkeeping. ``event_msg`` (of any type), ``turn_context``, ``compacted`` (its
``replacement_history`` is never expanded), ``world_state``,
``inter_agent_communication_metadata``, a ``ghost_snapshot`` item, a later
``session_meta`` (a fork copies its parent's) and the legacy ``record_type`` lines are
read as bookkeeping: never a message, never an answer (an ``exec_command_end`` with a
call's id answers nothing: the model never saw it). ``turn_context.model`` is
``facts.model`` of the assistant rows that follow; a ``token_count``'s
``last_token_usage`` is ``facts.usage`` of the assistant row just before it (the first
such count only, and none when a result, a user message or a rolled-back line came in
between); each row's line ``timestamp`` is ``facts.time``. The first ``session_meta`` is
the conversation's ``codex.session_meta`` (its payload) and ``codex.session_meta_line``
(the line's text). A rollout has no title.

Rollbacks. A ``thread_rolled_back`` event undoes the last ``num_turns`` turns, as Codex
does when it rebuilds the history on resume (``drop_last_n_user_turns``): the
conversation items are replayed, a turn starting at each user message Codex did not
inject and each message from another agent, a ``compacted`` line replacing what came
before it with its ``replacement_history`` (no rollback reaches a line before it), and
each rollback drops the last turns that survived the earlier ones, with the context
injected just before the first of them (never before the first turn). The lines it
drops are skipped, each with the rollback's line, and kept in place for writing back;
their events stay bookkeeping. Lines that cannot be stored take no part in the replay,
since they are not written back: such an item is refused as any item is, such a
rollback or ``compacted`` line is left out (and said).

Skipped, with the reason: lines that are not JSON (a cut-off last line among them), that
are not objects, or that are not rollout lines, lines of a type no reader knows, a
``response_item`` of a type that is no conversation item (``additional_tools``...), the
lines of rolled-back turns, bookkeeping without a payload or that cannot be stored, a
``thread_rolled_back`` whose ``num_turns`` is not a u32 (Codex cannot read it).
What is wrong inside a conversation item (a call without ``call_id``, a value that cannot
be stored) is refused, named by the line and the path inside it.

Every object line that is not a message's is kept, in place, under the ``codex.before``
of the row (or call) whose line comes next, and those after the last one under its
``codex.after``, for ``codex_writer`` to write the rollout back (``write_native``,
``native_name``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import usable_id
from buffers.healing.messages import describe

from . import openai_responses
from .codex_writer import SPACE, native_name, native_refusal, write_native
from .common import (
    Converted,
    Problems,
    Row,
    has_choice,
    has_id,
    has_text,
    is_object,
    json_text,
    row,
    storable,
    without,
)
from .source import Entry, Format, Reading, Skipped, Source

__all__ = ["FORMAT", "fits", "native_name", "read", "write_native"]

WRAPPER = frozenset({"timestamp", "ordinal", "type", "payload"})
LEGACY_HEADER = frozenset({"id", "timestamp", "instructions", "git"})
BOOKKEEPING = frozenset(
    {
        "event_msg",
        "turn_context",
        "compacted",
        "session_meta",
        "world_state",
        "inter_agent_communication_metadata",
    }
)
"""Line types read as bookkeeping: kept for writing back, never a message."""
COMMUNICATION = "inter_agent_communication"
"""The line type of a message between agents (June 2026), which the model saw as the
``agent_message`` Codex makes of it."""
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
FOREIGN = frozenset(
    {
        "reasoning",
        "web_search_call",
        "image_generation_call",
        "compaction",
        "compaction_summary",
        "context_compaction",
        "tool_search_call",
        "tool_search_output",
    }
)
"""Response items the model saw that are neither a message, a call nor a result."""
AGENT_MESSAGE = "agent_message"
"""A message from another agent, which the model reads as the start of a turn."""
AGENT_PARTS = ("input_text", "encrypted_content")
ITEMS = frozenset({"message", AGENT_MESSAGE, *CALLS, *OUTPUTS, *FOREIGN})
BOOKKEEPING_ITEMS = frozenset({"ghost_snapshot"})
"""Response items only Codex itself uses (undo snapshots): bookkeeping."""
LOCAL_SHELL = "local_shell"
INJECTED = (
    ("<environment_context>", "environment_context"),
    ("# AGENTS.md instructions", "agents_md"),
    ("<INSTRUCTIONS>", "agents_md"),
    ("<user_instructions>", "user_instructions"),
    ("<permissions instructions>", "permissions"),
    ("<turn_aborted>", "turn_aborted"),
    ("<user_shell_command>", "user_shell_command"),
    ("<model_switch>", "model_switch"),
    ("<personality_spec>", "personality_spec"),
    ("<collaboration_mode>", "collaboration_mode"),
    ("<skill>", "skill"),
)
"""What Codex injects as a user or developer message, by the start of its text."""
REPLAYED = frozenset({"response_item", COMMUNICATION, "compacted", "event_msg"})
"""The line types a rollback's replay reads."""
MAX_TURNS = 2**32 - 1
"""The most turns a ``thread_rolled_back`` names (Codex reads ``num_turns`` as a u32)."""
ROLLED_BACK = "rolled back by the user (thread_rolled_back) at {at}: Codex resumes without it"
USAGE = (
    ("input_tokens", "input"),
    ("output_tokens", "output"),
    ("cached_input_tokens", "cached"),
    ("reasoning_output_tokens", "reasoning"),
    ("total_tokens", "total"),
)


# Detection.


def fits(source: Source) -> bool:
    """A ``session_meta`` header first (or the legacy header), or a fragment: every object
    line a ``{timestamp, type, payload}`` line, and response items among them."""
    entries = source.entries()
    if not entries:
        return False
    first = entries[0].value
    return _is_header(first) or _is_legacy_header(first) or _is_fragment(entries)


def _is_header(value: object) -> bool:
    if not isinstance(value, dict) or value.get("type") != "session_meta":
        return False
    payload = value.get("payload")
    return (
        value.keys() <= WRAPPER
        and isinstance(value.get("timestamp"), str)
        and isinstance(payload, dict)
        and isinstance(payload.get("id", payload.get("session_id")), str)
        and {"cwd", "originator", "cli_version"} <= payload.keys()
    )


def _is_legacy_header(value: object) -> bool:
    return (
        isinstance(value, dict)
        and value.keys() <= LEGACY_HEADER
        and "instructions" in value
        and isinstance(value.get("id"), str)
        and isinstance(value.get("timestamp"), str)
    )


def _is_fragment(entries: list[Entry]) -> bool:
    items = 0
    for entry in entries:
        value = entry.value
        if not isinstance(value, dict):
            continue
        if not value.keys() <= WRAPPER or not isinstance(value.get("type"), str):
            return False
        payload = value.get("payload")
        if value["type"] == "response_item" and isinstance(payload, dict):
            kind = payload.get("type")
            items += isinstance(kind, str) and kind in ITEMS
    return items > 0


# Reading.


def read(source: Source) -> Reading:
    entries = source.entries() or []
    reader = _Reader()
    if entries and _is_legacy_header(entries[0].value):
        reader.legacy(entries)
    else:
        reader.current(entries)
    reader.problems.raise_if_any()
    if not reader.rows:
        found = f"{reader.read:,} of {len(entries):,} lines read, none a response item"
        raise InvalidInput([Problem("file", f"holds no conversation: {found}")])
    reader.finish()
    skipped = sorted([*source.unreadable, *reader.skipped], key=_position)
    return Reading([reader.converted()], skipped, reader.read, "line")


def _position(skipped: Skipped) -> int:
    digits = re.search(r"\d+", skipped.where)
    return int(digits.group()) if digits else 0


class _Reader:
    """One pass over a rollout's lines: the rows, and the lines kept for writing back."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.problems = Problems()
        self.skipped: list[Skipped] = []
        self.read = 0
        self.layout = "current"
        self.header: dict[str, Any] | None = None
        self.pending: list[Any] = []
        """Lines kept since the last row's or call's line, to go before the next one."""
        self.model: str | None = None
        self.rolled_back = False
        """Whether lines of a rolled-back turn came since the last row's or call's line."""

    # The two layouts.

    def current(self, entries: list[Entry]) -> None:
        undone = _rolled_back(entries)
        for index, entry in enumerate(entries):
            value = entry.value
            if not isinstance(value, dict):
                self.skip(entry, f"{describe(value)}, not a rollout line (an object)")
                continue
            kind = value.get("type")
            if index in undone:
                self.undone(entry, undone[index])
            elif not isinstance(kind, str):
                self.skip(entry, "an object without a type, not a rollout line", keep=True)
            elif kind == "response_item" and "payload" not in value:
                self.problems.add(f"{entry.where}: payload", "is missing")
            elif kind == "response_item":
                self.item(entry, value["payload"], value.get("timestamp"), "payload")
            elif kind == "session_meta" and self.header is None:
                self.session_meta(entry, value)
            elif kind == COMMUNICATION:
                self.communication(entry, value)
            elif kind in BOOKKEEPING:
                self.bookkeeping(entry, value, value.get("payload"))
            else:
                self.skip(entry, f"a line of type {kind!r}, which holds no conversation", keep=True)

    def legacy(self, entries: list[Entry]) -> None:
        self.layout = "legacy"
        header = entries[0]
        if self.keep(header, header.value):
            assert isinstance(header.value, dict)
            self.header = header.value
            self.read += 1
        for entry in entries[1:]:
            value = entry.value
            if not isinstance(value, dict):
                self.skip(entry, f"{describe(value)}, not a rollout line (an object)")
            elif "record_type" in value:
                self.bookkeeping(entry, value, value)
            elif "type" in value:
                self.item(entry, value, None, "")
            else:
                self.skip(entry, "an object that is neither an item nor a state record", keep=True)

    # Lines that are not conversation.

    def session_meta(self, entry: Entry, value: dict[str, Any]) -> None:
        if not isinstance(value.get("payload"), dict):
            self.skip(entry, "a session_meta line without a payload object", keep=True)
        elif self.keep(entry, value):
            self.header = value
            self.read += 1

    def bookkeeping(self, entry: Entry, value: dict[str, Any], payload: object) -> None:
        if not isinstance(payload, dict):
            self.skip(
                entry, f"a line of type {value.get('type')!r} without a payload object", keep=True
            )
            return
        if value.get("type") == "event_msg" and _unreadable_rollback(payload):
            reason = (
                "a thread_rolled_back event whose payload.num_turns is not a whole number "
                f"from 0 to {MAX_TURNS}: Codex cannot read it, and it undoes nothing"
            )
            self.skip(entry, reason, keep=True)
            return
        if not self.keep(entry, value):
            return
        self.pending.append(value)
        self.read += 1
        kind = value.get("type")
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            self.model = payload["model"]
        elif kind == "event_msg" and payload.get("type") == "token_count":
            self.usage(payload.get("info"))

    def usage(self, info: object) -> None:
        """``facts.usage`` for the assistant row this count directly follows."""
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        if not isinstance(last, dict) or not self.rows or self.rows[-1]["role"] != "assistant":
            return
        if self.rolled_back:  # the count is of a request the rollback undid
            return
        counts = {
            name: last[key]
            for key, name in USAGE
            if isinstance(last.get(key), int) and not isinstance(last.get(key), bool)
        }
        facts = self.rows[-1]["metadata"].get("facts", {})
        if counts and "usage" not in facts:
            self.rows[-1]["metadata"]["facts"] = {**facts, "usage": counts}

    def keep(self, entry: Entry, value: object) -> bool:
        """Whether a line that is not a conversation item can be kept (stored)."""
        problem = entry.problem(value)
        if problem is None:
            return True
        self.skipped.append(Skipped(entry.where, f"a line that {problem} (left out)"))
        return False

    def skip(self, entry: Entry, why: str, keep: bool = False) -> None:
        """Skip a line, keeping it in place for writing back when it is an object."""
        if keep and entry.problem() is None:
            self.pending.append(entry.value)
        self.skipped.append(Skipped(entry.where, why))

    def undone(self, entry: Entry, at: str) -> None:
        """A line of a turn a ``thread_rolled_back`` undid (one that can be stored): kept in
        place for writing back, never a message."""
        self.pending.append(entry.value)
        self.skipped.append(Skipped(entry.where, ROLLED_BACK.format(at=at)))
        self.rolled_back = True

    def refuse(self, entry: Entry, found: Problems) -> None:
        """The problems found inside a line, named by the line and their path in it."""
        for problem in found:
            path = _inside(problem.path)
            self.problems.add(f"{entry.where}: {path}" if path else entry.where, problem.message)

    # Conversation items.

    def item(self, entry: Entry, payload: object, timestamp: object, inside: str) -> None:
        """One response item: ``inside`` is where it sits in its line (``payload``, or
        ``""`` for a legacy bare item), for the places of its problems."""
        found = Problems()
        where = inside or "item"
        if is_object(payload, where, found) and (
            entry.storable or storable(entry.value, "line", found)
        ):
            assert isinstance(payload, dict)
            kind = payload.get("type")
            if "type" not in payload:
                found.add(f"{where}.type", "is missing")
            elif not isinstance(kind, str):
                found.add(f"{where}.type", f"must be a string, not {describe(kind)}")
            elif kind in ITEMS:
                time = timestamp if isinstance(timestamp, str) else None
                self.conversation_item(kind, payload, where, time, found)
            elif kind in BOOKKEEPING_ITEMS:
                self.pending.append(entry.value)
                self.read += 1
            else:
                reason = f"a response item of type {kind!r}, which is no conversation item"
                self.skip(entry, reason, keep=True)
        self.refuse(entry, found)

    def communication(self, entry: Entry, value: dict[str, Any]) -> None:
        """An ``inter_agent_communication`` line, read as the ``agent_message`` Codex
        makes of it for the model; the row keeps the line to write it back as it was."""
        found = Problems()
        payload = value.get("payload")
        if "payload" not in value:
            found.add("payload", "is missing")
        elif is_object(payload, "payload", found) and (
            entry.storable or storable(value, "line", found)
        ):
            assert isinstance(payload, dict)
            new = _communication(payload, value, found)
            if new is not None:
                self.rows.append(new)
                self.read += 1
                stamp = value.get("timestamp")
                self.new_row(new, stamp if isinstance(stamp, str) else None)
        self.refuse(entry, found)

    def conversation_item(
        self, kind: str, payload: dict[str, Any], where: str, time: str | None, found: Problems
    ) -> None:
        rows, calls = len(self.rows), len(self.calls_of_last_row())
        if kind == "message":
            openai_responses.read_message(payload, where, self.rows, found)
        elif kind == "function_call":
            openai_responses.read_call(payload, where, self.rows, found)
        elif kind in CALLS:
            self.declare(_codex_call(kind, payload, where, found))
        elif kind == AGENT_MESSAGE:
            new = _agent_message(payload, where, found)
            if new is not None:
                self.rows.append(new)
        elif kind in OUTPUTS:
            openai_responses.read_output(payload, where, self.rows, found)
            if kind != "function_call_output" and len(self.rows) > rows:
                self.rows[-1]["metadata"].pop("responses", None)
                self.rows[-1]["metadata"][SPACE] = {"item": without(payload, "call_id", "output")}
        else:
            self.rows.append(row("assistant", None, {"responses_item": payload}))
        if found:
            return
        self.read += 1
        if len(self.rows) > rows:
            self.new_row(self.rows[-1], time)
        elif len(self.calls_of_last_row()) > calls:
            self.joined(self.calls_of_last_row()[-1], time)

    def calls_of_last_row(self) -> list[Any]:
        calls = self.rows[-1]["metadata"].get("tool_calls") if self.rows else None
        return calls if isinstance(calls, list) else []

    def declare(self, call: dict[str, Any] | None) -> None:
        if call is None:
            return
        if self.rows and self.rows[-1]["role"] == "assistant":
            self.rows[-1]["metadata"].setdefault("tool_calls", []).append(call)
        else:
            self.rows.append(row("assistant", None, {"tool_calls": [call]}))

    def new_row(self, new: Row, time: str | None) -> None:
        metadata = new["metadata"]
        facts: dict[str, Any] = {}
        if time is not None:
            facts["time"] = time
        if new["role"] == "assistant" and self.model is not None:
            facts["model"] = self.model
        if facts:
            metadata["facts"] = facts
        kept = metadata.setdefault(SPACE, {})
        if "author" not in kept and (injected := _injected(new, metadata)):
            kept["injected"] = injected
        if self.pending:
            kept["before"], self.pending = self.pending, []
        if not kept:
            del metadata[SPACE]
        self.rolled_back = False
        for call in metadata.get("tool_calls", ()):
            self.joined(call, time)

    def joined(self, call: dict[str, Any], time: str | None) -> None:
        kept = call.setdefault(SPACE, {})
        if time is not None:
            kept["timestamp"] = time
        if self.pending:
            kept["before"], self.pending = self.pending, []
        if not kept:
            del call[SPACE]
        self.rolled_back = False

    def finish(self) -> None:
        if self.pending:
            self.rows[-1]["metadata"].setdefault(SPACE, {})["after"] = self.pending
            self.pending = []

    def converted(self) -> Converted:
        kept: dict[str, Any] = {"layout": self.layout}
        if self.header is not None and self.layout == "legacy":
            kept["session_meta"] = self.header
        elif self.header is not None:
            kept["session_meta"] = self.header["payload"]
            kept["session_meta_line"] = json_text(self.header)
            if "ordinal" in self.header:
                kept["paginated"] = True
        return Converted(self.rows, {SPACE: kept}, title="")


def _inside(path: str) -> str:
    """A problem's path inside its line: ``payload.call_id``, or ``call_id`` for a bare
    item (whose checks name it ``item``, and the whole line ``line``)."""
    for prefix in ("line", "item"):
        if path == prefix or path.startswith((f"{prefix}.", f"{prefix}[")):
            return path.removeprefix(prefix).lstrip(".")
    return path


def _codex_call(
    kind: str, payload: dict[str, Any], where: str, found: Problems
) -> dict[str, Any] | None:
    """A ``custom_tool_call`` or ``local_shell_call`` as a canonical call that keeps the
    item as it was."""
    if kind == "custom_tool_call":
        checks = [
            has_id(payload, "call_id", where, found),
            has_text(payload, "name", where, found),
            has_text(payload, "input", where, found, wanted="a string (the tool's input)"),
        ]
        if not all(checks):
            return None
        call_id, name = payload["call_id"], payload["name"]
        arguments = json_text({"input": payload["input"]})
    else:
        key = "call_id" if usable_id(payload.get("call_id")) is not None else "id"
        if key == "id" and "id" not in payload:
            found.add(f"{where}.call_id", "is missing")
            return None
        if not has_id(payload, key, where, found):
            return None
        call_id, name = payload[key], LOCAL_SHELL
        arguments = json_text(payload.get("action", {}))
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments or "{}"},
        SPACE: {"item": payload},
    }


def _agent_message(payload: dict[str, Any], where: str, found: Problems) -> Row | None:
    """An ``agent_message`` item as the user message the model read: its text parts (an
    ``encrypted_content`` part is kept in the item, never shown), from its author."""
    checks = [
        has_text(payload, "author", where, found),
        has_text(payload, "recipient", where, found),
    ]
    content = payload.get("content")
    shown: list[Any] | None = None
    if "content" not in payload:
        found.add(f"{where}.content", "is missing")
        checks.append(False)
    elif not isinstance(content, list):
        found.add(
            f"{where}.content",
            f"must be a list of input_text and encrypted_content parts, not {describe(content)}",
        )
        checks.append(False)
    else:
        shown = _agent_text(content, f"{where}.content", found)
        checks.append(shown is not None)
    if not all(checks):
        return None
    kept = {"author": payload["author"], "recipient": payload["recipient"], "item": payload}
    return row("user", shown or None, {SPACE: kept})


def _agent_text(content: list[Any], where: str, found: Problems) -> list[Any] | None:
    """The ``input_text`` parts of an agent message's content, or None when a part is
    neither that nor an ``encrypted_content`` part."""
    shown: list[Any] = []
    valid = True
    for index, part in enumerate(content):
        at = f"{where}[{index}]"
        if not is_object(part, at, found) or not has_choice(part, "type", at, AGENT_PARTS, found):
            valid = False
            continue
        key = "text" if part["type"] == "input_text" else "encrypted_content"
        if not has_text(part, key, at, found):
            valid = False
        elif key == "text":
            shown.append({"type": "input_text", "text": part["text"]})
    return shown if valid else None


def _communication(payload: dict[str, Any], line: dict[str, Any], found: Problems) -> Row | None:
    """An ``inter_agent_communication`` line as Codex shows it to the model
    (``to_model_input_item``): its ``content``, or, when it is sent encrypted, the
    envelope Codex writes before the ciphertext."""
    checks = [has_text(payload, key, "payload", found) for key in ("author", "recipient")]
    checks.append(has_text(payload, "content", "payload", found))
    sealed = payload.get("encrypted_content")
    if sealed is not None and not isinstance(sealed, str):
        found.add("payload.encrypted_content", f"must be a string, not {describe(sealed)}")
        checks.append(False)
    trigger = payload.get("trigger_turn")
    if "trigger_turn" not in payload:
        found.add("payload.trigger_turn", "is missing")
        checks.append(False)
    elif not isinstance(trigger, bool):
        found.add("payload.trigger_turn", f"must be true or false, not {describe(trigger)}")
        checks.append(False)
    if not all(checks):
        return None
    author, recipient = payload["author"], payload["recipient"]
    if isinstance(sealed, str):
        kind = "NEW_TASK" if trigger else "MESSAGE"
        text = f"Message Type: {kind}\nTask name: {recipient}\nSender: {author}\nPayload:\n"
    else:
        text = payload["content"]
    kept = {"author": author, "recipient": recipient, "line": line}
    return row("user", [{"type": "input_text", "text": text}], {SPACE: kept})


def _injected(new: Row, metadata: Mapping[str, Any]) -> str | None:
    """What Codex injected this user or developer message as, or None."""
    developer = metadata.get("openai_role") == "developer"
    if new["role"] != "user" and not developer:
        return None
    return _context_name(new["content"]) or ("developer" if developer else None)


def _context_name(content: object) -> str | None:
    """What Codex injects a message of this content as, by the start of its first text."""
    first = content[0] if isinstance(content, list) and content else content
    text = first.get("text") if isinstance(first, dict) else first
    if isinstance(text, str):
        start = text.lstrip()
        for prefix, name in INJECTED:
            if start.startswith(prefix):
                return name
    return None


# Rollbacks: the history Codex rebuilds on resume, replayed over the lines.


class _Held(NamedTuple):
    """An item of the history Codex rebuilds: the index of its line (None for one a
    ``compacted`` line's history holds), whether it starts a turn, and whether it is
    context Codex injects before a turn (dropped with the turn it comes before)."""

    line: int | None
    starts_turn: bool
    context: bool


def _rolled_back(entries: list[Entry]) -> dict[int, str]:
    """The lines of the turns each ``thread_rolled_back`` undid, by index, each with the
    place of that rollback: the conversation items replayed as Codex replays them on
    resume, a ``compacted`` line replacing what came before it with its history, a
    rollback dropping the last ``num_turns`` turns (``drop_last_n_user_turns``). Lines
    that cannot be stored take no part: they are not written back (an item is refused)."""
    history: list[_Held] = []
    undone: dict[int, str] = {}
    for index, entry in enumerate(entries):
        value = entry.value
        payload = value.get("payload") if isinstance(value, dict) else None
        if not isinstance(value, dict) or not isinstance(payload, dict):
            continue
        kind, item = value.get("type"), payload.get("type")
        if not isinstance(kind, str) or kind not in REPLAYED or entry.problem() is not None:
            continue
        if kind == "response_item" and isinstance(item, str) and item in ITEMS:
            history.append(_Held(index, *_turn_marks(payload)))
        elif kind == COMMUNICATION:
            history.append(_Held(index, True, False))
        elif kind == "compacted":
            history = _compacted(history, payload.get("replacement_history"))
        elif kind == "event_msg" and item == "thread_rolled_back":
            for held in _drop_turns(history, _num_turns(payload) or 0):
                if held.line is not None:
                    undone[held.line] = entry.where
    return undone


def _turn_marks(item: dict[str, Any]) -> tuple[bool, bool]:
    """Whether a conversation item starts a turn (``is_user_turn_boundary``: a user
    message Codex did not inject, a message from another agent) and whether it is
    injected context."""
    if item.get("type") == AGENT_MESSAGE:
        return True, False
    if item.get("type") != "message":
        return False, False
    role, content = item.get("role"), item.get("content")
    context = _context_name(content) is not None
    if role == "user":
        return not context, context
    if role == "assistant":
        return _is_communication(content), False
    return False, context and role == "developer"


def _is_communication(content: object) -> bool:
    """Whether an assistant message is a message between agents as Codex wrote one before
    June 2026: the communication's JSON as its only text."""
    part = content[0] if isinstance(content, list) and len(content) == 1 else None
    text = part.get("text") if isinstance(part, dict) else None
    if not isinstance(text, str) or not text.startswith("{"):
        return False
    try:
        sent = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(sent, dict)
        and all(isinstance(sent.get(key), str) for key in ("author", "recipient", "content"))
        and isinstance(sent.get("trigger_turn"), bool)
    )


def _compacted(history: list[_Held], replacement: object) -> list[_Held]:
    """The history after a ``compacted`` line: its ``replacement_history``; without one
    (before late 2025), the user messages Codex keeps and its summary."""
    if isinstance(replacement, list):
        return [_Held(None, *_turn_marks(item)) for item in replacement if isinstance(item, dict)]
    kept = [_Held(None, True, False) for held in history if held.starts_turn]
    return [*kept, _Held(None, True, False)]


def _drop_turns(history: list[_Held], turns: int) -> list[_Held]:
    """Drop the last ``turns`` turns of the history, and the context injected just before
    the first of them, never before the first turn (``drop_last_n_user_turns``)."""
    starts = [index for index, held in enumerate(history) if held.starts_turn]
    if turns == 0 or not starts:
        return []
    cut = starts[0] if turns >= len(starts) else starts[-turns]
    while cut > starts[0] and history[cut - 1].context:
        cut -= 1
    dropped = history[cut:]
    del history[cut:]
    return dropped


def _num_turns(payload: Mapping[str, Any]) -> int | None:
    turns = payload.get("num_turns")
    if isinstance(turns, int) and not isinstance(turns, bool) and 0 <= turns <= MAX_TURNS:
        return turns
    return None


def _unreadable_rollback(payload: Mapping[str, Any]) -> bool:
    return payload.get("type") == "thread_rolled_back" and _num_turns(payload) is None


FORMAT = Format(
    "codex",
    "Codex CLI rollout",
    "~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl (and ~/.codex/archived_sessions/)",
    "JSONL lines {timestamp, type, payload}: a session_meta line first (its payload with id, "
    "cwd, originator and cli_version), then response_item, event_msg and turn_context "
    "lines; or, from 2025, a header {id, timestamp, instructions} then bare response items",
    fits,
    read,
    provider="openai-responses",
    article="a",
    lines=True,
    write_native=write_native,
    native_name=native_name,
    native_refusal=native_refusal,
)
