"""The exports checked by the providers' own request types (their SDKs'), and the verdicts
with them: a content part that is not text is translated into each provider's shape where
that provider takes it, and where it does not, the verdict refuses the export, as the
provider's types refuse it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from anthropic.types import MessageParam, TextBlockParam
from google.genai import types as gemini
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputParam
from pydantic import TypeAdapter, ValidationError

from buffers.healing import parse_messages
from buffers.healing.formats import Source, otel_genai, read, write
from buffers.healing.sendability import PROVIDERS, check, refused_part
from tests.buffers import assistant, user

PNG = "iVBORw0KGgo="
PDF = "JVBERi0xLjQ="
WAV = "UklGRiQAAABXQVZF"
PARTS: dict[str, dict[str, Any]] = {
    "an Anthropic image": {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    },
    "an Anthropic image at a URL": {
        "type": "image",
        "source": {"type": "url", "url": "https://example.com/chart.png"},
    },
    "an Anthropic PDF": {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
    },
    "an Anthropic search result": {
        "type": "search_result",
        "source": "https://example.com",
        "title": "Example",
        "content": [{"type": "text", "text": "found"}],
    },
    "an OpenAI image": {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    },
    "an OpenAI image at a URL": {
        "type": "image_url",
        "image_url": {"url": "https://example.com/chart.png"},
    },
    "an OpenAI PDF": {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
    },
    "an OpenAI file by id": {"type": "file", "file": {"file_id": "file-abc"}},
    "OpenAI audio": {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
    "an OpenAI Responses image": {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{PNG}",
        "detail": "auto",
    },
    "an OpenAI Responses PDF": {
        "type": "input_file",
        "filename": "report.pdf",
        "file_data": f"data:application/pdf;base64,{PDF}",
    },
    "a Gemini image": {"inlineData": {"mimeType": "image/png", "data": PNG}},
    "Gemini audio": {"inlineData": {"mimeType": "audio/wav", "data": WAV}},
    "a Gemini PDF": {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
    "a Gemini file": {"fileData": {"mimeType": "image/png", "fileUri": "https://x/files/1"}},
    "a Gemini image, snake_case": {"inline_data": {"mime_type": "image/png", "data": PNG}},
    "an OpenAI refusal": {"type": "refusal", "refusal": "I cannot help with that."},
    "an image in no provider's shape": {"type": "image", "image_urls": ["https://x/a.png"]},
    "a file in no provider's shape": {"type": "file", "file_id": "f1", "mime_type": "image/png"},
    "an OpenTelemetry image": {
        "type": "blob",
        "modality": "image",
        "mime_type": "image/png",
        "content": PNG,
    },
    "an OpenTelemetry image at a URL": {
        "type": "uri",
        "modality": "image",
        "uri": "https://example.com/chart.png",
    },
    "an Anthropic thinking block": {"type": "thinking", "thinking": "hm", "signature": "c2ln"},
    "an Anthropic thinking block without its signature": {"type": "thinking", "thinking": "hm"},
}


def _forced(value: Any) -> Any:
    """A validated value with every lazily validated iterable (pydantic validates an
    ``Iterable`` field item by item as it is read) read, so that its items are checked."""
    if isinstance(value, dict):
        return {key: _forced(item) for key, item in value.items()}
    if isinstance(value, list | tuple | Iterator):
        return [_forced(item) for item in value]
    return value


def _typed(adapter: TypeAdapter[Any]) -> Callable[[Any], object]:
    return lambda value: _forced(adapter.validate_python(value))


_ANTHROPIC = _typed(TypeAdapter(list[MessageParam]))
_ANTHROPIC_SYSTEM = _typed(TypeAdapter(str | list[TextBlockParam]))
_CHAT = _typed(TypeAdapter(list[ChatCompletionMessageParam]))
_RESPONSES = _typed(TypeAdapter(ResponseInputParam))


def sdk_accepts(body: dict[str, Any], provider: str) -> bool:
    """Whether ``provider``'s SDK types take the body's messages."""
    try:
        if provider == "anthropic":
            _ANTHROPIC(body["messages"])
            if "system" in body:
                _ANTHROPIC_SYSTEM(body["system"])
        elif provider == "openai-chat":
            _CHAT(body["messages"])
        elif provider == "openai-responses":
            _RESPONSES(body["input"])
        else:
            for content in body["contents"]:
                gemini.Content.model_validate(content)
    except ValidationError:
        return False
    return True


def holding(part: dict[str, Any], role: str) -> list[dict[str, Any]]:
    if role == "system":
        return [{"role": "system", "content": [part]}, user("go on")]
    if role == "tool":
        return [
            user("draw it"),
            assistant("c1"),
            {"role": "tool", "content": [part], "metadata": {"tool_call_id": "c1"}},
            assistant(content="drawn"),
        ]
    return [user("look"), {"role": "user", "content": [{"text": "this:"}, part]}]


@pytest.mark.parametrize("role", ["user", "tool", "system"])
@pytest.mark.parametrize("name", list(PARTS))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_verdict_on_an_export_holding_media_is_what_the_providers_types_say(
    provider: str, name: str, role: str
) -> None:
    """Gemini's types take any part in a system instruction, which its API takes as text
    only: that one is the verdict's alone (and checked apart, below)."""
    if (provider, role) == ("gemini", "system"):
        pytest.skip("the Gemini SDK's types do not say")
    messages = parse_messages(holding(PARTS[name], role))

    accepted = check(messages, provider).accepted

    assert accepted == sdk_accepts(write(messages, provider), provider)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_inline_image_in_a_user_message_reaches_every_provider_as_its_own(
    provider: str,
) -> None:
    for name in ("an Anthropic image", "an OpenAI image", "a Gemini image"):
        messages = parse_messages(holding(PARTS[name], "user"))
        assert check(messages, provider).accepted, (name, provider)
        assert sdk_accepts(write(messages, provider), provider), (name, provider)


def test_an_image_written_for_another_provider_holds_the_same_bytes() -> None:
    messages = parse_messages(holding(PARTS["a Gemini image"], "user"))

    anthropic = write(messages, "anthropic")["messages"][-1]["content"][-1]
    chat = write(messages, "openai-chat")["messages"][-1]["content"][-1]
    responses = write(messages, "openai-responses")["input"][-1]["content"][-1]

    assert anthropic["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    assert chat["image_url"] == {"url": f"data:image/png;base64,{PNG}"}
    assert responses["image_url"] == f"data:image/png;base64,{PNG}"


@pytest.mark.parametrize("role", ["user", "assistant", "system", "tool"])
@pytest.mark.parametrize("name", list(PARTS))
def test_a_part_openai_responses_refuses_openai_chat_or_anthropic_refuses_too(
    name: str, role: str
) -> None:
    """What lets the stored problem counts read the windowed providers' verdicts only
    (``healing.verdicts.REJECTION_PROBLEMS``)."""
    metadata = {"tool_call_id": "c1"} if role == "tool" else {}
    [message] = parse_messages([{"role": role, "content": [PARTS[name]], "metadata": metadata}])
    refusing = {p for p in PROVIDERS if refused_part(message, p) is not None}

    if "openai-responses" in refusing:
        assert refusing & {"openai-chat", "anthropic"}


@pytest.mark.parametrize("name", [name for name in PARTS if name != "an OpenAI refusal"])
def test_gemini_takes_text_only_in_a_system_instruction(name: str) -> None:
    """Every part but a refusal, which is written as its text."""
    messages = parse_messages(holding(PARTS[name], "system"))

    assert not check(messages, "gemini").accepted


@pytest.mark.parametrize("value", [["a.py", "b.py"], [{"path": "a.py", "size": 3}], [1, 2]])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tools_list_data_read_from_opentelemetry_exports_as_its_verdict_says(
    provider: str, value: list[Any]
) -> None:
    document = [
        {"role": "user", "parts": [{"type": "text", "content": "list files"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "ls"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": value}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "two files"}]},
    ]
    [conversation] = otel_genai.read(Source(document=document)).conversations
    messages = parse_messages(conversation.messages)

    assert check(messages, provider).accepted
    assert sdk_accepts(write(messages, provider), provider)


def _read(document: Any, format: str) -> list[Any]:
    [conversation] = read(document, format)
    return parse_messages(conversation.messages)


NULL_CONTENT: dict[str, tuple[Any, str]] = {
    "an Anthropic tool_result without content": (
        {
            "messages": [
                {"role": "user", "content": "look it up"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
            ]
        },
        "anthropic",
    ),
    "a stored user message of null content": (
        {"messages": [{"role": "user", "content": None}, {"role": "assistant", "content": "hi"}]},
        "openai-chat",
    ),
    "a stored system message of null content": (
        {"messages": [{"role": "system", "content": None}, {"role": "user", "content": "hi"}]},
        "openai-chat",
    ),
    "a Gemini model turn of a thought only": (
        {
            "contents": [
                {"role": "user", "parts": [{"text": "plan"}]},
                {"role": "model", "parts": [{"text": "Two steps.", "thought": True}]},
                {"role": "user", "parts": [{"text": "go on"}]},
            ]
        },
        "gemini",
    ),
    "an Anthropic turn of server tool blocks only": (
        {
            "messages": [
                {"role": "user", "content": "search"},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "server_tool_use",
                            "id": "srvtoolu_1",
                            "name": "web_search",
                            "input": {"query": "x"},
                        },
                        {
                            "type": "web_search_tool_result",
                            "tool_use_id": "srvtoolu_1",
                            "content": [],
                        },
                    ],
                },
                {"role": "user", "content": "ok"},
            ]
        },
        "anthropic",
    ),
}


@pytest.mark.parametrize("name", list(NULL_CONTENT))
def test_a_message_without_content_goes_to_openai_chat_with_empty_text_not_null(
    name: str,
) -> None:
    """OpenAI answers "Invalid value for 'content': expected a string, got null" to any
    message of null content but an assistant turn that makes calls."""
    document, format = NULL_CONTENT[name]
    messages = _read(document, format)

    body = write(messages, "openai-chat")

    assert all(m["content"] is not None for m in body["messages"] if "tool_calls" not in m)
    assert check(messages, "openai-chat").accepted
    assert sdk_accepts(body, "openai-chat")


def test_an_assistant_turn_that_makes_calls_keeps_its_null_content_for_openai_chat() -> None:
    messages = _read(
        {
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_a", "content": "done"},
            ]
        },
        "openai-chat",
    )

    assert write(messages, "openai-chat")["messages"][1]["content"] is None


STORED_CALLS: dict[str, dict[str, Any]] = {
    "without its type": {"id": "call_a", "function": {"name": "get_weather", "arguments": "{}"}},
    "with its arguments an object": {
        "id": "call_a",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
    },
    "without its arguments": {"id": "call_a", "function": {"name": "get_weather"}},
    "with its name beside the function": {
        "id": "call_a",
        "name": "get_weather",
        "function": {"arguments": "{}"},
    },
}


def _called(call: dict[str, Any]) -> list[Any]:
    return parse_messages(
        [
            user("weather?"),
            {"role": "assistant", "content": None, "metadata": {"tool_calls": [call]}},
            {"role": "tool", "content": "14C", "metadata": {"tool_call_id": "call_a"}},
        ]
    )


@pytest.mark.parametrize("name", list(STORED_CALLS))
def test_a_stored_call_goes_to_openai_chat_in_openais_spelling(name: str) -> None:
    """OpenAI answers "Missing required parameter: 'messages[2].tool_calls[0].type'" to a
    call sent as it was stored without its type; its types want the function's name and
    its arguments as JSON text."""
    messages = _called(STORED_CALLS[name])

    body = write(messages, "openai-chat")

    [call] = body["messages"][1]["tool_calls"]
    assert call["type"] == "function"
    assert call["function"]["name"] == "get_weather"
    assert isinstance(call["function"]["arguments"], str)
    assert check(messages, "openai-chat").accepted
    assert sdk_accepts(body, "openai-chat")


def test_an_openai_chat_call_read_without_its_type_is_written_with_it() -> None:
    document = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_a", "function": {"name": "get_weather", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": "14C"},
        ],
    }
    messages = _read(document, "openai-chat")

    body = write(messages, "openai-chat")

    assert body["messages"][1]["tool_calls"][0]["type"] == "function"
    assert check(messages, "openai-chat").accepted == sdk_accepts(body, "openai-chat")


def test_a_stored_calls_own_keys_go_with_it_to_openai_chat() -> None:
    call = {
        "id": "call_a",
        "index": 0,
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}", "strict": True},
        "anthropic": {"cache_control": {"type": "ephemeral"}},
    }

    [written] = write(_called(call), "openai-chat")["messages"][1]["tool_calls"]

    assert written == {k: v for k, v in call.items() if k != "anthropic"}


def test_a_custom_tool_call_answered_in_a_responses_body_is_accepted_and_typed() -> None:
    """Kept whole by the Responses reader, it pairs with its own kind of output (an
    unanswered one is refused: tests/healing/test_sendability.py)."""
    messages = _read(
        {
            "input": [
                {"role": "user", "content": "patch it"},
                {
                    "type": "custom_tool_call",
                    "id": "ctc_1",
                    "call_id": "call_1",
                    "name": "apply_patch",
                    "input": "*** Begin Patch",
                },
                {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Done!"},
            ]
        },
        "openai-responses",
    )

    assert check(messages, "openai-responses").accepted
    assert sdk_accepts(write(messages, "openai-responses"), "openai-responses")


def _gemini_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        part["functionResponse"]
        for content in body["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    ]


def test_a_result_naming_no_call_goes_to_gemini_as_the_response_to_the_call_at_its_place() -> None:
    """Gemini answers "function_response.name: Name cannot be empty"; it pairs a response
    without an id with the call at its place, so that call's name is the response's."""
    messages = parse_messages(
        [
            user("look it up"),
            assistant("c1"),
            {"role": "tool", "content": "found", "metadata": {"tool_call_id": "zz"}},
            assistant(content="done"),
        ]
    )

    body = write(messages, "gemini")

    assert _gemini_responses(body) == [{"name": "search", "response": {"output": "found"}}]
    assert check(messages, "gemini").accepted
    assert sdk_accepts(body, "gemini")


@pytest.mark.parametrize(
    ("answered", "written"),
    [
        (["zz", "c1"], [("b", None), ("a", "c1")]),
        (["c2", "zz"], [("b", "c2"), ("a", None)]),
        (["zz", "and?", "yy"], [("a", None), ("b", None)]),
    ],
)
def test_results_naming_no_call_take_the_names_of_the_calls_no_other_response_answers(
    answered: list[str], written: list[tuple[str, str | None]]
) -> None:
    """From the review: named after the call at its place, a response could take the name
    of a call another response answers by id, leaving a call with none and one with two."""
    calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for n, name in ((1, "a"), (2, "b"))
    ]
    messages = parse_messages(
        [
            user("look it up"),
            {"role": "assistant", "content": None, "metadata": {"tool_calls": calls}},
            *(
                user(i)
                if i == "and?"
                else {"role": "tool", "content": "?", "metadata": {"tool_call_id": i}}
                for i in answered
            ),
        ]
    )

    responses = _gemini_responses(write(messages, "gemini"))

    assert [(r["name"], r.get("id")) for r in responses] == written


OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What OpenAI takes as a function's name: "string does not match pattern
'^[a-zA-Z0-9_-]+$'", and 64 characters at most."""


def _gemini_calling(*names: str) -> list[Any]:
    return _read(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "read them"}]},
                {
                    "role": "model",
                    "parts": [{"functionCall": {"name": name, "args": {}}} for name in names],
                },
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": name, "response": {"output": "ok"}}}
                        for name in names
                    ],
                },
            ]
        },
        "gemini",
    )


def _written_names(body: dict[str, Any], format: str) -> list[str]:
    if format == "openai-chat":
        return [
            call["function"]["name"]
            for message in body["messages"]
            for call in message.get("tool_calls", ())
        ]
    return [item["name"] for item in body["input"] if item.get("type") == "function_call"]


@pytest.mark.parametrize("format", ["openai-chat", "openai-responses"])
def test_a_gemini_function_name_openai_refuses_is_written_to_fit(format: str) -> None:
    """Gemini takes "." and ":" in a function's name; OpenAI does not."""
    messages = _gemini_calling("files.read", "ns:tool", "x" * 70, "files_read")

    body = write(messages, format)

    names = _written_names(body, format)
    assert all(OPENAI_NAME.fullmatch(name) for name in names)
    assert names[0] != names[3] == "files_read", "two tools stay two"
    assert names[:2] == ["files_read_2", "ns_tool"]
    assert names[2] == "x" * 64
    assert check(messages, format).accepted
    assert sdk_accepts(body, format)


def test_a_tool_message_naming_its_function_is_written_with_the_same_name() -> None:
    messages = parse_messages(
        [
            user("read it"),
            {
                "role": "assistant",
                "content": None,
                "metadata": {
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "files.read", "arguments": "{}"},
                        }
                    ]
                },
            },
            {
                "role": "tool",
                "content": "ok",
                "metadata": {"tool_call_id": "c1", "name": "files.read"},
            },
        ]
    )

    written = write(messages, "openai-chat")["messages"]

    assert written[1]["tool_calls"][0]["function"]["name"] == written[2]["name"] == "files_read"


def test_a_name_that_fits_is_written_as_it_is() -> None:
    messages = _gemini_calling("get_weather-2")

    assert _written_names(write(messages, "openai-chat"), "openai-chat") == ["get_weather-2"]


UNSIGNED = {"type": "thinking", "thinking": "Two steps."}
"""Anthropic's types want a thinking block's signature: "thinking.signature: Field
required"."""


def _anthropic_turns(*blocks: dict[str, Any], then: str | None = "go on") -> list[Any]:
    document = [
        {"role": "user", "content": "plan it"},
        {"role": "assistant", "content": list(blocks)},
        *([{"role": "user", "content": then}] if then is not None else []),
    ]
    return _read({"messages": document}, "anthropic")


def test_a_thinking_block_without_its_signature_is_left_out_of_the_anthropic_export() -> None:
    messages = _anthropic_turns(UNSIGNED, {"type": "text", "text": "Done."})

    body = write(messages, "anthropic")

    assert body["messages"][1]["content"] == [{"type": "text", "text": "Done."}]
    assert check(messages, "anthropic").accepted
    assert sdk_accepts(body, "anthropic")


def test_a_signed_thinking_block_goes_to_anthropic_as_it_was() -> None:
    signed = UNSIGNED | {"signature": "c2ln"}
    messages = _anthropic_turns(signed, {"type": "text", "text": "Done."})

    assert write(messages, "anthropic")["messages"][1]["content"][0] == signed


@pytest.mark.parametrize("then", ["go on", None])
def test_a_turn_of_unsigned_thinking_only_is_judged_as_the_empty_turn_it_is_written_as(
    then: str | None,
) -> None:
    """Written empty, it is refused but as the final assistant turn, as any empty turn."""
    messages = _anthropic_turns(UNSIGNED, then=then)

    body = write(messages, "anthropic")

    assert body["messages"][1]["content"] == []
    assert check(messages, "anthropic").accepted == (then is None)
