"""Live ingest: an agent's OpenTelemetry exporter pointed at /api/otel/v1/traces with a token
is the whole set-up. Crashed runs show up marked; later spans continue their conversation
with nothing duplicated, in any order and sent twice; a rewritten history branches; other
people's conversation ids never reach theirs; bad requests get OTLP's answers. The client
is the real OpenTelemetry SDK and its OTLP/HTTP exporter, against a live server."""

from __future__ import annotations

import base64
import functools
import gzip
import json
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest
from django.contrib.auth.models import User
from django.test import Client
from google.protobuf import json_format
from google.rpc.status_pb2 import Status as RpcStatus  # type: ignore[import-untyped]
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer
from pytest_django.live_server_helper import LiveServer

from buffers import selectors, services
from buffers.healing import otlp
from buffers.models import ApiToken, BufferChange, Conversation, TracedMessage
from tests.buffers import signed_in
from tests.integrity import assert_consistent

URL = "/api/otel/v1/traces"
PROTOBUF = "application/x-protobuf"

USER = {"role": "user", "parts": [{"type": "text", "content": "Refund order A-10442."}]}
LOOKUP = {
    "role": "assistant",
    "parts": [
        {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"order": "A-10442"}}
    ],
    "finish_reason": "tool_call",
}
FOUND = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "call_1", "response": "delivered"}],
}
REFUND = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_2", "name": "refund", "arguments": {"amount": 89}}],
    "finish_reason": "tool_call",
}
REFUNDED = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "call_2", "response": "refunded"}],
}
DONE = {"role": "assistant", "parts": [{"type": "text", "content": "Refunded."}]}


def chat(
    tracer: Tracer,
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
    conversation: str | None = "conv-1",
    **extra: Any,
) -> None:
    """One model call as the GenAI semantic conventions record it."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 12,
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
        **extra,
    }
    if conversation is not None:
        attributes["gen_ai.conversation.id"] = conversation
    with tracer.start_as_current_span("chat gpt-4o-mini", attributes=attributes):
        pass


def spans_of(build: Callable[[Tracer], None]) -> tuple[ReadableSpan, ...]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("tests"))
    provider.shutdown()
    return exporter.get_finished_spans()


def request_of(build: Callable[[Tracer], None]) -> ExportTraceServiceRequest:
    return encode_spans(spans_of(build))


def otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON: the protobuf JSON mapping with enums as integers and ids in hex."""
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


@pytest.fixture
def token(db: None) -> str:
    user, _ = User.objects.get_or_create(username="agent-owner")
    return ApiToken.issue(user, "agent")[1]


def post(
    client: Client, body: bytes, token: str | None, content_type: str = PROTOBUF, **headers: str
) -> Any:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return client.generic("POST", URL, body, content_type=content_type, headers=headers)


def send(client: Client, token: str, build: Callable[[Tracer], None]) -> ExportTraceServiceResponse:
    response = post(client, request_of(build).SerializeToString(), token)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == PROTOBUF
    return ExportTraceServiceResponse.FromString(response.content)


def buffer(conversation: Conversation) -> list[dict[str, Any]]:
    return [m.as_stored() for m in selectors.buffer_messages(conversation)]


def roles(conversation: Conversation) -> list[str]:
    return [m["role"] for m in buffer(conversation)]


# With the real exporter, against a live server.


@pytest.mark.django_db(transaction=True)
def test_an_agent_exporting_with_the_sdk_needs_only_the_endpoint_and_a_token(
    live_server: LiveServer, token: str
) -> None:
    def run(headers: dict[str, str]) -> bool:
        exporter = OTLPSpanExporter(endpoint=f"{live_server.url}{URL}", headers=headers)
        provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("agent")
        chat(tracer, [USER], [LOOKUP])
        chat(tracer, [USER, LOOKUP, FOUND], [REFUND])  # then the process died
        chat(tracer, [USER], [DONE], conversation="conv-2")
        provider.shutdown()
        return True

    run({"Authorization": "Bearer not-a-token"})
    assert not Conversation.objects.exists()

    run({"Authorization": f"Bearer {token}"})

    first, second = Conversation.objects.order_by("pk")
    assert roles(first) == ["user", "assistant", "tool", "assistant"]
    assert first.unanswered_count == 1
    assert first.source == "OpenTelemetry"
    assert first.title == "support-bot: Refund order A-10442."
    assert roles(second) == ["user", "assistant"]
    assert second.unanswered_count == 0

    run_later = OTLPSpanExporter(
        endpoint=f"{live_server.url}{URL}", headers={"Authorization": f"Bearer {token}"}
    )
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(run_later))
    chat(provider.get_tracer("agent"), [USER, LOOKUP, FOUND, REFUND, REFUNDED], [DONE])
    provider.shutdown()

    first.refresh_from_db()
    assert roles(first) == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert first.unanswered_count == 0
    assert_consistent(first)


# Through the test client: the same HTTP stack, every case.


@pytest.mark.django_db
def test_each_span_adds_only_what_is_new_with_its_facts_on_the_answer(
    client: Client, token: str
) -> None:
    send(client, token, lambda t: chat(t, [USER], [LOOKUP]))
    send(client, token, lambda t: chat(t, [USER, LOOKUP, FOUND], [REFUND]))

    conversation = Conversation.objects.get()
    stored = buffer(conversation)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    facts = stored[3]["metadata"]["facts"]
    assert facts["model"] == "gpt-4o-mini"
    assert facts["usage"]["input"] == 120
    assert "latency_ms" in facts
    assert facts["finish_reason"] == "tool_call"
    assert BufferChange.objects.filter(conversation=conversation, via="otlp").count() == 2
    assert conversation.healed_count == 0  # stored as sent, never healed


@pytest.mark.django_db
def test_spans_out_of_order_and_sent_twice_give_the_same_buffer(client: Client, token: str) -> None:
    early = request_of(lambda t: chat(t, [USER], [LOOKUP])).SerializeToString()
    late = request_of(lambda t: chat(t, [USER, LOOKUP, FOUND], [REFUND])).SerializeToString()

    for body in (late, early, late, early):
        assert post(client, body, token).status_code == 200

    conversation = Conversation.objects.get()
    assert roles(conversation) == ["user", "assistant", "tool", "assistant"]
    assert_consistent(conversation)


@pytest.mark.django_db
def test_an_answer_stored_from_a_later_span_gets_its_facts_when_its_own_span_comes(
    client: Client, token: str
) -> None:
    late = request_of(lambda t: chat(t, [USER, LOOKUP, FOUND], [REFUND])).SerializeToString()
    early = request_of(lambda t: chat(t, [USER], [LOOKUP])).SerializeToString()
    post(client, late, token)
    conversation = Conversation.objects.get()
    assert "model" not in buffer(conversation)[1]["metadata"].get("facts", {})

    post(client, early, token)
    post(client, early, token)  # sent again: nothing more to write

    facts = buffer(conversation)[1]["metadata"]["facts"]
    assert (facts["model"], facts["usage"]["input"]) == ("gpt-4o-mini", 120)
    assert facts["finish_reason"] == "tool_call"
    assert "latency_ms" in facts
    changes = BufferChange.objects.filter(conversation=conversation).order_by("pk")
    assert [(c.via, c.action) for c in changes] == [("otlp", "import"), ("otlp", "edit")]
    assert_consistent(conversation)


@pytest.mark.django_db
def test_facts_that_come_late_are_not_written_on_a_message_a_repair_moved_there(
    client: Client, token: str
) -> None:
    second = {"role": "user", "parts": [{"type": "text", "content": "And the refund?"}]}
    post(
        client,
        request_of(lambda t: chat(t, [USER, DONE, second], [REFUND])).SerializeToString(),
        token,
    )
    conversation = Conversation.objects.get()
    services.delete_message(
        conversation_id=conversation.pk, index=0, via="admin", by="staff", reason="test"
    )

    post(client, request_of(lambda t: chat(t, [USER], [DONE])).SerializeToString(), token)

    assert [m["metadata"].get("facts", {}).get("model") for m in buffer(conversation)][:2] == [
        None,
        None,
    ], "message 1 is the user's now: the answer's facts are not its"
    assert not conversation.changes.filter(action="edit").exists()


@pytest.mark.django_db
def test_the_json_encoding_and_gzip_are_read_and_answered_in_kind(
    client: Client, token: str
) -> None:
    body = gzip.compress(otlp_json(request_of(lambda t: chat(t, [USER], [LOOKUP]))))

    response = post(client, body, token, "application/json", **{"Content-Encoding": "gzip"})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {}
    assert roles(Conversation.objects.get()) == ["user", "assistant"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "convention",
    ["semconv", "operation details event", "message events", "openinference", "openllmetry"],
)
def test_each_convention_agents_write_becomes_the_same_conversation(
    client: Client, token: str, convention: str
) -> None:
    def build(tracer: Tracer) -> None:
        text = "Refund order A-10442."
        call = ("call_1", "lookup", '{"order": "A-10442"}')
        if convention == "semconv":
            chat(tracer, [USER], [LOOKUP], conversation=None)
            return
        with tracer.start_as_current_span("chat gpt-4o-mini") as span:
            if convention == "operation details event":
                span.set_attribute("gen_ai.operation.name", "chat")
                span.add_event(
                    "gen_ai.client.inference.operation.details",
                    {
                        "gen_ai.input.messages": json.dumps([USER]),
                        "gen_ai.output.messages": json.dumps([LOOKUP]),
                    },
                )
            elif convention == "message events":
                span.set_attribute("gen_ai.operation.name", "chat")
                span.add_event("gen_ai.user.message", {"content": text})
                span.add_event(
                    "gen_ai.choice",
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": json.dumps(
                            {
                                "role": "assistant",
                                "tool_calls": [
                                    {
                                        "id": call[0],
                                        "type": "function",
                                        "function": {"name": call[1], "arguments": call[2]},
                                    }
                                ],
                            }
                        ),
                    },
                )
            elif convention == "openinference":
                span.set_attributes(
                    {
                        "openinference.span.kind": "LLM",
                        "llm.model_name": "gpt-4o-mini",
                        "llm.input_messages.0.message.role": "user",
                        "llm.input_messages.0.message.content": text,
                        "llm.output_messages.0.message.role": "assistant",
                        "llm.output_messages.0.message.tool_calls.0.tool_call.id": call[0],
                        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": (
                            call[1]
                        ),
                        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": (
                            call[2]
                        ),
                    }
                )
            else:
                span.set_attributes(
                    {
                        "gen_ai.system": "openai",
                        "llm.request.type": "chat",
                        "gen_ai.request.model": "gpt-4o-mini",
                        "gen_ai.prompt.0.role": "user",
                        "gen_ai.prompt.0.content": text,
                        "gen_ai.completion.0.role": "assistant",
                        "gen_ai.completion.0.finish_reason": "tool_calls",
                        "gen_ai.completion.0.tool_calls.0.id": call[0],
                        "gen_ai.completion.0.tool_calls.0.name": call[1],
                        "gen_ai.completion.0.tool_calls.0.arguments": call[2],
                    }
                )

    answer = send(client, token, build)

    assert not answer.HasField("partial_success")
    conversation = Conversation.objects.get()
    stored = buffer(conversation)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[0]["content"] == "Refund order A-10442."
    [declared] = stored[1]["metadata"]["tool_calls"]
    assert declared["id"] == "call_1"
    assert declared["function"]["name"] == "lookup"
    assert conversation.unanswered_count == 1


ANTHROPIC_SPAN = {"gen_ai.system": "Anthropic", "llm.request.type": "chat"}
"""An OpenLLMetry Anthropic chat span's own attributes (opentelemetry-instrumentation-anthropic)."""


def anthropic_chat(tracer: Tracer, *calls: dict[str, Any]) -> None:
    """Model calls as OpenLLMetry's Anthropic instrumentation writes them, in one trace."""
    with tracer.start_as_current_span("agent run"):
        for attributes in calls:
            with tracer.start_as_current_span(
                "anthropic.chat", attributes={**ANTHROPIC_SPAN, **attributes}
            ):
                pass


@pytest.mark.django_db
def test_openllmetry_anthropic_thinking_is_the_answers_reasoning_not_a_user_message(
    client: Client, token: str
) -> None:
    """With extended thinking, opentelemetry-instrumentation-anthropic (up to 0.52) writes
    the thinking as gen_ai.completion.0 with role "thinking" and the answer as completion
    1: read as the answer, the thinking was a user row, and the answer and its call were
    only kept aside, so the call was never declared."""
    answer = send(
        client,
        token,
        lambda t: anthropic_chat(
            t,
            {
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "Refund order A-10442.",
                "gen_ai.completion.0.finish_reason": "tool_use",
                "gen_ai.completion.0.role": "thinking",
                "gen_ai.completion.0.content": "Look it up first.",
                "gen_ai.completion.1.role": "assistant",
                "gen_ai.completion.1.content": "Let me look it up.",
                "gen_ai.completion.1.tool_calls.0.id": "toolu_1",
                "gen_ai.completion.1.tool_calls.0.name": "lookup",
                "gen_ai.completion.1.tool_calls.0.arguments": '{"order": "A-10442"}',
            },
        ),
    )

    assert not answer.HasField("partial_success")
    conversation = Conversation.objects.get()
    stored = buffer(conversation)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["content"] == "Let me look it up."
    [declared] = stored[1]["metadata"]["tool_calls"]
    assert (declared["id"], declared["function"]["name"]) == ("toolu_1", "lookup")
    assert "Look it up first." in json.dumps(stored[1]["metadata"]), "the thinking, kept"
    assert "other_outputs" not in json.dumps(stored[1]["metadata"])
    assert stored[1]["metadata"]["facts"]["finish_reason"] == "tool_use"
    assert conversation.unanswered_count == 1


@pytest.mark.django_db
def test_openllmetry_anthropic_history_with_its_calls_written_twice_continues_the_conversation(
    client: Client, token: str
) -> None:
    """opentelemetry-instrumentation-anthropic 0.47-0.52 writes a history message's whole
    content (its tool_use blocks too) as JSON text in gen_ai.prompt.N.content and the same
    calls again under gen_ai.prompt.N.tool_calls: read twice, the message held a second
    call, and the span branched into a conversation with a phantom unanswered call."""
    user = {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Refund order A-10442."}
    call = {"id": "toolu_1", "name": "lookup", "arguments": '{"order": "A-10442"}'}
    first = {
        **user,
        "gen_ai.completion.0.finish_reason": "tool_use",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "Let me look it up.",
        **{f"gen_ai.completion.0.tool_calls.0.{k}": v for k, v in call.items()},
    }
    blocks = [
        {"citations": None, "text": "Let me look it up.", "type": "text"},
        {"id": "toolu_1", "input": {"order": "A-10442"}, "name": "lookup", "type": "tool_use"},
    ]
    result = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "delivered"}]
    second = {
        **user,
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.content": json.dumps(blocks),
        **{f"gen_ai.prompt.1.tool_calls.0.{k}": v for k, v in call.items()},
        "gen_ai.prompt.2.role": "user",
        "gen_ai.prompt.2.content": json.dumps(result),
        "gen_ai.completion.0.finish_reason": "end_turn",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "Refunded.",
    }

    answer = send(client, token, lambda t: anthropic_chat(t, first, second))

    assert not answer.HasField("partial_success")
    conversation = Conversation.objects.get()
    stored = buffer(conversation)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    [declared] = stored[1]["metadata"]["tool_calls"]
    assert declared["id"] == "toolu_1"
    assert stored[2]["metadata"]["tool_call_id"] == "toolu_1"
    assert conversation.unanswered_count == 0


@pytest.mark.django_db
def test_message_events_with_their_body_as_json_in_gen_ai_event_content_are_read(
    client: Client, token: str
) -> None:
    """azure-ai-inference's instrumentor (and Semantic Kernel) put each message event's body
    as JSON text in its gen_ai.event.content attribute: read for the bare body keys alone,
    every message was stored empty, with a plain 200."""

    def build(tracer: Tracer) -> None:
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.system": "az.ai.inference"}
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes=attributes) as span:
            span.add_event(
                "gen_ai.user.message",
                {
                    "gen_ai.system": "az.ai.inference",
                    "gen_ai.event.content": json.dumps(
                        {"role": "user", "content": "Refund order A-10442."}
                    ),
                },
            )
            span.add_event(
                "gen_ai.choice",
                {
                    "gen_ai.system": "az.ai.inference",
                    "gen_ai.event.content": json.dumps(
                        {"message": {"content": "Done."}, "finish_reason": "stop", "index": 0}
                    ),
                },
            )

    answer = send(client, token, build)

    assert not answer.HasField("partial_success")
    stored = buffer(Conversation.objects.get())
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "Refund order A-10442."),
        ("assistant", "Done."),
    ]
    assert stored[1]["metadata"]["facts"]["finish_reason"] == "stop"


@pytest.mark.django_db
def test_pydantic_ai_messages_in_the_events_attribute_are_read_as_message_events(
    client: Client, token: str
) -> None:
    """pydantic-ai's InstrumentationSettings(version=1) and logfire's default
    event_mode='attributes' write the message events as a JSON list in the span's "events"
    attribute: nothing was stored, and the answer said content capture was off."""

    def events(*items: dict[str, Any]) -> str:
        return json.dumps([{**item, "gen_ai.system": "openai"} for item in items])

    user = {"event.name": "gen_ai.user.message", "role": "user", "content": "Refund order A-10442."}
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": {"order": "A-10442"}},
    }
    looked = {"role": "assistant", "tool_calls": [call]}
    found = {
        "event.name": "gen_ai.tool.message",
        "role": "tool",
        "content": "delivered",
        "id": "call_1",
        "name": "lookup",
    }

    def build(tracer: Tracer) -> None:
        spans = [
            events(user, {"event.name": "gen_ai.choice", "index": 0, "message": looked}),
            events(
                user,
                {"event.name": "gen_ai.assistant.message", **looked, "gen_ai.message.index": 1},
                found,
                {
                    "event.name": "gen_ai.choice",
                    "index": 0,
                    "message": {"role": "assistant", "content": "Refunded."},
                },
            ),
        ]
        with tracer.start_as_current_span("agent run"):
            for written in spans:
                attributes = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.system": "openai",
                    "events": written,
                }
                with tracer.start_as_current_span("chat gpt-4o-mini", attributes=attributes):
                    pass

    answer = send(client, token, build)

    assert not answer.HasField("partial_success")
    conversation = Conversation.objects.get()
    stored = buffer(conversation)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[0]["content"] == "Refund order A-10442."
    assert stored[1]["metadata"]["tool_calls"][0]["id"] == "call_1"
    assert stored[3]["content"] == "Refunded."
    assert conversation.unanswered_count == 0


@pytest.mark.django_db
def test_spans_that_are_not_model_calls_are_counted_out_never_an_error(
    client: Client, token: str
) -> None:
    def build(tracer: Tracer) -> None:
        with tracer.start_as_current_span("GET /orders", attributes={"http.method": "GET"}):
            pass
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
        ):
            pass

    answer = send(client, token, build)

    assert not answer.HasField("partial_success")
    assert not Conversation.objects.exists()


@pytest.mark.django_db
def test_model_calls_sent_without_their_messages_are_answered_with_a_warning(
    client: Client, token: str
) -> None:
    """Content capture is off by default in most instrumentations: an agent so set up sent
    its model calls, got a plain 200 and found nothing stored. The answer says why, as a
    warning (OTLP's partial_success with no span rejected), and what to turn on."""

    def build(tracer: Tracer) -> None:
        for _ in range(2):  # a chat span as instrumentations write it with capture off
            with tracer.start_as_current_span(
                "chat gpt-4o-mini",
                attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"},
            ):
                pass
        with tracer.start_as_current_span("GET /orders", attributes={"http.method": "GET"}):
            pass

    answer = send(client, token, build)

    assert answer.partial_success.rejected_spans == 0
    warning = answer.partial_success.error_message
    assert warning.startswith("2 model call spans carried no messages")
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in warning
    assert not Conversation.objects.exists()

    def with_a_broken_one(tracer: Tracer) -> None:
        build(tracer)
        tracer.start_span("chat broken", attributes={"gen_ai.input.messages": "[{]"}).end()

    mixed = send(client, token, with_a_broken_one)

    assert mixed.partial_success.rejected_spans == 1
    reasons = mixed.partial_success.error_message
    assert "gen_ai.input.messages" in reasons
    assert "2 model call spans carried no messages" in reasons


@pytest.mark.django_db
def test_message_events_emitted_without_their_content_are_answered_with_the_capture_warning(
    client: Client, token: str
) -> None:
    """With content capture off, instrumentations of semconv 1.28-1.36 still emit the
    message events, empty (a choice keeps its index and finish reason), and
    azure-ai-inference a choice of those two alone: a conversation of empty messages was
    stored and the warning that capture is off never came."""

    def build(tracer: Tracer) -> None:
        with tracer.start_as_current_span(
            "chat gpt-4o-mini", attributes={"gen_ai.operation.name": "chat"}
        ) as span:
            span.add_event("gen_ai.user.message", {})
            span.add_event("gen_ai.choice", {"index": 0, "finish_reason": "stop"})
        with tracer.start_as_current_span(
            "chat gpt-4o-mini", attributes={"gen_ai.operation.name": "chat"}
        ) as span:
            content = json.dumps({"finish_reason": "stop", "index": 0})
            span.add_event("gen_ai.choice", {"gen_ai.event.content": content})

    answer = send(client, token, build)

    assert answer.partial_success.rejected_spans == 0
    assert answer.partial_success.error_message.startswith("2 model call spans carried no messages")
    assert not Conversation.objects.exists()


@pytest.mark.django_db
def test_a_rewritten_history_branches_into_a_conversation_that_says_where(
    client: Client, token: str
) -> None:
    send(client, token, lambda t: chat(t, [USER], [LOOKUP]))
    send(client, token, lambda t: chat(t, [USER, LOOKUP, FOUND], [REFUND]))
    other = {"role": "user", "parts": [{"type": "text", "content": "Cancel it instead."}]}
    send(client, token, lambda t: chat(t, [USER, LOOKUP, FOUND, other], [DONE]))
    send(client, token, lambda t: chat(t, [USER, LOOKUP, FOUND, other, DONE, USER], [DONE]))

    first, branch = Conversation.objects.order_by("pk")
    assert roles(first) == ["user", "assistant", "tool", "assistant"]
    assert [m["content"] for m in buffer(branch)][3:5] == ["Cancel it instead.", "Refunded."]
    assert len(buffer(branch)) == 7
    assert branch.metadata["otel"]["branched_from"]["conversation"] == first.pk
    assert branch.metadata["otel"]["branched_from"]["at"] == 3
    assert first.metadata["otel"]["branches"] == [{"conversation": branch.pk, "at": 3}]
    owner = signed_in(User.objects.get(username="agent-owner"))
    assert f"/c/{first.pk}/" in owner.get(f"/c/{branch.pk}/").text
    assert f"/c/{branch.pk}/" in owner.get(f"/c/{first.pk}/").text


@pytest.mark.django_db
def test_an_answer_sent_back_without_its_reasoning_or_an_empty_text_is_the_same_message(
    client: Client, token: str
) -> None:
    """Reasoning is not sent back to most models (DeepSeek refuses it), and an empty text
    part is dropped by many agents: neither makes the next span a rewritten history."""
    thought = {"type": "reasoning", "content": "They want a refund; look the order up."}
    answered = {**LOOKUP, "parts": [thought, *LOOKUP["parts"], {"type": "text", "content": ""}]}
    send(client, token, lambda t: chat(t, [USER], [answered]))
    send(client, token, lambda t: chat(t, [USER, LOOKUP, FOUND], [REFUND]))
    send(client, token, lambda t: chat(t, [USER, LOOKUP, FOUND, REFUND, REFUNDED], [DONE]))

    [conversation] = Conversation.objects.all()
    assert roles(conversation) == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert "They want a refund" in json.dumps(buffer(conversation)[1]), "the answer as given"


@pytest.mark.django_db
def test_someone_elses_conversation_id_makes_a_new_conversation_of_ones_own(
    client: Client, token: str
) -> None:
    send(client, token, lambda t: chat(t, [USER], [LOOKUP]))
    other = User.objects.create_user("other-team")
    their_token = ApiToken.issue(other, "theirs")[1]

    send(client, their_token, lambda t: chat(t, [USER, LOOKUP, FOUND], [REFUND]))

    mine, theirs = Conversation.objects.order_by("pk")
    assert roles(mine) == ["user", "assistant"]
    assert theirs.owner == other
    assert roles(theirs) == ["user", "assistant", "tool", "assistant"]


@pytest.mark.django_db
def test_without_a_valid_token_the_answer_is_401_and_nothing_is_stored(
    client: Client, token: str
) -> None:
    body = request_of(lambda t: chat(t, [USER], [LOOKUP])).SerializeToString()

    for sent in (None, "fdw_not-a-token"):
        response = post(client, body, sent)
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert RpcStatus.FromString(response.content).code == 16
    assert not Conversation.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"\x0a\xff\xff\xff\xff\x0f", PROTOBUF),
        (b"not protobuf at all", PROTOBUF),
        (b'{"resourceSpans": 7}', "application/json"),
        (b"{not json", "application/json"),
    ],
)
def test_a_request_that_cannot_be_parsed_is_a_400_with_a_status(
    client: Client, token: str, body: bytes, content_type: str
) -> None:
    response = post(client, body, token, content_type)

    assert response.status_code == 400
    if content_type == PROTOBUF:
        status = RpcStatus.FromString(response.content)
        assert status.code == 3
        assert status.message
    else:
        assert response.json()["code"] == 3
    assert not Conversation.objects.exists()


@pytest.mark.django_db
def test_a_gzip_body_of_several_members_is_read_whole(client: Client, token: str) -> None:
    """RFC 1952: a gzip file may be several members, its data theirs one after another
    (``gzip -d`` reads them all). Read to its first member's end, the rest was dropped."""
    body = request_of(lambda t: chat(t, [USER], [LOOKUP])).SerializeToString()
    half = len(body) // 2
    members = gzip.compress(body[:half]) + gzip.compress(body[half:])

    response = post(client, members, token, **{"Content-Encoding": "gzip"})

    assert response.status_code == 200
    assert roles(Conversation.objects.get()) == ["user", "assistant"]


@pytest.mark.django_db
def test_bytes_after_the_gzip_data_are_a_400(client: Client, token: str) -> None:
    body = gzip.compress(request_of(lambda t: chat(t, [USER], [LOOKUP])).SerializeToString())

    response = post(client, body + b"junk", token, **{"Content-Encoding": "gzip"})

    assert response.status_code == 400
    assert "after the gzip data" in RpcStatus.FromString(response.content).message
    assert not Conversation.objects.exists()


@pytest.mark.django_db
def test_a_gzip_body_of_many_members_is_a_400(client: Client, token: str) -> None:
    """Each member costs a pass over what follows it: a body of a million empty ones would
    hold a worker for minutes. An exporter writes one."""
    body = gzip.compress(request_of(lambda t: chat(t, [USER], [LOOKUP])).SerializeToString())

    response = post(client, gzip.compress(b"") * 16 + body, token, **{"Content-Encoding": "gzip"})

    assert response.status_code == 400
    assert "more than 16 members" in RpcStatus.FromString(response.content).message
    assert not Conversation.objects.exists()


@pytest.mark.django_db
def test_a_gzip_bomb_is_a_413_before_it_inflates(client: Client, token: str, settings: Any) -> None:
    settings.FLOWDROP_OTLP_MAX_BYTES = 1024 * 1024
    bomb = gzip.compress(b"\x00" * (20 * 1024 * 1024))
    assert len(bomb) < 64 * 1024

    response = post(client, bomb, token, **{"Content-Encoding": "gzip"})

    assert response.status_code == 413
    assert RpcStatus.FromString(response.content).code == 8


@pytest.mark.django_db
def test_a_body_larger_than_the_limit_is_a_413(client: Client, token: str, settings: Any) -> None:
    settings.FLOWDROP_OTLP_MAX_BYTES = 1000

    response = post(client, b"\x0a" * 2000, token)

    assert response.status_code == 413


@pytest.mark.django_db
def test_a_trace_request_is_held_to_its_own_limit_not_the_apis_body_limit(
    client: Client, token: str, settings: Any
) -> None:
    """FLOWDROP_OTLP_MAX_BYTES is the largest trace request taken: raised past the API's
    body limit (DATA_UPLOAD_MAX_MEMORY_SIZE, 32 MiB), a request between the two was a 413
    that named the larger limit, as if it were past it."""
    body = request_of(lambda t: chat(t, [USER], [LOOKUP])).SerializeToString()
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = len(body) // 2
    settings.FLOWDROP_OTLP_MAX_BYTES = len(body) * 2

    response = post(client, body, token)

    assert response.status_code == 200, RpcStatus.FromString(response.content).message
    assert roles(Conversation.objects.get()) == ["user", "assistant"]

    too_big = post(client, body + body + b"\x0a\x00", token)  # past the trace limit

    assert too_big.status_code == 413
    assert f"{len(body) * 2:,} bytes" in RpcStatus.FromString(too_big.content).message


@pytest.mark.django_db
def test_another_content_type_is_a_415(client: Client, token: str) -> None:
    response = post(client, b"hello", token, "text/plain")

    assert response.status_code == 415


@pytest.mark.django_db
def test_a_span_whose_content_cannot_be_read_is_counted_in_partial_success(
    client: Client, token: str
) -> None:
    def build(tracer: Tracer) -> None:
        chat(tracer, [USER], [LOOKUP])
        with tracer.start_as_current_span(
            "chat broken",
            attributes={"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[{]"},
        ):
            pass

    answer = send(client, token, build)

    assert answer.partial_success.rejected_spans == 1
    assert "gen_ai.input.messages" in answer.partial_success.error_message
    assert roles(Conversation.objects.get()) == ["user", "assistant"]


@pytest.mark.django_db
def test_characters_no_database_stores_are_replaced_and_the_conversation_goes_on(
    client: Client, token: str
) -> None:
    """A tool that read a binary file leaves U+0000 in its result, and output cut inside an
    emoji a lone surrogate; every later span repeats them in its history. Refused, they
    stopped the conversation for good; replaced, as a runtime's log file is read, it goes on."""
    binary = {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": "call_1", "response": "PK\x03\x04\x00 \ud83d"}
        ],
    }
    looked = [USER, LOOKUP, binary]

    first = send(client, token, lambda t: chat(t, looked, [REFUND]))
    second = send(client, token, lambda t: chat(t, [*looked, REFUND, REFUNDED], [DONE]))

    for answer in (first, second):
        assert answer.partial_success.rejected_spans == 0
        assert re.fullmatch(
            r"span [0-9a-f]{16}: messages\[2\]\.parts\[0\]\.response: held U\+0000 and "
            r"U\+D83D, which no database stores: replaced by U\+FFFD",
            answer.partial_success.error_message,
        ), answer.partial_success.error_message
    conversation = Conversation.objects.get()
    assert roles(conversation) == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert buffer(conversation)[2]["content"] == "PK\x03\x04\ufffd \ufffd"
    assert_consistent(conversation)


@pytest.mark.django_db
def test_an_integer_beyond_64_bits_in_a_span_is_read_as_a_float_not_refused(
    client: Client, token: str
) -> None:
    """An amount in wei is over 2**64: refused, every later span (which repeats it in its
    history) was refused too."""
    wei = {
        "role": "tool",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "call_1",
                "response": {"wei": 123456789012345678901234567890},
            }
        ],
    }

    first = send(client, token, lambda t: chat(t, [USER, LOOKUP, wei], [REFUND]))
    second = send(client, token, lambda t: chat(t, [USER, LOOKUP, wei, REFUND, REFUNDED], [DONE]))

    assert (first.partial_success.rejected_spans, second.partial_success.rejected_spans) == (0, 0)
    assert len(buffer(Conversation.objects.get())) == 6


@pytest.mark.django_db
def test_a_message_stored_before_reasoning_was_left_out_of_digests_is_still_recognized(
    client: Client, token: str
) -> None:
    """Digests stored before an upgrade that leaves reasoning parts out of them still say
    the message is the same: the next span extends the conversation, not a branch."""
    thought = {"type": "reasoning", "content": "Look it up first."}
    answered = {**LOOKUP, "parts": [thought, *LOOKUP["parts"]]}
    send(client, token, lambda t: chat(t, [USER], [answered]))
    conversation = Conversation.objects.get()
    legacy = otlp.recognition.legacy_digest(answered)
    TracedMessage.objects.filter(conversation=conversation, position=1).update(digest=legacy)

    send(client, token, lambda t: chat(t, [USER, answered, FOUND], [REFUND]))

    assert Conversation.objects.count() == 1
    assert roles(conversation) == ["user", "assistant", "tool", "assistant"]


@pytest.mark.django_db(transaction=True)
def test_first_spans_of_a_new_conversation_sent_at_once_make_one_conversation(
    token: str,
) -> None:
    """Two exporters (or two workers) send the first spans of one conversation at the same
    moment: one makes the conversation and the other extends it, nothing is refused."""
    from django.db import connection

    def send_at(start: threading.Barrier, build: Callable[[Tracer], None]) -> Any:
        try:
            start.wait()
            return send(Client(), token, build)
        finally:
            connection.close()

    for trial in range(8):
        conversation = f"race-{trial}"
        start = threading.Barrier(2)
        first = functools.partial(chat, inputs=[USER], outputs=[LOOKUP], conversation=conversation)
        both = [first, functools.partial(first, inputs=[USER, LOOKUP, FOUND], outputs=[DONE])]
        with ThreadPoolExecutor(2) as senders:
            answers = list(senders.map(functools.partial(send_at, start), both))

        assert [a.partial_success.error_message for a in answers] == ["", ""]
        [stored] = Conversation.objects.filter(metadata__otel__conversation_id=conversation)
        assert roles(stored) == ["user", "assistant", "tool", "assistant"]


@pytest.mark.django_db
def test_ten_thousand_spans_in_one_request_are_all_stored(client: Client, token: str) -> None:
    def build(tracer: Tracer) -> None:
        for n in range(10_000):
            chat(tracer, [USER], [DONE], conversation=f"c{n % 50}")

    answer = send(client, token, build)

    assert not answer.HasField("partial_success")
    assert Conversation.objects.count() == 50
    assert {c.message_count for c in Conversation.objects.all()} == {2}


@pytest.mark.django_db
def test_a_conversation_someone_else_keyed_like_an_ingest_one_never_takes_its_spans(
    client: Client, token: str
) -> None:
    owner = User.objects.get(username="agent-owner")
    send(client, token, lambda t: chat(t, [USER], [LOOKUP]))
    [theirs] = Conversation.objects.all()
    mallory = User.objects.create_user("mallory")
    decoy = signed_in(mallory).post(
        "/api/imports",
        {
            "document": {
                "title": "decoy",
                "key": theirs.key,
                "messages": [{"role": "user", "content": "hi"}],
            }
        },
        content_type="application/json",
    )
    assert decoy.status_code == 201, decoy.json()  # keys are per owner

    send(client, token, lambda t: chat(t, [USER, LOOKUP, FOUND], [REFUND]))

    theirs.refresh_from_db()
    assert roles(theirs) == ["user", "assistant", "tool", "assistant"]
    assert Conversation.objects.filter(owner=owner).count() == 1  # no branch was made
    [kept] = Conversation.objects.filter(owner=mallory)
    assert roles(kept) == ["user"]
    assert "otel" not in kept.metadata
