"""Claude Code sessions written back (``write_native``) from what ``claude_code`` kept: the
session file ``claude --resume`` loads, healed calls answered in the CLI's own events.

Every kept line (message lines, bookkeeping, skipped events kept) is written in its
original order, as the CLI writes JSON (compact, keys in order), so that a clean session
comes back line for line (on PostgreSQL, whose ``jsonb`` keeps no key order, with the keys
in its order). A healed placeholder becomes the CLI's own result event, a ``user`` event
whose first block is a ``tool_result`` (``is_error`` true, the placeholder's text;
``toolUseResult`` "Error: <text>"), its envelope copied from the line that declared the
call (``promptId`` from the turn's prompt, ``sourceToolAssistantUUID`` where the file uses
it), its uuid ``uuid5(NAMESPACE_URL, "<sessionId>:<call id>")``, its timestamp 1 ms after
the line before it (never past the line after it). It is placed right after the turn's
last line and the healed turn is straightened as the CLI of every version resumes it: the
response's lines, its existing results, then the new ones, each pointing to the one
before, and whatever pointed into the turn then points to its last line (so does the event
right after it whose parent is no longer in the file, lost with the result). When the
turn's last result event also holds what the user typed (its text after the results), the
new results go before that event, which then points to the last of them and stays the
turn's last line: the results stay together, before the text, as Anthropic needs them.

A user turn made in the app is a plain ``user`` event at the end, pointing to the last
event before it, or, after a rewind checkpoint, to the event the checkpoint resumes from
(an assistant turn made in the app, a ``<synthetic>`` assistant event; a system message
made in the app has no place in a session and is refused). A queued prompt's row is its
``attachment`` line, written back in place like any other. Not written back: blank
lines, lines that are not JSON or not objects, the cut-off last line, bookkeeping that
could not be stored. Nothing that was kept is regenerated, so nothing else is lost; a
conversation not read from a Claude Code session is not written as one.

The file name (``native_name``) is the CLI's, ``<sessionId>.jsonl`` (a subagent's
``agent-<agentId>.jsonl``), every character of the id but ASCII letters, digits, ``.``,
``_`` and ``-`` made a ``-``: it comes from the file's own data and names a download.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from buffers.healing import jsontext
from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import is_placeholder, usable_id
from buffers.healing.messages import Message

from . import anthropic
from .claude_code_events import CHAIN, ENVELOPE, SPACE, block_ids, rewound_to, text_or_none
from .common import declared, namespace


def write_native(messages: Sequence[Message], metadata: Mapping[str, Any]) -> str:
    """The conversation as a Claude Code session file's text (JSONL, ending with a
    newline), healed calls answered in the CLI's own events."""
    kept = namespace(metadata, SPACE)
    if not kept:
        raise InvalidInput(
            [
                Problem(
                    "conversation",
                    "was not read from a Claude Code session (it keeps no claude_code "
                    "metadata), and Claude Code resumes no session without its events",
                )
            ]
        )
    writer = _Writer(kept, messages)
    for index, message in enumerate(messages):
        writer.message(index, message)
    writer.close()
    return writer.text()


@dataclass
class _Placed:
    """A line to write, at the place of the line ``number`` of the file read."""

    number: int
    order: int
    line: dict[str, Any]
    new: bool = False
    ahead: bool = False
    """Written before the line ``number`` itself (a new result before its turn's text)."""
    to_leaf: bool = False
    healed: str | None = None
    """On a healed turn's new lines and its last line: the uuid of the turn's last line,
    for the event after them whose parent is no longer in the file."""

    def key(self) -> tuple[int, bool, int]:
        return self.number, not self.ahead, self.order


@dataclass
class _Healing:
    """An assistant turn read from the file, its results, and the results made since."""

    lines: list[_Placed]
    results: list[_Placed] = field(default_factory=list)
    new: list[tuple[int, Message]] = field(default_factory=list)
    text_after: bool = False
    """Whether its last result event also holds other blocks (the user's text): its rows
    are results, then the user row, with the new results read between them."""


class _Writer:
    def __init__(self, kept: Mapping[str, Any], messages: Sequence[Message]) -> None:
        session = kept.get("sessionId")
        self.session = session if isinstance(session, str) else ""
        self.subagent = isinstance(kept.get("subagent_of"), dict)
        self.placed: list[_Placed] = []
        self.high = -1
        self.turn: _Healing | None = None
        self.template: dict[str, Any] = {}
        self.prompt_id: str | None = None
        self.reparent: dict[str, str | None] = {}
        """New parents of the lines of a healed turn (by uuid)."""
        self.rechain: dict[str, str] = {}
        """The last line of a healed turn, for what pointed into it (by uuid)."""
        self.sourced = any(
            "sourceToolAssistantUUID" in line
            for message in messages
            if message.role == "tool"
            for line in _lines(namespace(message, SPACE).get("lines"))
        )

    def place(self, number: int, line: dict[str, Any], *, new: bool = False) -> _Placed:
        placed = _Placed(number, len(self.placed), line, new)
        self.placed.append(placed)
        return placed

    def original(self, lines: object, numbers: object) -> list[_Placed]:
        at = numbers if isinstance(numbers, list) else []
        found: list[_Placed] = []
        for index, line in enumerate(lines if isinstance(lines, list) else ()):
            if not isinstance(line, dict):
                continue
            number = at[index] if index < len(at) else None
            if not isinstance(number, int) or isinstance(number, bool):
                number = self.high
            found.append(self.place(number, line))
        self.high = max([self.high, *(placed.number for placed in found)])
        return found

    def message(self, index: int, message: Message) -> None:
        kept = namespace(message, SPACE)
        self.original(kept.get("before"), kept.get("before_at"))
        self.original(kept.get("after"), kept.get("after_at"))
        if _lines(kept.get("lines")):
            own = self.original(kept.get("lines"), kept.get("lines_at"))
            if message.role == "assistant":
                self.close()
                self.turn = _Healing(own)
            elif message.role == "tool" and self.turn is not None:
                self.turn.results.extend(own)
            else:
                self.close()
            for placed in own:
                self.template = placed.line
                if isinstance(placed.line.get("promptId"), str):
                    self.prompt_id = placed.line["promptId"]
        elif kept.get("same_event") is True:
            if message.role != "tool":
                if self.turn is not None and self.turn.results:
                    self.turn.text_after = True
                self.close()
        elif message.role == "tool" and self.turn is not None:
            self.turn.new.append((index, message))
        else:
            self.close()
            self.append(index, message)

    def close(self) -> None:
        """Answer the healed turn in the CLI's events and straighten it (§8.2 of the
        notes): its lines, its results, then the new results, each after the one before;
        and when its last result event holds the user's text, that event after them."""
        turn, self.turn = self.turn, None
        if turn is None or not turn.new:
            return
        results = list({id(placed.line): placed for placed in turn.results}.values())
        results.sort(key=lambda placed: placed.number)
        last = results.pop() if turn.text_after and results else None
        chain = [
            placed.line
            for placed in [*turn.lines, *results]
            if isinstance(placed.line.get("uuid"), str)
        ]
        for before, after in pairwise(chain):
            self.reparent[after["uuid"]] = before["uuid"]
        declaring: dict[str, dict[str, Any]] = {}
        for placed in turn.lines:
            sent = placed.line.get("message")
            for named in block_ids(sent, "tool_use", "id") if isinstance(sent, dict) else ():
                declaring.setdefault(named, placed.line)
        prompt_id = next(
            (
                placed.line["promptId"]
                for placed in [*results, *([last] if last else [])]
                if isinstance(placed.line.get("promptId"), str)
            ),
            self.prompt_id,
        )
        if last is not None:
            anchor = last.number
        else:
            anchor = max(placed.number for placed in [*turn.lines, *results])
        previous: str | None = chain[-1]["uuid"] if chain else None
        made: list[_Placed] = []
        for index, message in turn.new:
            call = usable_id(message.metadata.get("tool_call_id"))
            template = declaring.get(call or "", turn.lines[-1].line)
            identity = self.identity(call if call is not None else f"message {index}")
            source = template.get("uuid") if self.sourced else None
            body = _result(message, call, identity, source if isinstance(source, str) else None)
            line = _event(template, body, prompt_id)
            line["parentUuid"] = previous
            placed = self.place(anchor, line, new=True)
            placed.ahead = last is not None
            made.append(placed)
            previous = identity
        if last is not None and isinstance(last.line.get("uuid"), str):
            self.reparent[last.line["uuid"]] = previous
            chain.append(last.line)
            previous = last.line["uuid"]
            made.append(last)
        for placed in made:
            placed.healed = previous
        for line in chain:
            if previous is not None:
                self.rechain[line["uuid"]] = previous

    def append(self, index: int, message: Message) -> None:
        """A message made in the app, at the end, after the last event before it."""
        call = usable_id(message.metadata.get("tool_call_id"))
        placeholder = is_placeholder(message) and call is not None
        identity = self.identity(call if placeholder and call else f"message {index}")
        if message.role == "system":
            raise InvalidInput(
                [
                    Problem(
                        f"messages[{index}]",
                        "is a system message made in the app, which a Claude Code session "
                        "has no place for",
                    )
                ]
            )
        if message.role == "tool":
            body = _result(message, call, identity, None)
        elif message.role == "assistant":
            body = _assistant(message, identity)
        else:
            body = {
                "type": "user",
                "message": {"role": "user", "content": _user_content(message.content)},
                "uuid": identity,
                "timestamp": "",
            }
        line = _event(self.template, body, None)
        self.place(self.high, line, new=True).to_leaf = True

    def identity(self, name: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.session}:{name}"))

    def text(self) -> str:
        ordered = sorted(self.placed, key=_Placed.key)
        following: list[str | None] = [None] * len(ordered)
        upcoming: str | None = None
        for index in range(len(ordered) - 1, -1, -1):
            following[index] = upcoming
            stamp = ordered[index].line.get("timestamp")
            if not ordered[index].new and isinstance(stamp, str) and stamp:
                upcoming = stamp
        healed = any(placed.healed is not None for placed in ordered)
        known = {text_or_none(p.line.get("uuid")) for p in ordered} if healed else set()
        written: list[str] = []
        leaf: str | None = None
        """The event a user turn made in the app follows: the last one, or the one a rewind
        checkpoint after it resumes from (the last line of its turn, once healed)."""
        events: set[str] = set()
        previous: str | None = None
        bridge: str | None = None
        """The last line of a healed turn just written, for the event after it."""
        for index, placed in enumerate(ordered):
            line = placed.line
            chained = (
                text_or_none(line.get("type")) in CHAIN
                and isinstance(line.get("uuid"), str)
                and (self.subagent or line.get("isSidechain") is not True)
            )
            if placed.new:
                if placed.to_leaf:
                    line["parentUuid"] = leaf
                line["timestamp"] = _after(previous, following[index])
            else:
                line = self.rechained(line)
                parent = line.get("parentUuid")
                if bridge is not None and chained:
                    if isinstance(parent, str) and parent not in known:
                        line = {**line, "parentUuid": bridge}
                    bridge = None
            if placed.healed is not None:
                bridge = placed.healed
            stamp = line.get("timestamp")
            if isinstance(stamp, str) and stamp:
                previous = stamp
            if chained:
                leaf = line["uuid"]
                events.add(line["uuid"])
            elif (rewound := rewound_to(line)) is not None and rewound in events:
                leaf = self.rechain.get(rewound, rewound)
            written.append(jsontext.dumps(line))
        return "\n".join([*written, ""])

    def rechained(self, line: dict[str, Any]) -> dict[str, Any]:
        if not self.reparent and not self.rechain:
            return line
        identity, parent = line.get("uuid"), line.get("parentUuid")
        wanted = parent
        if isinstance(identity, str) and identity in self.reparent:
            wanted = self.reparent[identity]
        elif isinstance(parent, str) and parent in self.rechain:
            wanted = self.rechain[parent]
        return line if wanted == parent else {**line, "parentUuid": wanted}


def _lines(value: object) -> list[dict[str, Any]]:
    return [line for line in value if isinstance(line, dict)] if isinstance(value, list) else []


def _event(
    template: Mapping[str, Any], body: dict[str, Any], prompt_id: str | None
) -> dict[str, Any]:
    """A new event: ``parentUuid`` first, the envelope of ``template`` where it has it
    (before or after the body, as the file's era writes it), and ``body``."""
    line: dict[str, Any] = {"parentUuid": None}
    placed = False
    for key, value in template.items():
        if key in ENVELOPE:
            if key not in ("parentUuid", "logicalParentUuid"):
                line[key] = value
            if key == "isSidechain" and prompt_id is not None:
                line["promptId"] = prompt_id
        elif not placed:
            line.update(body)
            placed = True
    if not placed:
        line.update(body)
    if prompt_id is not None and "promptId" not in line:
        line["promptId"] = prompt_id
    return line


def _result(
    message: Message, call: str | None, identity: str, source: str | None
) -> dict[str, Any]:
    """The CLI's tool result event for ``message`` (an error for a healed placeholder)."""
    content = _user_content(message.content)
    error = True if is_placeholder(message) else message.metadata.get("is_error")
    block: dict[str, Any] = {"tool_use_id": call, "type": "tool_result", "content": content}
    if isinstance(error, bool):
        block["is_error"] = error
    body: dict[str, Any] = {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "uuid": identity,
        "timestamp": "",
    }
    if error is True and isinstance(content, str):
        body["toolUseResult"] = f"Error: {content}"
    if source is not None:
        body["sourceToolAssistantUUID"] = source
    return body


def _assistant(message: Message, identity: str) -> dict[str, Any]:
    content = anthropic.assistant_content(message)
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return {
        "message": {
            "id": identity,
            "type": "message",
            "role": "assistant",
            "model": "<synthetic>",
            "content": blocks,
            "stop_reason": "tool_use" if declared(message) else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        },
        "type": "assistant",
        "uuid": identity,
        "timestamp": "",
    }


def _user_content(content: object) -> object:
    if content is None:
        return ""
    return content if isinstance(content, str) else anthropic.user_content(content)


def _after(previous: str | None, following: str | None) -> str:
    """A timestamp 1 ms after ``previous``, never past ``following`` (the CLI's loaders
    need one that does not go backwards)."""
    if previous is None:
        return following or "1970-01-01T00:00:00.000Z"
    start = _moment(previous)
    if start is None:
        return previous
    try:
        later = start + timedelta(milliseconds=1)
    except OverflowError:  # the calendar's last millisecond
        return previous
    limit = _moment(following) if following else None
    if limit is not None and later > limit:
        return previous
    return later.strftime("%Y-%m-%dT%H:%M:%S.") + f"{later.microsecond // 1000:03d}Z"


def _moment(stamp: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    try:
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:  # year 1 or 9999, past the calendar once in UTC
        return None


def native_name(metadata: Mapping[str, Any]) -> str:
    """``<sessionId>.jsonl``, as the CLI names a session's file; ``agent-<agentId>.jsonl``
    for a subagent (a 1.x subagent, which had no file, after its first event's uuid)."""
    kept = namespace(metadata, SPACE)
    if isinstance(kept.get("subagent_of"), dict):
        name = kept.get("agentId", kept.get("root"))
        return f"agent-{_safe(name)}.jsonl" if isinstance(name, str) and name else ""
    session = kept.get("sessionId")
    return f"{_safe(session)}.jsonl" if isinstance(session, str) and session else ""


def _safe(name: str) -> str:
    """``name`` for a file name (and a download's header): ASCII letters, digits, ``.``,
    ``_`` and ``-``, every other character a ``-``; at most 200 characters."""
    return _UNSAFE.sub("-", name[:200])


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
