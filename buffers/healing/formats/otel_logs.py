"""OpenTelemetry log exports of GenAI events read into conversations: the collector's file
exporter (OTLP JSON lines ``{"resourceLogs": ...}``), or one record per line or per array
item, in OTLP's camelCase or the Python SDK's snake_case spelling. The Python SDK's
console exporter writes indented records back to back, which ``buffers.transcripts``
does not split into records: ``source.parse_values`` does, and its entries read as
records.

Records. OTLP's ``AnyValue`` wrappers are undone; a record's time is its
``timeUnixNano`` (ASCII digits; what is not a count of nanoseconds is left out) or its
ISO 8601 ``timestamp``. GenAI records are the ``gen_ai.<role>.message`` and
``gen_ai.choice`` events (semantic conventions 1.28 to 1.36) and the
``gen_ai.client.inference.operation.details`` event (1.37 and later), which holds the
``gen_ai.input.messages``, ``gen_ai.output.messages`` and ``gen_ai.system_instructions``
attributes, read by ``otel_messages``.

Model calls. The message events of one span are one model call (without span ids: the
run of records up to and including its choices), and so is each details event; a
trace's calls are taken in the order they were made (by their first record's time when
every call has one, else in file order). A call sends its whole history again: a call
whose input starts with everything a conversation of its trace has read so far (its
inputs and the first output of each call) goes on with that conversation, and its
records that repeat the history are counted in ``otel.resent``, not read again; a call
that repeats no conversation's history starts a conversation of its own (another agent
of the trace, a side call that titles the chat, a history cut short). So every call's
output is read where it was made, with its other choices and its details' facts. Events
are compared by role (as stored), content, calls and the call id they answer; a choice
is compared as the assistant message the next call sends.

Events. A ``gen_ai.tool.message`` answers its ``id`` (paired as ``otel_messages`` pairs
responses), an assistant message's or a choice's ``tool_calls`` (OpenAI's spelling;
vertexai puts them beside the choice's ``message``) are its calls, and ``content`` is
kept as it is (a string, OpenAI or Gemini parts). The choice with index 0 is the call's
last row, with ``facts.finish_reason`` and ``facts.time``; the other choices are kept in
``otel.other_outputs``. A details event gives its time, ``gen_ai.response.model`` and
token counts as the output row's facts. A conversation's ``otel`` metadata: its trace
id, its last call's span id, the resource, scope and attributes of its first record
(a record that says otherwise keeps its own on its row), how many calls it holds.

Skipped, each with where it is: log records that are not GenAI events (HTTP logs...),
trace and metric exports inside a log file, what stands where a resource's, a scope's
or a record's object should, a details event without messages, a model call whose
message lists are empty, and a record that repeats an earlier one in every respect (trace,
span, time, event, body and attributes: OTLP delivers at least once, so an exporter's retry
writes a batch again). A log or trace export
without GenAI content is refused in one sentence, not line by line. What is wrong inside
an event is refused at its place (``line 1: resourceLogs[0]...logRecords[3].body.id``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.messages import describe, json_problem

from .common import (
    Converted,
    Problems,
    Row,
    has_text,
    is_object,
    json_text,
    row,
    storable,
    without,
)
from .otel_messages import (
    ATTRIBUTE_KEYS,
    SPACE,
    MessageReader,
    arguments_text,
    at_key,
    canonical_call,
    decoded,
    entry_path,
    id_is_usable_or_none,
    place_of,
    result_content,
    sent_back,
    stored_role,
)
from .source import Entry, Reading, Skipped, Source

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
USAGE = {
    "input": "gen_ai.usage.input_tokens",
    "output": "gen_ai.usage.output_tokens",
    "cached": "gen_ai.usage.cache_read.input_tokens",
    "reasoning": "gen_ai.usage.reasoning.output_tokens",
}

NO_GENAI_LOGS = (
    "is an OpenTelemetry log export, but none of its records is a GenAI message event "
    "(gen_ai.user.message, gen_ai.choice...) with content (was content capture off?), so it "
    "holds no conversation"
)
TRACES = (
    "is an OpenTelemetry trace export (resourceSpans); import the gen_ai.input.messages and "
    "gen_ai.output.messages values of a span instead (live trace ingest is not supported yet)"
)
DETAILS_WITHOUT_MESSAGES = (
    f"is a {DETAILS} event without gen_ai.input.messages or gen_ai.output.messages "
    "(was content capture off?)"
)
CALL_WITHOUT_MESSAGES = "is a model call whose input and output hold no message"
REPEATED = "is a record sent again (an exporter's retry): it repeats"


def is_log(value: object) -> bool:
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


# Records.


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
        _attribute_name(pair["key"]): any_value(pair.get("value"))
        for pair in value
        if isinstance(pair, dict) and "key" in pair
    }


def _attribute_name(key: object) -> str:
    return key if isinstance(key, str) else json_text(key) or describe(key)


def _text(record: dict[str, Any], *keys: str) -> str:
    """The first of ``keys`` that holds a string that can be stored (a name, an id, a
    time: what is not one is left out rather than refused)."""
    found = next((v for k in keys if isinstance(v := record.get(k), str) and v), "")
    return found if json_problem(found) is None else ""


def _hex(value: str) -> str:
    return value.removeprefix("0x").lower()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _nanoseconds(raw: object) -> int | None:
    """A count of nanoseconds as OTLP writes it (decimal ASCII text, or a number)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw if raw >= 0 else None
    if isinstance(raw, str) and raw.isascii() and raw.isdigit():
        try:
            return int(raw)
        except ValueError:  # more digits than Python reads
            return None
    return None


def _time(record: dict[str, Any]) -> tuple[str | None, int | None]:
    """When a record happened, as written (ISO 8601; OTLP's nanoseconds made ISO 8601),
    and in nanoseconds since the epoch (to order calls)."""
    for key in ("timeUnixNano", "observedTimeUnixNano"):
        nanoseconds = _nanoseconds(record.get(key))
        if not nanoseconds:
            continue
        try:
            moment = _EPOCH + timedelta(microseconds=nanoseconds // 1000)
        except OverflowError:
            return None, None
        return moment.isoformat().replace("+00:00", "Z"), nanoseconds
    written = _text(record, "timestamp", "observed_timestamp", "Timestamp")
    if not written:
        return None, None
    try:
        moment = datetime.fromisoformat(written)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return written, (moment - _EPOCH) // timedelta(microseconds=1) * 1000
    except (ValueError, OverflowError):
        return written, None


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


def is_genai(name: str) -> bool:
    return name in (CHOICE, DETAILS) or (name.startswith("gen_ai.") and name.endswith(".message"))


def has_content(record: Record) -> bool:
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
        value, path = entry.value, entry_path(entry)
        if not isinstance(value, dict) or not is_log(value):
            why = f"is {describe(value)}, not an OpenTelemetry log record or export"
            found.skipped.append(Skipped(place_of(path), why))
            continue
        if isinstance(value.get("resourceLogs"), list):
            for at, raw, resource, scope in _otlp_records(value["resourceLogs"], path, found):
                _keep_decoded(raw, at, resource, scope, found)
        elif isinstance(value.get("resourceSpans"), list):
            found.spans = True
            found.skipped.append(Skipped(place_of(path), TRACES.removeprefix("is ")))
        elif isinstance(value.get("resourceMetrics"), list):
            found.skipped.append(Skipped(place_of(path), "holds metrics, not log records"))
        else:
            _keep_decoded(value, path, None, None, found)
    return found


def _keep_decoded(
    raw: dict[str, Any], where: str, resource: Any, scope: Any, found: Collected
) -> None:
    try:
        record = record_of(raw, where, resource, scope)
    except RecursionError:
        found.skipped.append(Skipped(place_of(where), "nests values too deeply to read"))
        return
    found.logs = True
    if is_genai(record.name):
        found.records.append(record)
        return
    named = f"{record.name!r}" if record.name else "without an event name"
    why = f"is a log record {named}, not a GenAI message event"
    found.skipped.append(Skipped(place_of(record.where), why))


def _objects_at(holder: dict[str, Any], key: str, path: str, found: Collected) -> Iterator[Any]:
    """The objects of the list ``holder[key]``, with their places; what is not one is
    skipped."""
    held = holder.get(key)
    if held is None:
        return
    if not isinstance(held, list):
        found.skipped.append(Skipped(at_key(path, key), f"is {describe(held)}, not a list"))
        return
    for index, value in enumerate(held):
        at = at_key(path, f"{key}[{index}]")
        if isinstance(value, dict):
            yield at, value
        else:
            found.skipped.append(Skipped(at, f"is {describe(value)}, not an object"))


def _otlp_records(
    resources: list[Any], path: str, found: Collected
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    for at, resource_logs in _objects_at({"resourceLogs": resources}, "resourceLogs", path, found):
        held = resource_logs.get("resource")
        resource = attributes_of(held.get("attributes")) if isinstance(held, dict) else {}
        for scope_at, scope_logs in _objects_at(resource_logs, "scopeLogs", at, found):
            held = scope_logs.get("scope")
            scope = held if isinstance(held, dict) else {}
            for record_at, raw in _objects_at(scope_logs, "logRecords", scope_at, found):
                yield record_at, raw, resource, scope


# Model calls.


@dataclass
class ModelCall:
    """One model call: the message events of one span (or of one run of records up to
    its choices), or one details event."""

    records: list[Record] = field(default_factory=list)

    @property
    def details(self) -> Record | None:
        first = self.records[0]
        return first if first.name == DETAILS else None


def calls_by_trace(records: list[Record]) -> dict[str, list[ModelCall]]:
    """Each trace's model calls, in the order they were made: by their first record's
    time when every call has one, else in file order."""
    traces: dict[str, dict[str | int, ModelCall]] = {}
    runs: dict[str, int] = {}
    last: dict[str, str] = {}
    for index, record in enumerate(records):
        calls = traces.setdefault(record.trace, {})
        if record.name == DETAILS:
            calls[index] = ModelCall([record])
            continue
        key = record.span
        if not key:
            if last.get(record.trace) == CHOICE and record.name != CHOICE:
                runs[record.trace] = runs.get(record.trace, 0) + 1
            key = f"#{runs.get(record.trace, 0)}"
        last[record.trace] = record.name
        calls.setdefault(key, ModelCall()).records.append(record)
    ordered: dict[str, list[ModelCall]] = {}
    for trace, by_key in traces.items():
        calls_made = list(by_key.values())
        if all(call.records[0].moment is not None for call in calls_made):
            calls_made.sort(key=lambda call: call.records[0].moment or 0)
        ordered[trace] = calls_made
    return ordered


def without_repeats(records: list[Record], skipped: list[Skipped]) -> list[Record]:
    """The records less each that repeats an earlier one in every respect: its trace, span,
    time, event, body and attributes (OTLP delivers at least once, and a batch an exporter
    sent again is written again). Each repeat is named among ``skipped``. A record without
    a span or a time is kept: two such records may be two messages alike."""
    first: dict[object, Record] = {}
    kept: list[Record] = []
    for record in records:
        if record.span and record.time is not None:
            key = canonical(
                [record.trace, record.span, record.time, record.name, record.body,
                 record.attributes]
            )  # fmt: skip
            earlier = first.setdefault(key, record)
            if earlier is not record:
                where = place_of(earlier.where)
                skipped.append(Skipped(place_of(record.where), f"{REPEATED} {where}"))
                continue
        kept.append(record)
    return kept


def canonical(value: object) -> object:
    """What a message is compared by, as text; a value that cannot be written is a key
    equal to no other."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        return object()


def event_key(record: Record) -> object:
    """What a message event is compared by: its role as stored, content, calls and the
    call id it answers; a choice as the assistant message the next call sends."""
    body = record.body if record.body is not None else {}
    if not isinstance(body, dict):
        return object()
    if record.name == CHOICE:
        message = body.get("message")
        message = message if isinstance(message, dict) else {}
        calls = message.get("tool_calls")
        if calls is None:
            calls = body.get("tool_calls")
        role, content, answers = message.get("role"), message.get("content"), None
        default = "assistant"
    else:
        role, content, calls = body.get("role"), body.get("content"), body.get("tool_calls")
        answers, default = body.get("id"), record.name[7:-8]
    written = role if isinstance(role, str) else default
    return canonical([stored_role(written), content, calls, answers])


def message_key(message: object) -> object:
    """What an OpenTelemetry message is compared by: its role and its parts as sent back
    (``sent_back``: the next call's history may leave out its reasoning, spell a call's
    arguments as JSON text...)."""
    if not isinstance(message, dict):
        return object()
    return canonical([message.get("role"), sent_back(message.get("parts"))])


@dataclass
class Thread:
    """One conversation of a trace: calls that each send again all it read before."""

    reader: MessageReader
    first: Record
    """Its first record, whose resource, scope and attributes are the conversation's."""
    keys: list[object] = field(default_factory=list)
    """What each message read is compared by, in order."""
    fingerprint: int = 0
    """A hash of ``keys``, to find the conversation a call goes on with."""
    calls: list[ModelCall] = field(default_factory=list)
    resent: int = 0
    context: dict[str, Any] = field(init=False)
    """The resource, scope and attributes of its first record."""

    def __post_init__(self) -> None:
        self.context = context_of(self.first)

    def keep_context(self, target: Row, record: Record) -> None:
        """What ``record`` says of its resource, scope and attributes that the
        conversation does not, on the row it made."""
        if record is self.first:
            return
        problems = self.reader.problems
        for key, value in context_of(record).items():
            if (
                value
                and value != self.context[key]
                and storable(value, at_key(record.where, key), problems)
            ):
                target["metadata"].setdefault(SPACE, {})[key] = value

    def extend(self, keys: list[object]) -> None:
        for key in keys:
            self.fingerprint = hash((self.fingerprint, key))
        self.keys.extend(keys)


def context_of(record: Record) -> dict[str, Any]:
    return {
        "resource": record.resource,
        "scope": record.scope,
        "attributes": without(record.attributes, *ATTRIBUTE_KEYS),
    }


def _continued(ends: dict[int, Thread], keys: list[object]) -> tuple[Thread | None, int]:
    """The conversation whose whole history ``keys`` starts with (the longest), and how
    many of ``keys`` it has read: one pass over ``keys``, a look-up for each."""
    fingerprints = [0]
    for key in keys:
        fingerprints.append(hash((fingerprints[-1], key)))
    for length in range(len(keys), 0, -1):
        thread = ends.get(fingerprints[length])
        if thread is not None and thread.keys == keys[:length]:
            return thread, length
    return None, 0


@dataclass
class Details:
    """A details event's three attributes, decoded."""

    instructions: object
    inputs: object
    outputs: object

    @property
    def input_keys(self) -> list[object]:
        return [message_key(m) for m in self.inputs] if isinstance(self.inputs, list) else []

    @property
    def output_keys(self) -> list[object]:
        outputs = self.outputs
        return [message_key(outputs[0])] if isinstance(outputs, list) and outputs else []


def _attribute_at(record: Record, key: str) -> str:
    return f"{at_key(record.where, 'attributes')}[{json.dumps(key)}]"


def details_of(record: Record, problems: Problems) -> Details | None:
    """A details event's messages, decoded; None when it holds none."""
    attributes = record.attributes
    if all(attributes.get(key) is None for key in ATTRIBUTE_KEYS):
        return None
    return Details(
        *(
            decoded(attributes.get(key), _attribute_at(record, key), problems)
            for key in (
                "gen_ai.system_instructions",
                "gen_ai.input.messages",
                "gen_ai.output.messages",
            )
        )
    )


def read_details(thread: Thread, record: Record, details: Details, start: int) -> None:
    """A details event: its messages from the ``start``-th input on, and what the event
    says of the answer (its time, model and token counts, the rest of its attributes
    where they are not the conversation's), on its output's row (else the last row)."""
    reader = thread.reader
    attributes = record.attributes
    reader.system_instructions(
        details.instructions, _attribute_at(record, "gen_ai.system_instructions")
    )
    reader.messages(details.inputs, _attribute_at(record, "gen_ai.input.messages"), start=start)
    before = len(reader.rows)
    reader.messages(details.outputs, _attribute_at(record, "gen_ai.output.messages"), output=True)
    if len(reader.rows) == before:
        if reader.rows:
            thread.keep_context(reader.rows[-1], record)
        return
    thread.keep_context(reader.rows[before], record)
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


@dataclass
class EventReader:
    """Reads one model call's message events (semconv 1.28 to 1.36) into rows."""

    reader: MessageReader

    @property
    def problems(self) -> Problems:
        return self.reader.problems

    def event(self, record: Record) -> None:
        body = record.body
        where = at_key(record.where, "body")
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
        role = stored_role(written_role)
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
            self.reader.pairing.start_turn(message)
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


def _choice_index(record: Record) -> int:
    index = record.body.get("index") if isinstance(record.body, dict) else None
    return index if isinstance(index, int) and not isinstance(index, bool) else 0


def read_events(thread: Thread, call: ModelCall, start: int) -> None:
    """A call's message events from the ``start``-th input on, then its choices: the
    first is a row, the others are kept on it."""
    reader = thread.reader
    events = EventReader(reader)

    def event(record: Record) -> None:
        before = len(reader.rows)
        events.event(record)
        if len(reader.rows) > before:
            thread.keep_context(reader.rows[before], record)

    inputs = [record for record in call.records if record.name != CHOICE]
    for record in inputs[start:]:
        event(record)
    choices = sorted((r for r in call.records if r.name == CHOICE), key=_choice_index)
    if not choices:
        return
    before = len(reader.rows)
    event(choices[0])
    others = [record.body for record in choices[1:]]
    if others and len(reader.rows) > before:
        where = at_key(choices[1].where, "body")
        if storable(others, where, reader.problems):
            reader.rows[before]["metadata"].setdefault(SPACE, {})["other_outputs"] = others


def event_keys(call: ModelCall) -> tuple[list[object], list[object]]:
    """What a call's inputs and its output (its first choice) are compared by."""
    inputs = [event_key(record) for record in call.records if record.name != CHOICE]
    choices = [record for record in call.records if record.name == CHOICE]
    outputs = [event_key(min(choices, key=_choice_index))] if choices else []
    return inputs, outputs


def read_trace(calls: list[ModelCall], problems: Problems, skipped: list[Skipped]) -> list[Thread]:
    """A trace's conversations: each call goes on with the conversation whose history it
    sends again, or starts one."""
    threads: list[Thread] = []
    ends: dict[int, Thread] = {}
    for call in calls:
        record = call.details
        details = details_of(record, problems) if record is not None else None
        if record is not None and details is None:
            skipped.append(Skipped(place_of(record.where), DETAILS_WITHOUT_MESSAGES))
            continue
        if details is not None:
            inputs, outputs = details.input_keys, details.output_keys
        else:
            inputs, outputs = event_keys(call)
        thread, start = _continued(ends, inputs)
        if thread is None:
            thread = Thread(MessageReader(problems), call.records[0])
        else:
            del ends[thread.fingerprint]
        rows = len(thread.reader.rows)
        if record is not None and details is not None:
            read_details(thread, record, details, start)
        else:
            read_events(thread, call, start)
        if len(thread.reader.rows) == rows and not start:  # a new conversation, still empty
            skipped.extend(Skipped(place_of(r.where), CALL_WITHOUT_MESSAGES) for r in call.records)
            continue
        if not thread.calls:
            threads.append(thread)
        thread.calls.append(call)
        thread.resent += start
        thread.extend([*inputs[start:], *outputs])
        ends[thread.fingerprint] = thread
    return threads


def conversation_of(thread: Thread, problems: Problems) -> Converted:
    first, last = thread.first, thread.calls[-1].records[0]
    about: dict[str, Any] = {
        "shape": "log-details" if last.name == DETAILS else "log-events",
        "calls": len(thread.calls),
    }
    if thread.resent:
        about["resent"] = thread.resent
    if last.trace:
        about["trace_id"] = last.trace
    if last.span:
        about["span_id"] = last.span
    for key, value in thread.context.items():
        if value and storable(value, at_key(first.where, key), problems):
            about[key] = value
    return Converted(thread.reader.rows, {SPACE: about})


def read_logs(source: Source, entries: list[Entry]) -> Reading:
    """A log export: each trace's conversations."""
    found = collect(entries)
    skipped = [*source.unreadable, *found.skipped]
    if not any(has_content(record) for record in found.records):
        sentence = TRACES if found.spans and not found.logs else NO_GENAI_LOGS
        raise InvalidInput([Problem("file", sentence)])
    problems = Problems()
    conversations: list[Converted] = []
    left_out = len(skipped)
    records = without_repeats(found.records, skipped)
    for calls in calls_by_trace(records).values():
        for thread in read_trace(calls, problems, skipped):
            conversations.append(conversation_of(thread, problems))
    problems.raise_if_any()
    if not conversations:
        raise InvalidInput([Problem("file", NO_GENAI_LOGS)])
    read = len(found.records) - (len(skipped) - left_out)
    return Reading(conversations, skipped=skipped, entries=read, unit="event")
