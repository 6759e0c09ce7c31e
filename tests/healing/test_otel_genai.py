"""OpenTelemetry GenAI messages (attribute values, upload-hook files, log-event exports)
read into the stored shape: every call canonical and paired with its response, crashes
left unanswered, what the stored shape has no place for kept under ``otel``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buffers.healing import (
    InvalidInput,
    Message,
    analyze,
    declared_call_ids,
    parse_messages,
    result_call_id,
)
from buffers.healing.formats import READABLE, Source, detect_source, parse_lines, write
from buffers.healing.formats.common import Problems
from buffers.healing.formats.otel_genai import FORMAT, MessageReader, fits, read, read_messages
from buffers.healing.formats.source import Entry, Reading, parse_values
from buffers.healing.messages import json_problem
from buffers.healing.sendability import check_all

from .test_formats import ROUND_TRIPS, json_values

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OWN = FIXTURES / "otel-genai"


def source_of(path: Path) -> Source:
    """A file as ``buffers.transcripts`` reads it: JSONL by its suffix, else one JSON
    document, or lines when it holds several values."""
    text = path.read_text()
    if path.suffix == ".jsonl":
        return parse_lines(text)
    try:
        return Source(document=json.loads(text))
    except json.JSONDecodeError:
        return parse_lines(text)


def reading(name: str) -> Reading:
    return read(source_of(OWN / name))


def messages_of(found: Reading, index: int = 0) -> list[Message]:
    return parse_messages(found.conversations[index].messages, json_checked=True)


def pairs(messages: list[Message]) -> tuple[list[str], list[str | None]]:
    """Every declared call id, and every result's id, in order."""
    return (
        [cid for m in messages for cid in declared_call_ids(m)],
        [result_call_id(m) for m in messages if m.role == "tool"],
    )


def unanswered(messages: list[Message]) -> list[str]:
    return [call.tool_call_id for call in analyze(messages).unanswered]


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def call(call_id: str | None, name: str = "get_weather", **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def response(call_id: str | None, value: object = "ok") -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": value}


def message(role: str, *parts: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {"role": role, "parts": list(parts), **keys}


def problems(document: object) -> list[str]:
    with pytest.raises(InvalidInput) as caught:
        read(Source(document=document))
    return [str(problem) for problem in caught.value.problems]


# The fixtures.


@pytest.mark.rule("MEM-11")
def test_a_bare_input_list_reads_every_part_with_each_call_paired_with_its_response() -> None:
    found = reading("input-messages.json")
    rows = found.conversations[0].messages
    messages = messages_of(found)

    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    declared, answered = pairs(messages)
    assert declared == answered
    assert analyze(messages).findings == ()
    assert (found.entries, found.unit, found.skipped) == (10, "message", [])
    assert found.conversations[0].metadata == {"otel": {"shape": "list"}}
    assert found.conversations[0].title == ""
    # Reasoning is kept in the namespace, in its place before the call.
    assert rows[2]["content"] is None
    assert rows[2]["metadata"]["otel"]["layout"] == [
        {"type": "reasoning", "content": "Start by running the failing test to see the error."},
        "call",
    ]
    assert rows[2]["metadata"]["tool_calls"][0]["function"] == {
        "name": "run_tests",
        "arguments": '{"path":"tests/test_ops.py","keyword":"test_divide"}',
    }
    # Arguments written as a string stay that string; an object response stays an object.
    edit = rows[7]["metadata"]["tool_calls"][0]
    assert edit["function"]["arguments"].startswith('{"path": "calc/ops.py", "old"')
    assert edit["otel"] == {"arguments_kind": "string"}
    assert rows[8]["content"] == {"ok": True, "path": "calc/ops.py", "lines_changed": 2}
    assert rows[4]["content"] == (
        "The divide helper does not guard against a zero divisor. Let me read it and its test."
    )


def test_an_input_output_object_gives_instructions_history_then_the_crashed_output() -> None:
    found = reading("input-output.json")
    rows = found.conversations[0].messages
    messages = messages_of(found)

    assert rows[0] == {
        "role": "system",
        "content": "You are Skye, a travel assistant. Answer with concrete numbers and always "
        "check the forecast tool before giving weather advice.",
        "metadata": {"otel": {"system_instructions": True}},
    }
    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert unanswered(messages) == [
        "toolu_01PzK4sWd9NbE6tRy2QmHcVu",
        "toolu_01Lh7GmXa5TvC3jWq8PnRbEs",
    ]
    assert rows[-1]["metadata"]["facts"] == {"finish_reason": "tool_call"}
    assert rows[-1]["metadata"]["otel"]["layout"][1:] == ["call", "call"]
    assert found.conversations[0].metadata == {"otel": {"shape": "input-output"}}


@pytest.mark.rule("MEM-11")
def test_the_upload_hooks_inputs_then_outputs_read_as_one_conversation() -> None:
    found = reading("pair.jsonl")
    rows = found.conversations[0].messages

    assert [(r["role"], r["content"]) for r in rows][::3] == [
        ("user", "What's the UV index in Sydney right now, and should I wear sunscreen?"),
        (
            "assistant",
            "The UV index in Sydney is 9 (very high). Yes: wear SPF 30+ sunscreen, a hat and "
            "sunglasses, and seek shade around midday.",
        ),
    ]
    # Gemini-origin: the made-up id pairs, and the response in a user message is a tool row.
    assert pairs(messages_of(found)) == (["get_uv_index_0"], ["get_uv_index_0"])
    assert rows[2]["metadata"] == {"tool_call_id": "get_uv_index_0", "otel": {"role": "user"}}
    assert rows[2]["content"]["uv_index"] == 9
    assert rows[3]["metadata"] == {"facts": {"finish_reason": "stop"}}
    assert found.conversations[0].metadata == {"otel": {"shape": "lists"}}
    assert (found.entries, found.unit) == (4, "message")


def test_the_upload_hooks_message_per_line_jsonl_reads_in_file_order_without_its_index() -> None:
    per_line = reading("upload-inputs.jsonl").conversations[0]
    lists = reading("pair.jsonl").conversations[0]

    assert per_line.messages == lists.messages[:3]
    assert per_line.metadata == {"otel": {"shape": "messages"}}


def test_a_pydantic_ai_run_that_crashed_leaves_its_last_call_unanswered() -> None:
    found = reading("crashed.json")
    rows = found.conversations[0].messages
    messages = messages_of(found)

    assert unanswered(messages) == ["call_Ja7Ne1VrHc4LpX9qDm2WsT5B"]
    assert [f.kind for f in analyze(messages).findings] == ["unanswered_call"]
    assert rows[2]["metadata"]["otel"]["layout"] == [
        {"type": "thinking", "content": "I need the current version first."},
        "call",
    ]
    assert rows[3] == {
        "role": "tool",
        "content": "0.9.1",
        "metadata": {
            "tool_call_id": "call_Rk2Pq8WmZ4xNc7VbLt1sHy0E",
            "otel": {"key": "result", "part": {"name": "read_version"}, "role": "user"},
        },
    }
    assert rows[-1]["metadata"]["tool_calls"] == [
        {
            "id": "call_Ja7Ne1VrHc4LpX9qDm2WsT5B",
            "type": "function",
            "function": {
                "name": "git_tag",
                "arguments": '{"tag": "v0.9.2", "message": "Release 0.9.2"}',
            },
            "otel": {"arguments_kind": "string"},
        }
    ]
    assert rows[-1]["metadata"]["facts"] == {"finish_reason": "tool_call"}


def test_an_otlp_log_export_reads_each_call_once_where_the_next_sends_its_history() -> None:
    found = reading("log-events.jsonl")
    [conversation] = found.conversations
    rows = conversation.messages
    messages = messages_of(found)

    assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert unanswered(messages) == ["call_Tb4Gx8Jd1WmQs7KyPf0RnVhE"]
    assert pairs(messages)[1] == ["call_LkY2w9Hq0RtVz3BsNe6MpXcA"]
    assert rows[-1]["content"] == (
        "The order was delivered on 11 March; I'm issuing a full refund of €89.00 now."
    )
    assert rows[-1]["metadata"]["facts"] == {
        "finish_reason": "tool_calls",
        "time": "2026-03-14T09:01:03.700000Z",
    }
    # The first call's choice is the row the second call sent again: its facts stay.
    assert rows[2]["metadata"]["facts"] == {
        "finish_reason": "tool_calls",
        "time": "2026-03-14T09:01:01.962000Z",
    }
    assert conversation.metadata["otel"] == {
        "shape": "log-events",
        "calls": 2,
        "resent": 3,
        "trace_id": "5b8efff798038103d269b633813fc60c",
        "span_id": "c7d2e8f41b3a9056",
        "resource": {
            "telemetry.sdk.language": "python",
            "telemetry.sdk.name": "opentelemetry",
            "telemetry.sdk.version": "1.36.0",
            "service.name": "support-agent",
            "deployment.environment": "staging",
        },
        "scope": {"name": "opentelemetry.instrumentation.openai_v2", "version": "2.1b0"},
        "attributes": {"gen_ai.system": "openai"},
    }
    assert (found.entries, found.unit, found.skipped) == (8, "event", [])


def test_a_log_export_that_holds_its_records_twice_reads_each_once() -> None:
    """OTLP delivers at least once: a batch an exporter sent again after a retry is written
    again by the collector's file exporter. A record that repeats one read before in every
    respect (its trace, span, time, event, body and attributes) is that resend: it was read
    into the span's model call a second time, which then sent its history twice, and the
    next call, finding no such history, started a second conversation."""
    text = (OWN / "log-events.jsonl").read_text()
    lines = text.splitlines()
    resent = "\n".join([*lines, *lines])

    found = read(parse_lines(resent))

    assert found.conversations == reading("log-events.jsonl").conversations
    assert len(found.skipped) == 8
    first = found.skipped[0]
    assert first.where.startswith(f"line {len(lines) + 1}: resourceLogs[0]")
    assert "repeats line 1: resourceLogs[0]" in first.why


def test_console_exporter_records_read_once_split_into_values() -> None:
    path = OWN / "log-events-console.json"
    split = parse_values(path.read_text())

    assert [entry.where for entry in split.entries() or []] == ["line 1", "line 28", "line 55"]
    found = read(split)
    messages = messages_of(found)
    assert [m.role for m in messages] == ["system", "user", "assistant"]
    assert unanswered(messages) == ["call_LkY2w9Hq0RtVz3BsNe6MpXcA"]
    assert found.conversations[0].messages[-1]["metadata"]["facts"]["time"] == (
        "2026-03-14T09:01:01.962000Z"
    )
    # As a .json file is read today, every line of it is "not JSON": it does not fit.
    assert not fits(source_of(path))


def test_a_console_record_cut_off_is_set_aside_and_the_rest_read() -> None:
    text = (OWN / "log-events-console.json").read_text()
    split = parse_values(text[: text.rindex('"event_name"')])

    assert [s.where for s in split.unreadable] == ["line 55"]
    assert len(read(split).conversations[0].messages) == 2


# Pairing.


@pytest.mark.rule("MEM-11")
def test_ids_gemini_makes_up_again_each_turn_are_made_unique_and_pair_in_order() -> None:
    document = [
        message("user", text("Weather in Paris, then Rome?")),
        message("assistant", call("get_weather_0", city="Paris")),
        message("user", response("get_weather_0", {"temp": 14})),
        message("assistant", call("get_weather_0", city="Rome")),
        message("user", response("get_weather_0", {"temp": 9})),
    ]
    rows = read(Source(document=document)).conversations[0].messages
    messages = parse_messages(rows)

    assert pairs(messages) == (
        ["get_weather_0", "get_weather_0#2"],
        ["get_weather_0", "get_weather_0#2"],
    )
    assert [m.content for m in messages if m.role == "tool"] == [{"temp": 14}, {"temp": 9}]
    assert rows[3]["metadata"]["tool_calls"][0]["otel"] == {"id": "get_weather_0"}
    assert rows[4]["metadata"]["otel"] == {"id": "get_weather_0", "role": "user"}
    assert analyze(messages).findings == ()


@pytest.mark.rule("MEM-11")
def test_a_response_answers_the_call_before_it_not_an_older_one_left_unanswered() -> None:
    document = [
        message("assistant", call("get_weather_0", city="Paris")),
        message("user", text("never mind, try Rome")),
        message("assistant", call("get_weather_0", city="Rome")),
        message("user", response("get_weather_0", {"temp": 9})),
    ]
    messages = parse_messages(read(Source(document=document)).conversations[0].messages)

    assert pairs(messages)[1] == ["get_weather_0#2"]
    assert unanswered(messages) == ["get_weather_0"]


@pytest.mark.rule("MEM-11")
def test_parallel_responses_to_one_turn_pair_with_its_calls_in_order() -> None:
    document = [
        message("assistant", call("get_weather_0", city="Paris"), call("get_time_1", tz="CET")),
        message("user", response("get_time_1", "10:00"), response("get_weather_0", "14C")),
    ]
    messages = parse_messages(read(Source(document=document)).conversations[0].messages)

    assert pairs(messages) == (["get_weather_0", "get_time_1"], ["get_time_1", "get_weather_0"])


@pytest.mark.rule("MEM-11")
def test_calls_and_responses_without_ids_pair_by_position() -> None:
    document = [
        message("user", text("Paris and Rome?")),
        message("assistant", call(None, city="Paris"), {**call("", city="Rome")}),
        message("tool", response(None, "14C"), response(None, "9C")),
        message("assistant", call(None, city="Oslo")),
    ]
    rows = read(Source(document=document)).conversations[0].messages
    messages = parse_messages(rows)

    assert pairs(messages) == (["otel-1-0", "otel-1-1", "otel-3-0"], ["otel-1-0", "otel-1-1"])
    assert [m.content for m in messages if m.role == "tool"] == ["14C", "9C"]
    assert unanswered(messages) == ["otel-3-0"]
    calls = rows[1]["metadata"]["tool_calls"]
    assert [c["otel"] for c in calls] == [{"synthetic_id": True}, {"synthetic_id": True, "id": ""}]
    assert rows[2]["metadata"]["otel"] == {"synthetic_id": True}


def test_a_response_for_no_declared_call_is_kept_for_the_analysis_to_report() -> None:
    document = [message("user", text("hi")), message("tool", response("call_9", "late"))]
    messages = parse_messages(read(Source(document=document)).conversations[0].messages)

    assert pairs(messages) == ([], ["call_9"])
    assert [f.kind for f in analyze(messages).findings] == ["orphan_result"]


# Parts and roles.


def test_a_response_in_a_user_message_comes_before_that_users_text() -> None:
    document = [
        message("assistant", call("c1", city="Paris")),
        message("user", text("here you go"), response("c1", "14C")),
    ]
    rows = read(Source(document=document)).conversations[0].messages

    assert [(r["role"], r["content"]) for r in rows[1:]] == [
        ("tool", "14C"),
        ("user", "here you go"),
    ]


def test_roles_outside_the_four_are_read_as_what_the_message_does_and_kept() -> None:
    document = [
        message("developer", text("Be brief.")),
        message("", text("Hi")),
        message("", call("c1")),
        message("", response("c1")),
        message("model", text("Done.")),
        message("critic", text("Too long.")),
    ]
    rows = read(Source(document=document)).conversations[0].messages

    assert [(r["role"], r["metadata"].get("otel", {}).get("role")) for r in rows] == [
        ("system", "developer"),
        ("user", ""),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", "model"),
        ("user", "critic"),
    ]


def test_a_tool_messages_text_is_a_user_row_and_an_empty_message_has_no_content() -> None:
    document = [message("tool", text("stdout was empty")), message("assistant")]
    rows = read(Source(document=document)).conversations[0].messages

    assert rows == [
        {"role": "user", "content": "stdout was empty", "metadata": {"otel": {"role": "tool"}}},
        {"role": "assistant", "content": None, "metadata": {}},
    ]


def test_media_and_unknown_parts_are_content_parts_as_they_are() -> None:
    blob = {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBO"}
    uri = {"type": "uri", "modality": "video", "uri": "gs://b/clip.mp4"}
    refusal = {"type": "refusal", "content": "I can't help with that."}
    document = [
        message("user", text("What is in these?"), blob, uri),
        message("assistant", refusal),
    ]
    rows = read(Source(document=document)).conversations[0].messages

    assert rows[0]["content"] == [{"type": "text", "text": "What is in these?"}, blob, uri]
    assert rows[1]["content"] == [refusal]


def test_pydantic_ais_earlier_media_parts_are_read_as_the_conventions_uri_and_blob() -> None:
    """pydantic-ai's instrumentation before version 4 wrote ``image-url`` (and audio, video,
    document) parts with a ``url``, and ``binary`` parts with ``media_type`` and
    ``content`` (earlier ``binary_content``): read as the conventions' ``uri`` and
    ``blob``, whose images each provider is sent in its own shape."""
    document = [
        message(
            "user",
            text("What is in these?"),
            {"type": "image-url", "url": "https://example.com/cat.png"},
            {"type": "binary", "media_type": "image/png", "content": "iVBORw0KGgo="},
            {"type": "binary", "media_type": "image/gif", "binary_content": "R0lGOD=="},
            {"type": "document-url", "url": "https://example.com/a.pdf"},
        ),
        message("assistant", text("Cats.")),
    ]
    rows = read(Source(document=document)).conversations[0].messages

    assert rows[0]["content"][1:] == [
        {"type": "uri", "modality": "image", "uri": "https://example.com/cat.png"},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0KGgo="},
        {"type": "blob", "modality": "image", "mime_type": "image/gif", "content": "R0lGOD=="},
        {"type": "uri", "uri": "https://example.com/a.pdf"},
    ]
    # The document's URL names no type: no provider can be told it is a PDF.
    assert not any(v.accepted for v in check_all(parse_messages(rows)).values())
    without_document = parse_messages([{**rows[0], "content": rows[0]["content"][:4]}, *rows[1:]])
    refused = {p for p, verdict in check_all(without_document).items() if not verdict.accepted}
    assert refused == {"gemini"}  # which takes no image by its URL
    anthropic = write(without_document, "anthropic")["messages"][0]["content"]
    assert anthropic[1] == {
        "type": "image",
        "source": {"type": "url", "url": "https://example.com/cat.png"},
    }
    assert anthropic[2]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "iVBORw0KGgo=",
    }


def test_provider_side_tools_are_kept_in_place_and_declare_no_call() -> None:
    server_call = {
        "type": "server_tool_call",
        "id": "ci_1",
        "name": "code_interpreter",
        "server_tool_call": {"type": "code_interpreter", "code": "print(1)"},
    }
    server_response = {
        "type": "server_tool_call_response",
        "id": "ci_1",
        "server_tool_call_response": {"type": "code_interpreter", "outputs": []},
    }
    builtin = {**call("ws_1", "web_search", query="otel"), "builtin": True}
    document = [
        message("user", text("Compute and search")),
        message("assistant", server_call, server_response, builtin, text("1, and found it.")),
    ]
    rows = read(Source(document=document)).conversations[0].messages
    messages = parse_messages(rows)

    assert pairs(messages) == ([], [])
    assert unanswered(messages) == []
    assert rows[1]["content"] == "1, and found it."
    assert rows[1]["metadata"]["otel"]["layout"] == [
        server_call,
        server_response,
        builtin,
        "content",
    ]


def test_arguments_of_every_kind_become_json_text_and_their_kind_is_kept() -> None:
    document = [
        message(
            "assistant",
            {"type": "tool_call", "id": "a", "name": "f", "arguments": {"x": "é"}},
            {"type": "tool_call", "id": "b", "name": "f", "arguments": '{"x": 1}'},
            {"type": "tool_call", "id": "c", "name": "f"},
            {"type": "tool_call", "id": "d", "name": "f", "arguments": [1, 2]},
            {"type": "tool_call", "id": "e", "name": "f", "arguments": None, "code": "py"},
        )
    ]
    calls = read(Source(document=document)).conversations[0].messages[0]["metadata"]["tool_calls"]

    assert [(c["function"]["arguments"], c.get("otel")) for c in calls] == [
        ('{"x":"é"}', None),
        ('{"x": 1}', {"arguments_kind": "string"}),
        ("{}", {"arguments_kind": "absent"}),
        ("[1,2]", {"arguments_kind": "json"}),
        ("{}", {"arguments_kind": "absent", "part": {"code": "py"}}),
    ]


def test_a_response_value_is_content_as_it_is_and_a_missing_one_is_marked() -> None:
    document = [
        message("assistant", call("a"), call("b"), call("c"), call("d")),
        message(
            "tool",
            response("a", [{"text": "block"}]),
            response("b", 42),
            response("c", None),
            {"type": "tool_call_response", "id": "d"},
        ),
    ]
    rows = read(Source(document=document)).conversations[0].messages[1:]

    assert [(r["content"], r["metadata"].get("otel")) for r in rows] == [
        ([{"text": "block"}], None),
        ("42", None),
        (None, None),
        (None, {"no_response": True}),
    ]


def test_message_keys_go_to_facts_name_and_the_namespace() -> None:
    document = [
        message("user", text("hi"), name="alice", index=0),
        message(
            "assistant",
            text("hello"),
            finish_reason="stop",
            content_filter_results={"hate": {"filtered": False}},
        ),
    ]
    rows = read(Source(document=document)).conversations[0].messages

    assert rows[0]["metadata"] == {"name": "alice"}
    assert rows[1]["metadata"] == {
        "facts": {"finish_reason": "stop"},
        "otel": {"message": {"content_filter_results": {"hate": {"filtered": False}}}},
    }


def test_system_instructions_of_several_parts_are_one_system_row_of_parts() -> None:
    document = {
        "system_instructions": [text("You translate."), text("Into French.")],
        "input": [message("user", text("Hello"))],
    }
    rows = read(Source(document=document)).conversations[0].messages

    assert rows[0] == {
        "role": "system",
        "content": [
            {"type": "text", "text": "You translate."},
            {"type": "text", "text": "Into French."},
        ],
        "metadata": {"otel": {"system_instructions": True}},
    }


# Document shapes.


def test_attribute_names_with_json_text_values_read_as_on_a_python_span() -> None:
    document = {
        "gen_ai.system_instructions": json.dumps([text("Be brief.")]),
        "gen_ai.input.messages": json.dumps([message("user", text("Refund A-10442"))]),
        "gen_ai.output.messages": json.dumps(
            [message("assistant", call("call_Lk", "lookup_order"), finish_reason="tool_call")]
        ),
        "gen_ai.request.model": "gpt-4o-mini",
    }
    found = read(Source(document=document))
    messages = messages_of(found)

    assert [m.role for m in messages] == ["system", "user", "assistant"]
    assert unanswered(messages) == ["call_Lk"]
    assert found.conversations[0].metadata == {
        "otel": {
            "shape": "input-output",
            "keys": "attributes",
            "fields": {"gen_ai.request.model": "gpt-4o-mini"},
        }
    }


def test_other_choices_are_kept_on_the_first_outputs_row() -> None:
    second = message("assistant", text("Bonjour !"), finish_reason="stop")
    document = {
        "input": [message("user", text("Say hi in French"))],
        "output": [message("assistant", text("Salut !"), finish_reason="stop"), second],
    }
    rows = read(Source(document=document)).conversations[0].messages

    assert [r["content"] for r in rows] == ["Say hi in French", "Salut !"]
    assert rows[1]["metadata"]["otel"] == {"other_outputs": [second]}


def test_a_history_sent_again_by_the_next_call_is_read_once() -> None:
    first_input = [message("user", text("Weather in Paris?"))]
    first_output = [message("assistant", call("c1", city="Paris"), finish_reason="tool_call")]
    second_input = [*first_input, *first_output, message("tool", response("c1", "14C"))]
    second_output = [message("assistant", text("14C in Paris."), finish_reason="stop")]
    lines = "\n".join(
        json.dumps(v) for v in (first_input, first_output, second_input, second_output)
    )
    found = read(parse_lines(lines))
    messages = messages_of(found)

    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert pairs(messages) == (["c1"], ["c1"])
    assert found.conversations[0].metadata == {"otel": {"shape": "lists", "resent": 2}}
    assert found.entries == 4


def test_a_json_array_of_an_input_and_an_output_list_reads_like_the_jsonl_pair() -> None:
    lines = [json.loads(line) for line in (OWN / "pair.jsonl").read_text().splitlines()]

    found = read(Source(document=lines))

    assert found.conversations[0].messages == reading("pair.jsonl").conversations[0].messages


def test_a_line_that_is_not_json_is_skipped_and_reported() -> None:
    text_of_file = (OWN / "pair.jsonl").read_text() + '[{"role":"assistant","parts":[\n'
    found = read(parse_lines(text_of_file))

    assert len(found.conversations[0].messages) == 4
    assert [s.where for s in found.skipped] == ["line 3"]
    assert "cut off" in found.skipped[0].why


def test_read_messages_reads_a_spans_three_values_for_the_live_ingest() -> None:
    rows = read_messages(
        json.dumps([message("user", text("Refund A-10442"))]),
        [message("assistant", call("call_Lk", "lookup_order", order_id="A-10442"))],
        [text("You are the support agent.")],
    )

    assert [r["role"] for r in rows] == ["system", "user", "assistant"]
    assert rows[2]["metadata"]["tool_calls"][0]["function"]["arguments"] == '{"order_id":"A-10442"}'
    with pytest.raises(InvalidInput) as caught:
        read_messages([message("assistant", {"type": "tool_call"})], where="span 5f0c: ")
    assert [str(p) for p in caught.value.problems] == [
        "span 5f0c: gen_ai.input.messages[0].parts[0].name: is missing"
    ]


# Errors, with their place.


def test_what_is_wrong_inside_a_message_is_refused_at_its_place() -> None:
    document = [
        message("user", text("hi")),
        message("assistant", {"type": "tool_call", "id": "c1"}),
        message("tool", {"type": "tool_call_response", "id": {"no": 1}, "response": "x"}),
        message("user", text("nul \u0000 here")),
    ]

    assert problems(document) == [
        "[1].parts[0].name: is missing",
        "[2].parts[0].id: must be a string (or an integer), not an object",
        "[3].parts[0].content: holds the character U+0000, which cannot be stored",
    ]


def test_errors_in_a_jsonl_name_the_line_then_the_place() -> None:
    lines = "\n".join(
        [
            json.dumps([message("user", text("hi"))]),
            json.dumps([message("assistant", {"type": "tool_call", "id": "c1", "name": 7})]),
        ]
    )
    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(lines))

    assert [str(p) for p in caught.value.problems] == [
        "line 2: [0].parts[0].name: must be a string, not a number"
    ]


def test_json_text_that_is_not_json_is_refused_at_its_attribute() -> None:
    document = {"gen_ai.input.messages": '[{"role": '}

    assert problems(document) == [
        "gen_ai.input.messages: is not JSON text: Expecting value (column 11)"
    ]


def test_a_document_with_no_message_holds_no_conversation() -> None:
    assert problems({"output": []}) == [
        "file: holds no conversation: no OpenTelemetry GenAI message in it"
    ]


# Log exports.


def _value(value: object) -> dict[str, Any]:
    """A JSON value as OTLP's AnyValue."""
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if value is None:
        return {}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    assert isinstance(value, dict)
    return {"kvlistValue": {"values": [{"key": k, "value": _value(v)} for k, v in value.items()]}}


def _record(
    name: str | None,
    body: object = None,
    *,
    span: str = "a1",
    trace: str = "t1",
    attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {"timeUnixNano": "1773478861120000000", "traceId": trace}
    if name:
        record["eventName"] = name
    if body is not None:
        record["body"] = _value(body)
    record["attributes"] = [{"key": k, "value": _value(v)} for k, v in (attributes or {}).items()]
    record["spanId"] = span
    return record


def _export(*records: dict[str, Any]) -> str:
    scope = {"scope": {"name": "test"}, "logRecords": list(records)}
    return json.dumps({"resourceLogs": [{"resource": {"attributes": []}, "scopeLogs": [scope]}]})


def test_records_flattened_one_per_line_read_like_the_otlp_export() -> None:
    flattened = []
    for line in (OWN / "log-events.jsonl").read_text().splitlines():
        [resource_logs] = json.loads(line)["resourceLogs"]
        [scope_logs] = resource_logs["scopeLogs"]
        for record in scope_logs["logRecords"]:
            extra = {"resource": resource_logs["resource"], "scope": scope_logs["scope"]}
            flattened.append(json.dumps({**record, **extra}))
    found = read(parse_lines("\n".join(flattened)))

    assert fits(parse_lines("\n".join(flattened)))
    assert found.conversations == reading("log-events.jsonl").conversations
    assert found.skipped == []


def test_a_jsonl_of_input_output_objects_reads_each_call_once() -> None:
    instructions = [text("Be brief.")]
    first = {
        "system_instructions": instructions,
        "input": [message("user", text("Weather in Paris?"))],
        "output": [message("assistant", call("c1", city="Paris"))],
    }
    second = {
        "system_instructions": instructions,
        "input": [*first["input"], *first["output"], message("tool", response("c1", "14C"))],
        "output": [message("assistant", text("14C."))],
    }
    found = read(parse_lines(f"{json.dumps(first)}\n{json.dumps(second)}"))

    assert [r["role"] for r in found.conversations[0].messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert found.conversations[0].metadata == {"otel": {"shape": "input-output", "resent": 2}}


def test_a_log_export_without_genai_events_is_refused_in_one_sentence() -> None:
    http = _record(None, "GET /health 200", attributes={"http.route": "/health"})
    lines = "\n".join(_export(http, http) for _ in range(40))
    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(lines))

    [problem] = caught.value.problems
    assert problem.path == "file"
    assert problem.message.startswith("is an OpenTelemetry log export, but none of its records")


def test_genai_events_without_content_are_refused_the_same_way() -> None:
    choice = _record("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {}})

    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(_export(_record("gen_ai.user.message", {}), choice)))
    [problem] = caught.value.problems
    assert "none of its records is a GenAI message event" in problem.message


def test_a_trace_export_is_refused_saying_what_to_import_instead() -> None:
    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(json.dumps({"resourceSpans": [{"scopeSpans": []}]})))

    [problem] = caught.value.problems
    assert problem.message.startswith("is an OpenTelemetry trace export (resourceSpans)")


def test_records_that_are_not_genai_events_are_skipped_and_named() -> None:
    lines = "\n".join(
        [
            _export(
                _record("gen_ai.user.message", {"content": "Hi"}),
                _record(None, "GET /health 200"),
                _record("gen_ai.choice", {"index": 0, "message": {"content": "Hello!"}}),
            ),
            json.dumps({"resourceSpans": []}),
            "not json",
        ]
    )
    found = read(parse_lines(lines))

    assert [(r["role"], r["content"]) for r in found.conversations[0].messages] == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
    ]
    assert [(s.where, s.why) for s in found.skipped] == [
        ("line 3", "is not JSON: Expecting value"),
        (
            "line 1: resourceLogs[0].scopeLogs[0].logRecords[1]",
            "is a log record without an event name, not a GenAI message event",
        ),
        ("line 2", found.skipped[2].why),
    ]
    assert found.skipped[2].why.startswith("an OpenTelemetry trace export")
    assert (found.entries, found.unit) == (2, "event")


def test_each_trace_of_a_log_export_is_a_conversation_of_its_own() -> None:
    lines = _export(
        _record("gen_ai.user.message", {"content": "Hi"}, trace="t1"),
        _record("gen_ai.user.message", {"content": "Hola"}, trace="t2", span="b1"),
        _record("gen_ai.choice", {"index": 0, "message": {"content": "Hello!"}}, trace="t1"),
    )
    found = read(parse_lines(lines))

    assert [[r["content"] for r in c.messages] for c in found.conversations] == [
        ["Hi", "Hello!"],
        ["Hola"],
    ]
    assert [c.metadata["otel"]["trace_id"] for c in found.conversations] == ["t1", "t2"]


def test_an_operation_details_event_reads_its_three_attributes_with_their_facts() -> None:
    details = _record(
        "gen_ai.client.inference.operation.details",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.response.model": "gemini-2.5-flash",
            "gen_ai.usage.input_tokens": 212,
            "gen_ai.usage.output_tokens": 19,
            "gen_ai.system_instructions": [text("Be brief.")],
            "gen_ai.input.messages": [message("user", text("UV in Sydney?"))],
            "gen_ai.output.messages": [
                message("assistant", call("get_uv_index_0", "get_uv_index"), finish_reason="stop")
            ],
        },
    )
    found = read(parse_lines(_export(details)))
    rows = found.conversations[0].messages

    assert [r["role"] for r in rows] == ["system", "user", "assistant"]
    assert unanswered(messages_of(found)) == ["get_uv_index_0"]
    assert rows[2]["metadata"]["facts"] == {
        "finish_reason": "stop",
        "time": "2026-03-14T09:01:01.120000Z",
        "model": "gemini-2.5-flash",
        "usage": {"input": 212, "output": 19},
    }
    assert found.conversations[0].metadata["otel"]["shape"] == "log-details"
    assert found.conversations[0].metadata["otel"]["attributes"] == {
        "gen_ai.operation.name": "chat",
        "gen_ai.response.model": "gemini-2.5-flash",
        "gen_ai.usage.input_tokens": 212,
        "gen_ai.usage.output_tokens": 19,
    }


def test_what_is_wrong_inside_an_event_is_refused_at_its_place_in_the_record() -> None:
    choice = _record(
        "gen_ai.choice",
        {"index": 0, "message": {"tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]}},
    )
    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(_export(_record("gen_ai.user.message", {"content": "Hi"}), choice)))

    assert [str(p) for p in caught.value.problems] == [
        "line 1: resourceLogs[0].scopeLogs[0].logRecords[1].body.message.tool_calls[0]"
        ".function.name: is missing"
    ]


def test_vertexai_calls_beside_the_choices_message_are_read_too() -> None:
    choice = _record(
        "gen_ai.choice",
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "model"},
            "tool_calls": [
                {
                    "id": "get_weather_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
    )
    found = read(
        parse_lines(_export(_record("gen_ai.user.message", {"content": "Paris?"}), choice))
    )
    rows = found.conversations[0].messages

    assert rows[1]["role"] == "assistant"
    assert rows[1]["metadata"]["tool_calls"][0]["function"]["arguments"] == '{"city":"Paris"}'
    assert rows[1]["metadata"]["otel"]["role"] == "model"


# The signature.


def _other_fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/*") if p.is_file() and p.parent != OWN)


@pytest.mark.parametrize("path", _other_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_other_formats_fixture_fits(path: Path) -> None:
    assert not fits(source_of(path))


@pytest.mark.parametrize(("format", "document"), ROUND_TRIPS)
def test_no_provider_document_fits(format: str, document: object) -> None:
    assert not fits(Source(document=document))


@pytest.mark.parametrize(
    "document",
    [
        [{"role": "user", "parts": [{"text": "Gemini has no part type"}]}],
        [{"role": "model", "parts": [{"type": "text", "functionCall": {"name": "f"}}]}],
        [{"role": "user", "parts": []}],
        {"input": []},
        {"input": [{"type": "message", "role": "user", "content": "hi"}]},
        {"input": '[{"role": "user", "parts": []}]'},
        {"contents": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]},
        {"messages": [{"role": "user", "content": "hi"}]},
        [{"role": "user", "content": "hi"}],
    ],
)
def test_lookalikes_of_other_formats_do_not_fit(document: object) -> None:
    assert not fits(Source(document=document))


@pytest.mark.parametrize("path", sorted(OWN.glob("*")), ids=lambda p: p.name)
def test_every_fixture_is_detected_as_this_format_alone(path: Path) -> None:
    source = source_of(path) if path.name != "log-events-console.json" else None
    source = source or parse_values(path.read_text())

    assert fits(source)
    assert detect_source(source) is FORMAT
    assert READABLE["otel-genai"] is FORMAT


def test_the_format_names_itself_for_people() -> None:
    assert (FORMAT.name, FORMAT.label, FORMAT.named, FORMAT.provider, FORMAT.lines) == (
        "otel-genai",
        "OpenTelemetry GenAI messages",
        "OpenTelemetry GenAI messages",
        "openai-chat",
        True,
    )


# Any JSON.

OTEL_KEYS = [
    "role", "parts", "type", "id", "name", "arguments", "response", "result", "content",
    "finish_reason", "builtin", "input", "output", "system_instructions",
    "gen_ai.input.messages", "resourceLogs", "scopeLogs", "logRecords", "body", "eventName",
    "event_name", "attributes", "traceId", "spanId", "timeUnixNano", "message", "tool_calls",
    "function", "index", "kvlistValue", "stringValue", "values", "key", "value",
]  # fmt: skip
OTEL_WORDS = [
    "user", "assistant", "tool", "system", "developer", "", "0", "c1", "text", "tool_call",
    "tool_call_response", "reasoning", "gen_ai.choice", "gen_ai.tool.message",
    "gen_ai.user.message", "gen_ai.client.inference.operation.details", "[]", "[{",
]  # fmt: skip
otel_shaped = st.recursive(
    st.none() | st.integers(-2, 2) | st.sampled_from(OTEL_WORDS),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(OTEL_KEYS), inner, max_size=6)
    ),
    max_leaves=40,
)

otel_parts = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "tool_call", "tool_call_response", "reasoning", "blob"])},
        optional=dict.fromkeys(
            ("id", "name", "arguments", "response", "result", "content", "builtin"), otel_shaped
        ),
    ),
    max_size=4,
)
otel_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from([*OTEL_WORDS[:6], "model", "critic"]), "parts": otel_parts},
        optional={"finish_reason": otel_shaped, "name": otel_shaped, "index": otel_shaped},
    ),
    min_size=1,
    max_size=5,
)
otel_events = st.builds(
    lambda name, body, span: json.loads(_export(_record(name, body, span=span))),
    st.sampled_from([w for w in OTEL_WORDS if w.startswith("gen_ai.")]),
    otel_shaped,
    st.sampled_from(["a1", "b2", ""]),
)


def _sources(values: list[Any]) -> list[Source]:
    lines = tuple(Entry(f"line {i + 1}", v) for i, v in enumerate(values))
    return [Source(document=values), Source(lines=lines), *(Source(document=v) for v in values)]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(json_values | otel_shaped | otel_messages | otel_events, min_size=1, max_size=3)
)
def test_any_json_is_read_or_refused_and_every_row_read_can_be_stored(values: list[Any]) -> None:
    for source in _sources(values):
        fits(source)
        try:
            found = read(source)
        except InvalidInput:
            continue
        for conversation in found.conversations:
            assert json_problem(conversation.metadata) is None
            for row in conversation.messages:
                assert json_problem(row["content"]) is None
                assert json_problem(row["metadata"]) is None
            parse_messages(conversation.messages)


# Found in review: each first failed.


@pytest.mark.parametrize("nanoseconds", ["²", "٣", "9" * 5000, "1e9", " 12", -5, 10**30])
def test_a_record_time_that_is_no_count_of_nanoseconds_is_left_out_not_a_crash(
    nanoseconds: object,
) -> None:
    user = _record("gen_ai.user.message", {"content": "Hi"})
    user["timeUnixNano"] = nanoseconds
    found = read(parse_lines(_export(user)))

    assert found.conversations[0].messages[0]["content"] == "Hi"


@pytest.mark.rule("MEM-11")
def test_a_history_sent_again_without_the_outputs_finish_reason_is_still_read_once() -> None:
    asked = message("user", text("Weather in Paris?"))
    answer = message("assistant", call("c1", city="Paris"))
    lines = [
        [asked],
        [{**answer, "finish_reason": "tool_call"}],
        [asked, answer, message("tool", response("c1", "14C"))],
        [message("assistant", text("14C."))],
    ]
    found = read(parse_lines("\n".join(json.dumps(line) for line in lines)))
    messages = messages_of(found)

    assert [(m.role, m.content) for m in messages] == [
        ("user", "Weather in Paris?"),
        ("assistant", None),
        ("tool", "14C"),
        ("assistant", "14C."),
    ]
    assert unanswered(messages) == []
    assert messages[1].metadata["facts"] == {"finish_reason": "tool_call"}


def test_a_history_sent_again_one_message_per_line_with_an_index_is_read_once() -> None:
    asked = message("user", text("Hi"))
    lines = [{**asked, "index": 0}, [asked, message("assistant", text("Hello"))]]
    found = read(parse_lines("\n".join(json.dumps(line) for line in lines)))

    assert [r["content"] for r in found.conversations[0].messages] == ["Hi", "Hello"]


@pytest.mark.rule("MEM-11")
def test_an_id_made_unique_never_takes_an_id_written_in_the_file() -> None:
    document = [
        message("assistant", call("x")),
        message("tool", response("x", "first")),
        message("assistant", call("x#2")),
        message("user", text("never mind")),
        message("assistant", call("x")),
        message("tool", response("x", "third")),
    ]
    messages = parse_messages(read(Source(document=document)).conversations[0].messages)

    assert pairs(messages) == (["x", "x#2", "x#3"], ["x", "x#3"])
    assert unanswered(messages) == ["x#2"]


@pytest.mark.rule("MEM-11")
def test_a_made_up_id_never_takes_an_id_written_in_the_file_either() -> None:
    document = [
        message("assistant", call("otel-1-0")),
        message("assistant", call(None)),
        message("tool", response(None, "by position")),
    ]
    messages = parse_messages(read(Source(document=document)).conversations[0].messages)

    assert pairs(messages) == (["otel-1-0", "otel-1-0#2"], ["otel-1-0#2"])
    assert unanswered(messages) == ["otel-1-0"]


@pytest.mark.rule("MEM-11")
def test_many_responses_pair_through_a_cursor_not_a_scan() -> None:
    count = 3000
    anonymous = [call(None, n=n) for n in range(count)]
    same_id = [call("get_weather_0", n=n) for n in range(count)]
    document = [
        message("assistant", *anonymous),
        message("tool", *(response(None, n) for n in range(count))),
        message("assistant", *same_id),
        message("tool", *(response("get_weather_0", n) for n in range(count))),
    ]
    reader = MessageReader(Problems())
    # Each response takes the call at the cursor of its message (or of its id in it),
    # which then moves on: no call is looked at twice.
    reader.messages(document[:2], "")
    assert (reader.pairing.turn.next, len(reader.pairing.turn.calls)) == (count, count)
    reader.messages(document[2:], "")
    [same] = reader.pairing.by_id["get_weather_0"]
    assert (same.next, len(same.calls)) == (count, count)

    messages = parse_messages(reader.rows)
    assert unanswered(messages) == []
    declared, answered = pairs(messages)
    assert declared == answered
    assert [m.content for m in messages if m.role == "tool"] == [str(n) for n in range(count)] * 2


def _two_calls(first_choices: int = 1) -> list[dict[str, Any]]:
    asked = {"content": "Weather in Paris?"}
    called = {
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
        ]
    }
    other = {"index": 1, "finish_reason": "stop", "message": {"content": "No idea."}}
    first = [
        _record("gen_ai.user.message", asked, span="s1"),
        _record("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls", "message": called}),
        *[_record("gen_ai.choice", other, span="s1") for _ in range(first_choices - 1)],
    ]
    first[1]["spanId"] = "s1"
    second = [
        _record("gen_ai.user.message", asked, span="s2"),
        _record("gen_ai.assistant.message", called, span="s2"),
        _record("gen_ai.tool.message", {"content": "14C", "id": "c1"}, span="s2"),
        _record("gen_ai.choice", {"index": 0, "message": {"content": "14C."}}, span="s2"),
    ]
    for record in second:
        record["timeUnixNano"] = "1773478862000000000"
    return [*first, *second]


def test_earlier_calls_of_a_log_are_read_and_their_choices_kept_on_the_rows_they_made() -> None:
    found = read(parse_lines(_export(*_two_calls(first_choices=2))))
    [conversation] = found.conversations
    rows = conversation.messages

    assert [(r["role"], r["content"]) for r in rows] == [
        ("user", "Weather in Paris?"),
        ("assistant", None),
        ("tool", "14C"),
        ("assistant", "14C."),
    ]
    assert rows[1]["metadata"]["facts"]["finish_reason"] == "tool_calls"
    assert rows[1]["metadata"]["otel"]["other_outputs"] == [
        {"index": 1, "finish_reason": "stop", "message": {"content": "No idea."}}
    ]
    assert conversation.metadata["otel"]["calls"] == 2
    assert conversation.metadata["otel"]["resent"] == 2
    assert (found.entries, found.skipped) == (7, [])


def test_earlier_details_events_give_their_facts_to_the_rows_they_describe() -> None:
    asked = message("user", text("UV in Sydney?"))
    called = message("assistant", call("get_uv_index_0", "get_uv_index"), finish_reason="stop")
    first = _record(
        "gen_ai.client.inference.operation.details",
        span="s1",
        attributes={
            "gen_ai.response.model": "gemini-2.5-flash",
            "gen_ai.usage.input_tokens": 212,
            "gen_ai.input.messages": [asked],
            "gen_ai.output.messages": [called],
        },
    )
    second = _record(
        "gen_ai.client.inference.operation.details",
        span="s2",
        attributes={
            "gen_ai.response.model": "gemini-2.5-pro",
            "gen_ai.input.messages": [
                asked,
                message("assistant", call("get_uv_index_0", "get_uv_index")),
                message("user", response("get_uv_index_0", {"uv": 9})),
            ],
            "gen_ai.output.messages": [message("assistant", text("UV is 9."))],
        },
    )
    second["timeUnixNano"] = "1773478862000000000"
    found = read(parse_lines(_export(first, second)))
    [conversation] = found.conversations
    rows = conversation.messages

    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[1]["metadata"]["facts"]["model"] == "gemini-2.5-flash"
    assert rows[1]["metadata"]["facts"]["usage"] == {"input": 212}
    assert rows[3]["metadata"]["facts"]["model"] == "gemini-2.5-pro"
    assert unanswered(messages_of(found)) == []
    assert conversation.metadata["otel"]["calls"] == 2


def test_a_call_that_does_not_repeat_the_history_read_so_far_starts_a_conversation() -> None:
    records = _two_calls()
    title = [
        _record("gen_ai.system.message", {"content": "Title this chat."}, span="s3"),
        _record("gen_ai.choice", {"index": 0, "message": {"content": "Paris weather"}}, span="s3"),
    ]
    for record in title:
        record["timeUnixNano"] = "1773478861500000000"
    found = read(parse_lines(_export(*records[:2], *title, *records[2:])))

    assert [[r["content"] for r in c.messages] for c in found.conversations] == [
        ["Weather in Paris?", None, "14C", "14C."],
        ["Title this chat.", "Paris weather"],
    ]
    assert [c.metadata["otel"]["calls"] for c in found.conversations] == [2, 1]
    assert found.skipped == []


def test_a_details_event_without_messages_is_skipped_and_named() -> None:
    empty = _record(
        "gen_ai.client.inference.operation.details",
        span="s0",
        attributes={"gen_ai.response.model": "m"},
    )
    found = read(parse_lines(_export(empty, *_two_calls())))

    assert [(s.where, s.why) for s in found.skipped] == [
        (
            "line 1: resourceLogs[0].scopeLogs[0].logRecords[0]",
            "is a gen_ai.client.inference.operation.details event without "
            "gen_ai.input.messages or gen_ai.output.messages (was content capture off?)",
        )
    ]


def test_resource_and_scope_logs_that_are_not_objects_are_skipped_and_named() -> None:
    export = json.loads(_export(_record("gen_ai.user.message", {"content": "Hi"})))
    export["resourceLogs"].append("junk")
    export["resourceLogs"][0]["scopeLogs"].append(7)
    found = read(parse_lines(json.dumps(export)))

    assert [(s.where, s.why) for s in found.skipped] == [
        ("line 1: resourceLogs[0].scopeLogs[1]", "is a number, not an object"),
        ("line 1: resourceLogs[1]", "is a string, not an object"),
    ]


# Fixtures mutated: every value swapped for one of another type, keys dropped.

SWAPS: list[object] = [
    None, True, 0, -1, 1.5, 10**30, "", "²", "9" * 5000, "tool", [], {}, [None],
    {"type": None}, {"role": {}}, [[]],
]  # fmt: skip


def _places(value: object, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield path
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, inner in items:
            yield from _places(inner, (*path, key))


def _mutated(value: Any, path: tuple[str | int, ...], new: object) -> Any:
    """``value`` with what is at ``path`` replaced by ``new`` (dropped when ``new`` is
    ``DROP``), the rest shared."""
    if not path:
        return new
    head, *rest = path
    copied = dict(value) if isinstance(value, dict) else list(value)
    if not rest and new is DROP:
        del copied[head]  # type: ignore[arg-type]
    else:
        copied[head] = _mutated(value[head], tuple(rest), new)  # type: ignore[index]
    return copied


DROP = object()


def _fixture_values(path: Path) -> tuple[Any, bool]:
    """A fixture's values, and whether they are a log's lines (else one document)."""
    if path.name == "log-events-console.json":
        return [entry.value for entry in parse_values(path.read_text()).entries() or []], True
    source = source_of(path)
    if source.lines is not None:
        return [entry.value for entry in source.lines], True
    return source.document, False


@pytest.mark.parametrize("path", sorted(OWN.glob("*")), ids=lambda p: p.name)
def test_a_fixture_with_any_value_swapped_or_dropped_is_read_or_refused(path: Path) -> None:
    values, lines = _fixture_values(path)
    for number, place in enumerate(_places(values)):
        other = DROP if place else SWAPS[(number * 7 + 3) % len(SWAPS)]
        for new in (SWAPS[number % len(SWAPS)], other):
            mutated = _mutated(values, place, new)
            if lines and not isinstance(mutated, list):
                continue
            source = (
                Source(lines=tuple(Entry(f"line {i + 1}", v) for i, v in enumerate(mutated)))
                if lines
                else Source(document=mutated)
            )
            fits(source)
            try:
                found = read(source)
            except InvalidInput:
                continue
            for conversation in found.conversations:
                parse_messages(conversation.messages)


def test_a_records_own_attributes_are_kept_on_its_row_when_they_differ() -> None:
    records = _two_calls()
    records[-1]["attributes"] = [{"key": "gen_ai.response.id", "value": _value("chatcmpl-9")}]
    found = read(parse_lines(_export(*records)))
    [conversation] = found.conversations

    assert conversation.metadata["otel"].get("attributes") is None
    assert conversation.messages[-1]["metadata"]["otel"] == {
        "attributes": {"gen_ai.response.id": "chatcmpl-9"}
    }
    assert all("otel" not in r["metadata"] for r in conversation.messages[:-1])


def test_fields_of_each_input_output_object_are_kept_none_overwritten() -> None:
    first = {
        "input": [message("user", text("Hi"))],
        "output": [message("assistant", text("Hello"))],
        "model": "small",
    }
    second = {
        "input": [*first["input"], *first["output"], message("user", text("Bye"))],
        "output": [message("assistant", text("Bye!"))],
        "model": "large",
    }
    found = read(parse_lines(f"{json.dumps(first)}\n{json.dumps(second)}"))
    [conversation] = found.conversations

    assert conversation.metadata["otel"]["fields"] == {"model": "small"}
    assert conversation.messages[-1]["metadata"]["otel"] == {"fields": {"model": "large"}}


def _lines(*values: object) -> Reading:
    return read(parse_lines("\n".join(json.dumps(value) for value in values)))


@pytest.mark.rule("MEM-11")
def test_an_output_line_written_twice_is_read_once_and_named_among_the_skipped() -> None:
    asked = message("user", text("hi"))
    calling = message("assistant", call("c1", "f"))
    answered = message("tool", response("c1", "ok"))
    found = _lines(
        [asked],
        [calling],
        [calling],
        [asked, calling, answered],
        [message("assistant", text("done"))],
    )
    messages = messages_of(found)

    assert [(m.role, m.content) for m in messages] == [
        ("user", "hi"),
        ("assistant", None),
        ("tool", "ok"),
        ("assistant", "done"),
    ]
    assert pairs(messages) == (["c1"], ["c1"])
    assert unanswered(messages) == []
    assert all(verdict.accepted for verdict in check_all(messages).values())
    assert [s.where for s in found.skipped] == ["line 3: [0]"]
    assert "line 2: [0]" in found.skipped[0].why
    assert found.conversations[0].metadata == {"otel": {"shape": "lists", "resent": 2}}
    assert found.entries == 4


def test_a_leading_system_message_changed_between_calls_stays_as_first_read() -> None:
    first_system = message("system", text("Today is 2026-03-01 10:00."))
    later_system = message("system", text("Today is 2026-03-01 10:01."))
    asked = message("user", text("hi"))
    calling = message("assistant", call("c1", "f"))
    found = _lines(
        [first_system, asked],
        [calling],
        [later_system, asked, calling, message("tool", response("c1", "ok"))],
        [message("assistant", text("done"))],
    )
    rows = found.conversations[0].messages
    messages = messages_of(found)

    assert [(m.role, m.content) for m in messages] == [
        ("system", "Today is 2026-03-01 10:00."),
        ("user", "hi"),
        ("assistant", None),
        ("tool", "ok"),
        ("assistant", "done"),
    ]
    assert unanswered(messages) == []
    assert rows[0]["metadata"]["otel"] == {
        "sent_later": [{"where": "line 3: [0]", "message": later_system}]
    }
    assert found.conversations[0].metadata == {"otel": {"shape": "lists", "resent": 3}}
    assert found.skipped == []


def test_a_line_that_sends_no_history_read_so_far_is_read_whole() -> None:
    system = message("system", text("Be brief."))
    other_system = message("system", text("Title this chat."))
    asked = message("user", text("hi"))
    found = _lines(
        [system, asked],
        [message("assistant", text("Hello!"))],
        [other_system, message("user", text("hi, Hello!"))],
        [message("assistant", text("Greetings"))],
    )

    assert [r["content"] for r in found.conversations[0].messages] == [
        "Be brief.",
        "hi",
        "Hello!",
        "Title this chat.",
        "hi, Hello!",
        "Greetings",
    ]
    assert "resent" not in found.conversations[0].metadata["otel"]
    assert found.skipped == []


def test_a_message_said_again_with_an_answer_between_is_not_a_repeat() -> None:
    asked = message("user", text("hi"))
    first = message("assistant", text("Hello!"))
    second = message("assistant", text("Hello again!"))
    found = _lines([asked], [first], [asked, first, asked], [second])

    assert [r["content"] for r in found.conversations[0].messages] == [
        "hi",
        "Hello!",
        "hi",
        "Hello again!",
    ]
    assert found.skipped == []


def test_the_same_message_twice_in_one_list_is_what_was_sent_not_a_repeat() -> None:
    asked = message("user", text("hi"))
    answer = message("assistant", text("Hello!"))
    found = _lines([asked, asked], [answer], [asked, asked, answer, message("user", text("bye"))])

    assert [r["content"] for r in found.conversations[0].messages] == [
        "hi",
        "hi",
        "Hello!",
        "bye",
    ]
    assert found.skipped == []


# From the bug hunt: a tool's data that is a list, and a history sent back spelled otherwise.


@pytest.mark.parametrize(
    "value",
    [
        ["a.py", "b.py"],
        [{"path": "a.py", "size": 3}],
        [1, 2],
        [[1], [2]],
        [{"name": "src", "type": "dir"}, {"name": "a.py", "type": "file"}],
        [{"text": "hit", "score": 0.9}],
    ],
)
def test_a_response_that_is_a_list_of_values_is_its_json_text_not_content_parts(
    value: list[Any],
) -> None:
    document = [message("assistant", call("a")), message("tool", response("a", value))]

    [_, result] = read(Source(document=document)).conversations[0].messages

    assert result["content"] == json.dumps(value, separators=(",", ":"))


def test_a_response_that_is_a_list_of_parts_stays_parts() -> None:
    parts = [{"type": "text", "text": "two files"}, {"text": "block"}]
    document = [message("assistant", call("a")), message("tool", response("a", parts))]

    [_, result] = read(Source(document=document)).conversations[0].messages

    assert result["content"] == parts


@pytest.mark.parametrize(
    "sent_back",
    [
        {"arguments": '{"city": "Paris"}'},
        {"arguments": '{"city":"Paris"}', "extra": None},
    ],
    ids=["arguments-as-json-text", "a-key-holding-null"],
)
def test_a_history_sent_back_with_its_call_spelled_otherwise_is_read_once(
    sent_back: dict[str, Any],
) -> None:
    asked = [message("user", text("Weather in Paris?"))]
    answer = message("assistant", call("c1", city="Paris"), finish_reason="tool_call")
    spelled = message("assistant", {**call("c1"), **sent_back})
    lines = "\n".join(
        json.dumps(v)
        for v in (
            asked,
            [answer],
            [*asked, spelled, message("tool", response("c1", "14C"))],
            [message("assistant", text("14C."))],
        )
    )

    messages = messages_of(read(parse_lines(lines)))

    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert unanswered(messages) == []


def test_a_history_sent_back_without_its_reasoning_or_empty_text_is_read_once() -> None:
    asked = [message("user", text("Weather in Paris?"))]
    answer = message(
        "assistant",
        {"type": "reasoning", "content": "I should look it up."},
        text(""),
        call("c1", city="Paris"),
    )
    lines = "\n".join(
        json.dumps(v)
        for v in (
            asked,
            [answer],
            [
                *asked,
                message("assistant", call("c1", city="Paris")),
                message("tool", response("c1", "14C")),
            ],
            [message("assistant", text("14C."))],
        )
    )

    messages = messages_of(read(parse_lines(lines)))

    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]


def test_a_log_export_whose_next_call_sends_the_answer_back_without_its_reasoning_reads_once() -> (
    None
):
    asked = message("user", text("UV in Sydney?"))
    answer = message(
        "assistant", {"type": "reasoning", "content": "Look it up."}, call("uv_0", "get_uv")
    )
    sent_back = message("assistant", {**call("uv_0", "get_uv"), "arguments": "{}"})
    details = "gen_ai.client.inference.operation.details"
    first = _record(
        details,
        span="a1",
        attributes={"gen_ai.input.messages": [asked], "gen_ai.output.messages": [answer]},
    )
    second = _record(
        details,
        span="a2",
        attributes={
            "gen_ai.input.messages": [asked, sent_back, message("tool", response("uv_0", "11"))],
            "gen_ai.output.messages": [message("assistant", text("UV 11."))],
        },
    )

    found = read(parse_lines(_export(first, second)))

    assert len(found.conversations) == 1
    assert [m.role for m in messages_of(found)] == ["user", "assistant", "tool", "assistant"]
