"""OpenTelemetry GenAI messages: the ``gen_ai.input.messages``, ``gen_ai.output.messages``
and ``gen_ai.system_instructions`` values of the GenAI semantic conventions (1.37 and
later), and the log events that carried the same content before them (1.28 to 1.36).

A message is ``{"role", "parts": [...], "name"?, "finish_reason"?}`` and every part has a
string ``type``: that is the signature, and what keeps these files apart from Gemini
``contents`` (``{role, parts}`` too, but parts without a ``type``) and from OpenAI
Responses ``input`` (items, not ``{role, parts}``). A transcript is one of:

- a bare message list (an attribute value copied out of a trace UI, pydantic-ai's
  ``pydantic_ai.all_messages``);
- ``{"input": [...], "output": [...], "system_instructions"?: [...]}``, or the same
  under the attribute names (``gen_ai.input.messages``...), whose values may then be
  JSON text, as Python instrumentations put them on spans;
- JSONL (or a JSON array) of message lists, read one after the other: the upload hook's
  ``<uuid>_inputs.json`` then ``<uuid>_outputs.json``; a list that starts with the whole
  conversation read so far re-sends that history, which is read once
  (``otel.resent`` counts the messages left out so);
- JSONL of one message per line, as the upload hook writes with
  ``OTEL_INSTRUMENTATION_GENAI_UPLOAD_FORMAT=jsonl`` (its ``index`` key is dropped: the
  lines are read in file order, which is the index's order and stays right when the
  inputs and outputs files are concatenated);
- an OpenTelemetry log export (the collector's file exporter, OTLP JSON lines
  ``{"resourceLogs": ...}``, or one record per line or per array item, in OTLP's camelCase
  or the Python SDK's snake_case spelling). The ``gen_ai.<role>.message`` and
  ``gen_ai.choice`` events of one model call (one span) hold its whole history, and the
  next call sends it again: the conversation is the last call's events, one per trace.
  A ``gen_ai.client.inference.operation.details`` event holds the three attributes and
  is read as the object above. A log or trace export without GenAI content is refused in
  one sentence, not line by line. The Python SDK's console exporter writes indented
  records back to back, which ``buffers.transcripts`` does not split into records:
  ``source.parse_values`` does, and its entries read as records.

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

Pairing. A response answers the open call with its id, in order: Gemini-based emitters
make ids up as ``<function>_<part index>`` (``get_weather_0``), which recur every turn,
so a response answers the earliest open call with its id in the latest message that has
one (the call before it). A call whose id was declared before is stored as
``<id>#<n>`` (its n-th declaration; the id as written in ``otel.id``) and its response
names that, so that every call keeps its own result. A call without a usable id gets
``otel-<message>-<k>`` (marked ``synthetic_id``); a response without one answers by
position, the first open call of the latest message that declared calls. A crash is a
call no later response answers: ``finish_reason`` is not trusted for it (Gemini says
``stop`` on a call turn). Provider-side tool parts are answered in place and declare
nothing.

Log events. The events of the last call (by its first record's time) are its rows: a
``gen_ai.tool.message`` answers its ``id`` (paired as above), an assistant message's or
a choice's ``tool_calls`` (OpenAI's spelling; vertexai puts them beside the choice's
``message``) are its calls, and ``content`` is kept as it is (a string, OpenAI or Gemini
parts). The choice with index 0 is the last row, with ``facts.finish_reason`` and
``facts.time``; the other choices are kept in ``otel.other_outputs``. A details event
gives its time, ``gen_ai.response.model`` and token counts as the output row's facts.
The trace and span ids, the number of calls, the resource's and the first record's
attributes and the scope are the conversation's ``otel`` metadata.

Skipped, not read: lines that are not JSON, log records that are not GenAI events (HTTP
logs...), trace and metric exports inside a log file, an entry that is neither a
message nor a message list, each with where it is. Refused, naming the place (``line 2:
[0].parts[1].name``, ``line 1: resourceLogs[0]...logRecords[3].body.id``): a message
without a string role or a list of typed parts, a call without a string name, an id
that is not a string or an integer, JSON text that is not JSON, what cannot be stored.

There is no native writer: what is kept is what a future writer would need
(``arguments_kind``, ``key: result``, the response's ``name``, roles, the layout).

``read_messages(input, output, system_instructions, where)`` is the reader of the three
attribute values alone, for a span's attributes (live ingest).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import usable_id
from buffers.healing.messages import MAX_ID_LENGTH, describe, json_problem

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
    without,
)
from .source import Entry, Format, Reading, Skipped, Source

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

LOG_EXPORTS = ("resourceLogs", "resourceSpans", "resourceMetrics")
LOG_EXPORT_KEYS = frozenset(LOG_EXPORTS)
RECORD_MARKS = frozenset(
    {
        "resource",
        "Resource",
        "scope",
        "Scope",
        "instrumentationScope",
        "eventName",
        "event_name",
        "EventName",
        "timeUnixNano",
        "observedTimeUnixNano",
        "observed_timestamp",
        "ObservedTimestamp",
        "traceId",
        "trace_id",
        "TraceID",
        "spanId",
        "span_id",
        "SpanID",
        "severityNumber",
        "severity_number",
        "severity_text",
        "dropped_attributes",
        "trace_flags",
    }
)
"""Keys only an OpenTelemetry log record has (besides ``body``, ``attributes`` and a
``timestamp``, which any log may have)."""
ANY_VALUE_KEYS = frozenset(
    {
        "stringValue",
        "boolValue",
        "intValue",
        "doubleValue",
        "bytesValue",
        "arrayValue",
        "kvlistValue",
    }
)
DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"

NO_GENAI_LOGS = (
    "is an OpenTelemetry log export, but none of its records is a GenAI message event "
    "(gen_ai.user.message, gen_ai.choice...) with content (was content capture off?), so it "
    "holds no conversation"
)
TRACES = (
    "is an OpenTelemetry trace export (resourceSpans); import the gen_ai.input.messages and "
    "gen_ai.output.messages values of a span instead (live trace ingest is not supported yet)"
)


# The signature.


def _parts_are_typed(parts: object) -> int | None:
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


def _message_parts(value: object) -> int | None:
    """How many parts a message holds, or None when ``value`` is not a message."""
    if not isinstance(value, dict) or not isinstance(value.get("role"), str):
        return None
    return _parts_are_typed(value.get("parts"))


def _list_parts(value: object) -> int | None:
    """How many parts a message list holds, or None when ``value`` is not one."""
    if not isinstance(value, list):
        return None
    total = 0
    for message in value:
        count = _message_parts(message)
        if count is None:
            return None
        total += count
    return total


def _wrapper_parts(value: object) -> int | None:
    """How many parts an ``{input, output, system_instructions}`` object holds (JSON text
    under an attribute name counts as one), or None when ``value`` is not one."""
    if not isinstance(value, dict) or value.keys() & {"messages", "contents", *LOG_EXPORTS}:
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
        count = _parts_are_typed(held) if key in INSTRUCTION_KEYS else _list_parts(held)
        if count is None:
            return None
        total += count
    return total


def _chunk_parts(value: object) -> int | None:
    """How many parts one entry of a message transcript holds: a message, a message
    list or an ``{input, output}`` object; None for anything else."""
    if isinstance(value, list):
        return _list_parts(value)
    count = _message_parts(value)
    return count if count is not None else _wrapper_parts(value)


def _is_log(value: object) -> bool:
    """An OTLP export (``{"resourceLogs": [...]}``...) or one log record."""
    if not isinstance(value, dict):
        return False
    if not LOG_EXPORT_KEYS.isdisjoint(value):
        return any(isinstance(value.get(key), list) for key in LOG_EXPORTS)
    return (
        ("body" in value or "Body" in value)
        and len(RECORD_MARKS.intersection(value)) >= 2
        and "messages" not in value
        and "role" not in value
    )


def _values(source: Source) -> list[Entry]:
    entries = source.entries()
    if entries is not None:
        return entries
    return [Entry("", source.document)] if isinstance(source.document, dict) else []


def _kind(values: Sequence[object]) -> str | None:
    """``logs``, ``messages`` or None (not this format)."""
    if not values:
        return None
    if all(_is_log(value) for value in values):
        return "logs"
    total = 0
    for value in values:
        count = _chunk_parts(value)
        if count is None:
            return None
        total += count
    return "messages" if total else None


def fits(source: Source) -> bool:
    document = source.document
    if source.lines is not None:
        values: Sequence[object] = [entry.value for entry in source.lines]
    else:
        values = document if isinstance(document, list) else [document]
    return _kind(values) is not None


# Reading messages.


def _at(path: str, key: str) -> str:
    """``key`` inside ``path``: ``input[3]``, ``line 2: parts[0]``, ``[3].parts``."""
    if not path or path.endswith(": "):
        return f"{path}{key}"
    return f"{path}{key}" if key.startswith("[") else f"{path}.{key}"


def _place(path: str) -> str:
    """A path as a place of its own: ``line 2`` for ``line 2: ``."""
    return path.removesuffix(": ") or "file"


@dataclass
class Open:
    """A declared call: its id as stored, the message declaring it, whether answered."""

    id: str
    message: int
    answered: bool = False


@dataclass
class Pairing:
    """Which call a response answers: open calls by their id as written, the calls of the
    latest message that declared any (for responses without an id), and how many times
    each id was declared (to make a repeated one unique)."""

    by_id: dict[str, list[Open]] = field(default_factory=dict)
    declared: dict[str, int] = field(default_factory=dict)
    latest: dict[str, str] = field(default_factory=dict)
    last_turn: list[Open] = field(default_factory=list)

    def start_turn(self) -> None:
        """A message declares calls: responses without an id now answer its calls."""
        self.last_turn = []

    def declare(self, written: object, message: int, place: int) -> tuple[str, dict[str, Any]]:
        """The id to store for the ``place``-th call of a message, and what to keep of the
        id as written."""
        kept: dict[str, Any] = {}
        key = usable_id(written)
        if key is None:
            stored = f"otel-{message}-{place}"
            kept["synthetic_id"] = True
            if written is not None:
                kept["id"] = written
        else:
            count = self.declared.get(key, 0) + 1
            self.declared[key] = count
            stored = str(written) if count == 1 else f"{written}#{count}"
            if stored != written:
                kept["id"] = written
            self.latest[key] = stored
        call = Open(stored, message)
        if key is not None:
            self.by_id.setdefault(key, []).append(call)
        self.last_turn.append(call)
        return stored, kept

    def answer(self, written: object) -> tuple[object, dict[str, Any]]:
        """The id of the call a response answers, and what to keep of its id as written."""
        key = usable_id(written)
        if key is None:
            call = next((c for c in self.last_turn if not c.answered), None)
            if call is None:
                return written, {}
            call.answered = True
            return call.id, ({"synthetic_id": True} if written is None else {"id": written})
        opened = self.by_id.get(key, [])
        while opened and opened[-1].answered:
            opened.pop()
        if not opened:
            stored = self.latest.get(key)
            return (written, {}) if stored is None else (stored, {"id": written})
        place = len(opened) - 1
        while place > 0 and opened[place - 1].message == opened[-1].message:
            place -= 1
        while opened[place].answered:
            place += 1
        call = opened.pop(place)
        call.answered = True
        return call.id, ({} if call.id == written else {"id": written})


@dataclass
class MessageReader:
    """Reads OpenTelemetry messages, in order, into rows, pairing responses with calls."""

    problems: Problems
    rows: list[Row] = field(default_factory=list)
    pairing: Pairing = field(default_factory=Pairing)
    history: list[Any] = field(default_factory=list)
    """The messages read, as written: to tell a list that sends them again."""
    instructions: object = None
    resent: int = 0

    def decoded(self, value: object, path: str) -> object:
        """An attribute's value as JSON: JSON text (as on Python spans) is read once."""
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            self.problems.add(path, f"is not JSON text: {error.msg} (column {error.colno})")
        except (RecursionError, ValueError):
            self.problems.add(path, "cannot be read as JSON")
        return None

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

    def messages(self, value: object, path: str, *, output: bool = False) -> None:
        """A message list; ``output`` is the model's, one message per choice: the first
        is read, the others are kept on its row."""
        messages = self.decoded(value, _place(path))
        if messages is None:
            return
        if not isinstance(messages, list):
            self.problems.add(_place(path), f"must be a list of messages, not {describe(messages)}")
            return
        first, others = 0, []
        if output:
            messages, others = messages[:1], messages[1:]
        elif self.resends(messages):
            first = len(self.history)
            self.resent += first
        before = len(self.rows)
        for index in range(first, len(messages)):
            self.message(messages[index], path, index)
        if (
            others
            and len(self.rows) > before
            and storable(others, _at(path, "[1:]"), self.problems)
        ):
            self.rows[before]["metadata"].setdefault(SPACE, {})["other_outputs"] = others

    def resends(self, messages: list[Any]) -> bool:
        """Whether a list starts with every message read so far (a call's input sends the
        whole history again)."""
        return (
            bool(self.history)
            and len(messages) >= len(self.history)
            and all(sent == read for sent, read in zip(messages, self.history, strict=False))
        )

    def message(self, raw: object, path: str, index: int | None = None) -> None:
        """One message; its place is ``path`` (or ``path[index]``), made only for errors."""
        if _message_parts(raw) is None or json_problem(raw) is not None:
            self.refuse(raw, path if index is None else _at(path, f"[{index}]"))
            return
        assert isinstance(raw, dict)
        parts: list[dict[str, Any]] = raw["parts"]
        self.history.append(raw)
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
                    self.pairing.start_turn()
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
                content.append(text_part(part))
                kinds.append("content")
                text_after_call = text_after_call or bool(calls)
        role = ROLES.get(written_role) or ALIASES.get(written_role) or "user"
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

    def refuse(self, raw: object, path: str) -> None:
        """Say what is wrong with a message that is not one, at each place."""
        where = _place(path)
        if not is_object(raw, where, self.problems):
            return
        assert isinstance(raw, dict)
        checks = [has_text(raw, "role", where, self.problems)]
        parts = raw.get("parts")
        if isinstance(parts, list):
            checks.append(self.typed(parts, _at(path, "parts")))
        else:
            wrong = "is missing" if "parts" not in raw else f"must be a list, not {describe(parts)}"
            self.problems.add(_at(path, "parts"), wrong)
            checks.append(False)
        if all(checks):
            storable(raw, where, self.problems)

    def refuse_part(self, part: dict[str, Any], path: str, index: int | None, place: int) -> None:
        """Say what is wrong with a call or a response that cannot be read."""
        at = _at(path if index is None else _at(path, f"[{index}]"), f"parts[{place}]")
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
        and usable_id(written) is not None
        and len(str(written)) <= MAX_ID_LENGTH
    )


def id_is_usable_or_none(holder: dict[str, Any], at: str, problems: Problems) -> bool:
    """Whether ``holder["id"]`` is an id, or names no call (missing, null, empty): such a
    call gets an id made up, such a response answers by position."""
    written = holder.get("id")
    if written is None or (isinstance(written, str) and usable_id(written) is None):
        return True
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
    """A response as content: strings, lists and objects as they are, other values as JSON."""
    return value if value is None or isinstance(value, str | list | dict) else json_text(value)


def _in_layout(part: object) -> bool:
    return isinstance(part, dict) and (
        part.get("builtin") is True or part.get("type") in KEPT_IN_LAYOUT
    )


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
        reader.system_instructions(value[instructions], _at(path, instructions))
    if inputs:
        reader.messages(value[inputs], _at(path, inputs))
    if outputs:
        reader.messages(value[outputs], _at(path, outputs), output=True)
    kept: dict[str, Any] = {}
    if any(name in ATTRIBUTE_KEYS for name in names):
        kept["keys"] = "attributes"
    fields = {key: field for key, field in value.items() if key not in names}
    if fields and storable(fields, _place(path), reader.problems):
        kept["fields"] = fields
    return kept


def _base(entry: Entry) -> str:
    """The path an entry's places start with: ``line 2: ``, ``[3]``, or none."""
    if not entry.where or entry.where.startswith("["):
        return entry.where
    return f"{entry.where}: "


def read_message_entries(source: Source, entries: list[Entry]) -> Reading:
    problems = Problems()
    reader = MessageReader(problems)
    skipped = list(source.unreadable)
    shapes: dict[str, None] = {}
    kept: dict[str, Any] = {}
    for entry in entries:
        value, path = entry.value, _base(entry)
        if isinstance(value, list):
            reader.messages(value, path)
            shapes["lists"] = None
        elif isinstance(value, dict) and "parts" in value:
            reader.message(value, path)
            shapes["messages"] = None
        elif isinstance(value, dict) and not LIST_KEYS.isdisjoint(value):
            kept.update(read_wrapper(reader, value, path))
            shapes["input-output"] = None
        else:
            skipped.append(
                Skipped(
                    _place(path),
                    f"is {describe(value)}, not an OpenTelemetry GenAI message or message list",
                )
            )
    problems.raise_if_any()
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
        skipped=skipped,
        entries=len(reader.history),
        unit="message",
    )


# Reading log records.


@dataclass
class Record:
    """One log record of a GenAI event, decoded: OTLP's ``AnyValue`` wrappers undone."""

    where: str
    """Where its places start: ``line 2: resourceLogs[0]...logRecords[3]``, ``line 2: ``."""
    name: str
    body: object
    attributes: dict[str, Any]
    trace: str
    span: str
    time: str | None
    moment: int | None
    resource: dict[str, Any]
    scope: dict[str, Any]


def any_value(value: object) -> object:
    """An OTLP ``AnyValue`` as plain JSON; a value that is not one, as it is."""
    if not isinstance(value, dict) or len(value) != 1 or not ANY_VALUE_KEYS.issuperset(value):
        return value
    [(kind, held)] = value.items()
    if kind == "arrayValue":
        values = held.get("values") if isinstance(held, dict) else None
        return [any_value(v) for v in values] if isinstance(values, list) else []
    if kind == "kvlistValue":
        values = held.get("values") if isinstance(held, dict) else None
        return attributes_of(values if isinstance(values, list) else [])
    if kind == "intValue" and isinstance(held, str):
        try:
            return int(held)
        except ValueError:
            return held
    return held


def attributes_of(value: object) -> dict[str, Any]:
    """Attributes as an object: OTLP's ``[{"key", "value"}]``, or an object already."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, list):
        return {}
    return {
        str(pair["key"]): any_value(pair.get("value"))
        for pair in value
        if isinstance(pair, dict) and "key" in pair
    }


def _text(record: dict[str, Any], *keys: str) -> str:
    """The first of ``keys`` that holds a string that can be stored (a name, an id, a
    time: what is not one is left out rather than refused)."""
    found = next((v for k in keys if isinstance(v := record.get(k), str) and v), "")
    return found if json_problem(found) is None else ""


def _hex(value: str) -> str:
    return value.removeprefix("0x").lower()


def _time(record: dict[str, Any]) -> tuple[str | None, int | None]:
    """When a record happened, as written (ISO 8601; OTLP's nanoseconds made ISO 8601),
    and in nanoseconds since the epoch (to order calls)."""
    for key in ("timeUnixNano", "observedTimeUnixNano"):
        raw = record.get(key)
        if isinstance(raw, str | int) and not isinstance(raw, bool) and str(raw).isdigit():
            nanoseconds = int(raw)
            try:
                moment = _EPOCH + timedelta(microseconds=nanoseconds // 1000)
            except OverflowError:
                return None, None
            if nanoseconds:
                return moment.isoformat().replace("+00:00", "Z"), nanoseconds
    written = _text(record, "timestamp", "observed_timestamp", "Timestamp")
    if not written:
        return None, None
    try:
        moment = datetime.fromisoformat(written)
    except (ValueError, OverflowError):
        return written, None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return written, (moment - _EPOCH) // timedelta(microseconds=1) * 1000


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def record_of(raw: dict[str, Any], where: str, resource: Any, scope: Any) -> Record:
    attributes = attributes_of(raw.get("attributes", raw.get("Attributes")))
    body = any_value(raw["body"] if "body" in raw else raw.get("Body"))
    name = _text(raw, "eventName", "event_name", "EventName") or _text(attributes, "event.name")
    if resource is None:
        held = raw.get("resource", raw.get("Resource"))
        resource = attributes_of(held.get("attributes")) if isinstance(held, dict) else {}
    if scope is None:
        held = raw.get("scope", raw.get("instrumentationScope", raw.get("Scope")))
        scope = held if isinstance(held, dict) else {}
    time, moment = _time(raw)
    return Record(
        where=where,
        name=name,
        body=body,
        attributes=attributes,
        trace=_hex(_text(raw, "traceId", "trace_id", "TraceID")),
        span=_hex(_text(raw, "spanId", "span_id", "SpanID")),
        time=time,
        moment=moment,
        resource=resource,
        scope=scope,
    )


def _is_genai(name: str) -> bool:
    return name in (CHOICE, DETAILS) or (name.startswith("gen_ai.") and name.endswith(".message"))


def _has_content(record: Record) -> bool:
    if record.name == DETAILS:
        attributes = record.attributes
        return "gen_ai.input.messages" in attributes or "gen_ai.output.messages" in attributes
    body = record.body if isinstance(record.body, dict) else {}
    message = body.get("message")
    holders = [body, message] if isinstance(message, dict) else [body]
    return any(h.get("content") is not None or h.get("tool_calls") for h in holders)


@dataclass
class Collected:
    records: list[Record] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    spans: bool = False
    logs: bool = False


def collect(entries: list[Entry]) -> Collected:
    """The GenAI event records of a log export, in file order, and what was skipped."""
    found = Collected()
    for entry in entries:
        value, path = entry.value, _base(entry)
        if not isinstance(value, dict) or not _is_log(value):
            why = f"is {describe(value)}, not an OpenTelemetry log record or export"
            found.skipped.append(Skipped(_place(path), why))
            continue
        if isinstance(value.get("resourceLogs"), list):
            for at, raw, resource, scope in _otlp_records(value["resourceLogs"], path, found):
                _keep_decoded(raw, at, resource, scope, found)
        elif isinstance(value.get("resourceSpans"), list):
            found.spans = True
            found.skipped.append(Skipped(_place(path), TRACES.removeprefix("is ")))
        elif isinstance(value.get("resourceMetrics"), list):
            found.skipped.append(Skipped(_place(path), "holds metrics, not log records"))
        else:
            _keep_decoded(value, path, None, None, found)
    return found


def _keep_decoded(
    raw: dict[str, Any], where: str, resource: Any, scope: Any, found: Collected
) -> None:
    try:
        record = record_of(raw, where, resource, scope)
    except RecursionError:
        found.skipped.append(Skipped(_place(where), "nests values too deeply to read"))
        return
    _keep(record, found)


def _keep(record: Record, found: Collected) -> None:
    found.logs = True
    if _is_genai(record.name):
        found.records.append(record)
        return
    named = f"{record.name!r}" if record.name else "without an event name"
    why = f"is a log record {named}, not a GenAI message event"
    found.skipped.append(Skipped(_place(record.where), why))


def _list_at(holder: object, key: str, path: str, found: Collected) -> list[Any]:
    held = holder.get(key) if isinstance(holder, dict) else None
    if isinstance(held, list):
        return held
    if held is not None:
        found.skipped.append(Skipped(_at(path, key), f"is {describe(held)}, not a list"))
    return []


def _otlp_records(
    resources: list[Any], path: str, found: Collected
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    for i, resource_logs in enumerate(resources):
        at = _at(path, f"resourceLogs[{i}]")
        held = resource_logs.get("resource") if isinstance(resource_logs, dict) else None
        resource = attributes_of(held.get("attributes")) if isinstance(held, dict) else {}
        for j, scope_logs in enumerate(_list_at(resource_logs, "scopeLogs", at, found)):
            scope_at = _at(at, f"scopeLogs[{j}]")
            held = scope_logs.get("scope") if isinstance(scope_logs, dict) else None
            scope = held if isinstance(held, dict) else {}
            for k, raw in enumerate(_list_at(scope_logs, "logRecords", scope_at, found)):
                record_at = _at(scope_at, f"logRecords[{k}]")
                if isinstance(raw, dict):
                    yield record_at, raw, resource, scope
                else:
                    found.skipped.append(Skipped(record_at, f"is {describe(raw)}, not a record"))


def _calls_of(groups: dict[str, list[Record]]) -> list[list[Record]]:
    """A trace's model calls in the order they were made: by their first record's time
    when every call has one, else in file order."""
    calls = list(groups.values())
    if all(call[0].moment is not None for call in calls):
        calls.sort(key=lambda call: call[0].moment or 0)
    return calls


def by_trace(records: list[Record]) -> dict[str, list[list[Record]]]:
    """Each trace's model calls: the records of one span, or, without span ids, the run
    of records up to and including the choices."""
    traces: dict[str, dict[str, list[Record]]] = {}
    runs: dict[str, int] = {}
    last: dict[str, str] = {}
    for record in records:
        groups = traces.setdefault(record.trace, {})
        key = record.span
        if not key:
            if last.get(record.trace) == CHOICE and record.name != CHOICE:
                runs[record.trace] = runs.get(record.trace, 0) + 1
            key = f"#{runs.get(record.trace, 0)}"
        last[record.trace] = record.name
        groups.setdefault(key, []).append(record)
    return {trace: _calls_of(groups) for trace, groups in traces.items()}


@dataclass
class EventReader:
    """Reads one model call's message events (semconv 1.28 to 1.36) into rows."""

    reader: MessageReader

    @property
    def problems(self) -> Problems:
        return self.reader.problems

    def event(self, record: Record) -> None:
        body = record.body
        where = _at(record.where, "body")
        if body is None:
            body = {}
        if not is_object(body, where, self.problems) or not storable(body, where, self.problems):
            return
        assert isinstance(body, dict)
        if record.name == CHOICE:
            self.choice(record, body, where)
            return
        written = body.get("role")
        role = written if isinstance(written, str) else record.name[7:-8]
        if role == "tool":
            if not id_is_usable_or_none(body, where, self.problems):
                return
            answered, kept = self.reader.pairing.answer(body.get("id"))
            metadata: dict[str, Any] = {} if answered is None else {"tool_call_id": answered}
            if extras := without(body, "role", "content", "id"):
                kept["body"] = extras
            if kept:
                metadata[SPACE] = kept
            self.reader.rows.append(row("tool", result_content(body.get("content")), metadata))
            return
        self.turn(role, body, body.get("tool_calls"), where, ("role", "content", "tool_calls"))

    def choice(self, record: Record, body: dict[str, Any], where: str) -> None:
        message = body.get("message", {})
        at = f"{where}.message"
        if not is_object(message, at, self.problems):
            return
        calls, calls_at = message.get("tool_calls"), at
        if calls is None and body.get("tool_calls") is not None:
            calls, calls_at = body["tool_calls"], where  # vertexai puts them beside the message
        role = message.get("role") if isinstance(message.get("role"), str) else "assistant"
        before = len(self.reader.rows)
        self.turn(role, message, calls, calls_at, ("role", "content", "tool_calls"), at)
        if len(self.reader.rows) == before:
            return
        metadata = self.reader.rows[before]["metadata"]
        facts = metadata.setdefault("facts", {})
        if isinstance(body.get("finish_reason"), str):
            facts["finish_reason"] = body["finish_reason"]
        if record.time:
            facts["time"] = record.time
        extras = without(body, "message", "finish_reason", "index", "tool_calls")
        if extras:
            metadata.setdefault(SPACE, {})["body"] = extras

    def turn(
        self,
        written_role: str,
        holder: dict[str, Any],
        calls: object,
        calls_at: str,
        consumed: tuple[str, ...],
        where: str = "",
    ) -> None:
        declared: list[dict[str, Any]] = []
        if calls is not None:
            declared = self.calls(calls, f"{calls_at}.tool_calls", len(self.reader.history))
        self.reader.history.append(holder)
        role = ROLES.get(written_role) or ALIASES.get(written_role) or "user"
        if declared:
            role = "assistant"
        elif role == "tool":
            role = "user"
        metadata: dict[str, Any] = {"tool_calls": declared} if declared else {}
        kept: dict[str, Any] = {"role": written_role} if role != written_role else {}
        if extras := without(holder, *consumed):
            kept["body"] = extras
        if kept:
            metadata[SPACE] = kept
        content = holder.get("content")
        self.reader.rows.append(row(role, result_content(content), metadata))

    def calls(self, calls: object, path: str, message: int) -> list[dict[str, Any]]:
        if not isinstance(calls, list):
            self.problems.add(path, f"must be a list of calls, not {describe(calls)}")
            return []
        declared: list[dict[str, Any]] = []
        if calls:
            self.reader.pairing.start_turn()
        for place, call in enumerate(calls):
            at = f"{path}[{place}]"
            if not is_object(call, at, self.problems):
                continue
            function = call.get("function", {})
            if not is_object(function, f"{at}.function", self.problems):
                continue
            checks = [
                has_text(function, "name", f"{at}.function", self.problems),
                id_is_usable_or_none(call, at, self.problems),
            ]
            if not all(checks):
                continue
            text, kept = arguments_text(function.get("arguments"))
            if kept.get("arguments_kind") == "string":
                kept = {}  # OpenAI's own spelling
            stored, about_id = self.reader.pairing.declare(call.get("id"), message, len(declared))
            kept.update(about_id)
            if extras := without(call, "id", "type", "function"):
                kept["call"] = extras
            declared.append(canonical_call(stored, function["name"], text, kept))
        return declared


def read_details(reader: MessageReader, record: Record) -> None:
    """A ``gen_ai.client.inference.operation.details`` event: the three attributes, and
    what the event says of the answer (its time, model and token counts)."""
    attributes = record.attributes
    where = _at(record.where, "attributes")

    def at(key: str) -> str:
        return f"{where}[{json.dumps(key)}]"

    reader.system_instructions(
        attributes.get("gen_ai.system_instructions"), at("gen_ai.system_instructions")
    )
    reader.messages(attributes.get("gen_ai.input.messages"), at("gen_ai.input.messages"))
    before = len(reader.rows)
    reader.messages(
        attributes.get("gen_ai.output.messages"), at("gen_ai.output.messages"), output=True
    )
    if len(reader.rows) == before:
        return
    facts = reader.rows[before]["metadata"].setdefault("facts", {})
    if record.time:
        facts["time"] = record.time
    model = attributes.get("gen_ai.response.model", attributes.get("gen_ai.request.model"))
    if isinstance(model, str) and json_problem(model) is None:
        facts["model"] = model
    usage = {
        name: attributes[key]
        for name, key in USAGE.items()
        if isinstance(attributes.get(key), int) and not isinstance(attributes[key], bool)
    }
    if usage:
        facts["usage"] = usage


USAGE = {
    "input": "gen_ai.usage.input_tokens",
    "output": "gen_ai.usage.output_tokens",
    "cached": "gen_ai.usage.cache_read.input_tokens",
    "reasoning": "gen_ai.usage.reasoning.output_tokens",
}


def read_call(call: list[Record], problems: Problems) -> MessageReader:
    """One model call's records (its whole history, then its choices) as rows."""
    reader = MessageReader(problems)
    details = [record for record in call if record.name == DETAILS]
    if details:
        read_details(reader, details[-1])
        return reader
    events = EventReader(reader)
    choices = sorted((record for record in call if record.name == CHOICE), key=_choice_index)
    for record in call:
        if record.name != CHOICE:
            events.event(record)
    if choices:
        before = len(reader.rows)
        events.event(choices[0])
        others = [record.body for record in choices[1:]]
        if others and len(reader.rows) > before:
            where = _at(choices[1].where, "body")
            if storable(others, where, problems):
                reader.rows[before]["metadata"].setdefault(SPACE, {})["other_outputs"] = others
    return reader


def _choice_index(record: Record) -> int:
    index = record.body.get("index") if isinstance(record.body, dict) else None
    return index if isinstance(index, int) and not isinstance(index, bool) else 0


def read_logs(source: Source, entries: list[Entry]) -> Reading:
    found = collect(entries)
    skipped = [*source.unreadable, *found.skipped]
    if not any(_has_content(record) for record in found.records):
        sentence = TRACES if found.spans and not found.logs else NO_GENAI_LOGS
        raise InvalidInput([Problem("file", sentence)])
    problems = Problems()
    conversations: list[Converted] = []
    for trace, calls in by_trace(found.records).items():
        last = calls[-1]
        reader = read_call(last, problems)
        if not reader.rows:
            continue
        first = last[0]
        about: dict[str, Any] = {
            "shape": "log-details" if any(r.name == DETAILS for r in last) else "log-events",
            "calls": len(calls),
        }
        if trace:
            about["trace_id"] = trace
        if first.span:
            about["span_id"] = first.span
        context = {
            "resource": first.resource,
            "scope": first.scope,
            "attributes": without(first.attributes, *ATTRIBUTE_KEYS),
        }
        for key, value in context.items():
            if value and storable(value, _at(first.where, key), problems):
                about[key] = value
        conversations.append(Converted(reader.rows, {SPACE: about}))
    problems.raise_if_any()
    if not conversations:
        raise InvalidInput([Problem("file", NO_GENAI_LOGS)])
    return Reading(conversations, skipped=skipped, entries=len(found.records), unit="event")


def read(source: Source) -> Reading:
    entries = _values(source)
    logs = sum(1 for entry in entries if _is_log(entry.value))
    if logs and logs * 2 >= len(entries):
        return read_logs(source, entries)
    return read_message_entries(source, entries)


FORMAT = Format(
    "otel-genai",
    "OpenTelemetry GenAI messages",
    "gen_ai.input.messages / gen_ai.output.messages values copied from a trace UI; the "
    "upload hook's <uuid>_inputs.json and _outputs.json files "
    "(OTEL_INSTRUMENTATION_GENAI_UPLOAD_BASE_PATH); OTLP JSON log exports of gen_ai.* events "
    "(the collector's file exporter)",
    "lists of {role, parts} messages whose parts each have a string type (bare, under input "
    "and output, or one per JSONL line), or OTLP log records of gen_ai.* message events",
    fits,
    read,
    provider="openai-chat",
    lines=True,
)
