"""A decoded span read as a model call: its messages in one shape, whatever convention its
instrumentation wrote them in, and what it says of the answer.

``model_call(span)`` gives a ``ModelCall``, None for a span that is not a model call with
content, or a ``Refusal`` for one that claims to be but whose content cannot be read.

Which spans. A span whose ``gen_ai.operation.name`` is another operation than a model
call's (``execute_tool``, ``invoke_agent``, ``create_agent``, ``embeddings``...), whose
``openinference.span.kind`` is not ``LLM``, or whose ``llm.request.type`` (OpenLLMetry) is
not ``chat`` or ``completion``, is not one, even when it holds messages: a tool span's
messages (Strands writes the call and its result) and an agent span's (the run's input and
final answer, or pydantic-ai's whole run) are not the history the next model call sends,
and reading them beside the chat spans would make every conversation look rewritten.
Any other span is read when it holds messages, in the first of these conventions found:

1. ``semconv``: ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
   ``gen_ai.output.messages`` as span attributes (JSON text, as Python instrumentations
   write them, or structured), else on the last ``gen_ai.client.inference.operation.details``
   span event holding them (Strands);
2. ``events``: the span events ``gen_ai.system.message``, ``gen_ai.user.message``,
   ``gen_ai.assistant.message``, ``gen_ai.tool.message`` and ``gen_ai.choice`` (semconv
   1.28 to 1.36), their bodies flattened into the event's attributes (``content``,
   ``role``, ``id``, ``tool_calls``, ``message``, ``finish_reason``, ``index``; dotted keys
   such as ``message.content`` are read as the nested body);
3. ``openinference``: ``llm.input_messages.N.message.*`` and ``llm.output_messages.N.message.*``;
4. ``openllmetry``: ``gen_ai.prompt.N.*`` and ``gen_ai.completion.N.*``.

A chat span without any (content capture is off by default in most instrumentations) is
None too; ``claims_model_call`` tells such a span from an HTTP one.

Messages. Each message becomes ONE message of the OpenTelemetry GenAI shape,
``{"role", "parts": [...]}`` (semconv messages are kept as written): text is
``{"type": "text", "content"}``, a call ``{"type": "tool_call", "id", "name",
"arguments"}`` (arguments as written: OpenAI's JSON text stays text), a tool message's
result ``{"type": "tool_call_response", "id", "response"}``; ``name`` and
``finish_reason`` are message keys. Content written as a list of provider blocks, or as
JSON text of one (Strands writes Bedrock blocks, OpenLLMetry OpenAI content lists), is
read block by block: OpenAI text parts, Anthropic ``tool_use``/``tool_result``, Bedrock
``text``/``toolUse``/``toolResult``, Gemini ``functionCall``/``functionResponse``; a
block of another kind is kept as a part of its own type. Empty text is no part, so that
an answer and the same answer sent back as history read alike. The system instructions
(semconv) are a leading system message marked ``"system_instructions": true``. Of several
output messages (choices), the first is the answer and the others are kept on it, under
``other_outputs``.

Ids. They are kept as the agent sent them. A call without one gets ``otel-<p>-<k>`` (its
message's position among the call's messages, its part's place), marked
``"synthetic_id": true``; a result without one answers the first unanswered such call of
the latest message that made any. Positions are those of the whole history every model
call sends, so the same call gets the same id in every span.

Grouping. ``conversation_id`` is ``gen_ai.conversation.id`` (OpenInference's
``session.id`` for OpenInference spans), else None and the caller groups by trace id; a
span with neither a usable conversation id nor a valid trace id is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any, cast

import orjson

from buffers.healing import jsontext
from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.formats.common import Row
from buffers.healing.formats.otel_genai import read_messages
from buffers.healing.formats.source import changed
from buffers.healing.ids import usable_id
from buffers.healing.messages import (
    MAX_DEPTH,
    MAX_ID_LENGTH,
    describe,
    json_problem,
    storable_copy,
)

from .decode import Span, SpanEvent

RawMessage = dict[str, Any]
"""A message in the OpenTelemetry GenAI shape: ``{"role", "parts": [...], ...}``."""

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
OTHER_OPERATIONS = frozenset(
    {
        "execute_tool",
        "invoke_agent",
        "create_agent",
        "invoke_workflow",
        "embeddings",
        "retrieval",
    }
)
"""``gen_ai.operation.name`` values of spans that are not model calls."""
OPENLLMETRY_REQUESTS = frozenset({"chat", "completion"})

INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
INSTRUCTIONS = "gen_ai.system_instructions"
DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
BODY_KEYS = frozenset(
    {"content", "role", "id", "tool_call_id", "tool_calls", "message", "finish_reason", "index"}
)
"""The keys of a message event's body, flattened into its attributes."""
OPENINFERENCE = ("llm.input_messages.", "llm.output_messages.")
OPENLLMETRY = ("gen_ai.prompt.", "gen_ai.completion.")
FLATTENED = (*OPENINFERENCE, *OPENLLMETRY)

USAGE = {
    "input": (
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.prompt_tokens",
        "llm.token_count.prompt",
        "llm.usage.prompt_tokens",
    ),
    "output": (
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.completion_tokens",
        "llm.token_count.completion",
        "llm.usage.completion_tokens",
    ),
    "cached": (
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
        "llm.token_count.prompt_details.cache_read",
    ),
    "reasoning": (
        "gen_ai.usage.reasoning.output_tokens",
        "llm.token_count.completion_details.reasoning",
    ),
    "total": ("gen_ai.usage.total_tokens", "llm.token_count.total", "llm.usage.total_tokens"),
}
"""``facts.usage`` keys, each from the first attribute of these that holds a count."""
MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
BLOCK_KEYS = frozenset(
    {
        "text",
        "toolUse",
        "toolResult",
        "functionCall",
        "functionResponse",
        "function_call",
        "function_response",
    }
)
"""Keys that make an untyped object a provider content block (Bedrock, Gemini)."""
TITLE_TEXT = 80
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A span that claims to be a model call whose content cannot be read: ``reason`` is
    one sentence naming the span and the place (for ``partial_success.error_message``)."""

    reason: str


@dataclass(frozen=True)
class ModelCall:
    """One model call read from a span."""

    convention: str
    """``semconv``, ``events``, ``openinference`` or ``openllmetry``."""
    trace_id: str
    span_id: str
    conversation_id: str | None
    """``gen_ai.conversation.id``; None: group by ``trace_id``."""
    start_ns: int
    end_ns: int
    messages: list[RawMessage]
    """The input messages (the system instructions first, as a system message), then the
    answer: each ONE message of the OpenTelemetry GenAI shape, for ``rows``."""
    input_count: int
    """How many of ``messages`` are the input; the rest (0 or 1) is the answer."""
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    latency_ms: float | None = None
    finish_reason: str | None = None
    agent_name: str | None = None
    service_name: str | None = None
    replaced: str = ""
    """Why characters no database stores were replaced in the messages, when any were."""

    @cached_property
    def digests(self) -> list[str]:
        """``digest`` of each of ``messages`` (each is also cheap on its own)."""
        return [digest(message) for message in self.messages]

    @property
    def inputs(self) -> list[RawMessage]:
        return self.messages[: self.input_count]

    @property
    def outputs(self) -> list[RawMessage]:
        return self.messages[self.input_count :]

    @property
    def facts(self) -> dict[str, Any]:
        """``metadata.facts`` for the answer's rows: ``time`` (when the span ended),
        ``model``, ``usage``, ``latency_ms``, ``finish_reason``; those known."""
        facts: dict[str, Any] = {}
        if (time := _iso(self.end_ns)) is not None:
            facts["time"] = time
        if self.model is not None:
            facts["model"] = self.model
        if self.usage:
            facts["usage"] = dict(self.usage)
        if self.latency_ms is not None:
            facts["latency_ms"] = self.latency_ms
        if self.finish_reason is not None:
            facts["finish_reason"] = self.finish_reason
        return facts

    @property
    def title(self) -> str:
        """The agent's name (else the service's, unless the SDK's ``unknown_service``)
        and the first user text, shortened: ``support-bot: Order A-10442 arrived...``."""
        who = self.agent_name
        if (
            who is None
            and self.service_name
            and not self.service_name.startswith("unknown_service")
        ):
            who = self.service_name
        text = _first_user_text(self.messages)
        return ": ".join(part for part in (who, text) if part)


def claims_model_call(span: Span) -> bool:
    """Whether a span says it is a model call (its operation, OpenInference span kind or
    OpenLLMetry request type), content or not: a chat span ``model_call`` finds no
    content in was exported with content capture off."""
    operation, kind, request = (
        _word(span.attributes.get(key))
        for key in ("gen_ai.operation.name", "openinference.span.kind", "llm.request.type")
    )
    return (
        operation in MODEL_OPERATIONS
        or (kind is not None and kind.upper() == "LLM")
        or request in OPENLLMETRY_REQUESTS
    )


def model_call(span: Span) -> ModelCall | Refusal | None:
    """The model call a span describes, None when it is none (or holds no content), or a
    ``Refusal`` saying why its content cannot be read."""
    if not _may_be_model_call(span.attributes):
        return None
    try:
        content = _content(span)
        if content is None:
            return None
        return _model_call(span, content)
    except _Refused as refused:
        return Refusal(f"{_named(span)}: {refused.sentence}.")


def digest(message: Mapping[str, Any]) -> str:
    """A short stable digest of a message's role and parts: what an answer and the same
    message sent back as history share (``finish_reason``, ``name``, an ``index`` and any
    other message key are left out; a call's arguments written as JSON text read as the
    JSON they hold; parts' keys holding null are left out; so are reasoning parts, which
    most models are not sent back, and empty text parts, which many agents drop). Raises
    TypeError for a value JSON cannot write (never for the messages of a ``ModelCall``)."""
    parts = message.get("parts")
    if isinstance(parts, list):
        parts = [part for part in parts if not _not_sent_back(part)]
    return _digest_of(message.get("role"), parts)


def legacy_digest(message: Mapping[str, Any]) -> str:
    """``digest`` as it was before reasoning and empty text parts were left out of it: what
    the messages traced before then were stored under (``digests``)."""
    return _digest_of(message.get("role"), message.get("parts"))


def digests(message: Mapping[str, Any]) -> set[str]:
    """What a stored message's digest may be if it is ``message``: ``digest``, or
    ``legacy_digest`` for one stored before the two differed."""
    return {digest(message), legacy_digest(message)}


def _digest_of(role: object, parts: object) -> str:
    canonical = [_canonical_part(part) for part in parts] if isinstance(parts, list) else parts
    try:
        text = orjson.dumps({"role": role, "parts": canonical}, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # arguments whose JSON nests too deeply to write: digest them as text
        text = orjson.dumps({"role": role, "parts": parts}, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(text, digest_size=16).hexdigest()


def rows(
    message: Mapping[str, Any], where: str, *, facts: Mapping[str, Any] | None = None
) -> list[Row]:
    """One message of a ``ModelCall`` as stored-shape rows (several when it holds tool
    results), read by the OpenTelemetry GenAI reader on its own: ids stay as written, and
    a result answers its id whether or not the call is among these rows. ``facts`` (an
    answer's, ``ModelCall.facts``) go into the facts of the message's own row; what the
    message says itself (its ``finish_reason``) wins. Raises InvalidInput whose places
    are ``where`` and the path inside the message (``where.parts[2].name``)."""
    try:
        if message.get("system_instructions") is True:
            found = read_messages(None, None, message.get("parts"))
        else:
            found = read_messages([dict(message)])
    except InvalidInput as error:
        problems = [
            Problem(_placed(problem.path, where), problem.message) for problem in error.problems
        ]
        raise InvalidInput(problems) from None
    if facts and found:
        own = next((row for row in found if row["role"] != "tool"), found[0])
        metadata = own["metadata"]
        metadata["facts"] = {**facts, **metadata.get("facts", {})}
    return found


def _placed(path: str, where: str) -> str:
    for prefix, replacement in (
        (f"{INPUT}[0]", where),
        (INSTRUCTIONS, f"{where}.parts"),
        (INPUT, where),
    ):
        if path.startswith(prefix):
            return replacement + path[len(prefix) :]
    return f"{where}: {path}" if path else where


def _not_sent_back(part: object) -> bool:
    return isinstance(part, dict) and (
        part.get("type") == "reasoning"
        or (part.get("type") == "text" and part.get("content") == "")
    )


def _canonical_part(part: object) -> object:
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


# Which spans.


def _may_be_model_call(attributes: dict[str, Any]) -> bool:
    operation = attributes.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation in OTHER_OPERATIONS:
        return False
    kind = attributes.get("openinference.span.kind")
    if isinstance(kind, str) and kind.upper() != "LLM":
        return False
    request = attributes.get("llm.request.type")
    return not isinstance(request, str) or request in OPENLLMETRY_REQUESTS


class _Refused(Exception):
    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


def _named(span: Span) -> str:
    name = span.name if len(span.name) <= TITLE_TEXT else f"{span.name[:TITLE_TEXT]}..."
    return f"span {span.span_id or '(without an id)'} {name!r}"


def _shown(key: str) -> str:
    return key if len(key) <= TITLE_TEXT else f"{key[:TITLE_TEXT]}..."


@dataclass
class _Content:
    convention: str
    inputs: list[RawMessage]
    outputs: list[RawMessage]
    attributes: dict[str, Any]
    """Where the facts are read: the span's attributes (and a details event's)."""


def _content(span: Span) -> _Content | None:
    attributes = span.attributes
    if any(attributes.get(key) not in (None, "") for key in (INPUT, OUTPUT, INSTRUCTIONS)):
        return _semconv(attributes, "", attributes)
    details = [
        (place, event)
        for place, event in enumerate(span.events)
        if event.name == DETAILS
        and any(event.attributes.get(key) not in (None, "") for key in (INPUT, OUTPUT))
    ]
    if details:
        place, event = details[-1]
        where = f"events[{place}] ({DETAILS}): "
        return _semconv(event.attributes, where, {**event.attributes, **attributes})
    events = [
        (place, event)
        for place, event in enumerate(span.events)
        if event.name in MESSAGE_EVENTS or event.name == CHOICE
    ]
    if events:
        return _event_form(events, attributes)
    found = {prefix for key in attributes for prefix in FLATTENED if key.startswith(prefix)}
    if not found.isdisjoint(OPENINFERENCE):
        return _flattened("openinference", OPENINFERENCE, attributes)
    if found:
        return _flattened("openllmetry", OPENLLMETRY, attributes)
    return None


def _model_call(span: Span, content: _Content) -> ModelCall | None:
    inputs, outputs = content.inputs, content.outputs
    if not inputs and not outputs:
        return None
    messages = list(inputs)
    if outputs:
        answer = outputs[0]
        if len(outputs) > 1:
            answer = {**answer, "other_outputs": outputs[1:]}
        messages.append(answer)
    messages, replaced = _storable(_with_ids(messages))
    _writable(messages, len(inputs))
    attributes = content.attributes
    output_reason = outputs[0].get("finish_reason") if outputs else None
    return ModelCall(
        convention=content.convention,
        trace_id=span.trace_id,
        span_id=span.span_id,
        conversation_id=_conversation_id(span, content),
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        messages=messages,
        input_count=len(inputs),
        model=next((m for key in MODEL_KEYS if (m := _word(attributes.get(key)))), None),
        usage=_usage(attributes),
        latency_ms=_latency(span),
        finish_reason=_finish_reason(attributes.get("gen_ai.response.finish_reasons"))
        or _word(output_reason),
        agent_name=_word(attributes.get("gen_ai.agent.name"))
        or _word(attributes.get("agent.name")),
        service_name=_word(span.resource.get("service.name")),
        replaced=replaced,
    )


def _storable(messages: list[RawMessage]) -> tuple[list[RawMessage], str]:
    """The messages with each U+0000 and lone surrogate replaced by U+FFFD, as a runtime's
    log file is read (docs/decisions.md): a tool that printed a binary file leaves one,
    and the history every later span repeats would hold it too, so refusing it would stop
    the conversation for good. Also why, when any was (else ""). Asked in C first: orjson
    escapes U+0000 and refuses a surrogate."""
    try:
        if b"\\u0000" not in orjson.dumps(messages):
            return messages, ""
    except TypeError:  # a surrogate, or nested past orjson's depth (``_writable``)
        pass
    copy, places = storable_copy(messages)
    if not places:
        return messages, ""
    return cast(list[RawMessage], copy), changed([(f"messages{p}", kind) for p, kind in places])


def _writable(messages: list[RawMessage], inputs: int) -> None:
    """Refuse messages JSON cannot write (nested past orjson's 255 levels: JSON text is
    read up to 1,024), so that ``digest`` cannot fail on them. One pass in C."""
    try:
        orjson.dumps(messages)
    except TypeError as error:
        place = next((p for p, m in enumerate(messages) if not _dumps_fine(m)), 0)
        which = "input" if place < inputs else "output"
        raise _Refused(f"its {which} message {place} cannot be written as JSON ({error})") from None


def _dumps_fine(message: RawMessage) -> bool:
    try:
        orjson.dumps(message)
    except TypeError:
        return False
    return True


def _conversation_id(span: Span, content: _Content) -> str | None:
    key = "gen_ai.conversation.id"
    written = content.attributes.get(key)
    if written is None and content.convention == "openinference":
        key = "session.id"
        written = content.attributes.get(key)
    if isinstance(written, int) and not isinstance(written, bool):
        written = str(written)
    if written is not None and written != "":
        if not isinstance(written, str):
            raise _Refused(f"{key} must be a string, not {describe(written)}")
        if len(written) > MAX_ID_LENGTH:
            raise _Refused(f"{key} is longer than {MAX_ID_LENGTH} characters")
        if (problem := json_problem(written)) is not None:
            raise _Refused(f"{key} {problem}")
        return written
    trace = span.trace_id
    if len(trace) != 32 or trace.strip("0") == "":
        raise _Refused(
            "it has neither a gen_ai.conversation.id nor a valid trace id to group it by"
        )
    return None


def _word(value: object) -> str | None:
    """A name or a reason fit to show and store, else None."""
    if isinstance(value, str) and value and len(value) <= MAX_ID_LENGTH:
        return value if json_problem(value) is None else None
    return None


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
        return value
    return None


def _usage(attributes: dict[str, Any]) -> dict[str, int]:
    usage: dict[str, int] = {}
    for name, keys in USAGE.items():
        for key in keys:
            if (count := _count(attributes.get(key))) is not None:
                usage[name] = count
                break
    return usage


def _latency(span: Span) -> float | None:
    if 0 < span.start_ns <= span.end_ns:
        return round((span.end_ns - span.start_ns) / 1e6, 3)
    return None


def _finish_reason(value: object) -> str | None:
    if isinstance(value, str) and value.startswith("["):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    if isinstance(value, list | tuple):
        return next((reason for item in value if (reason := _word(item))), None)
    return _word(value)


def _iso(nanoseconds: int) -> str | None:
    if nanoseconds <= 0:
        return None
    try:
        moment = _EPOCH + timedelta(microseconds=nanoseconds // 1000)
    except OverflowError:
        return None
    return moment.isoformat().replace("+00:00", "Z")


def _first_user_text(messages: list[RawMessage]) -> str:
    for message in messages:
        if message.get("role") != "user":
            continue
        for part in message.get("parts", ()):
            if isinstance(part, dict) and part.get("type") == "text":
                text = part.get("content")
                if isinstance(text, str) and text.strip():
                    words = " ".join(text.split()[: TITLE_TEXT // 2])
                    if len(words) > TITLE_TEXT:
                        words = f"{words[: TITLE_TEXT - 3].rstrip()}..."
                    return words
    return ""


# Ids.


def _no_id(value: object) -> bool:
    return value is None or (isinstance(value, str) and usable_id(value) is None)


def _with_ids(messages: list[RawMessage]) -> list[RawMessage]:
    """``messages`` with an id made for each call without one, and given to each result
    without one (see the module's docstring); a message changed is a copy."""
    waiting: list[str] = []
    done: list[RawMessage] = []
    for position, message in enumerate(messages):
        parts: list[Any] = message["parts"]
        changed: list[Any] | None = None
        made: list[str] = []
        for place, part in enumerate(parts):
            kind = part.get("type") if isinstance(part, dict) else None
            if (kind != "tool_call" and kind != "tool_call_response") or not _no_id(part.get("id")):
                continue
            if kind == "tool_call":
                made.append(f"otel-{position}-{place}")
                new = made[-1]
            elif kind == "tool_call_response" and waiting:
                new = waiting.pop(0)
            else:
                continue
            if changed is None:
                changed = list(parts)
            changed[place] = {**part, "id": new, "synthetic_id": True}
        if made:
            waiting = made
        done.append(message if changed is None else {**message, "parts": changed})
    return done


# Convention 1: the current semantic conventions.


def _semconv(values: dict[str, Any], where: str, attributes: dict[str, Any]) -> _Content:
    inputs = _semconv_messages(values.get(INPUT), f"{where}{INPUT}", "user")
    outputs = _semconv_messages(values.get(OUTPUT), f"{where}{OUTPUT}", "assistant")
    parts = _instructions(values.get(INSTRUCTIONS), f"{where}{INSTRUCTIONS}")
    if parts:
        inputs.insert(0, {"role": "system", "parts": parts, "system_instructions": True})
    return _Content("semconv", inputs, outputs, attributes)


def _json(value: str, where: str) -> object:
    """The value of JSON text, as ``jsontext`` reads a file's (a lone surrogate escaped in a
    string is read, for ``_storable`` to replace), but an integer beyond 64 bits as a float,
    as orjson reads one: orjson writes the messages' digests, and refuses such an integer."""
    try:
        held, _ = jsontext.loads(value)
        if jsontext.has_long_number(value):
            held = _long_integers_as_floats(held)
    except jsontext.DuplicateKey as error:
        raise _Refused(f"{error.under(where)}: {error.why}") from None
    except json.JSONDecodeError as error:
        raise _Refused(f"{where} is not JSON text ({error})") from None
    except (RecursionError, ValueError, OverflowError):  # too deep, or too long a number
        raise _Refused(f"{where} cannot be read as JSON") from None
    return held


def _long_integers_as_floats(value: object) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else float(value)
    if isinstance(value, list):
        return [_long_integers_as_floats(item) for item in value]
    if isinstance(value, dict):
        return {key: _long_integers_as_floats(item) for key, item in value.items()}
    return value


def _semconv_messages(value: object, where: str, role: str) -> list[RawMessage]:
    if isinstance(value, str):
        value = _json(value, where) if value.strip() else None
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Refused(f"{where} must be a list of messages, not {describe(value)}")
    messages: list[RawMessage] = []
    for place, message in enumerate(value):
        if (
            type(message) is dict
            and type(message.get("role")) is str
            and type(parts := message.get("parts")) is list
            and all(type(part) is dict and type(part.get("type")) is str for part in parts)
        ):
            messages.append(message)  # the usual case, first
            continue
        at = f"{where}[{place}]"
        if not isinstance(message, dict):
            raise _Refused(f"{at} must be a message object, not {describe(message)}")
        if "parts" not in message and not {"content", "tool_calls", "tool_call_id"}.isdisjoint(
            message
        ):
            messages.append(_openai_message(message, at, role, flat=False))
            continue
        written = message.get("role")
        if not isinstance(written, str):
            raise _Refused(f"{at}.role {_wanted(written, 'a string')}")
        parts = message.get("parts")
        if not isinstance(parts, list):
            raise _Refused(f"{at}.parts {_wanted(parts, 'a list of parts')}")
        for index, part in enumerate(parts):
            _typed(part, f"{at}.parts[{index}]")
        messages.append(message)
    return messages


def _wanted(value: object, wanted: str) -> str:
    return "is missing" if value is None else f"must be {wanted}, not {describe(value)}"


def _typed(part: object, where: str) -> None:
    if not isinstance(part, dict):
        raise _Refused(f"{where} must be a part object, not {describe(part)}")
    if not isinstance(part.get("type"), str):
        raise _Refused(f"{where}.type {_wanted(part.get('type'), 'a string')}")


def _instructions(value: object, where: str) -> list[Any]:
    """System instructions: a list of parts (JSON text or structured); a plain string,
    or JSON text of one, is one text part."""
    if isinstance(value, str):
        if not value.strip():
            return []
        with contextlib.suppress(orjson.JSONDecodeError):
            value = orjson.loads(value)
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "content": value}]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise _Refused(f"{where} must be a list of parts, not {describe(value)}")
    parts: list[Any] = []
    for place, part in enumerate(value):
        if isinstance(part, str):
            parts.append({"type": "text", "content": part})
            continue
        _typed(part, f"{where}[{place}]")
        parts.append(part)
    return parts


# Convention 2: message events (semconv 1.28 to 1.36) on the span.


def _event_form(events: list[tuple[int, SpanEvent]], attributes: dict[str, Any]) -> _Content:
    inputs: list[RawMessage] = []
    choices: list[tuple[int, int, RawMessage]] = []
    for place, event in events:
        where = f"events[{place}] ({event.name})"
        body = _unflatten({k: v for k, v in event.attributes.items() if _in_body(k)}, "")
        if event.name == CHOICE:
            index = body.get("index")
            order = index if isinstance(index, int) and not isinstance(index, bool) else 0
            choices.append((order, len(choices), _choice(body, where)))
        else:
            inputs.append(_event_message(MESSAGE_EVENTS[event.name], body, where))
    choices.sort(key=lambda choice: choice[:2])
    return _Content("events", inputs, [message for _, _, message in choices], attributes)


def _in_body(key: str) -> bool:
    return key.partition(".")[0] in BODY_KEYS


def _event_message(role: str, body: dict[str | int, Any], where: str) -> RawMessage:
    fields = {str(key): value for key, value in body.items()}
    if role == "tool" and "tool_call_id" not in fields:
        fields["tool_call_id"] = fields.pop("id", None)
        fields.setdefault("role", "tool")
    return _openai_message(fields, where, role, flat=True, sniff=True)


def _choice(body: dict[str | int, Any], where: str) -> RawMessage:
    message = body.get("message")
    if isinstance(message, str):
        held = _sniffed(message, objects=True)
        message = held if held is not None else {"content": message}
    if isinstance(message, list):
        message = {"content": message}
    if message is None:
        message = {}
    if not isinstance(message, dict):
        raise _Refused(f"{where}.message must be an object, not {describe(message)}")
    fields = {str(key): value for key, value in message.items()}
    if "tool_calls" not in fields and body.get("tool_calls") is not None:
        fields["tool_calls"] = body["tool_calls"]
    read = _openai_message(fields, f"{where}.message", "assistant", flat=True, sniff=True)
    reason = body.get("finish_reason")
    if isinstance(reason, str):
        read["finish_reason"] = reason
    return read


# Conventions 3 and 4: flattened attributes.


def _flattened(convention: str, prefixes: tuple[str, str], attributes: dict[str, Any]) -> _Content:
    sides: list[list[RawMessage]] = []
    for prefix, role in zip(prefixes, ("user", "assistant"), strict=True):
        messages: list[RawMessage] = []
        tree = _unflatten(attributes, prefix)
        for index in sorted(key for key in tree if isinstance(key, int)):
            where = f"{prefix}{index}"
            held = tree[index]
            if convention == "openinference":
                where = f"{where}.message"
                held = held.get("message") if isinstance(held, dict) else None
            if not isinstance(held, dict):
                raise _Refused(f"{where} must be a message, not {describe(held)}")
            sniff = convention == "openllmetry"
            messages.append(_openai_message(held, where, role, flat=True, sniff=sniff))
        sides.append(messages)
    return _Content(convention, sides[0], sides[1], attributes)


class _Tree(dict[str | int, Any]):
    """A node made of dotted attribute keys (told apart from a structured value)."""


def _segment(text: str) -> str | int:
    return int(text) if text.isascii() and text.isdecimal() and len(text) <= 9 else text


def _unflatten(attributes: dict[str, Any], prefix: str) -> dict[str | int, Any]:
    """The attributes under ``prefix``, their dotted keys made nested: ``{0: {"message":
    {"role": ...}}}``; a node whose keys are all numbers is a list (in their order)."""
    root = _Tree()
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        segments = key[len(prefix) :].split(".")
        if len(segments) > MAX_DEPTH:
            raise _Refused(f"the attribute {_shown(key)!r} nests more than {MAX_DEPTH} levels deep")
        node = root
        for segment in segments[:-1]:
            name = _segment(segment)
            child = node.get(name)
            if child is None:
                child = node[name] = _Tree()
            elif not isinstance(child, _Tree):
                raise _Refused(f"the attribute {_shown(key)!r} sets fields of a value")
            node = child
        name = _segment(segments[-1])
        if isinstance(node.get(name), _Tree):
            raise _Refused(f"the attribute {_shown(key)!r} holds a value where fields are")
        node[name] = value
    return {name: _plain(child) for name, child in root.items()}


def _plain(value: Any) -> Any:
    if not isinstance(value, _Tree):
        return value
    if all(isinstance(key, int) for key in value):
        return [_plain(value[key]) for key in sorted(value)]
    return {str(key): _plain(child) for key, child in value.items()}


# Messages in OpenAI's spelling (OpenInference's and OpenLLMetry's are the same, flattened).


def _at(where: str, key: str | int, flat: bool) -> str:
    return f"{where}.{key}" if flat or isinstance(key, str) else f"{where}[{key}]"


def _openai_message(
    fields: Mapping[str, Any], where: str, role: str, *, flat: bool, sniff: bool = False
) -> RawMessage:
    """A message written as OpenAI's (``role``, ``content``, ``tool_calls``,
    ``tool_call_id``, ``name``), with OpenInference's ``contents`` and legacy function
    call, as one OpenTelemetry GenAI message."""
    written = fields.get("role")
    if written is not None and written != "":
        if not isinstance(written, str):
            raise _Refused(f"{_at(where, 'role', flat)} must be a string, not {describe(written)}")
        role = written
    content = fields.get("content")
    parts = _content_parts(content, _at(where, "content", flat), sniff=sniff)
    if (contents := fields.get("contents")) is not None:
        parts.extend(_contents(contents, _at(where, "contents", flat), flat))
    if isinstance(refusal := fields.get("refusal"), str) and refusal:
        parts.append({"type": "refusal", "content": refusal})
    calls = fields.get("tool_calls")
    if isinstance(calls, str):
        calls = _json(calls, _at(where, "tool_calls", flat)) if calls.strip() else None
    if isinstance(calls, dict):
        calls = [calls]
    if calls is not None and not isinstance(calls, list):
        raise _Refused(f"{_at(where, 'tool_calls', flat)} must be a list, not {describe(calls)}")
    for place, call in enumerate(calls or ()):
        parts.append(_call_part(call, _at(_at(where, "tool_calls", flat), place, flat), flat))
    legacy = fields.get("function_call")
    if isinstance(legacy, dict):
        parts.append(_call_part(legacy, _at(where, "function_call", flat), flat))
    elif isinstance(fields.get("function_call_name"), str):
        legacy_call = {
            "name": fields["function_call_name"],
            "arguments": fields.get("function_call_arguments_json"),
        }
        parts.append(_call_part(legacy_call, where, flat))
    answered = fields.get("tool_call_id")
    if answered is not None or role == "tool":
        _id_or_none(answered, _at(where, "tool_call_id", flat))
        response = content
        if response is None:
            texts = [p["content"] for p in parts if p.get("type") == "text"]
            response = "".join(texts) if texts else None
        parts = [{"type": "tool_call_response", "id": answered, "response": response}]
    message: RawMessage = {"role": role, "parts": _without_empty_text(parts)}
    if isinstance(name := fields.get("name"), str) and name:
        message["name"] = name
    if isinstance(reason := fields.get("finish_reason"), str) and reason:
        message["finish_reason"] = reason
    return message


def _without_empty_text(parts: list[Any]) -> list[Any]:
    return [
        part
        for part in parts
        if not (part.get("type") == "text" and part.get("content") in ("", None))
    ]


def _id_or_none(value: object, where: str) -> None:
    if value is None or (isinstance(value, str | int) and not isinstance(value, bool)):
        if not isinstance(value, str) or len(value) <= MAX_ID_LENGTH:
            return
        raise _Refused(f"{where} is longer than {MAX_ID_LENGTH} characters")
    raise _Refused(f"{where} must be a string, not {describe(value)}")


def _call_part(call: object, where: str, flat: bool) -> dict[str, Any]:
    """A call in OpenAI's spelling (``{id, function: {name, arguments}}``), OpenLLMetry's
    (``{id, name, arguments}``) or OpenInference's (``{tool_call: {id, function: ...}}``)."""
    if isinstance(call, dict) and isinstance(call.get("tool_call"), dict):
        call, where = call["tool_call"], _at(where, "tool_call", flat)
    if not isinstance(call, dict):
        raise _Refused(f"{where} must be a call object, not {describe(call)}")
    function, at = call, where
    if isinstance(call.get("function"), dict):
        function, at = call["function"], _at(where, "function", flat)
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise _Refused(f"{_at(at, 'name', flat)} {_wanted(name or None, 'a string')}")
    part: dict[str, Any] = {"type": "tool_call"}
    if call.get("id") is not None:
        _id_or_none(call["id"], _at(where, "id", flat))
        part["id"] = call["id"]
    part["name"] = name
    if function.get("arguments") is not None:
        part["arguments"] = function["arguments"]
    return part


def _contents(contents: object, where: str, flat: bool) -> list[Any]:
    """OpenInference's ``message.contents``: ``[{"message_content": {"type", "text"...}}]``."""
    if not isinstance(contents, list):
        raise _Refused(f"{where} must be a list, not {describe(contents)}")
    parts: list[Any] = []
    for place, item in enumerate(contents):
        held = item.get("message_content", item) if isinstance(item, dict) else item
        at = _at(_at(where, place, flat), "message_content", flat)
        if not isinstance(held, dict):
            raise _Refused(f"{at} must be an object, not {describe(held)}")
        kind = held.get("type")
        if kind == "text" or (kind is None and isinstance(held.get("text"), str)):
            parts.append({"type": "text", "content": held.get("text")})
        elif kind == "image" and isinstance(url := _dig(held, "image", "image", "url"), str):
            parts.append({"type": "uri", "modality": "image", "uri": url})
        else:
            parts.append({**held, "type": kind if isinstance(kind, str) else "generic"})
    return parts


def _dig(value: object, *keys: str) -> object:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _sniffed(text: str, *, objects: bool = False) -> Any:
    """The blocks a string holds as JSON text (a list of provider blocks; with
    ``objects``, an object too), or None when it is text."""
    stripped = text.strip()
    if not stripped.startswith("[" if not objects else ("[", "{")):
        return None
    try:
        held = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    if objects and isinstance(held, dict):
        return held
    if isinstance(held, list) and held and all(_is_block(item) for item in held):
        return held
    return None


def _is_block(item: object) -> bool:
    return isinstance(item, dict) and (
        isinstance(item.get("type"), str) or not BLOCK_KEYS.isdisjoint(item)
    )


def _content_parts(content: object, where: str, *, sniff: bool) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, str):
        blocks = _sniffed(content) if sniff else None
        if blocks is None:
            return [{"type": "text", "content": content}]
        content = blocks
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return [{"type": "text", "content": _json_text(content, where)}]
    parts: list[Any] = []
    for place, block in enumerate(content):
        parts.append(_part(block, f"{where}[{place}]"))
    return parts


def _json_text(value: object, where: str) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        raise _Refused(f"{where} cannot be written as JSON") from None


def _part(block: object, where: str) -> Any:
    """A provider content block as an OpenTelemetry GenAI part."""
    if isinstance(block, str):
        return {"type": "text", "content": block}
    if not isinstance(block, dict):
        return {"type": "text", "content": _json_text(block, where)}
    kind = block.get("type")
    if isinstance(kind, str):
        if kind == "text" and isinstance(block.get("text"), str) and "content" not in block:
            rest = {k: v for k, v in block.items() if k not in ("type", "text")}
            return {"type": "text", "content": block["text"], **rest}
        if kind == "tool_use":
            return _call_part({**block, "arguments": block.get("input")}, where, False)
        if kind == "tool_result":
            _id_or_none(block.get("tool_use_id"), f"{where}.tool_use_id")
            result = {
                "type": "tool_call_response",
                "id": block.get("tool_use_id"),
                "response": block.get("content"),
            }
            if "is_error" in block:
                result["is_error"] = block["is_error"]
            return result
        return block
    if isinstance(block.get("text"), str) and len(block) == 1:
        return {"type": "text", "content": block["text"]}
    for key in ("toolUse", "functionCall", "function_call"):
        if isinstance(call := block.get(key), dict):
            written = {
                "id": call.get("toolUseId", call.get("id")),
                "name": call.get("name"),
                "arguments": call.get("input", call.get("args")),
            }
            return _call_part(written, f"{where}.{key}", False)
    for key in ("toolResult", "functionResponse", "function_response"):
        if isinstance(held := block.get(key), dict):
            answered = held.get("toolUseId", held.get("id"))
            _id_or_none(answered, f"{where}.{key}.id")
            response: dict[str, Any] = {"type": "tool_call_response", "id": answered}
            response["response"] = held.get("content", held.get("response"))
            for kept in ("status", "name"):
                if kept in held:
                    response[kept] = held[kept]
            return response
    if len(block) == 1:
        [(key, value)] = block.items()
        return {"type": key, "content": value}
    return {"type": "generic", "value": block}
