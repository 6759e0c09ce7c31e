"""OpenTelemetry GenAI messages read into rows: the values of ``gen_ai.input.messages``,
``gen_ai.output.messages`` and ``gen_ai.system_instructions`` (semantic conventions 1.37
and later), however a file holds them (``otel_genai`` tells the shapes apart; the log
reader, ``otel_logs``, reads the messages of a details event here too).

A message is ``{"role", "parts": [...], "name"?, "finish_reason"?}`` and every part has a
string ``type``.

Rows. A ``tool_call`` part is a canonical call on the row of its message (its
``arguments``, any JSON, become JSON text; a string is kept verbatim; none is ``"{}"``,
marked ``arguments_kind``). A ``tool_call_response`` part (its value under ``response``,
or ``result`` as pydantic-ai and openai-agents spell it) is a tool row answering the
call: in whatever message it stands (a ``user`` one for pydantic-ai, Strands and
Gemini-based emitters), it comes before that message's other parts, which make one row
of the message's role after it (a ``tool`` message's other parts make a user row). A
string response is the row's content, an object or a list is kept as it is, any other
value is its JSON text. Text parts are ``{"type": "text", "text"}`` parts, one alone is
a string; ``blob``, ``uri``, ``file`` and parts of any other type are content parts as
they are. In an assistant message, ``reasoning``/``thinking``, ``compaction``, the
provider's own tools (``server_tool_call``/``_response``, pydantic-ai's
``builtin: true``) and an order other than content-then-calls are kept in
``metadata.otel.layout``, as the Anthropic and Gemini readers keep thinking: the
providers have no place to send them back. ``gen_ai.system_instructions`` (a list of
parts) is one leading system row marked ``otel.system_instructions``.

Roles: ``system``, ``user``, ``assistant`` and ``tool`` are the stored roles;
``developer`` is a system row and ``model`` an assistant row; any other role, ``""``
included (google-genai writes it for roles it does not know), is a user row. A message
that declares a call is an assistant row whatever its role (Strands' tool spans give the
call a ``tool`` role). A role read as another is kept in ``otel.role``, on the tool rows
too. ``finish_reason`` is ``facts.finish_reason`` and ``name`` is
``metadata.name``; other message keys are kept in ``otel.message``. Other output
messages than the first (other choices) are kept, as they are, in ``otel.other_outputs``
of the first's row.

Sent again. A message list that starts with every message read so far (the next call's
input repeats the history) is read from where it goes on; messages are compared by role
and parts alone, since an output message carries a ``finish_reason`` and an upload line
an ``index`` that the repeated one lacks. ``otel.resent`` counts the messages left out so.
Two differences are allowed, each seen in upload hooks' files. A message read twice or
more in a row (an output line written twice) that the list sends once was written
again, not said again: the copies are left out (the entries are read again without
them, so that a copy's call never takes an id of its own), each named among the skipped
with where it is. A leading system message the list sends changed (the date in the
instructions) stays the row as read first, as every message read first does; the later
versions are kept, with where each was, in its ``otel.sent_later``. The system message
alone matching is no resend (another conversation may share the instructions), and
neither is a list that leaves out a message read once: it is read whole, as before.

Pairing. A response answers the open call with its id, in order: Gemini-based emitters
make ids up as ``<function>_<part index>`` (``get_weather_0``), which recur every turn,
so a response answers the earliest open call with its id in the latest message that has
one (the call before it). A call whose id was used before (written so, or made up) is
stored as ``<id>#<n>``, the first n from 2 no id of the file takes (the id as written
in ``otel.id``), and its response names that, so that every call keeps its own result.
A call without a usable id gets ``otel-<message>-<k>`` (marked ``synthetic_id``); a
response without one answers by position, the first open call of the latest message
that declared calls. Each message's calls, all of them and those of each id, keep a
cursor to the first that may be open, so pairing is linear. A crash is a call no later
response answers: ``finish_reason`` is not trusted for it (Gemini says ``stop`` on a
call turn). Provider-side tool parts are answered in place and declare nothing.

Refused, naming the place (``line 2: [0].parts[1].name``): a message without a string
role or a list of typed parts, a call without a string name, an id that is not a string
or an integer, JSON text that is not JSON, what cannot be stored.

``read_messages(input, output, system_instructions, where)`` is the reader of the three
attribute values alone, for a span's attributes (live ingest).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from buffers.healing import jsontext
from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import usable_id
from buffers.healing.messages import MAX_ID_LENGTH, describe, json_problem

from . import media
from .common import (
    Converted,
    Problems,
    Row,
    has_id,
    has_text,
    is_object,
    json_text,
    layout,
    row,
    storable,
    text_of,
    without,
)
from .source import Entry, Reading, Skipped, Source

SPACE = "otel"
INPUT_KEYS = ("input", "gen_ai.input.messages")
OUTPUT_KEYS = ("output", "gen_ai.output.messages")
INSTRUCTION_KEYS = ("system_instructions", "gen_ai.system_instructions")
ATTRIBUTE_KEYS = frozenset(
    {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
)
LIST_KEYS = frozenset({*INPUT_KEYS, *OUTPUT_KEYS})
WRAPPER_KEYS = frozenset({*LIST_KEYS, *INSTRUCTION_KEYS})
GEMINI_PART_KEYS = frozenset(
    {
        "functionCall",
        "functionResponse",
        "inlineData",
        "fileData",
        "executableCode",
        "codeExecutionResult",
        "function_call",
        "function_response",
        "inline_data",
        "file_data",
    }
)
"""Keys of Gemini parts: a part with a ``type`` and one of these is not guessed at."""
ROLES = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
ALIASES = {"developer": "system", "model": "assistant"}
KEPT_IN_LAYOUT = frozenset(
    {"reasoning", "thinking", "compaction", "server_tool_call", "server_tool_call_response"}
)
MESSAGE_KEYS = ("role", "parts", "name", "finish_reason", "index")
RESPONSE_AND_CALL = frozenset({"tool_call", "tool_call_response"})
OTHER_DOCUMENT_KEYS = frozenset(
    {"messages", "contents", "resourceLogs", "resourceSpans", "resourceMetrics"}
)
"""Keys of other documents (chat requests, OTLP exports): an object with one is not an
``{input, output}`` object."""


def stored_role(written: str) -> str:
    """The stored role a written one is read as (``developer`` a system row...)."""
    return ROLES.get(written) or ALIASES.get(written) or "user"


# The signature of messages.


def parts_are_typed(parts: object) -> int | None:
    """How many parts ``parts`` holds when it is a list of OpenTelemetry parts (objects
    with a string ``type`` and none of Gemini's keys), else None."""
    if not isinstance(parts, list):
        return None
    for part in parts:
        if (
            not isinstance(part, dict)
            or not isinstance(part.get("type"), str)
            or not GEMINI_PART_KEYS.isdisjoint(part)
        ):
            return None
    return len(parts)


def message_parts(value: object) -> int | None:
    """How many parts a message holds, or None when ``value`` is not a message."""
    if not isinstance(value, dict) or not isinstance(value.get("role"), str):
        return None
    return parts_are_typed(value.get("parts"))


def list_parts(value: object) -> int | None:
    """How many parts a message list holds, or None when ``value`` is not one."""
    if not isinstance(value, list):
        return None
    total = 0
    for message in value:
        count = message_parts(message)
        if count is None:
            return None
        total += count
    return total


def wrapper_parts(value: object) -> int | None:
    """How many parts an ``{input, output, system_instructions}`` object holds (JSON text
    under an attribute name counts as one), or None when ``value`` is not one."""
    if not isinstance(value, dict) or not OTHER_DOCUMENT_KEYS.isdisjoint(value):
        return None
    if LIST_KEYS.isdisjoint(value):
        return None
    total = 0
    for key in WRAPPER_KEYS & value.keys():
        held = value[key]
        if key in ATTRIBUTE_KEYS and isinstance(held, str):
            if not held.lstrip().startswith("["):
                return None
            total += 1
            continue
        if key == "input" and held == []:
            return None  # {"input": []} is OpenAI Responses'
        count = parts_are_typed(held) if key in INSTRUCTION_KEYS else list_parts(held)
        if count is None:
            return None
        total += count
    return total


def chunk_parts(value: object) -> int | None:
    """How many parts one entry of a message transcript holds: a message, a message
    list or an ``{input, output}`` object; None for anything else."""
    if isinstance(value, list):
        return list_parts(value)
    count = message_parts(value)
    return count if count is not None else wrapper_parts(value)


# Places.


def at_key(path: str, key: str) -> str:
    """``key`` inside ``path``: ``input[3]``, ``line 2: parts[0]``, ``[3].parts``."""
    if not path or path.endswith(": "):
        return f"{path}{key}"
    return f"{path}{key}" if key.startswith("[") else f"{path}.{key}"


def place_of(path: str) -> str:
    """A path as a place of its own: ``line 2`` for ``line 2: ``."""
    return path.removesuffix(": ") or "file"


def entry_path(entry: Entry) -> str:
    """The path an entry's places start with: ``line 2: ``, ``[3]``, or none."""
    if not entry.where or entry.where.startswith("["):
        return entry.where
    return f"{entry.where}: "


# Pairing.


@dataclass
class Open:
    """A declared call: its id as stored, and whether a response answered it."""

    id: str
    answered: bool = False


@dataclass
class Declared:
    """Calls one message declared (all of them, or those of one id), in order, with a
    cursor to the first that may still be open: each call is passed over once."""

    message: int
    calls: list[Open] = field(default_factory=list)
    next: int = 0

    def first_open(self) -> Open | None:
        calls = self.calls
        while self.next < len(calls) and calls[self.next].answered:
            self.next += 1
        return calls[self.next] if self.next < len(calls) else None

    def take(self) -> Open | None:
        """The first open call, now answered."""
        call = self.first_open()
        if call is not None:
            call.answered = True
            self.next += 1
        return call


@dataclass
class Pairing:
    """Which call a response answers: the calls of each id as written, message by message
    (a response answers the latest message's), the calls of the latest message that
    declared any (for responses without an id), and every id stored so far (to make a
    repeated one unique without taking an id the file writes)."""

    by_id: dict[str, list[Declared]] = field(default_factory=dict)
    turn: Declared = field(default_factory=lambda: Declared(-1))
    used: set[str] = field(default_factory=set)
    suffixes: dict[str, int] = field(default_factory=dict)
    latest: dict[str, str] = field(default_factory=dict)

    def start_turn(self, message: int) -> None:
        """A message declares calls: responses without an id now answer its calls."""
        self.turn = Declared(message)

    def unique(self, key: str, written: str) -> str:
        """``written`` when no call took its id ``key`` yet, else ``key#n`` with the
        least n from 2 on that is free (shortened to fit an id's length)."""
        if key not in self.used:
            self.used.add(key)
            return written
        number = self.suffixes.get(key, 1)
        while True:
            number += 1
            tail = f"#{number}"
            stored = f"{key[: MAX_ID_LENGTH - len(tail)]}{tail}"
            if stored not in self.used:
                break
        self.suffixes[key] = number
        self.used.add(stored)
        return stored

    def declare(self, written: object, message: int, place: int) -> tuple[str, dict[str, Any]]:
        """The id to store for the ``place``-th call of a message, and what to keep of the
        id as written."""
        kept: dict[str, Any] = {}
        key = usable_id(written)
        if key is None:
            made_up = f"otel-{message}-{place}"
            stored = self.unique(made_up, made_up)
            kept["synthetic_id"] = True
            if written is not None:
                kept["id"] = written
        else:
            stored = self.unique(key, str(written))
            if stored != written:
                kept["id"] = written
            self.latest[key] = stored
        call = Open(stored)
        if key is not None:
            declared = self.by_id.setdefault(key, [])
            if not declared or declared[-1].message != message:
                declared.append(Declared(message))
            declared[-1].calls.append(call)
        self.turn.calls.append(call)
        return stored, kept

    def answer(self, written: object) -> tuple[object, dict[str, Any]]:
        """The id of the call a response answers, and what to keep of its id as written."""
        key = usable_id(written)
        if key is None:
            call = self.turn.take()
            if call is None:
                return written, {}
            return call.id, ({"synthetic_id": True} if written is None else {"id": written})
        declared = self.by_id.get(key, [])
        while declared and declared[-1].first_open() is None:
            declared.pop()
        if not declared:
            stored = self.latest.get(key)
            return (written, {}) if stored is None else (stored, {"id": written})
        call = declared[-1].take()
        assert call is not None
        return call.id, ({} if call.id == written else {"id": written})


# Reading messages.


def decoded(value: object, path: str, problems: Problems) -> object:
    """An attribute's value as JSON: JSON text (as on Python spans) is read once."""
    if not isinstance(value, str):
        return value
    try:
        return jsontext.loads(value)[0]
    except jsontext.DuplicateKey as error:
        problems.add(error.under(path), error.why)
    except json.JSONDecodeError as error:
        problems.add(path, f"is not JSON text: {error.msg} (column {error.colno})")
    except (RecursionError, ValueError):
        problems.add(path, "cannot be read as JSON")
    return None


def same_message(sent: object, read: dict[str, Any]) -> bool:
    """Whether ``sent`` is the message ``read`` sent again: the same role and the same
    parts as sent back (``sent_back``); an output's ``finish_reason``, an upload line's
    ``index`` are not sent again."""
    if not isinstance(sent, dict) or sent.get("role") != read["role"]:
        return False
    parts = sent.get("parts")
    return parts == read["parts"] or sent_back(parts) == sent_back(read["parts"])


def sent_back(parts: object) -> object:
    """Parts as an agent sends them back in the next call's history: without reasoning
    (most models are not sent it back) or empty text (many agents drop it), each
    ``canonical_part``."""
    if not isinstance(parts, list):
        return parts
    return [canonical_part(part) for part in parts if not not_sent_back(part)]


def not_sent_back(part: object) -> bool:
    return isinstance(part, dict) and (
        part.get("type") == "reasoning"
        or (part.get("type") == "text" and part.get("content") == "")
    )


def canonical_part(part: object) -> object:
    """A part as it compares with the same part spelled otherwise: a call's arguments
    written as JSON text read as the JSON they hold (blank text as none), and keys
    holding null left out."""
    if not isinstance(part, dict):
        return part
    arguments = part.get("arguments") if part.get("type") == "tool_call" else None
    if arguments is None and None not in part.values():
        return part
    canonical = {key: value for key, value in part.items() if value is not None}
    if isinstance(arguments, str):
        try:
            held = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            held = arguments
        if isinstance(held, dict | list):
            canonical["arguments"] = held
        elif arguments.strip() == "":
            del canonical["arguments"]
    return canonical


@dataclass
class Run:
    """The same message read several times in a row: where the copies end (past the
    last), shared by each, so that a list that sends it once passes them over at once."""

    message: dict[str, Any]
    end: int


@dataclass
class MessageReader:
    """Reads OpenTelemetry messages, in order, into rows, pairing responses with calls."""

    problems: Problems
    rows: list[Row] = field(default_factory=list)
    pairing: Pairing = field(default_factory=Pairing)
    history: list[Any] = field(default_factory=list)
    """The messages read, as written: to tell a list that sends them again."""
    places: list[str] = field(default_factory=list)
    """Where each message of ``history`` was read (``line 3: [0]``)."""
    runs: list[Run] = field(default_factory=list)
    """The run of copies each message of ``history`` stands in."""
    instructions: object = None
    resent: int = 0
    leading: Row | None = None
    """The row of the first message read when it is a system message, which a later
    list may send changed."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Messages read twice in a row that a later list sends once: where, and why they are
    left out. Found while reading (they were read by then), and left out when the entries
    are read again."""
    skipped: list[Skipped] = field(default_factory=list)

    def decoded(self, value: object, path: str) -> object:
        return decoded(value, path, self.problems)

    def system_instructions(self, value: object, path: str) -> None:
        parts = self.decoded(value, path)
        if parts is None or parts == [] or parts == self.instructions:
            return
        if not isinstance(parts, list):
            self.problems.add(path, f"must be a list of parts, not {describe(parts)}")
            return
        if not self.typed(parts, path) or not storable(parts, path, self.problems):
            return
        self.instructions = parts
        metadata = {SPACE: {"system_instructions": True}}
        self.rows.append(row("system", content_of([text_part(p) for p in parts]), metadata))

    def typed(self, parts: list[Any], path: str) -> bool:
        """Whether every part is an object with a string ``type`` (saying where not)."""
        before = len(self.problems)
        for place, part in enumerate(parts):
            at = f"{path}[{place}]"
            if is_object(part, at, self.problems):
                has_text(part, "type", at, self.problems)
        return len(self.problems) == before

    def messages(
        self, value: object, path: str, *, output: bool = False, start: int | None = None
    ) -> None:
        """A message list; ``output`` is the model's, one message per choice: the first
        is read, the others are kept on its row. ``start``: how many of its first
        messages are known to be sent again (else they are compared with those read)."""
        messages = self.decoded(value, place_of(path))
        if messages is None:
            return
        if not isinstance(messages, list):
            self.problems.add(
                place_of(path), f"must be a list of messages, not {describe(messages)}"
            )
            return
        first, others = 0, []
        if output:
            messages, others = messages[:1], messages[1:]
        elif start is not None:
            first = start
        else:
            first = self.resent_of(messages, path) or 0
        self.resent += first
        before = len(self.rows)
        for index in range(first, len(messages)):
            self.message(messages[index], path, index)
        if (
            others
            and len(self.rows) > before
            and storable(others, at_key(path, "[1:]"), self.problems)
        ):
            self.rows[before]["metadata"].setdefault(SPACE, {})["other_outputs"] = others

    def resent_of(self, messages: list[Any], path: str) -> int | None:
        """How many first messages of a list send again every message read so far, in
        order (a call's input sends the whole history again), or None when it does not.
        Allowed for: a message read twice in a row that the list sends once (an output
        line written twice), left out (``left_out``); a leading system message that
        changed (a date in the instructions), kept as first read, its later version in
        ``otel.sent_later``. Only the system message matching is no resend: another
        conversation may share its instructions."""
        history = self.history
        read = sent = 0
        changed = False
        copies: list[range] = []
        while read < len(history):
            if sent < len(messages) and same_message(messages[sent], history[read]):
                read, sent = read + 1, sent + 1
            elif read == 0 and messages and self.is_changed_system(messages[0]):
                read, sent, changed = 1, 1, True
            elif read > 0 and self.runs[read] is self.runs[read - 1]:
                copies.append(range(read, self.runs[read].end))
                read = self.runs[read].end
            else:
                return None
        if not history or (changed and sent == 1):
            return None
        if changed:
            self.note_sent_later(messages[0], at_key(path, "[0]"))
        if copies:
            self.leave_out(copies, place_of(path))
        return sent

    def is_changed_system(self, sent: object) -> bool:
        """Whether ``sent`` is a system message that can stand for the leading one."""
        return (
            self.leading is not None
            and message_parts(sent) is not None
            and json_problem(sent) is None
            and isinstance(sent, dict)
            and stored_role(sent["role"]) == "system"
            and all(part["type"] not in RESPONSE_AND_CALL for part in sent["parts"])
        )

    def note_sent_later(self, sent: dict[str, Any], where: str) -> None:
        """A later version of the leading system message, on its row (once in a row)."""
        assert self.leading is not None
        kept = self.leading["metadata"].setdefault(SPACE, {}).setdefault("sent_later", [])
        if not kept or not same_message(sent, kept[-1]["message"]):
            kept.append({"where": where, "message": sent})

    def leave_out(self, copies: list[range], resend: str) -> None:
        """Copies of the message read before each range, which ``resend`` sends once: left
        out of the history, and of the rows when the entries are read again."""
        dropped: set[int] = set()
        for run in copies:
            original = self.places[run.start - 1]
            for copy in run:
                self.left_out[self.places[copy]] = (
                    f"is the message at {original} written again ({resend} sends it once)"
                )
            dropped.update(run)
        history, places = self.history, self.places
        self.history, self.places, self.runs = [], [], []
        for number, (message, place) in enumerate(zip(history, places, strict=True)):
            if number not in dropped:
                self.history.append(message)
                self.places.append(place)
                self.note_run(message)

    def note_run(self, raw: dict[str, Any]) -> None:
        """The run of copies the message just read stands in: the last one's, when it is
        the same message read again."""
        number = len(self.history) - 1
        last = self.runs[-1] if self.runs else None
        if last is not None and last.end == number and same_message(raw, last.message):
            last.end = number + 1
            self.runs.append(last)
        else:
            self.runs.append(Run(raw, number + 1))

    def message(self, raw: object, path: str, index: int | None = None) -> None:
        """One message; its place is ``path`` (or ``path[index]``), made only for errors."""
        if message_parts(raw) is None or json_problem(raw) is not None:
            self.refuse(raw, path if index is None else at_key(path, f"[{index}]"))
            return
        assert isinstance(raw, dict)
        read_at = place_of(path if index is None else at_key(path, f"[{index}]"))
        if read_at in self.left_out:
            self.skipped.append(Skipped(read_at, self.left_out[read_at]))
            return
        parts: list[dict[str, Any]] = raw["parts"]
        self.history.append(raw)
        self.places.append(read_at)
        self.note_run(raw)
        number = len(self.history) - 1
        written_role: str = raw["role"]
        calls: list[dict[str, Any]] = []
        content: list[Any] = []
        kinds: list[Any] = []
        results: list[Row] = []
        kept_parts = text_after_call = False
        for place, part in enumerate(parts):
            kind = part["type"]
            if kind in KEPT_IN_LAYOUT or part.get("builtin") is True:
                kinds.append(part)
                content.append(part)
                kept_parts = True
            elif kind == "tool_call":
                if not calls:
                    self.pairing.start_turn(number)
                call = self.call(part, number, len(calls))
                if call is not None:
                    calls.append(call)
                    kinds.append("call")
                else:
                    self.refuse_part(part, path, index, place)
            elif kind == "tool_call_response":
                result = self.response(part)
                if result is not None:
                    results.append(result)
                else:
                    self.refuse_part(part, path, index, place)
            else:
                content.append(text_part(conventions_part(part)))
                kinds.append("content")
                text_after_call = text_after_call or bool(calls)
        role = stored_role(written_role)
        if calls:
            role = "assistant"
        elif role == "tool":
            role = "user"  # a stored tool row answers a call; only responses do here
        kept: dict[str, Any] = {}
        own: Row | None = None
        if role != written_role and (content or calls or not results):
            kept["role"] = written_role
        if role == "assistant":
            if kept_parts or text_after_call:
                kept["layout"] = layout(kinds)
                content = [part for part in content if not _in_layout(part)]
            own = row("assistant", content_of(content), {"tool_calls": calls} if calls else {})
        elif content or not results:
            own = row(role, content_of(content))
        if written_role != "tool":
            for result in results:
                result["metadata"].setdefault(SPACE, {})["role"] = written_role
        if len(raw) > 2 or kept:
            self.describe(raw, own or results[0], kept)
        if own is not None and role == "assistant":
            self.rows.append(own)
        self.rows.extend(results)
        if own is not None and role != "assistant":
            self.rows.append(own)
        if number == 0 and own is not None and role == "system" and not results:
            self.leading = own

    def refuse(self, raw: object, path: str) -> None:
        """Say what is wrong with a message that is not one, at each place."""
        where = place_of(path)
        if not is_object(raw, where, self.problems):
            return
        assert isinstance(raw, dict)
        checks = [has_text(raw, "role", where, self.problems)]
        parts = raw.get("parts")
        if isinstance(parts, list):
            checks.append(self.typed(parts, at_key(path, "parts")))
        else:
            wrong = "is missing" if "parts" not in raw else f"must be a list, not {describe(parts)}"
            self.problems.add(at_key(path, "parts"), wrong)
            checks.append(False)
        if all(checks):
            storable(raw, where, self.problems)

    def refuse_part(self, part: dict[str, Any], path: str, index: int | None, place: int) -> None:
        """Say what is wrong with a call or a response that cannot be read."""
        at = at_key(path if index is None else at_key(path, f"[{index}]"), f"parts[{place}]")
        if part["type"] == "tool_call":
            has_text(part, "name", at, self.problems)
        id_is_usable_or_none(part, at, self.problems)

    def describe(self, raw: dict[str, Any], target: Row, kept: dict[str, Any]) -> None:
        """What a message holds besides its parts, on the row that stands for it."""
        metadata = target["metadata"]
        if isinstance(raw.get("finish_reason"), str):
            metadata.setdefault("facts", {})["finish_reason"] = raw["finish_reason"]
        if isinstance(raw.get("name"), str):
            metadata["name"] = raw["name"]
        extras = {
            key: value
            for key, value in raw.items()
            if key not in MESSAGE_KEYS
            or (key in ("name", "finish_reason") and not isinstance(value, str))
        }
        if extras:
            kept["message"] = extras
        if kept:
            metadata.setdefault(SPACE, {}).update(kept)

    def call(self, part: dict[str, Any], message: int, place: int) -> dict[str, Any] | None:
        """A canonical call, or None when its name or id is not one (``refuse_part`` says)."""
        if not isinstance(part.get("name"), str) or not _id_fine(part.get("id")):
            return None
        text, kept = arguments_text(part.get("arguments"))
        stored, about_id = self.pairing.declare(part.get("id"), message, place)
        kept.update(about_id)
        if len(part) > 2 + ("id" in part) + ("arguments" in part):
            extras = without(part, "type", "id", "name", "arguments")
            kept["part"] = extras
        return canonical_call(stored, part["name"], text, kept)

    def response(self, part: dict[str, Any]) -> Row | None:
        """A tool row, or None when its id is not one (``refuse_part`` says)."""
        if not _id_fine(part.get("id")):
            return None
        answered, kept = self.pairing.answer(part.get("id"))
        key = "response" if "response" in part else "result" if "result" in part else None
        if key == "result":
            kept["key"] = "result"
        elif key is None:
            kept["no_response"] = True
        if len(part) > 1 + ("id" in part) + ("response" in part) + ("result" in part):
            extras = without(part, "type", "id", "response", "result")
            kept["part"] = extras
        metadata: dict[str, Any] = {} if answered is None else {"tool_call_id": answered}
        if kept:
            metadata[SPACE] = kept
        return row("tool", result_content(part.get(key) if key else None), metadata)


def _id_fine(written: object) -> bool:
    """``id_is_usable_or_none`` without saying why not, for the usual case."""
    if written is None:
        return True
    if isinstance(written, str):
        return len(written) <= MAX_ID_LENGTH or usable_id(written) is None
    return (
        isinstance(written, int)
        and not isinstance(written, bool)
        and written.bit_length() <= 4 * MAX_ID_LENGTH
        and usable_id(written) is not None
        and len(str(written)) <= MAX_ID_LENGTH
    )


def id_is_usable_or_none(holder: dict[str, Any], at: str, problems: Problems) -> bool:
    """Whether ``holder["id"]`` is an id, or names no call (missing, null, empty): such a
    call gets an id made up, such a response answers by position."""
    written = holder.get("id")
    if written is None or (isinstance(written, str) and usable_id(written) is None):
        return True
    if isinstance(written, int) and written.bit_length() > 4 * MAX_ID_LENGTH:
        problems.add(f"{at}.id", f"is longer than {MAX_ID_LENGTH} characters")
        return False
    return has_id(holder, "id", at, problems)


def arguments_text(arguments: object) -> tuple[str, dict[str, Any]]:
    """A call's arguments as JSON text, and how they were written when not as an object."""
    if isinstance(arguments, str):
        return arguments, {"arguments_kind": "string"}
    if arguments is None:
        return "{}", {"arguments_kind": "absent"}
    kind = {} if isinstance(arguments, dict) else {"arguments_kind": "json"}
    return json_text(arguments) or "{}", kind


def canonical_call(call_id: str, name: str, arguments: str, kept: dict[str, Any]) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {**call, SPACE: kept} if kept else call


def result_content(value: object) -> object:
    """A response as content: strings, objects and lists of content parts as they are, other
    values as JSON text. A list of anything else (file names, records, numbers) is the
    tool's data, which no provider takes as content parts."""
    if value is None or isinstance(value, str | dict):
        return value
    if isinstance(value, list) and all(_is_part(item) for item in value):
        return value
    return json_text(value)


_GEMINI_TEXT_KEYS = frozenset({"text", "thought", "thoughtSignature", "thought_signature"})


def _is_part(item: object) -> bool:
    """A content part some provider takes as one: a text part in any spelling (a Gemini
    one of its own keys only), or a part in a provider's shape (``media.part_family``). A
    record that only has a ``type`` or a ``text`` key (a directory listing's entry, a
    search hit with its score) is the tool's data."""
    if not isinstance(item, dict):
        return False
    if text_of(item) is not None:
        return "type" in item or item.keys() <= _GEMINI_TEXT_KEYS
    family = media.part_family(item)
    return family is not None and family[0] not in ("none", "textless")


def _in_layout(part: object) -> bool:
    return isinstance(part, dict) and (
        part.get("builtin") is True or part.get("type") in KEPT_IN_LAYOUT
    )


_MEDIA_URLS = {
    "image-url": "image",
    "audio-url": "audio",
    "video-url": "video",
    "document-url": None,
}


def conventions_part(part: dict[str, Any]) -> dict[str, Any]:
    """A media part as the conventions spell it: pydantic-ai's instrumentation before its
    version 4 wrote ``image-url`` (audio, video, document) parts with a ``url``, and
    ``binary`` parts with ``media_type`` and ``content`` (earlier ``binary_content``),
    which are the conventions' ``uri`` and ``blob`` (a document has no modality there)."""
    kind = part["type"]
    if kind in _MEDIA_URLS and isinstance(part.get("url"), str):
        modality = _MEDIA_URLS[kind]
        rest = without(part, "type", "url")
        return {
            "type": "uri",
            **({"modality": modality} if modality else {}),
            "uri": part["url"],
        } | rest
    data = part.get("content", part.get("binary_content"))
    if kind == "binary" and isinstance(part.get("media_type"), str) and isinstance(data, str):
        mime = part["media_type"]
        modality = mime.partition("/")[0]
        return {
            "type": "blob",
            **({"modality": modality} if modality in ("image", "audio", "video") else {}),
            "mime_type": mime,
            "content": data,
        } | without(part, "type", "media_type", "content", "binary_content")
    return part


def text_part(part: Any) -> Any:
    """A part as stored: a text part in OpenAI's spelling, any other as it is."""
    if (
        isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("content"), str)
    ):
        if len(part) == 2:
            return {"type": "text", "text": part["content"]}
        return {"type": "text", "text": part["content"], **without(part, "type", "content")}
    return part


def content_of(parts: list[Any]) -> object:
    """Stored content: one plain text part is its text; no part is no content."""
    if not parts:
        return None
    only = parts[0]
    if len(parts) == 1 and isinstance(only, dict) and only.keys() == {"type", "text"}:
        return only["text"] if only["type"] == "text" else parts
    return parts


def read_messages(
    input_messages: object,
    output_messages: object = None,
    system_instructions: object = None,
    where: str = "",
) -> list[Row]:
    """The rows of one model call from its ``gen_ai.input.messages``,
    ``gen_ai.output.messages`` and ``gen_ai.system_instructions`` values, decoded or JSON
    text (as Python instrumentations put them on spans), None when absent: a leading
    system row, the input, then the first output message. Raises InvalidInput naming
    each place after ``where`` (``"span 5f0c: "``)."""
    problems = Problems()
    reader = MessageReader(problems)
    reader.system_instructions(system_instructions, f"{where}gen_ai.system_instructions")
    reader.messages(input_messages, f"{where}gen_ai.input.messages")
    reader.messages(output_messages, f"{where}gen_ai.output.messages", output=True)
    problems.raise_if_any()
    return reader.rows


def _first_key(document: dict[str, Any], keys: Sequence[str]) -> str | None:
    return next((key for key in keys if key in document), None)


def read_wrapper(reader: MessageReader, value: dict[str, Any], path: str) -> dict[str, Any]:
    """An ``{input, output, system_instructions}`` object; what to keep of it."""
    names = [_first_key(value, keys) for keys in (INSTRUCTION_KEYS, INPUT_KEYS, OUTPUT_KEYS)]
    instructions, inputs, outputs = names
    if instructions:
        reader.system_instructions(value[instructions], at_key(path, instructions))
    if inputs:
        reader.messages(value[inputs], at_key(path, inputs))
    if outputs:
        reader.messages(value[outputs], at_key(path, outputs), output=True)
    kept: dict[str, Any] = {}
    if any(name in ATTRIBUTE_KEYS for name in names):
        kept["keys"] = "attributes"
    fields = {key: field for key, field in value.items() if key not in names}
    if fields and storable(fields, place_of(path), reader.problems):
        kept["fields"] = fields
    return kept


FIELDS_WITHOUT_ROWS = (
    "is an {input, output} object with no message in it and keys other than the first "
    "object's, which are left out"
)


def read_entries(
    reader: MessageReader, entries: list[Entry]
) -> tuple[dict[str, None], dict[str, Any]]:
    """Every entry, in order, by ``reader``: the shapes read, and what objects keep."""
    shapes: dict[str, None] = {}
    kept: dict[str, Any] = {}
    for entry in entries:
        value, path = entry.value, entry_path(entry)
        if isinstance(value, list):
            reader.messages(value, path)
            shapes["lists"] = None
        elif isinstance(value, dict) and "parts" in value:
            reader.message(value, path)
            shapes["messages"] = None
        elif isinstance(value, dict) and not LIST_KEYS.isdisjoint(value):
            wrapper = read_wrapper(reader, value, path)
            fields = wrapper.pop("fields", None)
            kept.update(wrapper)
            if fields is not None and kept.setdefault("fields", fields) != fields:
                if reader.rows:
                    reader.rows[-1]["metadata"].setdefault(SPACE, {})["fields"] = fields
                else:
                    reader.skipped.append(Skipped(place_of(path), FIELDS_WITHOUT_ROWS))
            shapes["input-output"] = None
        else:
            reader.skipped.append(
                Skipped(
                    place_of(path),
                    f"is {describe(value)}, not an OpenTelemetry GenAI message or message list",
                )
            )
    return shapes, kept


def read_message_entries(source: Source, entries: list[Entry]) -> Reading:
    """A transcript of messages: message lists, messages and ``{input, output}`` objects,
    one after the other, as one conversation. The other keys of the first object are the
    conversation's ``otel.fields``; another object's, when they differ, are kept on the
    last row it read (its output's). Messages found read twice in a row (a later list
    sends them once) were read by then: the entries are read again, leaving them out."""
    reader = MessageReader(Problems(), skipped=list(source.unreadable))
    shapes, kept = read_entries(reader, entries)
    if reader.left_out:
        left_out = reader.left_out
        reader = MessageReader(Problems(), skipped=list(source.unreadable), left_out=left_out)
        shapes, kept = read_entries(reader, entries)
    reader.problems.raise_if_any()
    if not reader.history:
        raise InvalidInput(
            [Problem("file", "holds no conversation: no OpenTelemetry GenAI message in it")]
        )
    shape = "+".join(shapes)
    if not isinstance(source.document, list) and not source.is_lines:
        shape = "input-output" if "input-output" in shapes else "message"
    elif source.document is not None and shape == "messages":
        shape = "list"
    about: dict[str, Any] = {"shape": shape, **kept}
    if reader.resent:
        about["resent"] = reader.resent
    return Reading(
        [Converted(reader.rows, {SPACE: about})],
        skipped=reader.skipped,
        entries=len(reader.history),
        unit="message",
    )
