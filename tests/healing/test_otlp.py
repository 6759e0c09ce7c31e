"""Live OTLP ingest, the pure part: OTLP/HTTP trace bodies decoded (protobuf and JSON), a
span read as a model call in each of the four conventions, the digest that recognizes a
message sent again, and one message's stored rows. Spans come from the real OpenTelemetry
SDK (encoded by its OTLP exporter's encoder) as well as built by hand."""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status as RpcStatus  # type: ignore[import-untyped]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode, Tracer

from buffers.healing import InvalidInput, Message, analyze, parse_messages, result_call_id
from buffers.healing.otlp import (
    JSON,
    PROTOBUF,
    ModelCall,
    Refusal,
    Scope,
    Span,
    SpanEvent,
    Status,
    Unreadable,
    UnsupportedType,
    claims_model_call,
    conventions,
    decode_traces,
    digest,
    export_response,
    model_call,
    rows,
    rpc_status,
)

ROOT = Path(__file__).resolve().parents[2]
TRACE = "5b8efff798038103d269b633813fc60c"
SYSTEM = "You are the support agent of Strapworks."
USER = "Order A-10442 arrived with a torn strap."
LOOKUP = ("call_LkY2w9Hq0RtVz3BsNe6MpXcA", "lookup_order", '{"order_id":"A-10442"}')
REFUND = ("call_Tb4Gx8Jd1WmQs7KyPf0RnVhE", "refund_order", '{"order_id":"A-10442","amount":89.0}')
DELIVERED = '{"status":"delivered"}'


# Spans over the wire: the SDK's spans, encoded as its OTLP exporter encodes them.


def otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """A request in OTLP/JSON: the protobuf JSON mapping, enums as integers, ids in hex."""
    document = json_format.MessageToDict(request, use_integers_for_enums=True)

    def hexed(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: base64.b64decode(held).hex()
                if key in ("traceId", "spanId", "parentSpanId")
                else hexed(held)
                for key, held in value.items()
            }
        if isinstance(value, list):
            return [hexed(held) for held in value]
        return value

    return orjson.dumps(hexed(document))


def over_the_wire(spans: tuple[ReadableSpan, ...], encoding: str) -> list[Span]:
    request = encode_spans(spans)
    if encoding == PROTOBUF:
        return decode_traces(request.SerializeToString(), PROTOBUF).spans
    return decode_traces(otlp_json(request), JSON).spans


@pytest.fixture(params=[PROTOBUF, JSON])
def encoding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def sdk_spans(
    build: Callable[[Tracer], None], service: str = "support-bot"
) -> tuple[ReadableSpan, ...]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("tests.otlp", "1.2.3"))
    provider.shutdown()
    return exporter.get_finished_spans()


def span(
    attributes: dict[str, Any] | None = None,
    events: list[SpanEvent] | None = None,
    *,
    name: str = "chat gpt-4o-mini",
    trace_id: str = TRACE,
    span_id: str = "051581bf3cb55c13",
    resource: dict[str, Any] | None = None,
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=None,
        name=name,
        kind=3,
        start_ns=1_760_000_000_000_000_000,
        end_ns=1_760_000_001_250_000_000,
        attributes=attributes or {},
        events=events or [],
        status=Status(0, ""),
        resource=resource if resource is not None else {"service.name": "support-bot"},
        scope=Scope("tests", ""),
    )


def event(name: str, **attributes: Any) -> SpanEvent:
    return SpanEvent(name, 1_760_000_000_500_000_000, attributes)


def read(span: Span) -> ModelCall:
    found = model_call(span)
    assert isinstance(found, ModelCall), found
    return found


def refused(span: Span) -> str:
    found = model_call(span)
    assert isinstance(found, Refusal), found
    return found.reason


def stored(messages: list[dict[str, Any]]) -> list[Message]:
    found = [row for place, m in enumerate(messages) for row in rows(m, f"messages[{place}]")]
    return parse_messages(found)


def sent(messages: list[Message]) -> list[tuple[str, object, object, object]]:
    """What a provider is sent of each message (not its facts)."""
    return [
        (m.role, m.content, m.metadata.get("tool_calls"), m.metadata.get("tool_call_id"))
        for m in messages
    ]


def unanswered(messages: list[Message]) -> list[str]:
    return [call.tool_call_id for call in analyze(messages).unanswered]


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def tool_call(call: tuple[str, str, str]) -> dict[str, Any]:
    return {"type": "tool_call", "id": call[0], "name": call[1], "arguments": json.loads(call[2])}


# One support conversation in each convention: call 1 answers with lookup_order; call 2
# sends the history back with its result and answers with refund_order, and the agent
# dies before running it.


def semconv(call: int) -> dict[str, Any]:
    history = [{"role": "user", "parts": [text(USER)]}]
    if call == 2:
        history += [
            {"role": "assistant", "parts": [tool_call(LOOKUP)]},
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": LOOKUP[0], "response": DELIVERED}],
            },
        ]
    answer = tool_call(LOOKUP if call == 1 else REFUND)
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.conversation.id": "conv_5j66UpCp",
        "gen_ai.agent.name": "Refund desk",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.usage.input_tokens": 212,
        "gen_ai.usage.output_tokens": 19,
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "gen_ai.system_instructions": json.dumps([text(SYSTEM)]),
        "gen_ai.input.messages": json.dumps(history),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [answer], "finish_reason": "tool_call"}]
        ),
    }


def openinference(call: int) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.provider": "openai",
        "llm.token_count.prompt": 212,
        "llm.token_count.completion": 19,
        "llm.token_count.total": 231,
        "session.id": "phoenix-session-7",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": SYSTEM,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": USER,
    }
    if call == 2:
        prefix = "llm.input_messages.2.message.tool_calls.0.tool_call"
        attributes |= {
            "llm.input_messages.2.message.role": "assistant",
            f"{prefix}.id": LOOKUP[0],
            f"{prefix}.function.name": LOOKUP[1],
            f"{prefix}.function.arguments": LOOKUP[2],
            "llm.input_messages.3.message.role": "tool",
            "llm.input_messages.3.message.tool_call_id": LOOKUP[0],
            "llm.input_messages.3.message.content": DELIVERED,
        }
    answer = LOOKUP if call == 1 else REFUND
    prefix = "llm.output_messages.0.message.tool_calls.0.tool_call"
    return attributes | {
        "llm.output_messages.0.message.role": "assistant",
        f"{prefix}.id": answer[0],
        f"{prefix}.function.name": answer[1],
        f"{prefix}.function.arguments": answer[2],
    }


def openllmetry(call: int) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.system": "openai",
        "llm.request.type": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.usage.prompt_tokens": 212,
        "gen_ai.usage.completion_tokens": 19,
        "llm.usage.total_tokens": 231,
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": SYSTEM,
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": USER,
    }
    if call == 2:
        attributes |= {
            "gen_ai.prompt.2.role": "assistant",
            "gen_ai.prompt.2.tool_calls.0.id": LOOKUP[0],
            "gen_ai.prompt.2.tool_calls.0.name": LOOKUP[1],
            "gen_ai.prompt.2.tool_calls.0.arguments": LOOKUP[2],
            "gen_ai.prompt.3.role": "tool",
            "gen_ai.prompt.3.content": DELIVERED,
            "gen_ai.prompt.3.tool_call_id": LOOKUP[0],
        }
    answer = LOOKUP if call == 1 else REFUND
    return attributes | {
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.id": answer[0],
        "gen_ai.completion.0.tool_calls.0.name": answer[1],
        "gen_ai.completion.0.tool_calls.0.arguments": answer[2],
    }


def openai_call(call: tuple[str, str, str]) -> dict[str, Any]:
    return {"id": call[0], "type": "function", "function": {"name": call[1], "arguments": call[2]}}


def message_events(call: int) -> list[tuple[str, dict[str, Any]]]:
    """Semconv 1.28-1.36 message events as span events: the body flattened into the
    event's attributes, a nested value structured or as JSON text."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("gen_ai.system.message", {"content": SYSTEM}),
        ("gen_ai.user.message", {"content": USER}),
    ]
    if call == 2:
        events += [
            ("gen_ai.assistant.message", {"tool_calls": [openai_call(LOOKUP)]}),
            ("gen_ai.tool.message", {"content": DELIVERED, "id": LOOKUP[0]}),
        ]
    answer = LOOKUP if call == 1 else REFUND
    choice = {"role": "assistant", "tool_calls": [openai_call(answer)]}
    body = {"index": 0, "finish_reason": "tool_calls", "message": json.dumps(choice)}
    return [*events, ("gen_ai.choice", body)]


EVENT_SPAN = {
    "gen_ai.operation.name": "chat",
    "gen_ai.system": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
}
CONVENTIONS: dict[str, Callable[[int], dict[str, Any]]] = {
    "semconv": semconv,
    "openinference": openinference,
    "openllmetry": openllmetry,
    "events": lambda call: EVENT_SPAN,
}
MODELS = {
    "semconv": "gpt-4o-mini-2024-07-18",
    "openinference": "gpt-4o-mini",
    "openllmetry": "gpt-4o-mini-2024-07-18",
    "events": "gpt-4o-mini",
}


def agent_run(convention: str) -> Callable[[Tracer], None]:
    """An agent's run: an agent span, two chat spans, a tool span, an HTTP span."""

    def build(tracer: Tracer) -> None:
        with tracer.start_as_current_span("invoke_agent Refund desk") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            for call in (1, 2):
                with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT) as chat:
                    chat.set_attributes(CONVENTIONS[convention](call))
                    if convention == "events":
                        for name, body in message_events(call):
                            chat.add_event(name, body)
                    with tracer.start_as_current_span("POST", kind=SpanKind.CLIENT) as http:
                        http.set_attribute("http.request.method", "POST")
                        http.set_attribute("url.full", "https://api.openai.com/v1/chat/completions")
                if call == 1:
                    with tracer.start_as_current_span("execute_tool lookup_order") as tool:
                        tool.set_attribute("gen_ai.operation.name", "execute_tool")
                        tool.set_attribute("gen_ai.tool.call.id", LOOKUP[0])

    return build


def model_calls(spans: list[Span]) -> list[ModelCall]:
    found = [model_call(span) for span in spans]
    assert not [f for f in found if isinstance(f, Refusal)]
    return [f for f in found if isinstance(f, ModelCall)]


# Decoding.


def test_a_protobuf_request_from_the_sdk_decodes_into_plain_spans(encoding: str) -> None:
    def build(tracer: Tracer) -> None:
        with (
            tracer.start_as_current_span("parent"),
            tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as child,
        ):
            child.set_attributes(
                {"text": "é ok", "count": 3, "ratio": 0.5, "flag": True, "tags": ["a", "b"]}
            )
            child.set_attribute("nested", {"k": [1, {"deep": None}], "b": b"\x00\xff"})
            child.add_event("retry", {"attempt": 2})
            child.set_status(StatusCode.ERROR, "timed out")

    sdk = sdk_spans(build)
    spans = over_the_wire(sdk, encoding)
    child, parent = spans
    made = sdk[0]
    assert made.context is not None
    assert made.parent is not None

    assert child.trace_id == f"{made.context.trace_id:032x}" == parent.trace_id
    assert child.span_id == f"{made.context.span_id:016x}"
    assert child.parent_span_id == f"{made.parent.span_id:016x}" == parent.span_id
    assert parent.parent_span_id is None
    assert (child.name, child.kind) == ("child", 3)
    assert (child.start_ns, child.end_ns) == (made.start_time, made.end_time)
    assert child.attributes == {
        "text": "é ok",
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "tags": ["a", "b"],
        "nested": {"k": [1, {"deep": None}], "b": "AP8="},
    }
    assert [(e.name, e.attributes) for e in child.events] == [("retry", {"attempt": 2})]
    assert child.events[0].time_ns > 0
    assert child.status == Status(2, "timed out")
    assert child.resource["service.name"] == "support-bot"
    assert child.scope == Scope("tests.otlp", "1.2.3")


def test_the_json_encoding_decodes_to_the_same_spans_as_protobuf() -> None:
    sdk = sdk_spans(agent_run("semconv"))

    assert over_the_wire(sdk, JSON) == over_the_wire(sdk, PROTOBUF)


def any_value(**value: Any) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {"scopeSpans": [{"spans": [{"attributes": [{"key": "v", "value": value}]}]}]}
        ]
    }


def decoded_value(document: dict[str, Any]) -> Any:
    return decode_traces(json.dumps(document).encode(), JSON).spans[0].attributes["v"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"intValue": "9007199254740993"}, 9007199254740993),
        ({"intValue": -4}, -4),
        ({"doubleValue": "NaN"}, "nan"),
        ({"doubleValue": "-Infinity"}, float("-inf")),
        ({"doubleValue": 3}, 3.0),
        ({"bytesValue": "AP8"}, "AP8="),
        ({"bytesValue": "_-8="}, "/+8="),
        ({"boolValue": False}, False),
        ({}, None),
        ({"arrayValue": {}}, []),
        (
            {"kvlistValue": {"values": [{"key": "a", "value": {"arrayValue": {"values": [{}]}}}]}},
            {"a": [None]},
        ),
    ],
)
def test_json_any_values_read_as_the_protobuf_json_mapping_writes_them(
    value: dict[str, Any], expected: Any
) -> None:
    found = decoded_value(any_value(**value))

    assert str(found) == expected if expected == "nan" else found == expected


def test_a_content_type_with_parameters_is_read_and_another_one_is_unsupported() -> None:
    body = orjson.dumps(any_value(stringValue="x"))

    assert decode_traces(body, "Application/JSON; charset=utf-8").spans[0].attributes == {"v": "x"}
    with pytest.raises(UnsupportedType, match="'text/plain' is not an OTLP/HTTP encoding"):
        decode_traces(body, "text/plain")


def unreadable(body: bytes, content_type: str = JSON) -> str:
    with pytest.raises(Unreadable) as caught:
        decode_traces(body, content_type)
    return caught.value.message


def test_json_ids_in_base64_are_refused_with_their_place() -> None:
    document = {
        "resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "W47/95gDgQPSabYzgT/GDA=="}]}]}]
    }

    assert unreadable(orjson.dumps(document)) == (
        "The body is not an OTLP/JSON trace export: resourceSpans[0].scopeSpans[0].spans[0]"
        ".traceId must be a hex string (OTLP/JSON writes trace and span ids in hex, not "
        "base64), not 'W47/95gDgQPSabYzgT/GDA=='."
    )


@pytest.mark.parametrize(
    ("document", "sentence"),
    [
        (b"", "it is not JSON"),
        (b"[]", "it must be an object, not a list"),
        (b'{"resourceSpans": {}}', "resourceSpans must be a list, not an object"),
        (b'{"resourceSpans": [3]}', "resourceSpans[0] must be an object, not a number"),
        (
            b'{"resourceSpans": [{"resource": {"attributes": [{"key": 1}]}}]}',
            "resourceSpans[0].resource.attributes[0].key must be a string, not a number",
        ),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "1e9"}]}]}]}',
            "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano must be an unsigned 64-bit",
        ),
        (
            orjson.dumps(any_value(intValue="99999999999999999999")),
            ".attributes[0].value.intValue must be a 64-bit integer",
        ),
        (
            orjson.dumps(any_value(kvlistValue={"values": [{"key": "a", "value": "b"}]})),
            ".attributes[0].value.kvlistValue.values[0].value must be an AnyValue object",
        ),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"kind": "LOUD"}]}]}]}',
            "kind must be an enum value",
        ),
        (b'"\\ud800"', "it is not JSON"),
    ],
)
def test_a_json_body_that_is_no_trace_export_says_what_and_where(
    document: bytes, sentence: str
) -> None:
    assert sentence in unreadable(document)


def nested_json(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "bottom"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def test_values_nested_past_the_limit_are_refused_and_those_within_it_read() -> None:
    within = decoded_value(any_value(**nested_json(64)))
    for _ in range(64):
        within = within["k"]

    assert within == "bottom"
    assert "nests arrays or key-value lists more than 64 levels deep" in unreadable(
        json.dumps(any_value(**nested_json(65))).encode()
    )
    deep = '{"arrayValue": {"values": [' * 400 + "{}" + "]}}" * 400
    body = json.dumps(any_value(stringValue="here")).replace('{"stringValue": "here"}', deep)
    assert "it is not JSON (depth limit exceeded" in unreadable(body.encode())


def test_a_protobuf_body_that_is_not_a_request_is_unreadable() -> None:
    request = ExportTraceServiceRequest()
    deep = request.resource_spans.add().scope_spans.add().spans.add().attributes.add(key="v").value
    for _ in range(120):
        deep = deep.array_value.values.add()
    deep.string_value = "bottom"

    assert unreadable(b"\x0a\x05abc", PROTOBUF).startswith(
        "The body is not an OTLP/protobuf ExportTraceServiceRequest: it cannot be parsed"
    )
    assert "cannot be parsed" in unreadable(request.SerializeToString(), PROTOBUF)
    assert decode_traces(b"", PROTOBUF).spans == []


# Hostile bodies: nothing but Unreadable leaves decode_traces, nothing at all model_call.

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
"""JSON values, some of which JSON cannot write (NaN, integers beyond 64 bits, lone
surrogates): ``json.dumps`` writes them anyway, as a hostile client would."""
json_documents = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=30,
)
any_values = st.recursive(
    st.builds(lambda v: {"stringValue": v}, st.text(max_size=30))
    | st.builds(lambda v: {"intValue": v}, st.integers(-(2**70), 2**70) | st.text(max_size=5))
    | st.builds(lambda v: {"doubleValue": v}, st.floats() | st.sampled_from(["NaN", "x"]))
    | st.builds(lambda v: {"bytesValue": v}, st.text(max_size=8))
    | json_documents,
    lambda children: (
        st.builds(lambda v: {"arrayValue": {"values": v}}, st.lists(children, max_size=3))
        | st.builds(
            lambda v: {"kvlistValue": {"values": [{"key": k, "value": x} for k, x in v.items()]}},
            st.dictionaries(st.text(max_size=8), children, max_size=3),
        )
    ),
    max_leaves=20,
)
CONTENT_KEYS = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.conversation.id",
    "gen_ai.operation.name",
    "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.output_messages.0.message.contents.0.message_content.type",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.tool_calls.1.name",
    "gen_ai.completion.0",
    "content",
    "message",
    "tool_calls",
    "id",
    "message.content",
]


def span_document(
    attributes: list[dict[str, Any]], events: list[Any], extra: Any
) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "x"}}]
                },
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": TRACE,
                                "spanId": "ab" * 8,
                                "attributes": attributes,
                                "events": events,
                            },
                            extra,
                        ]
                    }
                ],
            }
        ]
    }


def survives(body: bytes, content_type: str) -> None:
    try:
        decoded = decode_traces(body, content_type)
    except Unreadable:
        return
    for found in decoded.spans:
        call = model_call(found)
        claims_model_call(found)
        if isinstance(call, ModelCall):
            assert call.digests == [digest(m) for m in call.messages]
            assert isinstance(call.title, str)
            for place, message in enumerate(call.messages):
                with contextlib.suppress(InvalidInput):
                    rows(message, f"messages[{place}]", facts=call.facts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=400), content_type=st.sampled_from([PROTOBUF, JSON]))
def test_random_bytes_are_read_or_unreadable(body: bytes, content_type: str) -> None:
    survives(body, content_type)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=json_documents)
def test_random_json_is_read_or_unreadable(document: Any) -> None:
    survives(json.dumps(document).encode("utf-8", "surrogatepass"), JSON)


message_like = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", 3]), "parts": json_documents},
    optional={
        "content": json_documents,
        "tool_calls": json_documents,
        "tool_call_id": json_documents,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs=st.lists(
        st.tuples(
            st.sampled_from(CONTENT_KEYS),
            any_values
            | st.builds(
                lambda v: {"stringValue": json.dumps(v)}, st.lists(message_like, max_size=3)
            ),
        ),
        max_size=6,
    ),
    event_names=st.lists(
        st.sampled_from(
            [
                "gen_ai.user.message",
                "gen_ai.choice",
                "gen_ai.tool.message",
                "gen_ai.client.inference.operation.details",
            ]
        ),
        max_size=3,
    ),
    extra=json_documents,
)
def test_hostile_attribute_values_are_read_refused_or_ignored_never_a_crash(
    pairs: list[tuple[str, Any]], event_names: list[str], extra: Any
) -> None:
    attributes = [{"key": key, "value": value} for key, value in pairs]
    events = [{"name": name, "attributes": attributes} for name in event_names]
    survives(json.dumps(span_document(attributes, events, extra)).encode(), JSON)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_protobuf_request_with_bytes_changed_is_read_or_unreadable(data: st.DataObject) -> None:
    body = bytearray(WIRE_SAMPLE)
    for _ in range(data.draw(st.integers(1, 8))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    survives(bytes(body[:cut]), PROTOBUF)


WIRE_SAMPLE = encode_spans(sdk_spans(agent_run("openinference"))).SerializeToString()


# Reading model calls in each convention, from the SDK, over both encodings.


@pytest.mark.parametrize("convention", list(CONVENTIONS))
def test_each_convention_reads_an_agent_run_into_one_conversation_with_the_crash_unanswered(
    convention: str, encoding: str
) -> None:
    spans = over_the_wire(sdk_spans(agent_run(convention)), encoding)
    first, second = model_calls(spans)

    assert len(spans) == 6  # the agent, tool and HTTP spans are not model calls
    assert (first.convention, second.convention) == (convention, convention)
    assert (first.input_count, len(first.messages)) == (2, 3)
    assert (second.input_count, len(second.messages)) == (4, 5)
    assert [m["role"] for m in second.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert second.digests[:3] == first.digests  # the first call's answer is the second's history
    assert first.trace_id == second.trace_id == spans[0].trace_id
    new = second.messages[len(first.messages) :]
    buffer = stored(first.messages + new)
    assert [m.role for m in buffer] == ["system", "user", "assistant", "tool", "assistant"]
    assert sent(buffer) == sent(stored(second.messages))
    assert unanswered(buffer) == [REFUND[0]]
    assert (buffer[0].content, buffer[1].content) == (SYSTEM, USER)
    assert result_call_id(buffer[3]) == LOOKUP[0]
    facts = second.facts
    assert facts["model"] == MODELS[convention]
    assert facts["latency_ms"] == (second.end_ns - second.start_ns) / 1e6 or facts["latency_ms"] > 0
    assert facts["time"].endswith("Z")
    assert second.service_name == "support-bot"


def test_each_convention_finds_its_conversation_id_or_leaves_grouping_to_the_trace() -> None:
    ids = {}
    for convention, attributes in CONVENTIONS.items():
        events = (
            [event(name, **body) for name, body in message_events(1)]
            if convention == "events"
            else []
        )
        ids[convention] = read(span(attributes(1), events)).conversation_id

    assert ids == {
        "semconv": "conv_5j66UpCp",
        "openinference": "phoenix-session-7",
        "openllmetry": None,
        "events": None,
    }


def test_the_facts_of_each_convention_are_its_model_usage_and_finish_reason() -> None:
    found = {c: read(span(a(2))) for c, a in CONVENTIONS.items() if c != "events"}
    found["events"] = read(span(EVENT_SPAN, [event(n, **b) for n, b in message_events(2)]))
    facts = {c: {k: v for k, v in call.facts.items() if k != "time"} for c, call in found.items()}

    assert facts == {
        "semconv": {
            "model": "gpt-4o-mini-2024-07-18",
            "usage": {"input": 212, "output": 19},
            "latency_ms": 1250.0,
            "finish_reason": "tool_calls",
        },
        "openinference": {
            "model": "gpt-4o-mini",
            "usage": {"input": 212, "output": 19, "total": 231},
            "latency_ms": 1250.0,
        },
        "openllmetry": {
            "model": "gpt-4o-mini-2024-07-18",
            "usage": {"input": 212, "output": 19, "total": 231},
            "latency_ms": 1250.0,
            "finish_reason": "tool_calls",
        },
        "events": {"model": "gpt-4o-mini", "latency_ms": 1250.0, "finish_reason": "tool_calls"},
    }
    assert found["semconv"].facts["time"] == "2025-10-09T08:53:21.250000Z"
    assert found["semconv"].title == f"Refund desk: {USER}"
    assert found["openllmetry"].title == f"support-bot: {USER}"


def test_semconv_messages_as_structured_attributes_read_as_their_json_text(encoding: str) -> None:
    def build(tracer: Tracer) -> None:
        for structured in (False, True):
            with tracer.start_as_current_span("chat") as chat:
                attributes = semconv(2)
                if structured:
                    for key in (
                        "gen_ai.input.messages",
                        "gen_ai.output.messages",
                        "gen_ai.system_instructions",
                    ):
                        attributes[key] = json.loads(attributes[key])
                chat.set_attributes(attributes)

    as_text, as_structure = model_calls(over_the_wire(sdk_spans(build), encoding))

    assert isinstance(as_structure.messages[0]["parts"], list)
    assert as_text.messages == as_structure.messages
    assert as_text.digests == as_structure.digests


def test_semconv_content_on_the_details_event_is_read_with_the_events_facts() -> None:
    """Strands writes the content as a span event, its values JSON text."""
    content = semconv(1)
    details = event(
        "gen_ai.client.inference.operation.details",
        **{key: content[key] for key in ("gen_ai.input.messages", "gen_ai.output.messages")},
        **{"gen_ai.usage.input_tokens": 40},
    )
    found = read(
        span({"gen_ai.operation.name": "chat", "gen_ai.usage.output_tokens": 5}, [details])
    )

    assert found.convention == "semconv"
    assert [m["role"] for m in found.messages] == ["user", "assistant"]
    assert found.usage == {"input": 40, "output": 5}


def test_system_instructions_are_a_leading_system_message_stored_as_instructions() -> None:
    found = read(span(semconv(1)))
    instructions = found.messages[0]

    assert instructions == {"role": "system", "parts": [text(SYSTEM)], "system_instructions": True}
    assert found.input_count == 2
    assert rows(instructions, "messages[0]") == [
        {"role": "system", "content": SYSTEM, "metadata": {"otel": {"system_instructions": True}}}
    ]


def test_a_plain_string_as_system_instructions_is_one_text_part() -> None:
    found = read(span({"gen_ai.system_instructions": "Be brief.", "gen_ai.input.messages": "[]"}))

    assert found.messages == [
        {"role": "system", "parts": [text("Be brief.")], "system_instructions": True}
    ]


def test_of_several_output_messages_the_first_is_the_answer_and_the_others_are_kept() -> None:
    outputs = [
        {"role": "assistant", "parts": [text("Yes.")], "finish_reason": "stop"},
        {"role": "assistant", "parts": [text("No.")], "finish_reason": "stop"},
    ]
    found = read(span({"gen_ai.output.messages": json.dumps(outputs)}))
    [answer] = rows(found.messages[0], "messages[0]")

    assert (found.input_count, len(found.messages)) == (0, 1)
    assert answer["content"] == "Yes."
    assert answer["metadata"]["otel"]["message"]["other_outputs"] == outputs[1:]


def test_strands_message_events_with_bedrock_blocks_read_as_calls_and_results() -> None:
    events = [
        event("gen_ai.user.message", content=json.dumps([{"text": USER}])),
        event(
            "gen_ai.assistant.message",
            content=json.dumps(
                [
                    {"text": "Let me look."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_1",
                            "name": "lookup_order",
                            "input": {"order_id": "A-10442"},
                        }
                    },
                ]
            ),
        ),
        event(
            "gen_ai.user.message",
            content=json.dumps(
                [
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_1",
                            "status": "success",
                            "content": [{"text": "delivered"}],
                        }
                    }
                ]
            ),
        ),
        event(
            "gen_ai.choice",
            finish_reason="tool_use",
            message=json.dumps(
                [{"toolUse": {"toolUseId": "tooluse_2", "name": "refund_order", "input": {}}}]
            ),
        ),
    ]
    found = read(span({"gen_ai.operation.name": "chat"}, events))

    assert (found.convention, found.input_count) == ("events", 3)
    assert found.messages[1] == {
        "role": "assistant",
        "parts": [
            text("Let me look."),
            {
                "type": "tool_call",
                "id": "tooluse_1",
                "name": "lookup_order",
                "arguments": {"order_id": "A-10442"},
            },
        ],
    }
    assert found.messages[2]["parts"] == [
        {
            "type": "tool_call_response",
            "id": "tooluse_1",
            "response": [{"text": "delivered"}],
            "status": "success",
        }
    ]
    assert found.finish_reason == "tool_use"
    buffer = stored(found.messages)
    assert [m.role for m in buffer] == ["user", "assistant", "tool", "assistant"]
    assert unanswered(buffer) == ["tooluse_2"]


def test_choices_are_ordered_by_index_and_a_flattened_body_is_read_nested() -> None:
    events = [
        event("gen_ai.user.message", content="Hi"),
        event("gen_ai.choice", index=1, **{"message.content": "Second"}),
        event(
            "gen_ai.choice",
            index=0,
            finish_reason="stop",
            **{"message.content": "First", "message.role": "assistant"},
        ),
    ]
    found = read(span({}, events))

    assert found.messages[1] == {
        "role": "assistant",
        "parts": [text("First")],
        "finish_reason": "stop",
        "other_outputs": [{"role": "assistant", "parts": [text("Second")]}],
    }


def test_an_events_body_as_json_in_gen_ai_event_content_is_read_or_refused_saying_where() -> None:
    """azure-ai-inference writes each event's body as JSON text in gen_ai.event.content:
    calls and results in it are read; text that is not a JSON object is refused."""
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    events = [
        event("gen_ai.user.message", **{"gen_ai.event.content": json.dumps({"content": USER})}),
        event(
            "gen_ai.assistant.message",
            **{"gen_ai.event.content": json.dumps({"role": "assistant", "tool_calls": [call]})},
        ),
        event(
            "gen_ai.tool.message",
            **{
                "gen_ai.event.content": json.dumps(
                    {"role": "tool", "content": DELIVERED, "tool_call_id": "call_1"}
                )
            },
        ),
        event(
            "gen_ai.choice",
            **{
                "gen_ai.event.content": json.dumps(
                    {"message": {"content": None, "tool_calls": [{**call, "id": "call_2"}]}}
                )
            },
        ),
    ]
    found = read(span({"gen_ai.operation.name": "chat"}, events))

    buffer = stored(found.messages)
    assert [(m.role, m.content) for m in buffer] == [
        ("user", USER),
        ("assistant", None),
        ("tool", DELIVERED),
        ("assistant", None),
    ]
    assert result_call_id(buffer[2]) == "call_1"
    assert unanswered(buffer) == ["call_2"]
    for written, why in (("Refund it.", "is not JSON text"), ("[]", "must be an object")):
        broken = event("gen_ai.user.message", **{"gen_ai.event.content": written})
        reason = refused(span({"gen_ai.operation.name": "chat"}, [broken]))
        assert reason.startswith("span 051581bf3cb55c13 'chat gpt-4o-mini': events[0]")
        assert f"gen_ai.event.content {why}" in reason, reason


def test_message_events_written_as_json_in_the_events_attribute_are_read_as_span_events() -> None:
    """pydantic-ai (InstrumentationSettings(version=1)) and logfire (event_mode='attributes')
    write the message events as a JSON list in the "events" attribute, each event's name
    under "event.name"; an "events" attribute that holds no message events is another
    instrumentation's, and is left alone."""
    written = [
        {"event.name": "gen_ai.system.message", "role": "system", "content": SYSTEM},
        {
            "event.name": "gen_ai.user.message",
            "role": "user",
            "content": USER,
            "gen_ai.message.index": 0,
        },
        {
            "event.name": "gen_ai.choice",
            "index": 0,
            "message": {"role": "assistant", "tool_calls": [openai_call(LOOKUP)]},
        },
    ]
    found = read(span({"gen_ai.operation.name": "chat", "events": json.dumps(written)}))

    assert (found.convention, found.input_count) == ("events", 2)
    assert sent(stored(found.messages))[:2] == [
        ("system", SYSTEM, None, None),
        ("user", USER, None, None),
    ]
    assert found.outputs[0]["parts"] == [
        {"type": "tool_call", "id": LOOKUP[0], "name": LOOKUP[1], "arguments": LOOKUP[2]}
    ]
    for other in ("[1, 2]", "not json", json.dumps([{"event.name": "retry"}])):
        assert conventions.content(span({"gen_ai.operation.name": "chat", "events": other})) is None
    broken = [{"event.name": "gen_ai.choice", "message": 7}]
    reason = refused(span({"gen_ai.operation.name": "chat", "events": json.dumps(broken)}))
    assert "the attribute 'events'[0] (gen_ai.choice).message must be an object" in reason, reason


def test_openinference_contents_and_a_legacy_function_call_are_read() -> None:
    found = read(
        span(
            {
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.contents.0.message_content.type": "text",
                "llm.input_messages.0.message.contents.0.message_content.text": "What is this?",
                "llm.input_messages.0.message.contents.1.message_content.type": "image",
                "llm.input_messages.0.message.contents.1.message_content.image.image.url": "https://x/a.png",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.function_call_name": "describe",
                "llm.output_messages.0.message.function_call_arguments_json": "{}",
            }
        )
    )

    assert found.messages == [
        {
            "role": "user",
            "parts": [
                text("What is this?"),
                {"type": "uri", "modality": "image", "uri": "https://x/a.png"},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "otel-1-0",
                    "name": "describe",
                    "arguments": "{}",
                    "synthetic_id": True,
                }
            ],
        },
    ]


def test_openllmetry_thinking_is_the_reasoning_of_the_message_it_precedes() -> None:
    """OpenLLMetry's Anthropic instrumentation writes a thinking block as a message of its
    own, role "thinking", before the one it belongs to (and that call's finish reason on
    it); a thinking block sent back in a history's content is reasoning too, so the
    answer and the same message sent back share one digest."""
    found = read(
        span(
            {
                "gen_ai.system": "Anthropic",
                "llm.request.type": "chat",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "Refund order A-10442.",
                "gen_ai.prompt.1.role": "thinking",
                "gen_ai.prompt.1.content": "Look it up first.",
                "gen_ai.prompt.2.role": "assistant",
                "gen_ai.prompt.2.content": "It was delivered.",
                "gen_ai.prompt.3.role": "user",
                "gen_ai.prompt.3.content": "Refund it anyway.",
                "gen_ai.completion.0.finish_reason": "end_turn",
                "gen_ai.completion.0.role": "thinking",
                "gen_ai.completion.0.content": "They insist.",
                "gen_ai.completion.1.role": "assistant",
                "gen_ai.completion.1.content": "Refunded.",
            }
        )
    )

    assert found.input_count == 3
    assert found.messages[1:] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Look it up first."},
                text("It was delivered."),
            ],
        },
        {"role": "user", "parts": [text("Refund it anyway.")]},
        {
            "role": "assistant",
            "parts": [{"type": "reasoning", "content": "They insist."}, text("Refunded.")],
            "finish_reason": "end_turn",
        },
    ]
    assert found.finish_reason == "end_turn"
    sent_back = read(
        span(
            {
                "llm.request.type": "chat",
                "gen_ai.prompt.0.role": "assistant",
                "gen_ai.prompt.0.content": json.dumps(
                    [
                        {"signature": "EqQBCg", "thinking": "They insist.", "type": "thinking"},
                        {"citations": None, "text": "Refunded.", "type": "text"},
                    ]
                ),
            }
        )
    )
    assert sent_back.messages[0]["parts"][0] == {
        "type": "reasoning",
        "content": "They insist.",
        "signature": "EqQBCg",
    }
    assert sent_back.digests[0] == found.digests[-1]


def test_thinking_alone_is_an_assistant_message_and_no_other_role_is_the_answer() -> None:
    """A call cut off while thinking leaves only the thinking; and of several outputs, one
    whose role reads as a user's or a tool's is never taken for the answer."""
    cut = read(
        span(
            {
                "llm.request.type": "chat",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "Refund order A-10442.",
                "gen_ai.completion.0.finish_reason": "max_tokens",
                "gen_ai.completion.0.role": "thinking",
                "gen_ai.completion.0.content": "Look it up fir",
            }
        )
    )
    assert cut.outputs == [
        {
            "role": "assistant",
            "parts": [{"type": "reasoning", "content": "Look it up fir"}],
            "finish_reason": "max_tokens",
        }
    ]
    outputs = [
        {"role": "critic", "parts": [text("Too terse.")]},
        {"role": "assistant", "parts": [text("Refunded.")]},
    ]
    found = read(span({"gen_ai.output.messages": json.dumps(outputs)}))
    assert found.outputs == [{**outputs[1], "other_outputs": outputs[:1]}]


def test_a_call_written_in_the_content_and_again_as_tool_calls_is_read_once() -> None:
    """OpenLLMetry's Anthropic instrumentation (0.47-0.52) writes a history message's
    tool_use blocks in its content's JSON text and again under tool_calls: a call already
    read from the content, by id (by name and arguments when it has none), is not read
    again; a call only under tool_calls is kept."""
    found = read(
        span(
            {
                "llm.request.type": "chat",
                "gen_ai.prompt.0.role": "assistant",
                "gen_ai.prompt.0.content": json.dumps(
                    [
                        {
                            "id": "toolu_1",
                            "input": {"order": "A-10442"},
                            "name": "lookup",
                            "type": "tool_use",
                        },
                        {"input": {"city": "Paris"}, "name": "weather", "type": "tool_use"},
                    ]
                ),
                "gen_ai.prompt.0.tool_calls.0.id": "toolu_1",
                "gen_ai.prompt.0.tool_calls.0.name": "lookup",
                "gen_ai.prompt.0.tool_calls.0.arguments": '{"order": "A-10442"}',
                "gen_ai.prompt.0.tool_calls.1.name": "weather",
                "gen_ai.prompt.0.tool_calls.1.arguments": '{"city": "Paris"}',
                "gen_ai.prompt.0.tool_calls.2.id": "toolu_3",
                "gen_ai.prompt.0.tool_calls.2.name": "refund",
                "gen_ai.prompt.0.tool_calls.2.arguments": "{}",
            }
        )
    )

    assert [(p["id"], p["name"]) for p in found.messages[0]["parts"]] == [
        ("toolu_1", "lookup"),
        ("otel-0-1", "weather"),
        ("toolu_3", "refund"),
    ]


@pytest.mark.rule("MEM-11")
def test_calls_and_results_without_ids_are_paired_by_position_with_ids_stable_across_spans() -> (
    None
):
    """OpenLLMetry writes a legacy function call without an id."""

    def attributes(call: int) -> dict[str, Any]:
        written = {
            "llm.request.type": "chat",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Weather?",
        }
        if call == 2:
            written |= {
                "gen_ai.prompt.1.role": "assistant",
                "gen_ai.prompt.1.tool_calls.0.name": "weather",
                "gen_ai.prompt.1.tool_calls.0.arguments": '{"city":"Paris"}',
                "gen_ai.prompt.2.role": "tool",
                "gen_ai.prompt.2.content": "14C",
                "gen_ai.completion.0.content": "14C in Paris.",
            }
        else:
            written |= {
                "gen_ai.completion.0.tool_calls.0.name": "weather",
                "gen_ai.completion.0.tool_calls.0.arguments": '{"city":"Paris"}',
            }
        return written

    first, second = read(span(attributes(1))), read(span(attributes(2)))

    assert second.messages[1]["parts"][0]["id"] == "otel-1-0"
    assert second.messages[2]["parts"] == [
        {"type": "tool_call_response", "id": "otel-1-0", "response": "14C", "synthetic_id": True}
    ]
    assert second.digests[:2] == first.digests
    buffer = stored(second.messages)
    assert unanswered(buffer) == []
    assert result_call_id(buffer[2]) == "otel-1-0"


# The digest.


def test_an_answer_and_the_same_message_sent_back_as_history_have_one_digest() -> None:
    answer: dict[str, Any] = {
        "role": "assistant",
        "parts": [
            text("Checking."),
            {"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a": 1, "b": [2]}},
        ],
        "finish_reason": "tool_call",
        "name": "agent",
        "index": 0,
    }
    resent = {
        "role": "assistant",
        "parts": [
            {"content": "Checking.", "type": "text"},
            {
                "arguments": '{"b": [2], "a": 1}',
                "name": "f",
                "type": "tool_call",
                "id": "c1",
                "extra": None,
            },
        ],
    }

    assert digest(answer) == digest(resent)
    assert len(digest(answer)) == 32
    assert digest(answer) != digest({**resent, "role": "user"})
    assert digest(answer) != digest({**answer, "parts": answer["parts"][:1]})
    assert digest(answer) != digest({**answer, "parts": answer["parts"][::-1]})


def test_arguments_whose_json_nests_too_deeply_to_write_are_digested_as_text() -> None:
    deep = "[" * 300 + "]" * 300
    found = read(
        span(
            {
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "tool_call", "id": "c1", "name": "f", "arguments": deep}
                            ],
                        }
                    ]
                )
            }
        )
    )

    assert found.digests == [digest(found.messages[0])]
    assert found.digests != [digest({**found.messages[0], "parts": []})]


@pytest.mark.parametrize("convention", ["semconv", "openinference", "openllmetry"])
def test_in_each_convention_an_answer_digests_as_it_reads_when_sent_back(convention: str) -> None:
    first, second = read(span(CONVENTIONS[convention](1))), read(span(CONVENTIONS[convention](2)))

    assert first.outputs[0].get("finish_reason") in (None, "tool_call", "tool_calls")
    assert first.digests[-1] == second.digests[2]
    assert first.digests[-1] != second.digests[-1]


# Rows.


def test_rows_keep_ids_as_sent_even_when_a_later_call_repeats_one() -> None:
    """Gemini-based emitters make ids up per turn (get_weather_0): each message is read on
    its own, so no id is renamed."""
    calls = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "get_weather_0", "name": "get_weather"}],
        },
        {
            "role": "user",
            "parts": [{"type": "tool_call_response", "id": "get_weather_0", "response": {"t": 14}}],
        },
    ]
    turn, result = rows(calls[0], "messages[2]"), rows(calls[1], "messages[3]")

    assert turn[0]["metadata"]["tool_calls"][0]["id"] == "get_weather_0"
    assert result == [
        {
            "role": "tool",
            "content": {"t": 14},
            "metadata": {"tool_call_id": "get_weather_0", "otel": {"role": "user"}},
        }
    ]


def test_the_answers_facts_go_on_its_own_row_and_its_finish_reason_wins() -> None:
    answer = {"role": "assistant", "parts": [text("Done.")], "finish_reason": "stop"}
    [row] = rows(answer, "messages[4]", facts={"model": "m", "finish_reason": "end_turn"})

    assert row["metadata"]["facts"] == {"model": "m", "finish_reason": "stop"}


def test_a_message_the_reader_refuses_names_the_place_given() -> None:
    broken = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1"}]}
    with pytest.raises(InvalidInput) as caught:
        rows(broken, "span 051581bf3cb55c13: messages[3]")

    assert [str(p) for p in caught.value.problems] == [
        "span 051581bf3cb55c13: messages[3].parts[0].name: is missing"
    ]


# Spans that are not model calls.


@pytest.mark.parametrize(
    "attributes",
    [
        {"http.request.method": "POST", "url.full": "https://api.openai.com/v1/chat/completions"},
        {"db.system.name": "postgresql", "db.query.text": "select 1"},
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"},
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [tool_call(LOOKUP)]}]),
        },
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Refund desk"},
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [text(USER)]}]),
        },
        {"openinference.span.kind": "TOOL", "llm.input_messages.0.message.content": "x"},
        {"openinference.span.kind": "CHAIN", "input.value": USER},
        {"llm.request.type": "embedding", "gen_ai.prompt.0.content": USER},
        {"gen_ai.operation.name": "chat", "gen_ai.input.messages": ""},
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": "[]",
            "gen_ai.output.messages": "[]",
        },
    ],
)
def test_spans_that_are_not_model_calls_with_content_are_ignored(
    attributes: dict[str, Any],
) -> None:
    assert model_call(span(attributes)) is None


def test_a_chat_span_exported_with_content_capture_off_is_ignored_but_claims_a_model_call() -> None:
    chat = span({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"})
    http = span({"http.request.method": "POST"})

    assert model_call(chat) is None
    assert claims_model_call(chat)
    assert model_call(http) is None
    assert not claims_model_call(http)
    assert claims_model_call(span({"openinference.span.kind": "llm"}))


def test_a_span_whose_messages_hold_nothing_is_content_capture_off_but_a_bare_call_counts() -> None:
    """Message events emitted with content capture off hold no content: no model call is
    read (the receiver warns that capture is off). An answer that is a call alone, its
    text empty, is content."""
    empty = [
        event("gen_ai.user.message"),
        event("gen_ai.choice", index=0, finish_reason="stop"),
    ]
    chat = span({"gen_ai.operation.name": "chat"}, empty)

    assert model_call(chat) is None
    assert claims_model_call(chat)
    call = {"content": "", "tool_calls": [openai_call(LOOKUP)]}
    bare = [empty[0], event("gen_ai.choice", index=0, message=json.dumps(call))]
    assert read(span({"gen_ai.operation.name": "chat"}, bare)).outputs[0]["parts"] == [
        {"type": "tool_call", "id": LOOKUP[0], "name": LOOKUP[1], "arguments": LOOKUP[2]}
    ]


def test_the_tool_spans_events_of_strands_are_not_read_as_a_conversation() -> None:
    tool = span(
        {"gen_ai.operation.name": "execute_tool"},
        [
            event("gen_ai.tool.message", role="tool", content="{}", id="tooluse_1"),
            event("gen_ai.choice", message="[]"),
        ],
    )

    assert model_call(tool) is None


# Refusals.


@pytest.mark.parametrize(
    ("attributes", "reason"),
    [
        (
            {"gen_ai.input.messages": "[{'role': 'user'}]"},
            "span 051581bf3cb55c13 'chat gpt-4o-mini': gen_ai.input.messages is not JSON text",
        ),
        (
            {"gen_ai.input.messages": '{"role": "user"}'},
            "gen_ai.input.messages must be a list of messages, not an object",
        ),
        (
            {"gen_ai.output.messages": '[{"parts": []}]'},
            "gen_ai.output.messages[0].role is missing",
        ),
        (
            {"gen_ai.input.messages": '[{"role": "user", "parts": [{"content": "x"}]}]'},
            "gen_ai.input.messages[0].parts[0].type is missing",
        ),
        (
            {"gen_ai.system_instructions": "7"},
            "gen_ai.system_instructions must be a list of parts, not a number",
        ),
        (
            {
                "openinference.span.kind": "LLM",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}",
            },
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name is missing",
        ),
        (
            {"llm.input_messages.0.message.role": 3},
            "llm.input_messages.0.message.role must be a string, not a number",
        ),
        (
            {"gen_ai.prompt.0.content": "x", "gen_ai.prompt.0.content.text": "y"},
            "the attribute 'gen_ai.prompt.0.content.text' sets fields of a value",
        ),
        (
            {"gen_ai.prompt.0.role": "tool", "gen_ai.prompt.0.tool_call_id": [1]},
            "gen_ai.prompt.0.tool_call_id must be a string, not a list",
        ),
        (
            {
                "gen_ai.conversation.id": "conv\x00",
                "gen_ai.input.messages": "[]",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [text("Hi.")]}]
                ),
            },
            "gen_ai.conversation.id holds the character U+0000",
        ),
        (
            {
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "x", "v": [[[[[]]]]]}]}]
                ).replace("[[[[[]]]]]", "[" * 300 + "]" * 300)
            },
            "its input message 0 cannot be written as JSON",
        ),
    ],
)
def test_a_model_call_whose_content_cannot_be_read_is_refused_saying_where(
    attributes: dict[str, Any], reason: str
) -> None:
    assert reason in refused(span(attributes))


def test_a_model_call_with_no_conversation_id_and_no_valid_trace_id_is_refused() -> None:
    content = {
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [text("Hi.")]}])
    }

    assert refused(span(content, trace_id="0" * 32)).endswith(
        "it has neither a gen_ai.conversation.id nor a valid trace id to group it by."
    )
    assert (
        read(span({**content, "gen_ai.conversation.id": 42}, trace_id="")).conversation_id == "42"
    )


# Answers.


def test_the_answers_are_otlp_responses_in_the_requests_encoding() -> None:
    partial = ExportTraceServiceResponse.FromString(export_response(PROTOBUF, 2, "2 spans refused"))

    assert (partial.partial_success.rejected_spans, partial.partial_success.error_message) == (
        2,
        "2 spans refused",
    )
    assert export_response(PROTOBUF) == b""
    assert orjson.loads(export_response(JSON)) == {}
    assert orjson.loads(export_response(JSON, 1, "x")) == {
        "partialSuccess": {"rejectedSpans": "1", "errorMessage": "x"}
    }
    status = RpcStatus.FromString(rpc_status(PROTOBUF, "The body is not JSON."))
    assert (status.code, status.message) == (3, "The body is not JSON.")
    assert orjson.loads(rpc_status(JSON, "bad \ud800")) == {"code": 3, "message": "bad \\ud800"}


# Purity.


def test_the_otlp_package_imports_without_django() -> None:
    check = (
        "import sys, buffers.healing.otlp; "
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, (
        f"buffers.healing.otlp imported Django modules: {done.stdout}{done.stderr}"
    )
