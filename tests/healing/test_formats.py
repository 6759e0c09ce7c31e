"""Provider formats read into the stored shape and write back exactly, and any
conversation writes to every format with each call still paired with its result."""

from __future__ import annotations

import contextlib
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buffers.healing import (
    INTERRUPTED_TEXT,
    InvalidInput,
    Message,
    apply_plan,
    declared_call_ids,
    facts_from_messages,
    parse_messages,
    placeholder_for,
    plan_append,
    result_call_id,
)
from buffers.healing.formats import FORMATS, Converted, detect, read, write
from buffers.healing.messages import json_problem

DEMO = Path(__file__).resolve().parents[2] / "buffers" / "demo"

# Samples: the examples of /work/shared/providers.md, with text, a system prompt,
# parallel calls, an error result and a dangling call.

OPENAI_CHAT: dict[str, Any] = {
    "model": "gpt-4o",
    "temperature": 0.2,
    "messages": [
        {"role": "developer", "content": "Use tools for live data."},
        {"role": "user", "content": "Weather in Paris, Rome and Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                },
                {
                    "id": "call_c",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Os'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "14C"},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "9C"}]},
        {"role": "user", "content": [{"type": "text", "text": "and Oslo?"}], "name": "ana"},
        {"role": "assistant", "content": "Oslo timed out.", "refusal": None},
    ],
}

OPENAI_RESPONSES: dict[str, Any] = {
    "model": "o4-mini",
    "instructions": "Be brief.",
    "input": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_a",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_2",
            "call_id": "call_b",
            "name": "get_weather",
            "arguments": '{"city":"Rome"}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_a", "output": "14C"},
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Paris: 14C.", "annotations": []}],
        },
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Answer in French."}],
        },
    ],
}

ANTHROPIC: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": "You are a travel assistant.",
    "messages": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_02",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "14C"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02",
                    "content": "timeout",
                    "is_error": True,
                },
                {"type": "text", "text": "try again"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Retry Rome.", "signature": "sig"},
                {
                    "type": "tool_use",
                    "id": "toolu_03",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
    ],
}

GEMINI: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "You are a travel assistant."}]},
    "generationConfig": {"temperature": 0.2},
    "contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "14C"}}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "timeout"}}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Rome timed out; retrying.", "thoughtSignature": "c2ln"},
                {"functionCall": {"id": "w3", "name": "get_weather", "args": {"city": "Rome"}}},
            ],
        },
    ],
}

SAMPLES = {
    "openai-chat": OPENAI_CHAT,
    "openai-responses": OPENAI_RESPONSES,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
}

# More documents each format must give back exactly.

ROUND_TRIPS: list[tuple[str, object]] = [
    *SAMPLES.items(),
    ("openai-chat", {"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}),
    (
        "openai-chat",
        {"model": "m", "messages": [{"role": "tool", "tool_call_id": "7", "content": "x"}]},
    ),
    ("openai-responses", {"model": "gpt-4o", "input": "What is 2 + 2?"}),
    (
        "openai-responses",
        {
            "input": [
                {"role": "assistant", "content": "Checking."},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok", "id": "fco_1"},
                {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
            ]
        },
    ),
    ("anthropic", {"model": "claude-x", "messages": [{"role": "user", "content": []}]}),
    (
        "anthropic",
        {
            "system": [
                {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
                        {"type": "text", "text": "then", "citations": []},
                    ],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
                {"role": "user", "content": "a separate message"},
                {"role": "assistant", "content": "ok"},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t9",
                            "content": [{"type": "text", "text": "late"}],
                            "cache_control": {"type": "ephemeral"},
                        }
                    ],
                },
            ],
        },
    ),
    (
        "gemini",
        {
            "contents": [
                {
                    "role": "model",
                    "parts": [{"thought": True, "text": "plan"}, {"functionCall": {"name": "f"}}],
                },
                {
                    "role": "function",
                    "parts": [{"functionResponse": {"name": "f", "response": {"temp": 3}}}],
                },
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"id": "x", "name": "g", "response": {"output": None}}}
                    ],
                },
                {"role": "user", "parts": [{"text": "thanks"}]},
            ]
        },
    ),
]


def one(document: object, format: str) -> Converted:
    [conversation] = read(document, format)
    return conversation


def round_trip(document: object, format: str) -> object:
    conversation = one(document, format)
    return write(parse_messages(conversation.messages), format, conversation.metadata)


def problems_of(document: object, format: str) -> list[str]:
    with pytest.raises(InvalidInput) as caught:
        read(document, format)
    return [str(problem) for problem in caught.value.problems]


def pairs(messages: list[Message]) -> tuple[list[str], list[str | None]]:
    """Every declared call id, and every result's id, in order."""
    return (
        [cid for m in messages for cid in declared_call_ids(m)],
        [result_call_id(m) for m in messages if m.role == "tool"],
    )


# Reading: the exact rows for one sample per format.


def test_openai_chat_messages_read_as_the_stored_importer_reads_them() -> None:
    rows = one(OPENAI_CHAT, "openai-chat").messages

    assert rows[0] == {
        "role": "system",
        "content": "Use tools for live data.",
        "metadata": {"openai_role": "developer"},
    }
    assert rows[2] == {
        "role": "assistant",
        "content": None,
        "metadata": {"tool_calls": OPENAI_CHAT["messages"][2]["tool_calls"]},
    }
    assert rows[3] == {"role": "tool", "content": "14C", "metadata": {"tool_call_id": "call_a"}}
    assert rows[5]["metadata"] == {"name": "ana"}
    assert [m.as_stored() for m in parse_messages(OPENAI_CHAT["messages"][1:])] == rows[1:]


def test_openai_chat_keeps_the_request_fields_as_conversation_metadata() -> None:
    assert one(OPENAI_CHAT, "openai-chat").metadata == {"model": "gpt-4o", "temperature": 0.2}


def test_responses_items_become_rows_with_calls_joined_to_the_turn_before() -> None:
    conversation = one(OPENAI_RESPONSES, "openai-responses")

    assert conversation.metadata == {"model": "o4-mini", "instructions": "Be brief."}
    assert conversation.messages == [
        {"role": "user", "content": "Weather in Paris and Rome?", "metadata": {}},
        {
            "role": "assistant",
            "content": None,
            "metadata": {
                "responses_item": {"type": "reasoning", "id": "rs_1", "summary": []},
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        "responses": {"type": "function_call", "id": "fc_1", "status": "completed"},
                    },
                    {
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                        "responses": {"type": "function_call", "id": "fc_2", "status": "completed"},
                    },
                ],
            },
        },
        {
            "role": "tool",
            "content": "14C",
            "metadata": {"tool_call_id": "call_a", "responses": {"type": "function_call_output"}},
        },
        {
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Paris: 14C.", "annotations": []}],
            "metadata": {"responses": {"type": "message", "id": "msg_1", "status": "completed"}},
        },
        {
            "role": "system",
            "content": [{"type": "input_text", "text": "Answer in French."}],
            "metadata": {"responses": {"type": "message"}, "openai_role": "developer"},
        },
    ]


def test_a_plain_input_string_is_one_user_message() -> None:
    conversation = one({"model": "gpt-4o", "input": "hi"}, "openai-responses")

    assert conversation.messages == [
        {"role": "user", "content": "hi", "metadata": {"responses": {"input_is_text": True}}}
    ]
    assert conversation.metadata == {"model": "gpt-4o"}


def test_anthropic_results_become_tool_rows_first_then_the_users_text() -> None:
    conversation = one(ANTHROPIC, "anthropic")

    assert conversation.metadata == {"model": "claude-sonnet-4-5", "max_tokens": 1024}
    assert conversation.messages == [
        {"role": "system", "content": "You are a travel assistant.", "metadata": {}},
        {"role": "user", "content": "Weather in Paris and Rome?", "metadata": {}},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Checking."}],
            "metadata": {
                "tool_calls": [
                    {
                        "id": "toolu_01",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "toolu_02",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                    },
                ]
            },
        },
        {"role": "tool", "content": "14C", "metadata": {"tool_call_id": "toolu_01"}},
        {
            "role": "tool",
            "content": "timeout",
            "metadata": {"tool_call_id": "toolu_02", "is_error": True},
        },
        {"role": "user", "content": [{"type": "text", "text": "try again"}], "metadata": {}},
        {
            "role": "assistant",
            "content": None,
            "metadata": {
                "tool_calls": [
                    {
                        "id": "toolu_03",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                    }
                ],
                "anthropic": {
                    "layout": [
                        {"type": "thinking", "thinking": "Retry Rome.", "signature": "sig"},
                        "call",
                    ]
                },
            },
        },
    ]


def test_gemini_calls_without_ids_get_made_up_ids_that_pair_by_position() -> None:
    conversation = one(GEMINI, "gemini")

    assert conversation.metadata == {"generationConfig": {"temperature": 0.2}}
    assert conversation.messages == [
        {
            "role": "system",
            "content": [{"text": "You are a travel assistant."}],
            "metadata": {},
        },
        {"role": "user", "content": [{"text": "Weather in Paris and Rome?"}], "metadata": {}},
        {
            "role": "assistant",
            "content": None,
            "metadata": {
                "tool_calls": [
                    {
                        "id": "gemini-1-0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        "gemini": {"synthesized_id": True},
                    },
                    {
                        "id": "gemini-1-1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                        "gemini": {"synthesized_id": True},
                    },
                ]
            },
        },
        {
            "role": "tool",
            "content": "14C",
            "metadata": {"tool_call_id": "gemini-1-0", "gemini": {"synthesized_id": True}},
        },
        {
            "role": "tool",
            "content": "timeout",
            "metadata": {
                "tool_call_id": "gemini-1-1",
                "is_error": True,
                "gemini": {"synthesized_id": True},
            },
        },
        {
            "role": "assistant",
            "content": [{"text": "Rome timed out; retrying.", "thoughtSignature": "c2ln"}],
            "metadata": {
                "tool_calls": [
                    {
                        "id": "w3",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                    }
                ]
            },
        },
    ]


def test_a_gemini_content_without_a_role_is_the_users_and_writes_back_without_one() -> None:
    document = {
        "contents": [
            {"parts": [{"text": "Weather in Paris?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"parts": [{"functionResponse": {"name": "f", "response": {"output": "14C"}}}]},
        ]
    }
    rows = one(document, "gemini").messages

    assert [r["role"] for r in rows] == ["user", "assistant", "tool"]
    assert round_trip(document, "gemini") == document


def test_a_list_of_request_bodies_is_one_conversation_each() -> None:
    bodies = [OPENAI_CHAT, {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}]

    assert [len(c.messages) for c in read(bodies, "openai-chat")] == [7, 1]


def test_a_bare_list_of_messages_reads_like_a_body_with_no_other_fields() -> None:
    bare = ANTHROPIC["messages"]

    assert one(bare, "anthropic") == Converted(one(ANTHROPIC, "anthropic").messages[1:], {})
    assert round_trip(bare, "anthropic") == {"messages": bare}


# Writing back: the round trip.


@pytest.mark.parametrize(("format", "document"), ROUND_TRIPS)
def test_writing_what_was_read_gives_the_document_back(format: str, document: object) -> None:
    assert round_trip(document, format) == document


@pytest.mark.parametrize(("format", "document"), SAMPLES.items())
def test_reading_does_not_change_the_document(format: str, document: object) -> None:
    before = copy.deepcopy(document)
    conversation = one(document, format)
    write(parse_messages(conversation.messages), format, conversation.metadata)

    assert document == before


def test_anthropic_results_after_text_are_written_first_as_anthropic_requires() -> None:
    late = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "here"},
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
            ],
        },
    ]

    assert round_trip(late, "anthropic")["messages"][1]["content"] == [  # type: ignore[index]
        {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
        {"type": "text", "text": "here"},
    ]


def test_an_anthropic_result_with_null_content_writes_back_with_null_content() -> None:
    document = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": None}]},
    ]

    assert round_trip(document, "anthropic") == {"messages": document}


def test_openai_chat_writes_a_missing_content_as_null() -> None:
    document = {"messages": [{"role": "assistant", "tool_calls": [_call("c1")]}]}

    assert round_trip(document, "openai-chat") == {
        "messages": [{"role": "assistant", "content": None, "tool_calls": [_call("c1")]}]
    }


def test_openai_chat_leaves_out_an_empty_list_of_calls_which_openai_refuses() -> None:
    """OpenAI answers 400 ``empty_array`` for ``tool_calls: []`` (openai-python's
    ``.parse()`` writes it); a turn without calls goes without the key."""
    document = {
        "messages": [
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "done", "tool_calls": []},
        ]
    }

    assert round_trip(document, "openai-chat") == {
        "messages": [
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "done"},
        ]
    }


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


# Detection.


@pytest.mark.parametrize(("format", "document"), ROUND_TRIPS)
def test_each_sample_is_detected_as_its_format(format: str, document: object) -> None:
    assert detect(document) == format


@pytest.mark.parametrize(
    ("document", "format"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "stored"),
        ({"title": "t", "messages": []}, "stored"),
        ({"messages": [{"role": "user", "content": "hi", "metadata": {}}]}, "stored"),
        (
            {
                "messages": [
                    {"role": "assistant", "tool_calls": [{"tool_call_id": "c1", "name": "s"}]}
                ]
            },
            "stored",
        ),
        ([{"title": "a", "messages": []}, {"key": "b", "messages": []}], "stored"),
        ({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, "openai-chat"),
        ({"messages": [{"role": "tool", "tool_call_id": "c1", "content": "x"}]}, "openai-chat"),
        ({"messages": [{"role": "developer", "content": "x"}]}, "openai-chat"),
        ([{"role": "user", "content": "hi"}], "openai-chat"),
        (
            {"model": "claude-haiku-4-5", "messages": [{"role": "user", "content": "hi"}]},
            "anthropic",
        ),
        # A Claude model through an OpenAI-compatible endpoint (LiteLLM, OpenRouter): the
        # messages are OpenAI's, which Anthropic's never are (bug hunt).
        (
            {
                "model": "claude-3-5-sonnet-20240620",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": None, "tool_calls": []},
                ],
            },
            "openai-chat",
        ),
        (
            {
                "model": "anthropic/claude-sonnet-4-5",
                "messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}],
            },
            "openai-chat",
        ),
        (
            {
                "model": "claude-x",
                "messages": [{"role": "tool", "tool_call_id": "c", "content": ""}],
            },
            "openai-chat",
        ),
        ({"system": "x", "messages": []}, "anthropic"),
        (ANTHROPIC["messages"], "anthropic"),
        ({"input": []}, "openai-responses"),
        (OPENAI_RESPONSES["input"], "openai-responses"),
        ({"contents": []}, "gemini"),
        (GEMINI["contents"], "gemini"),
    ],
)
def test_detect_tells_the_formats_apart_by_their_marks(document: object, format: str) -> None:
    assert detect(document) == format


@pytest.mark.parametrize("demo", sorted(DEMO.glob("*.json")), ids=lambda p: p.name)
def test_the_demo_transcripts_are_detected_as_stored(demo: Path) -> None:
    assert detect(json.loads(demo.read_text())) == "stored"


def test_the_demo_jsonl_lines_are_detected_as_stored() -> None:
    lines = (DEMO / "support-bot.jsonl").read_text().splitlines()

    assert {detect(json.loads(line)) for line in lines if line.strip()} == {"stored"}


@pytest.mark.parametrize(
    ("document", "sentence"),
    [
        ("hello", "found a string"),
        ([], "is an empty list, which could be any format"),
        ({"model": "gpt-4o"}, "found an object with keys model"),
        ([1, 2], "found a list of 2 values (2 number)"),
        (
            [{"role": "user", "content": "hi", "metadata": {}}],
            "is a list of messages in the stored shape",
        ),
        (
            [{"input": []}, {"contents": []}],
            "holds conversations in more than one format (conversations[0] is "
            "openai-responses, conversations[1] is gemini)",
        ),
        (
            [
                {
                    "sessionId": "e2a7f5c3",
                    "messageId": 0,
                    "timestamp": "2026-07-16T10:02:40.118Z",
                    "type": "user",
                    "message": "Rename subtract to sub everywhere.",
                }
            ],
            "is a Gemini CLI prompt log (logs.json): it holds the user's prompts only, not "
            "the conversation; import the session files in chats/ beside it",
        ),
        (
            [{"type": "user", "text": "hi"}, {"type": "gemini", "text": "hello"}],
            "found a list of 2 objects with keys text, type",
        ),
    ],
    ids=[
        "string",
        "empty list",
        "no messages",
        "numbers",
        "stored messages",
        "mixed bodies",
        "gemini cli prompt log",
        "items of types responses lacks",
    ],
)
def test_detect_says_what_it_saw_when_it_cannot_tell(document: object, sentence: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        detect(document)

    [problem] = caught.value.problems
    assert problem.path == "file"
    assert sentence in problem.message


def test_a_list_of_responses_items_that_break_the_format_is_still_read_as_responses() -> None:
    document = [{"type": "function_call", "name": "f"}]

    assert detect(document) == "openai-responses"
    assert problems_of(document, "openai-responses") == [
        "input[0].call_id: is missing",
        "input[0].arguments: is missing",
    ]


def test_images_nested_in_a_gemini_response_are_written_back_nested_and_not_elsewhere() -> None:
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    document = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "read_file"}}]},
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "c1",
                            "name": "read_file",
                            "response": {"output": "Binary content provided (1 item(s))."},
                            "parts": [image],
                        }
                    }
                ],
            },
        ]
    }

    tool = one(document, "gemini").messages[1]

    assert tool["content"] == "Binary content provided (1 item(s))."
    assert round_trip(document, "gemini") == document
    anthropic = write(parse_messages([tool]), "anthropic")
    assert anthropic["messages"][0]["content"][0]["content"] == tool["content"]


def test_an_anthropic_results_image_goes_to_gemini_beside_its_response() -> None:
    """Gemini's model sees a part beside a ``functionResponse`` as media; inside the
    response, as JSON, it would read it as text."""
    png = "iVBORw0KGgo="
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    document = {
        "messages": [
            {"role": "user", "content": "show me"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "shot", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": [{"type": "text", "text": "the screen"}, image],
                    }
                ],
            },
        ]
    }

    messages = parse_messages(one(document, "anthropic").messages)
    [_, _, results] = write(messages, "gemini")["contents"]

    assert results["parts"] == [
        {"functionResponse": {"id": "c1", "name": "shot", "response": {"output": "the screen"}}},
        {"inlineData": {"mimeType": "image/png", "data": png}},
    ]


# Pairing: after reading, every call is answered by its own result.


@pytest.mark.rule("MEM-11")
def test_responses_calls_pair_on_call_id_not_on_the_items_own_id() -> None:
    messages = parse_messages(one(OPENAI_RESPONSES, "openai-responses").messages)

    assert pairs(messages) == (["call_a", "call_b"], ["call_a"])


@pytest.mark.rule("MEM-11")
def test_gemini_pairs_two_parallel_calls_of_one_function_by_position_never_by_name() -> None:
    document = {
        "contents": [
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"output": "14C"}}}
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"output": "9C"}}}
                ],
            },
        ]
    }
    messages = parse_messages(one(document, "gemini").messages)

    assert pairs(messages) == (["gemini-0-0", "gemini-0-1"], ["gemini-0-0", "gemini-0-1"])
    assert [m.content for m in messages if m.role == "tool"] == ["14C", "9C"]


def gemini_turns(calls: list[dict[str, Any]], *responses: list[dict[str, Any]]) -> dict[str, Any]:
    """A model turn of ``calls`` and a user turn of each list of ``responses``."""
    model = {"role": "model", "parts": [{"functionCall": call} for call in calls]}
    users = [
        {"role": "user", "parts": [{"functionResponse": r} for r in turn]} for turn in responses
    ]
    return {"contents": [{"role": "user", "parts": [{"text": "go"}]}, model, *users]}


def answers_by_call(document: object) -> dict[object, object]:
    """What Gemini reads each call's result to be, by the call's place in its turn."""
    messages = parse_messages(one(document, "gemini").messages)
    calls = [call for m in messages for call in declared_call_ids(m)]
    results = {result_call_id(m): m.content for m in messages if m.role == "tool"}
    return {place: results.get(call) for place, call in enumerate(calls)}


@pytest.mark.parametrize(
    "responses",
    [
        [[{"id": "a", "name": "f", "response": {"output": "A"}},
          {"name": "g", "response": {"output": "B"}}]],
        [[{"name": "f", "response": {"output": "A"}},
          {"id": "b", "name": "g", "response": {"output": "B"}}]],
        [[{"id": "c1", "name": "f", "response": {"output": "A"}}],
         [{"name": "g", "response": {"output": "B"}}]],
    ],
    ids=["id first", "id second", "over two turns"],
)  # fmt: skip
def test_a_gemini_turn_mixing_calls_with_and_without_ids_writes_back_as_it_was(
    responses: list[list[dict[str, Any]]],
) -> None:
    """Gemini pairs a response without an id by its place among all the turn's responses,
    whether or not the others carry ids."""
    calls = [{"id": "a", "name": "f", "args": {}}, {"name": "g", "args": {}}]
    if "b" in json.dumps(responses):
        calls = [{"name": "f", "args": {}}, {"id": "b", "name": "g", "args": {}}]
    document = gemini_turns(calls, *responses)

    assert round_trip(document, "gemini") == document


@pytest.mark.parametrize("first_has_id", [True, False])
def test_a_healed_gemini_turn_mixing_ids_exports_each_result_to_its_own_call(
    first_has_id: bool,
) -> None:
    """The heal puts the unanswered call's placeholder right after the turn, before the
    other call's result; Gemini must still pair each response with its own call."""
    first = {"id": "a", "name": "f", "args": {}} if first_has_id else {"name": "f", "args": {}}
    second = {"name": "g", "args": {}} if first_has_id else {"id": "b", "name": "g", "args": {}}
    answered = {"name": "f", "response": {"output": "A"}} | ({"id": "a"} if first_has_id else {})
    messages = parse_messages(one(gemini_turns([first, second], [answered]), "gemini").messages)
    healed = apply_plan(
        messages,
        plan_append(
            facts_from_messages(messages), parse_messages([{"role": "user", "content": "and?"}])
        ),
    )

    exported = write(healed, "gemini")

    assert answers_by_call(exported) == {0: "A", 1: INTERRUPTED_TEXT}


@pytest.mark.rule("MEM-11")
def test_gemini_uses_the_ids_it_is_given() -> None:
    document = [
        {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f"}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "a", "name": "f", "response": {}}}]},
    ]

    assert pairs(parse_messages(one(document, "gemini").messages)) == (["a"], ["a"])


@pytest.mark.rule("MEM-11")
@pytest.mark.parametrize(("format", "document"), SAMPLES.items())
def test_every_answered_call_in_a_sample_pairs_with_its_result(
    format: str, document: object
) -> None:
    declared, answered = pairs(parse_messages(one(document, format).messages))

    assert answered
    assert set(answered) <= set(declared)


def test_a_result_for_a_call_no_turn_declares_is_kept_for_the_analysis_to_report() -> None:
    document = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9"}]}]

    assert pairs(parse_messages(one(document, "anthropic").messages)) == ([], ["toolu_9"])


def test_a_gemini_response_beyond_the_calls_of_its_turn_pairs_with_nothing() -> None:
    document = [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]

    assert pairs(parse_messages(one(document, "gemini").messages)) == (
        [],
        ["gemini-unpaired-0-0"],
    )


# Across formats.


@pytest.mark.parametrize("source", FORMATS)
@pytest.mark.parametrize("target", FORMATS)
def test_a_conversation_from_any_format_writes_to_any_format_with_its_pairs_intact(
    source: str, target: str
) -> None:
    messages = parse_messages(one(SAMPLES[source], source).messages)
    written = write(messages, target)
    again = parse_messages(one(written, target).messages)

    declared, answered = pairs(messages)
    assert pairs(again) == (declared, answered)
    assert detect(written) in (target, "stored")


def test_anthropic_written_as_openai_chat_is_an_openai_body_with_paired_ids() -> None:
    conversation = one(ANTHROPIC, "anthropic")
    written = write(parse_messages(conversation.messages), "openai-chat", {"model": "gpt-4o"})

    assert written == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Checking."}],
                "tool_calls": [
                    {
                        "id": "toolu_01",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "toolu_02",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                    },
                ],
            },
            {"role": "tool", "content": "14C", "tool_call_id": "toolu_01"},
            {"role": "tool", "content": "timeout", "tool_call_id": "toolu_02"},
            {"role": "user", "content": [{"type": "text", "text": "try again"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "toolu_03",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                    }
                ],
            },
        ],
    }


def test_ids_anthropic_refuses_are_written_as_ids_it_takes_each_call_with_its_result() -> None:
    """Anthropic takes tool ids of letters, digits, ``_`` and ``-`` (a 400 otherwise): an
    id of another shape (another provider's, the ``#2`` a reader gives a re-declared id,
    an integer) is written as one, its call and its result alike, none merged with
    another (bug hunt)."""

    def turn(call_id: object) -> list[dict[str, Any]]:
        call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": "ok"},
        ]

    ids = ["get_uv_index_0", "get_uv_index_0#2", "get_uv_index_0_2", "call.7/x", 42]
    messages = parse_messages(
        [{"role": "user", "content": "go"}, *[m for i in ids for m in turn(i)]]
    )

    written = write(messages, "anthropic")["messages"]

    blocks = [b for m in written if isinstance(m["content"], list) for b in m["content"]]
    uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    answers = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    assert uses == answers
    assert all(isinstance(i, str) and re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in uses)
    assert len(set(uses)) == len(ids)
    assert (uses[0], uses[2], uses[4]) == ("get_uv_index_0", "get_uv_index_0_2", "42")


def test_an_id_healing_pairs_after_trimming_is_written_alike_for_its_call_and_result() -> None:
    """Healing pairs ``"abc "`` with ``"abc"`` (ids are trimmed): so does the export."""
    call = {"id": "abc ", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = parse_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "abc", "content": "ok"},
        ]
    )

    _, turn, results = write(messages, "anthropic")["messages"]

    assert turn["content"][0]["id"] == results["content"][0]["tool_use_id"] == "abc"


def test_an_integer_or_untrimmed_id_goes_to_openai_and_gemini_as_healing_reads_it() -> None:
    """OpenAI pairs a result with its call by the very string: ``"abc "`` beside ``"abc"``
    (what a heal writes for it) is a call without its result, and an integer no id."""
    calls = [
        {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for call_id in ("abc ", 7)
    ]
    messages = parse_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "abc", "content": "ok"},
            {"role": "tool", "tool_call_id": 7, "content": "ok"},
        ]
    )

    chat = write(messages, "openai-chat")["messages"]
    responses = write(messages, "openai-responses")["input"]
    gemini = [p for c in write(messages, "gemini")["contents"] for p in c["parts"]]

    assert [c["id"] for c in chat[1]["tool_calls"]] == ["abc", "7"]
    assert [m["tool_call_id"] for m in chat[2:]] == ["abc", "7"]
    assert [i["call_id"] for i in responses[1:]] == ["abc", "7", "abc", "7"]
    assert [p.get("functionCall", p.get("functionResponse"))["id"] for p in gemini[1:]] == [
        "abc",
        "7",
        "abc",
        "7",
    ]


def test_openai_chat_written_as_anthropic_regroups_results_into_one_user_message() -> None:
    messages = parse_messages(one(OPENAI_CHAT, "openai-chat").messages)
    written = write(messages, "anthropic")

    assert written["system"] == "Use tools for live data."
    assert [m["role"] for m in written["messages"]] == ["user", "assistant", "user", "assistant"]
    assert written["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_a", "content": "14C"},
        {
            "type": "tool_result",
            "tool_use_id": "call_b",
            "content": [{"type": "text", "text": "9C"}],
        },
        {"type": "text", "text": "and Oslo?"},
    ]


def test_a_system_message_anywhere_is_lifted_out_by_anthropic_and_gemini() -> None:
    """Written in place as a user turn, a system message between a call and its results
    would split them, and both providers would refuse the body."""
    messages = parse_messages(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "system", "content": "Answer in French."},
            {"role": "tool", "tool_call_id": "c1", "content": "14C"},
            {"role": "user", "content": "thanks"},
        ]
    )

    anthropic = write(messages, "anthropic")
    gemini = write(messages, "gemini")

    assert anthropic["system"] == [
        {"type": "text", "text": "Be brief."},
        {"type": "text", "text": "Answer in French."},
    ]
    assert [m["role"] for m in anthropic["messages"]] == ["user", "assistant", "user"]
    assert anthropic["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "14C"},
        {"type": "text", "text": "thanks"},
    ]
    assert gemini["systemInstruction"] == {
        "parts": [{"text": "Be brief."}, {"text": "Answer in French."}]
    }
    assert [c["role"] for c in gemini["contents"]] == ["user", "model", "user"]
    assert gemini["contents"][2]["parts"] == [
        {"functionResponse": {"id": "c1", "name": "f", "response": {"output": "14C"}}},
        {"text": "thanks"},
    ]


def test_arguments_that_are_not_a_json_object_are_kept_whole_for_input_and_args() -> None:
    messages = parse_messages(one(OPENAI_CHAT, "openai-chat").messages)

    anthropic = write(messages, "anthropic")["messages"][1]["content"][2]
    gemini = write(messages, "gemini")["contents"][1]["parts"][2]
    assert anthropic["input"] == {"arguments": '{"city": "Os'}
    assert gemini["functionCall"]["args"] == {"arguments": '{"city": "Os'}


def test_an_error_result_carries_its_flag_to_anthropic_and_gemini() -> None:
    messages = parse_messages(one(ANTHROPIC, "anthropic").messages)

    gemini = write(messages, "gemini")["contents"][2]["parts"][1]["functionResponse"]
    assert gemini["response"] == {"error": "timeout"}
    back = parse_messages(
        one(
            write(parse_messages(one(GEMINI, "gemini").messages), "anthropic"), "anthropic"
        ).messages
    )
    assert [m.metadata.get("is_error") for m in back if m.role == "tool"] == [None, True]


APP_BUFFER = [
    {"role": "user", "content": "Find papers.", "metadata": {"run": 7}},
    {
        "role": "assistant",
        "content": "",
        "metadata": {
            "tool_calls": [
                {"tool_call_id": "c1", "name": "search", "args": {"q": "repair"}},
                {"tool_call_id": "c2", "name": "search"},
            ]
        },
    },
    {"role": "tool", "content": "3 papers", "metadata": {"tool_call_id": "c1"}},
    placeholder_for("c2").as_stored(),
    {"role": "user", "content": "thanks"},
]


@pytest.mark.parametrize("target", FORMATS)
def test_a_buffer_made_in_the_app_writes_to_every_format_with_placeholders_as_results(
    target: str,
) -> None:
    messages = parse_messages(APP_BUFFER)
    written = write(messages, target)
    again = parse_messages(one(written, target).messages)

    assert pairs(again) == (["c1", "c2"], ["c1", "c2"])
    assert [m.content for m in again if m.role == "tool"] == ["3 papers", INTERRUPTED_TEXT]
    assert not any(m.metadata.get("healed") for m in again)


def test_calls_spelled_the_apps_way_are_written_in_openais_spelling() -> None:
    written = write(parse_messages(APP_BUFFER), "openai-chat")

    assert written["messages"][1]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "search", "arguments": '{"q":"repair"}'},
        },
        {"id": "c2", "type": "function", "function": {"name": "search", "arguments": "{}"}},
    ]
    assert written["messages"][3] == {
        "role": "tool",
        "content": INTERRUPTED_TEXT,
        "tool_call_id": "c2",
    }


def test_items_other_formats_have_no_place_for_are_left_out_of_them() -> None:
    messages = parse_messages(one(OPENAI_RESPONSES, "openai-responses").messages)

    anthropic = write(messages, "anthropic")
    assert [b["type"] for b in anthropic["messages"][1]["content"]] == ["tool_use", "tool_use"]
    assert "thinking" not in json.dumps(
        write(parse_messages(one(ANTHROPIC, "anthropic").messages), "gemini")
    )


# Hostile input: every problem, where it is, in a sentence.


@pytest.mark.parametrize(
    ("format", "document", "expected"),
    [
        ("openai-chat", "hi", ["file: must be an object or a list, not a string"]),
        ("openai-chat", {"model": "m"}, ["messages: is missing"]),
        ("openai-chat", {"messages": {}}, ["messages: must be a list of messages, not an object"]),
        (
            "openai-chat",
            [3, {"content": "x"}, {"role": "bot"}],
            [
                "messages[0]: must be an object, not a number",
                "messages[1].role: is missing",
                "messages[2].role: must be one of system, developer, user, assistant, tool, "
                "not 'bot'",
            ],
        ),
        (
            "openai-chat",
            [{"role": "tool", "content": "x"}, {"role": "tool", "tool_call_id": "0"}],
            [
                "messages[0].tool_call_id: is missing",
                'messages[1].tool_call_id: is not a usable id (it is empty, blank or "0")',
            ],
        ),
        (
            "openai-chat",
            [{"role": "user", "content": 5}],
            [
                "messages[0].content: must be a string, a list of content parts or null, "
                "not a number"
            ],
        ),
        (
            "openai-chat",
            [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "a", "function": {"name": 1, "arguments": {}}},
                        {"type": "function"},
                    ],
                }
            ],
            [
                "messages[0].tool_calls[0].function.name: must be a string, not a number",
                "messages[0].tool_calls[0].function.arguments: must be a string (the arguments "
                "as JSON text), not an object",
                "messages[0].tool_calls[1].id: is missing",
                "messages[0].tool_calls[1].function: is missing",
            ],
        ),
        (
            "openai-chat",
            [{"role": "function", "name": "f", "content": "x"}],
            [
                "messages[0].role: is 'function', the legacy function-calling role, which names "
                "no call to pair with; send a 'tool' message with a tool_call_id instead"
            ],
        ),
        (
            "openai-responses",
            {"input": 4},
            ["input: must be a string or a list of input items, not a number"],
        ),
        (
            "openai-responses",
            [
                {"type": "function_call", "id": "fc_1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1"},
                {"role": "user"},
                {"type": 7},
            ],
            [
                "input[0].call_id: is missing",
                "input[1].output: is missing",
                "input[2].content: is missing",
                "input[3].type: must be a string, not a number",
            ],
        ),
        (
            "anthropic",
            {"system": 3, "messages": [{"role": "system", "content": "x"}]},
            [
                "system: must be a string or a list of text blocks, not a number",
                "messages[0].role: is 'system', which Anthropic does not take as a message: "
                "the system prompt is the top-level system field",
            ],
        ),
        (
            "anthropic",
            [
                {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": []}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": 1.5, "is_error": "yes"},
                        {"text": "x"},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
                },
                {"role": "assistant"},
            ],
            [
                "messages[0].content[0].id: is missing",
                "messages[0].content[0].input: must be an object, not a list",
                "messages[1].content[0].tool_use_id: must be a string (or an integer), "
                "not a number",
                "messages[1].content[0].is_error: must be true or false, not a string",
                "messages[1].content[1].type: is missing",
                "messages[2].content[0]: is a tool_use block, which belongs in an assistant "
                "message",
                "messages[3].content: is missing",
            ],
        ),
        (
            "gemini",
            {"contents": [{"role": "assistant", "parts": []}, {"role": "model", "parts": "hi"}]},
            [
                "contents[0].role: must be one of user, model, function, not 'assistant'",
                "contents[1].parts: must be a list of parts, not a string",
            ],
        ),
        (
            "gemini",
            [
                {
                    "role": "model",
                    "parts": [{"functionCall": {"args": {}}}, {"functionResponse": {}}],
                },
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": "f"}}, {"function_call": {}}],
                },
            ],
            [
                "contents[0].parts[0].functionCall.name: is missing",
                "contents[0].parts[1].functionResponse: belongs in a user turn, not a model turn",
                "contents[1].parts[1].function_call: is the Python SDK's spelling; the REST "
                "format read here spells it functionCall",
                "contents[1].parts[0].functionResponse.response: is missing",
            ],
        ),
        (
            "gemini",
            [{"role": "user", "parts": [{"functionResponse": {"name": "f"}}]}],
            ["contents[0].parts[0].functionResponse.response: is missing"],
        ),
        (
            "gemini",
            {"systemInstruction": "Be brief.", "contents": []},
            ["systemInstruction: must be an object, not a string"],
        ),
    ],
)
def test_a_malformed_document_is_refused_with_every_problem_named_where_it_is(
    format: str, document: object, expected: list[str]
) -> None:
    assert problems_of(document, format) == expected


def test_a_later_problem_in_a_gemini_document_is_reported_too() -> None:
    document = [
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "id": "", "response": 1}}]}
    ]

    assert problems_of(document, "gemini") == [
        'contents[0].parts[0].functionResponse.id: is not a usable id (it is empty, blank or "0")',
        "contents[0].parts[0].functionResponse.response: must be an object, not a number",
    ]


def test_what_cannot_be_stored_is_named_at_its_place() -> None:
    deep: object = "x"
    for _ in range(70):
        deep = [deep]
    document = {
        "model": float("nan"),
        "messages": [{"role": "user", "content": deep}, {"role": "user", "content": "a\x00"}],
    }

    assert problems_of(document, "openai-chat") == [
        "model: holds a number that JSON cannot carry (NaN or infinity)",
        "messages[0]: nests arrays or objects more than 64 levels deep",
        "messages[1].content: holds the character U+0000, which cannot be stored",
    ]


@pytest.mark.parametrize("format", FORMATS)
def test_a_request_field_whose_name_is_not_a_string_is_refused(format: str) -> None:
    body: dict[Any, Any] = {"messages": [], "input": [], "contents": [], 7: "x"}

    assert problems_of(body, format) == ["7: is a field name that is not a string"]


def test_problems_in_a_list_of_bodies_name_the_conversation() -> None:
    bodies = [{"messages": []}, {"messages": [{"role": "tool"}]}]

    assert problems_of(bodies, "openai-chat") == [
        "conversations[1].messages[0].tool_call_id: is missing"
    ]


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(InvalidInput, match="format: must be one of openai-chat"):
        read([], "stored")
    with pytest.raises(InvalidInput, match="format: must be one of"):
        write([], "mistral")


# Properties.

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)
KEYS = [
    "role", "content", "messages", "input", "contents", "parts", "type", "id", "call_id",
    "tool_calls", "tool_call_id", "function", "name", "arguments", "tool_use_id",
    "functionCall", "functionResponse", "response", "args", "text", "system", "output",
    "systemInstruction", "is_error",
]  # fmt: skip
ROLES = ["user", "assistant", "model", "tool", "system", "developer", "function"]
TYPES = ["text", "tool_use", "tool_result", "function_call", "function_call_output", "message"]
shaped = st.recursive(
    st.none() | st.integers(-2, 2) | st.sampled_from(ROLES + TYPES + ["", "0", "c1"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(document=json_values | shaped, format=st.sampled_from(FORMATS))
def test_any_json_is_read_or_refused_with_invalid_input_never_an_exception(
    document: object, format: str
) -> None:
    with contextlib.suppress(InvalidInput):
        detect(document)
    try:
        conversations = read(document, format)
    except InvalidInput:
        return
    for conversation in conversations:
        try:
            messages = parse_messages(conversation.messages)
        except InvalidInput:
            continue
        for target in FORMATS:
            write(messages, target, conversation.metadata)


stored_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool", "system"]), "content": json_values},
        optional={
            "metadata": st.dictionaries(
                st.sampled_from([*KEYS, "healed", "anthropic", "gemini"]), shaped, max_size=4
            )
        },
    ),
    max_size=6,
)


@settings(max_examples=200)
@given(raw=stored_messages, format=st.sampled_from(FORMATS))
def test_any_stored_conversation_writes_to_every_format(raw: list[Any], format: str) -> None:
    try:
        messages = parse_messages(raw)
    except InvalidInput:
        return
    assert isinstance(write(messages, format), dict)


# Valid documents, generated per format, for the round-trip property.

texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=5)
call_ids = st.sampled_from(["c1", "c2", "c3", "toolu_1", "call_9"])
arguments = st.dictionaries(st.sampled_from(["city", "q", "n"]), st.integers() | texts, max_size=2)


@st.composite
def openai_chat_documents(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for kind in draw(
        st.lists(
            st.sampled_from(["system", "developer", "user", "assistant", "calls", "tool"]),
            max_size=6,
        )
    ):
        if kind == "calls":
            calls = [
                {"id": cid, "type": "function", "function": {"name": "f", "arguments": draw(texts)}}
                for cid in draw(st.lists(call_ids, min_size=1, max_size=3, unique=True))
            ]
            messages.append(
                {"role": "assistant", "content": draw(st.none() | texts), "tool_calls": calls}
            )
        elif kind == "tool":
            messages.append(
                {"role": "tool", "tool_call_id": draw(call_ids), "content": draw(texts)}
            )
        else:
            content = draw(
                texts
                | st.lists(st.builds(lambda t: {"type": "text", "text": t}, texts), max_size=2)
            )
            messages.append({"role": kind, "content": content})
    return {"model": draw(texts), "messages": messages}


@st.composite
def responses_documents(draw: st.DrawFn) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for kind in draw(
        st.lists(st.sampled_from(["easy", "message", "reasoning", "call", "output"]), max_size=7)
    ):
        if kind == "easy":
            items.append(
                {
                    "role": draw(st.sampled_from(["user", "assistant", "system", "developer"])),
                    "content": draw(texts),
                }
            )
        elif kind == "message":
            role = draw(st.sampled_from(["user", "assistant"]))
            part = "output_text" if role == "assistant" else "input_text"
            items.append(
                {"type": "message", "role": role, "content": [{"type": part, "text": draw(texts)}]}
            )
        elif kind == "reasoning":
            items.append({"type": "reasoning", "id": "rs_1", "summary": []})
        elif kind == "call":
            items.append(
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": draw(call_ids),
                    "name": "f",
                    "arguments": draw(texts),
                }
            )
        else:
            items.append(
                {"type": "function_call_output", "call_id": draw(call_ids), "output": draw(texts)}
            )
    return {"input": items}


@st.composite
def anthropic_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A Messages body Anthropic takes: among them, each tool_use's id its own (it refuses a
    body that repeats one, and the export numbers a repeat apart)."""
    messages: list[dict[str, Any]] = []
    declared: set[str] = set()
    for role in draw(st.lists(st.sampled_from(["user", "assistant"]), max_size=6)):
        if draw(st.booleans()):
            messages.append({"role": role, "content": draw(texts)})
            continue
        kinds = ["text", "tool_use", "thinking"] if role == "assistant" else ["text", "image"]
        blocks = []
        if role == "user":
            for cid in draw(st.lists(call_ids, max_size=2)):
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": cid}
                if draw(st.booleans()):
                    result["content"] = draw(st.none() | texts)
                if draw(st.booleans()):
                    result["is_error"] = draw(st.booleans())
                blocks.append(result)
        for kind in draw(st.lists(st.sampled_from(kinds), max_size=3)):
            if kind == "tool_use":
                cid = draw(call_ids.filter(lambda drawn: drawn not in declared))
                declared.add(cid)
                blocks.append(
                    {"type": "tool_use", "id": cid, "name": "f", "input": draw(arguments)}
                )
            elif kind == "thinking":
                blocks.append({"type": "thinking", "thinking": draw(texts), "signature": "s"})
            elif kind == "image":
                blocks.append({"type": "image", "source": {"type": "url", "url": "u"}})
            else:
                blocks.append({"type": "text", "text": draw(texts)})
        messages.append({"role": role, "content": blocks})
    document: dict[str, Any] = {"max_tokens": 10, "messages": messages}
    if draw(st.booleans()):
        document["system"] = draw(texts)
    return document


@st.composite
def gemini_documents(draw: st.DrawFn) -> dict[str, Any]:
    contents: list[dict[str, Any]] = []
    for role in draw(st.lists(st.sampled_from(["user", "model"]), max_size=6)):
        parts: list[dict[str, Any]] = []
        if role == "model":
            for kind in draw(st.lists(st.sampled_from(["text", "thought", "call"]), max_size=3)):
                if kind == "call":
                    call: dict[str, Any] = {"name": draw(st.sampled_from(["f", "g"]))}
                    if draw(st.booleans()):
                        call["id"] = draw(call_ids)
                    if draw(st.booleans()):
                        call["args"] = draw(arguments)
                    parts.append({"functionCall": call})
                elif kind == "thought":
                    parts.append({"text": draw(texts), "thought": True})
                else:
                    parts.append({"text": draw(texts)})
        else:
            for _ in range(draw(st.integers(0, 2))):
                response: dict[str, Any] = {
                    "name": draw(st.sampled_from(["f", "g"])),
                    "response": draw(
                        st.sampled_from([{"output": "ok"}, {"error": "no"}, {"n": 1}])
                    ),
                }
                if draw(st.booleans()):
                    response["id"] = draw(call_ids)
                parts.append({"functionResponse": response})
            parts.extend({"text": t} for t in draw(st.lists(texts, max_size=2)))
        without_role = role == "user" and draw(st.booleans())
        contents.append({"parts": parts} if without_role else {"role": role, "parts": parts})
    return {"contents": contents}


@settings(max_examples=150)
@given(
    case=st.one_of(
        st.tuples(st.just("openai-chat"), openai_chat_documents()),
        st.tuples(st.just("openai-responses"), responses_documents()),
        st.tuples(st.just("anthropic"), anthropic_documents()),
        st.tuples(st.just("gemini"), gemini_documents()),
    )
)
def test_every_valid_document_round_trips(case: tuple[str, dict[str, Any]]) -> None:
    format, document = case
    assert round_trip(document, format) == document


# What a reader accepts can be stored: the import then parses its rows without walking
# every value a second time (parse_messages(json_checked=True)).

BAD = ["nul \x00 here", "lone \ud800 surrogate", float("nan")]
VALID_WITH_SLOT = {
    "openai-chat": lambda bad: {
        "model": "m",
        "extra": {"deep": [bad]},
        "messages": [{"role": "user", "content": "hi", "name": bad}],
    },
    "openai-responses": lambda bad: {
        "input": [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": [{"x": bad}]},
        ]
    },
    "anthropic": lambda bad: {
        "system": "s",
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"q": bad}}],
            },
        ],
    },
    "gemini": lambda bad: {
        "contents": [
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"o": bad}}}]}
        ]
    },
}


@pytest.mark.parametrize("bad", BAD, ids=["nul", "surrogate", "nan"])
@pytest.mark.parametrize("format", FORMATS)
def test_a_value_that_cannot_be_stored_is_refused_by_the_reader_itself(
    format: str, bad: object
) -> None:
    with pytest.raises(InvalidInput):
        read(VALID_WITH_SLOT[format](bad), format)
    assert read(VALID_WITH_SLOT[format]("fine"), format)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(document=json_values | shaped, format=st.sampled_from(FORMATS))
def test_every_row_a_reader_gives_can_be_stored(document: object, format: str) -> None:
    try:
        conversations = read(document, format)
    except InvalidInput:
        return
    for conversation in conversations:
        assert json_problem(conversation.metadata) is None
        for row in conversation.messages:
            assert json_problem(row["content"]) is None
            assert json_problem(row["metadata"]) is None
