"""The messages a span holds, in whichever of the four conventions that put
conversations on spans its instrumentation wrote them. Read in the first of these found:

1. ``semconv``: ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
   ``gen_ai.output.messages`` as span attributes (JSON text, as Python instrumentations
   write them, or structured), else on the last ``gen_ai.client.inference.operation.details``
   span event holding them (Strands);
2. ``events``: the span events ``gen_ai.system.message``, ``gen_ai.user.message``,
   ``gen_ai.assistant.message``, ``gen_ai.tool.message`` and ``gen_ai.choice`` (semconv
   1.28 to 1.36), their bodies flattened into the event's attributes (``content``,
   ``role``, ``id``, ``tool_calls``, ``message``, ``finish_reason``, ``index``; dotted keys
   such as ``message.content`` are read as the nested body), or written whole as JSON text
   in ``gen_ai.event.content`` (azure-ai-inference, Semantic Kernel); the same events
   written as a JSON list in the span's ``events`` attribute, each named by its
   ``event.name`` (pydantic-ai's ``version=1``, logfire's ``event_mode='attributes'``);
3. ``openinference``: ``llm.input_messages.N.message.*`` and ``llm.output_messages.N.message.*``;
4. ``openllmetry``: ``gen_ai.prompt.N.*`` and ``gen_ai.completion.N.*``.

Messages. Each message becomes ONE message of the OpenTelemetry GenAI shape,
``{"role", "parts": [...]}`` (semconv messages are kept as written): text is
``{"type": "text", "content"}``, a call ``{"type": "tool_call", "id", "name",
"arguments"}`` (arguments as written: OpenAI's JSON text stays text), a tool message's
result ``{"type": "tool_call_response", "id", "response"}``; ``name`` and
``finish_reason`` are message keys. Content written as a list of provider blocks, or as
JSON text of one (Strands writes Bedrock blocks, OpenLLMetry OpenAI content lists), is
read block by block: OpenAI text parts, Anthropic ``tool_use``/``tool_result``, Bedrock
``text``/``toolUse``/``toolResult``, Gemini ``functionCall``/``functionResponse``; a
block of another kind is kept as a part of its own type; a call under ``tool_calls`` that
the content already holds (the same id) is read once. Empty text is no part, so that
an answer and the same answer sent back as history read alike. An Anthropic ``thinking``
block is a ``reasoning`` part, and so is an OpenLLMetry message of role ``thinking``, in
the message it precedes. The system instructions (semconv) are a leading system message
marked ``"system_instructions": true``. Of several output messages (choices), the first
whose role is an assistant's is the answer (``spans``) and the others are kept on it,
under ``other_outputs``.

Content that claims to be messages but cannot be read raises ``Refused``, whose sentence
names the place.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from buffers.healing import jsontext
from buffers.healing.formats.otel_messages import canonical_part, stored_role
from buffers.healing.messages import MAX_DEPTH, MAX_ID_LENGTH, describe

from .decode import Span, SpanEvent

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
EVENTS_ATTRIBUTE = "events"
"""Where pydantic-ai (``version=1``) and logfire (``event_mode='attributes'``) write the
message events, as a JSON list."""
EVENT_CONTENT = "gen_ai.event.content"
"""Where azure-ai-inference and Semantic Kernel write an event's whole body, as JSON text."""
OPENINFERENCE = ("llm.input_messages.", "llm.output_messages.")
OPENLLMETRY = ("gen_ai.prompt.", "gen_ai.completion.")
FLATTENED = (*OPENINFERENCE, *OPENLLMETRY)

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
SHOWN_KEY = 80
"""The most of an attribute's key a sentence quotes."""
THINKING = "thinking"
"""The role OpenLLMetry's Anthropic instrumentation gives a thinking block, and the type
of Anthropic's thinking content block."""


RawMessage = dict[str, Any]
"""A message in the OpenTelemetry GenAI shape: ``{"role", "parts": [...], ...}``."""


class Refused(Exception):
    """Content that claims to be messages but cannot be read: ``sentence`` says where."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


@dataclass
class Content:
    convention: str
    inputs: list[RawMessage]
    outputs: list[RawMessage]
    attributes: dict[str, Any]
    """Where the facts are read: the span's attributes (and a details event's)."""


def content(span: Span) -> Content | None:
    """The messages of the first convention found on the span, else None."""
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
        (f"events[{place}] ({event.name})", event)
        for place, event in enumerate(span.events)
        if event.name in MESSAGE_EVENTS or event.name == CHOICE
    ]
    if events or (events := _events_attribute(attributes)):
        return _event_form(events, attributes)
    found = {prefix for key in attributes for prefix in FLATTENED if key.startswith(prefix)}
    if not found.isdisjoint(OPENINFERENCE):
        return _flattened("openinference", OPENINFERENCE, attributes)
    if found:
        return _flattened("openllmetry", OPENLLMETRY, attributes)
    return None


def _shown(key: str) -> str:
    return key if len(key) <= SHOWN_KEY else f"{key[:SHOWN_KEY]}..."


# Convention 1: the current semantic conventions.


def _semconv(values: dict[str, Any], where: str, attributes: dict[str, Any]) -> Content:
    inputs = _semconv_messages(values.get(INPUT), f"{where}{INPUT}", "user")
    outputs = _semconv_messages(values.get(OUTPUT), f"{where}{OUTPUT}", "assistant")
    parts = _instructions(values.get(INSTRUCTIONS), f"{where}{INSTRUCTIONS}")
    if parts:
        inputs.insert(0, {"role": "system", "parts": parts, "system_instructions": True})
    return Content("semconv", inputs, outputs, attributes)


def _json(value: str, where: str) -> object:
    """The value of JSON text, as ``jsontext`` reads a file's (a lone surrogate escaped in a
    string is read, for ``_storable`` to replace), but an integer beyond 64 bits as a float,
    as orjson reads one: orjson writes the messages' digests, and refuses such an integer."""
    try:
        held, _ = jsontext.loads(value)
        if jsontext.has_long_number(value):
            held = _long_integers_as_floats(held)
    except jsontext.DuplicateKey as error:
        raise Refused(f"{error.under(where)}: {error.why}") from None
    except json.JSONDecodeError as error:
        raise Refused(f"{where} is not JSON text ({error})") from None
    except (RecursionError, ValueError, OverflowError):  # too deep, or too long a number
        raise Refused(f"{where} cannot be read as JSON") from None
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
        raise Refused(f"{where} must be a list of messages, not {describe(value)}")
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
            raise Refused(f"{at} must be a message object, not {describe(message)}")
        if "parts" not in message and not {"content", "tool_calls", "tool_call_id"}.isdisjoint(
            message
        ):
            messages.append(_openai_message(message, at, role, flat=False))
            continue
        written = message.get("role")
        if not isinstance(written, str):
            raise Refused(f"{at}.role {_wanted(written, 'a string')}")
        parts = message.get("parts")
        if not isinstance(parts, list):
            raise Refused(f"{at}.parts {_wanted(parts, 'a list of parts')}")
        for index, part in enumerate(parts):
            _typed(part, f"{at}.parts[{index}]")
        messages.append(message)
    return messages


def _wanted(value: object, wanted: str) -> str:
    return "is missing" if value is None else f"must be {wanted}, not {describe(value)}"


def _typed(part: object, where: str) -> None:
    if not isinstance(part, dict):
        raise Refused(f"{where} must be a part object, not {describe(part)}")
    if not isinstance(part.get("type"), str):
        raise Refused(f"{where}.type {_wanted(part.get('type'), 'a string')}")


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
        raise Refused(f"{where} must be a list of parts, not {describe(value)}")
    parts: list[Any] = []
    for place, part in enumerate(value):
        if isinstance(part, str):
            parts.append({"type": "text", "content": part})
            continue
        _typed(part, f"{where}[{place}]")
        parts.append(part)
    return parts


# Convention 2: message events (semconv 1.28 to 1.36) on the span.


def _events_attribute(attributes: dict[str, Any]) -> list[tuple[str, SpanEvent]]:
    """The message events written as a JSON list in the span's ``events`` attribute, each
    event's name under ``event.name`` (pydantic-ai's ``InstrumentationSettings(version=1)``,
    logfire's ``event_mode='attributes'``), with where each is; none when the attribute
    holds no message events (it is another instrumentation's, and left alone)."""
    written = attributes.get(EVENTS_ATTRIBUTE)
    if not isinstance(written, str) or not written.lstrip().startswith("["):
        return []
    try:
        held = _json(written, EVENTS_ATTRIBUTE)
    except Refused:
        return []
    if not isinstance(held, list):
        return []
    return [
        (
            f"the attribute {EVENTS_ATTRIBUTE!r}[{place}] ({name})",
            SpanEvent(name, 0, {k: v for k, v in item.items() if k != "event.name"}),
        )
        for place, item in enumerate(held)
        if isinstance(item, dict)
        and isinstance(name := item.get("event.name"), str)
        and (name in MESSAGE_EVENTS or name == CHOICE)
    ]


def _event_form(events: list[tuple[str, SpanEvent]], attributes: dict[str, Any]) -> Content:
    inputs: list[RawMessage] = []
    choices: list[tuple[int, int, RawMessage]] = []
    for where, event in events:
        if EVENT_CONTENT in event.attributes:
            body = _event_content(event.attributes[EVENT_CONTENT], f"{where} {EVENT_CONTENT}")
        else:
            body = _unflatten({k: v for k, v in event.attributes.items() if _in_body(k)}, "")
        if event.name == CHOICE:
            index = body.get("index")
            order = index if isinstance(index, int) and not isinstance(index, bool) else 0
            choices.append((order, len(choices), _choice(body, where)))
        else:
            inputs.append(_event_message(MESSAGE_EVENTS[event.name], body, where))
    choices.sort(key=lambda choice: choice[:2])
    return Content("events", inputs, [message for _, _, message in choices], attributes)


def _event_content(value: object, where: str) -> dict[str | int, Any]:
    """An event's body written whole as JSON text (an object) in ``gen_ai.event.content``,
    as azure-ai-inference's instrumentor and Semantic Kernel write it."""
    if isinstance(value, str):
        value = _json(value, where) if value.strip() else {}
    if not isinstance(value, dict):
        raise Refused(f"{where} must be an object, not {describe(value)}")
    return {str(key): held for key, held in value.items()}


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
        raise Refused(f"{where}.message must be an object, not {describe(message)}")
    fields = {str(key): value for key, value in message.items()}
    if "tool_calls" not in fields and body.get("tool_calls") is not None:
        fields["tool_calls"] = body["tool_calls"]
    read = _openai_message(fields, f"{where}.message", "assistant", flat=True, sniff=True)
    reason = body.get("finish_reason")
    if isinstance(reason, str):
        read["finish_reason"] = reason
    return read


# Conventions 3 and 4: flattened attributes.


def _flattened(convention: str, prefixes: tuple[str, str], attributes: dict[str, Any]) -> Content:
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
                raise Refused(f"{where} must be a message, not {describe(held)}")
            sniff = convention == "openllmetry"
            messages.append(_openai_message(held, where, role, flat=True, sniff=sniff))
        sides.append(_thinking_folded(messages) if convention == "openllmetry" else messages)
    return Content(convention, sides[0], sides[1], attributes)


def _thinking_folded(messages: list[RawMessage]) -> list[RawMessage]:
    """OpenLLMetry's Anthropic instrumentation (up to 0.52 at least) writes a thinking block
    as a message of its own, role ``thinking``, before the message it belongs to, and the
    call's finish reason on it: its text is that message's reasoning, leading its parts
    (the finish reason goes with it when the message has none). Thinking not followed by
    an assistant message (a call cut off while thinking) is an assistant message of its
    own. Read as it was written, it was a user message, and taken for the answer."""
    folded: list[RawMessage] = []
    thought: list[Any] = []
    reason: object = None
    for message in messages:
        if message["role"] == THINKING:
            thought += [
                {"type": "reasoning", "content": part["content"]}
                if part.get("type") == "text"
                else part
                for part in message["parts"]
            ]
            reason = reason or message.get("finish_reason")
            continue
        if thought or reason is not None:
            if stored_role(message["role"]) == "assistant":
                message = {**message, "parts": [*thought, *message["parts"]]}
                if reason is not None and "finish_reason" not in message:
                    message["finish_reason"] = reason
            else:
                folded.append(_thinking_alone(thought, reason))
            thought, reason = [], None
        folded.append(message)
    if thought or reason is not None:
        folded.append(_thinking_alone(thought, reason))
    return folded


def _thinking_alone(thought: list[Any], reason: object) -> RawMessage:
    message: RawMessage = {"role": "assistant", "parts": thought}
    if reason is not None:
        message["finish_reason"] = reason
    return message


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
            raise Refused(f"the attribute {_shown(key)!r} nests more than {MAX_DEPTH} levels deep")
        node = root
        for segment in segments[:-1]:
            name = _segment(segment)
            child = node.get(name)
            if child is None:
                child = node[name] = _Tree()
            elif not isinstance(child, _Tree):
                raise Refused(f"the attribute {_shown(key)!r} sets fields of a value")
            node = child
        name = _segment(segments[-1])
        if isinstance(node.get(name), _Tree):
            raise Refused(f"the attribute {_shown(key)!r} holds a value where fields are")
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
            raise Refused(f"{_at(where, 'role', flat)} must be a string, not {describe(written)}")
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
        raise Refused(f"{_at(where, 'tool_calls', flat)} must be a list, not {describe(calls)}")
    written = [part for part in parts if part.get("type") == "tool_call"]
    for place, call in enumerate(calls or ()):
        part = _call_part(call, _at(_at(where, "tool_calls", flat), place, flat), flat)
        if not _written_already(part, written):
            parts.append(part)
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


def _written_already(call: dict[str, Any], written: list[Any]) -> bool:
    """Whether a call under ``tool_calls`` is one of the calls already read from the
    message's content (and takes it: each is matched once). OpenLLMetry's Anthropic
    instrumentation (0.47-0.52) writes a history message's whole content, its
    ``tool_use`` blocks included, as JSON text and the same calls again under
    ``tool_calls``; read twice, the message held a second call (``#2`` after the ids were
    made unique), its digest differed from the stored answer's, and the span branched
    with a phantom unanswered call. The same id is the same call; without one, the same
    name and arguments (``canonical_part``: JSON text or JSON alike)."""
    same = canonical_part({**call, "id": None})
    for place, part in enumerate(written):
        if call.get("id") is not None:
            if part.get("id") != call["id"]:
                continue
        elif part.get("id") is not None or canonical_part({**part, "id": None}) != same:
            continue
        del written[place]
        return True
    return False


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
        raise Refused(f"{where} is longer than {MAX_ID_LENGTH} characters")
    raise Refused(f"{where} must be a string, not {describe(value)}")


def _call_part(call: object, where: str, flat: bool) -> dict[str, Any]:
    """A call in OpenAI's spelling (``{id, function: {name, arguments}}``), OpenLLMetry's
    (``{id, name, arguments}``) or OpenInference's (``{tool_call: {id, function: ...}}``)."""
    if isinstance(call, dict) and isinstance(call.get("tool_call"), dict):
        call, where = call["tool_call"], _at(where, "tool_call", flat)
    if not isinstance(call, dict):
        raise Refused(f"{where} must be a call object, not {describe(call)}")
    function, at = call, where
    if isinstance(call.get("function"), dict):
        function, at = call["function"], _at(where, "function", flat)
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise Refused(f"{_at(at, 'name', flat)} {_wanted(name or None, 'a string')}")
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
        raise Refused(f"{where} must be a list, not {describe(contents)}")
    parts: list[Any] = []
    for place, item in enumerate(contents):
        held = item.get("message_content", item) if isinstance(item, dict) else item
        at = _at(_at(where, place, flat), "message_content", flat)
        if not isinstance(held, dict):
            raise Refused(f"{at} must be an object, not {describe(held)}")
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
        raise Refused(f"{where} cannot be written as JSON") from None


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
        if kind == THINKING and isinstance(block.get(THINKING), str):
            rest = {k: v for k, v in block.items() if k not in ("type", THINKING)}
            return {"type": "reasoning", "content": block[THINKING], **rest}
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
