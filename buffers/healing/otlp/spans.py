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
Any other span is read when it holds messages, in the first of the four conventions
``conventions`` reads. A chat span without any (content capture is off by default in most
instrumentations), or whose messages hold nothing (no text, call, result or other part:
the message events of semconv 1.28 to 1.36 are still emitted with capture off, empty but
for a choice's index and finish reason), is None too; ``claims_model_call`` tells such a
span from an HTTP one.

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

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any, cast

import orjson

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.formats.common import Row
from buffers.healing.formats.otel_genai import read_messages
from buffers.healing.formats.otel_messages import stored_role
from buffers.healing.formats.source import changed
from buffers.healing.ids import usable_id
from buffers.healing.messages import MAX_ID_LENGTH, describe, json_problem, storable_copy

from .conventions import INPUT, INSTRUCTIONS, Content, RawMessage, Refused, content
from .decode import Span
from .recognition import digest

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
        found = content(span)
        if found is None:
            return None
        return _model_call(span, found)
    except Refused as refused:
        return Refusal(f"{_named(span)}: {refused.sentence}.")


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


def _named(span: Span) -> str:
    name = span.name if len(span.name) <= TITLE_TEXT else f"{span.name[:TITLE_TEXT]}..."
    return f"span {span.span_id or '(without an id)'} {name!r}"


def _model_call(span: Span, content: Content) -> ModelCall | None:
    inputs, outputs = content.inputs, content.outputs
    if not any(message["parts"] for message in (*inputs, *outputs)):
        return None  # none, or the empty events instrumentations emit with capture off
    messages = list(inputs)
    if outputs:
        outputs = _answer_first(outputs)
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


def _answer_first(outputs: list[RawMessage]) -> list[RawMessage]:
    """The outputs with the answer first: the first whose role reads as an assistant's
    (``assistant``, ``model``), else the first. An output of another role (a user's, a
    tool's, one we do not know) taken for the answer would be a user row answering the
    call, and its call never declared."""
    place = next(
        (p for p, m in enumerate(outputs) if stored_role(str(m.get("role"))) == "assistant"), 0
    )
    if place == 0:
        return outputs
    return [outputs[place], *outputs[:place], *outputs[place + 1 :]]


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
        raise Refused(f"its {which} message {place} cannot be written as JSON ({error})") from None


def _dumps_fine(message: RawMessage) -> bool:
    try:
        orjson.dumps(message)
    except TypeError:
        return False
    return True


def _conversation_id(span: Span, content: Content) -> str | None:
    key = "gen_ai.conversation.id"
    written = content.attributes.get(key)
    if written is None and content.convention == "openinference":
        key = "session.id"
        written = content.attributes.get(key)
    if isinstance(written, int) and not isinstance(written, bool):
        written = str(written)
    if written is not None and written != "":
        if not isinstance(written, str):
            raise Refused(f"{key} must be a string, not {describe(written)}")
        if len(written) > MAX_ID_LENGTH:
            raise Refused(f"{key} is longer than {MAX_ID_LENGTH} characters")
        if (problem := json_problem(written)) is not None:
            raise Refused(f"{key} {problem}")
        return written
    trace = span.trace_id
    if len(trace) != 32 or trace.strip("0") == "":
        raise Refused("it has neither a gen_ai.conversation.id nor a valid trace id to group it by")
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
