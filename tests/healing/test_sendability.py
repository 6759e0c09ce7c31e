"""Whether a provider would accept a stored buffer as history, and if not, why, message by
message. The property that normalization's output is always accepted is in
test_normalize.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from buffers.healing import InvalidInput, parse_messages
from buffers.healing.formats import read, write
from buffers.healing.normalize import normalize
from buffers.healing.sendability import PROVIDER_NAMES, PROVIDERS, Verdict, check, check_all
from tests.buffers import assistant, placeholder, result, user
from tests.conftest import spec_examples

MEM3 = spec_examples("MEM-3")
MEM5 = spec_examples("MEM-5")


def system(content: str = "be brief") -> dict[str, Any]:
    return {"role": "system", "content": content, "metadata": {}}


def verdict(provider: str, *messages: dict[str, Any]) -> Verdict:
    return check(parse_messages(list(messages)), provider)


def rejections(provider: str, *messages: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [(r.index, r.reason, r.sentence) for r in verdict(provider, *messages).rejections]


WELL_PAIRED = [
    system(),
    user("weather in Paris and Rome?"),
    assistant("c1", "c2"),
    result("c1", "14C"),
    result("c2", "18C"),
    assistant(content="Paris 14C, Rome 18C."),
    user("thanks"),
]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_well_paired_history_is_accepted(provider: str) -> None:
    accepted = verdict(provider, *WELL_PAIRED)

    assert accepted.accepted
    assert accepted.rejections == ()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_buffer_is_acceptable_history(provider: str) -> None:
    assert check([], provider).accepted


def test_every_provider_is_checked_by_check_all() -> None:
    verdicts = check_all(parse_messages(WELL_PAIRED))

    assert list(verdicts) == list(PROVIDERS)
    assert all(v.accepted for v in verdicts.values())


def test_an_unknown_provider_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown provider 'mistral'"):
        check([], "mistral")


# What the summary says


def test_the_summary_says_accepted_by_name() -> None:
    assert verdict("openai-responses", *WELL_PAIRED).summary == (
        "OpenAI Responses would accept this history"
    )


def test_the_summary_gives_the_first_rejection_and_how_many_more() -> None:
    one = verdict("openai-chat", user(), assistant("c1"))
    three = verdict("openai-chat", user(), assistant("c1", "c2"), user(), result("c9"))

    assert one.summary == (
        "OpenAI would reject this: call c1 at message 1 has no result directly after its turn"
    )
    assert three.summary == (
        "OpenAI would reject this: call c1 at message 1 has no result directly after its turn "
        "(and 2 more)"
    )


# OpenAI Chat


def test_openai_chat_rejects_a_call_with_no_result_directly_after_its_turn() -> None:
    assert rejections("openai-chat", user(), assistant("c1", "c2"), result("c1"), user()) == [
        (1, "unanswered_call", "call c2 at message 1 has no result directly after its turn"),
    ]


def test_openai_chat_rejects_a_result_that_is_not_right_after_its_turn() -> None:
    assert rejections("openai-chat", user(), assistant("c1"), user("?"), result("c1")) == [
        (1, "unanswered_call", "call c1 at message 1 has no result directly after its turn"),
        (
            3,
            "unexpected_result",
            "the tool result at message 3 answers no call in the turn before it",
        ),
    ]


def test_openai_chat_counts_a_system_message_as_separating_a_call_from_its_result() -> None:
    buffer = [user(), assistant("c1"), system(), result("c1")]

    assert [r.reason for r in verdict("openai-chat", *buffer).rejections] == [
        "unanswered_call",
        "unexpected_result",
    ]
    assert verdict("anthropic", *buffer).accepted


def test_openai_chat_rejects_a_result_without_a_usable_id() -> None:
    assert rejections("openai-chat", user(), assistant("c1"), result("c1"), result("0")) == [
        (3, "result_without_id", "the tool result at message 3 has no usable tool_call_id"),
    ]


def test_openai_chat_rejects_a_call_without_a_usable_id() -> None:
    assert rejections("openai-chat", user(), assistant("c1", " "), result("c1")) == [
        (
            1,
            "call_without_id",
            "the turn at message 1 declares a call without a usable id (tool_calls[1])",
        ),
    ]


def test_openai_chat_rejects_a_second_answer_to_the_same_call() -> None:
    assert rejections("openai-chat", user(), assistant("c1"), result("c1"), result("c1")) == [
        (
            3,
            "duplicate_result",
            "the tool result at message 3 answers c1 again (already answered at message 2)",
        ),
    ]


def test_openai_chat_rejects_an_orphan_result() -> None:
    assert rejections("openai-chat", result("c1"), user()) == [
        (
            0,
            "unexpected_result",
            "the tool result at message 0 answers no call in the turn before it",
        ),
    ]


# OpenAI Responses


def test_openai_responses_accepts_an_output_anywhere_after_its_call() -> None:
    assert verdict("openai-responses", user(), assistant("c1"), user("?"), result("c1")).accepted


def test_openai_responses_rejects_an_output_before_its_call_and_a_call_with_no_output() -> None:
    assert rejections("openai-responses", user(), result("c1"), assistant("c1")) == [
        (1, "unexpected_result", "the tool output at message 1 answers no call before it"),
        (2, "unanswered_call", "call c1 at message 2 has no output after it"),
    ]


def test_openai_responses_rejects_unusable_ids() -> None:
    assert [
        r.reason for r in verdict("openai-responses", assistant("0"), result("")).rejections
    ] == [
        "call_without_id",
        "result_without_id",
    ]


def kept_item(kind: str, call_id: str | None = "call_1", **more: Any) -> dict[str, Any]:
    item = {"type": kind, **({"call_id": call_id} if call_id is not None else {}), **more}
    return {"role": "assistant", "content": None, "metadata": {"responses_item": item}}


CUSTOM_CALL = kept_item("custom_tool_call", id="ctc_1", name="apply_patch", input="*** Begin")
CUSTOM_OUTPUT = kept_item("custom_tool_call_output", output="Done!")


def test_openai_responses_rejects_a_kept_custom_tool_call_with_no_output_after_it() -> None:
    """Responses answers "No tool output found for custom tool call call_1"."""
    assert rejections("openai-responses", user(), CUSTOM_CALL, user("well?")) == [
        (
            1,
            "unanswered_call",
            "the custom_tool_call call_1 at message 1 has no custom_tool_call_output after it",
        )
    ]


def test_openai_responses_rejects_a_kept_output_that_answers_no_call_before_it() -> None:
    assert rejections("openai-responses", user(), CUSTOM_OUTPUT, CUSTOM_CALL) == [
        (
            1,
            "unexpected_result",
            "the custom_tool_call_output at message 1 answers no custom_tool_call before it",
        ),
        (
            2,
            "unanswered_call",
            "the custom_tool_call call_1 at message 2 has no custom_tool_call_output after it",
        ),
    ]


def test_openai_responses_accepts_a_kept_call_answered_by_its_own_kind_of_output() -> None:
    assert verdict("openai-responses", user(), CUSTOM_CALL, REASONING, CUSTOM_OUTPUT).accepted


@pytest.mark.parametrize(
    ("call", "output"),
    [
        ("computer_call", "computer_call_output"),
        ("local_shell_call", "local_shell_call_output"),
        ("shell_call", "shell_call_output"),
        ("apply_patch_call", "apply_patch_call_output"),
    ],
)
def test_openai_responses_pairs_every_kept_kind_of_client_call_with_its_output(
    call: str, output: str
) -> None:
    assert not verdict("openai-responses", user(), kept_item(call), user("?")).accepted
    assert not verdict("openai-responses", user(), kept_item(output), user("?")).accepted
    assert verdict("openai-responses", user(), kept_item(call), kept_item(output)).accepted


def test_a_local_shell_call_output_names_its_call_by_its_id() -> None:
    """As the SDK's ``LocalShellCallOutput`` spells it: no ``call_id``, the call's ``id``."""
    output = kept_item("local_shell_call_output", None, id="call_1", output="{}")

    assert verdict("openai-responses", user(), kept_item("local_shell_call"), output).accepted


def test_a_function_call_output_does_not_answer_a_kept_custom_tool_call() -> None:
    """Each kind of call takes its own kind of output: the tool row is written as a
    ``function_call_output``, which answers a ``function_call``."""
    assert [
        r.reason
        for r in verdict("openai-responses", user(), CUSTOM_CALL, result("call_1")).rejections
    ] == ["unanswered_call", "unexpected_result"]


def test_openai_responses_rejects_a_kept_call_or_output_without_a_usable_call_id() -> None:
    assert [
        r.reason
        for r in verdict(
            "openai-responses",
            user(),
            kept_item("custom_tool_call", None),
            kept_item("custom_tool_call_output", ""),
        ).rejections
    ] == ["call_without_id", "result_without_id"]


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic", "gemini"])
def test_a_kept_client_call_is_left_out_by_the_other_exporters(provider: str) -> None:
    assert verdict(provider, user(), CUSTOM_CALL, user("well?")).accepted


def test_an_unanswered_custom_tool_call_read_from_a_responses_body_is_refused() -> None:
    [conversation] = read(
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
                {"role": "user", "content": "well?"},
            ]
        },
        "openai-responses",
    )

    assert not check(parse_messages(conversation.messages), "openai-responses").accepted


# Anthropic


def test_anthropic_rejects_a_call_with_no_result_in_the_next_message() -> None:
    assert rejections("anthropic", user(), assistant("c1", "c2"), result("c2")) == [
        (
            1,
            "unanswered_call",
            "call c1 at message 1 has no result in the message right after its turn",
        ),
    ]


def test_anthropic_rejects_user_text_between_a_turn_and_its_results() -> None:
    assert rejections("anthropic", user(), assistant("c1"), user("wait"), result("c1")) == [
        (
            1,
            "unanswered_call",
            "call c1 at message 1 has no result in the message right after its turn",
        ),
        (
            3,
            "text_before_results",
            "the tool result at message 3 comes after the user text at message 2, "
            "where results must come first",
        ),
    ]


def test_anthropic_rejects_a_result_for_no_call_of_the_turn_before() -> None:
    assert rejections("anthropic", user(), assistant("c1"), result("c1"), result("c9")) == [
        (
            3,
            "unexpected_result",
            "the tool result at message 3 answers no call in the turn before it",
        ),
    ]


def test_anthropic_rejects_two_results_for_one_call() -> None:
    assert [
        r.reason
        for r in verdict(
            "anthropic", user(), assistant("c1"), result("c1"), result("c1")
        ).rejections
    ] == ["duplicate_result"]


# Gemini


def test_gemini_rejects_fewer_responses_than_calls() -> None:
    assert rejections("gemini", user(), assistant("c1", "c2"), result("c1")) == [
        (
            1,
            "response_count",
            "the call turn at message 1 makes 2 calls but is followed by 1 function response",
        ),
    ]


def test_gemini_rejects_a_call_turn_after_a_model_turn() -> None:
    assert rejections(
        "gemini", user(), assistant(content="let me look"), assistant("c1"), result("c1")
    ) == [
        (
            2,
            "call_turn_order",
            "the call turn at message 2 does not come right after a user turn "
            "or a function response",
        ),
    ]


@pytest.mark.parametrize("preamble", [[], [system()]], ids=["first", "after-system"])
def test_gemini_rejects_a_history_that_starts_with_a_call_turn(
    preamble: list[dict[str, Any]],
) -> None:
    assert [
        r.reason for r in verdict("gemini", *preamble, assistant("c1"), result("c1")).rejections
    ] == ["call_turn_order"]


def test_gemini_accepts_a_call_turn_right_after_function_responses() -> None:
    assert verdict(
        "gemini", user(), assistant("c1"), result("c1"), assistant("c2"), result("c2")
    ).accepted


def test_gemini_rejects_a_response_after_no_call_turn() -> None:
    assert rejections("gemini", user(), result("c1")) == [
        (
            1,
            "unexpected_result",
            "the function response at message 1 follows no function call turn",
        ),
    ]


def test_gemini_pairs_by_position_so_ids_do_not_matter() -> None:
    assert verdict("gemini", user(), assistant("c1"), result("c9")).accepted


# Healing makes a buffer sendable


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic"])
def test_a_healed_buffer_is_accepted(provider: str) -> None:
    assert verdict(provider, user(), assistant("c1"), placeholder("c1"), user("again")).accepted


@pytest.mark.rule("MEM-3")
@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic"])
def test_the_mem3_buffer_is_rejected_before_healing_and_accepted_after(provider: str) -> None:
    before = verdict(provider, *MEM3[1]["buffer"])
    after = verdict(provider, *MEM3[2]["buffer"])

    assert [(r.index, r.reason, r.call_id) for r in before.rejections] == [
        (0, "unanswered_call", "c1")
    ]
    assert after.accepted


def test_gemini_still_rejects_the_healed_mem3_buffer_because_it_starts_with_a_call() -> None:
    assert [r.reason for r in verdict("gemini", *MEM3[2]["buffer"]).rejections] == [
        "call_turn_order"
    ]


@pytest.mark.rule("MEM-5")
@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "anthropic"])
def test_the_misordered_mem5_buffer_is_rejected_and_accepted_once_normalized(provider: str) -> None:
    misordered = parse_messages(MEM5[3]["buffer"])
    normalized = parse_messages(normalize(MEM5[3]["buffer"]).messages)

    assert not check(misordered, provider).accepted
    assert check(normalized, provider).accepted


# What is checked is what the exporter sends


REASONING: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "metadata": {"responses_item": {"type": "reasoning", "id": "rs_1", "summary": []}},
}


@pytest.mark.parametrize("provider", ["openai-chat", "anthropic"])
def test_a_kept_responses_item_that_other_exporters_leave_out_separates_nothing(
    provider: str,
) -> None:
    assert verdict(provider, user(), assistant("c1"), REASONING, result("c1")).accepted


def test_a_kept_responses_item_is_not_a_model_turn_for_gemini() -> None:
    assert verdict("gemini", user(), REASONING, assistant("c1"), result("c1")).accepted


def test_a_kept_responses_item_that_declares_calls_is_still_a_call_turn() -> None:
    with_calls = REASONING | {
        "metadata": {**REASONING["metadata"], "tool_calls": [{"id": "c1", "name": "f"}]}
    }

    assert [r.reason for r in verdict("openai-chat", user(), with_calls, user()).rejections] == [
        "unanswered_call"
    ]


def test_gemini_rejects_a_turn_with_no_parts() -> None:
    assert rejections("gemini", user("hi"), assistant(content=""), user("well?")) == [
        (
            1,
            "empty_turn",
            "the assistant message at message 1 is empty, and Gemini refuses a content whose "
            "parts are empty",
        )
    ]


def test_anthropic_rejects_an_empty_message_but_a_final_assistant_turn() -> None:
    assert verdict("anthropic", user("hi"), assistant(content="")).accepted
    assert rejections("anthropic", user(""), assistant(content=None), user("well?")) == [
        (
            0,
            "empty_turn",
            "the user message at message 0 is empty, and Anthropic refuses a message with "
            "empty content (but a final assistant turn)",
        ),
        (
            1,
            "empty_turn",
            "the assistant message at message 1 is empty, and Anthropic refuses a message "
            "with empty content (but a final assistant turn)",
        ),
    ]


def kept_blocks(space: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    """An assistant turn with no content and no call, only blocks kept for one provider."""
    return {"role": "assistant", "content": None, "metadata": {space: {"layout": list(blocks)}}}


SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
SEARCHED = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
THINKING = {"type": "thinking", "thinking": "Two tables.", "signature": "c2ln"}
REDACTED = {"type": "redacted_thinking", "data": "ZW5j"}
SERVER_ONLY = kept_blocks("anthropic", SEARCH, SEARCHED)
THINKING_ONLY = kept_blocks("anthropic", THINKING, REDACTED)
THOUGHT_ONLY = kept_blocks("gemini", {"text": "Two tables.", "thought": True})


def test_anthropic_counts_the_server_tool_blocks_its_exporter_writes_as_content() -> None:
    buffer = parse_messages([user("search"), SERVER_ONLY, user("ok")])

    assert check(buffer, "anthropic").accepted
    assert write(buffer, "anthropic")["messages"][1]["content"] == [SEARCH, SEARCHED]


def test_gemini_rejects_a_turn_of_server_tool_blocks_as_it_writes_it_without_parts() -> None:
    buffer = parse_messages([user("search"), SERVER_ONLY, user("ok")])

    assert write(buffer, "gemini")["contents"][1]["parts"] == []
    assert [r.reason for r in check(buffer, "gemini").rejections] == ["empty_turn"]


def test_gemini_counts_the_thought_parts_its_exporter_writes_as_content() -> None:
    buffer = parse_messages([user("plan"), THOUGHT_ONLY, user("ok")])

    assert check(buffer, "gemini").accepted
    assert [r.reason for r in check(buffer, "anthropic").rejections] == ["empty_turn"]


@pytest.mark.parametrize("final", [False, True], ids=["mid-history", "final"])
def test_anthropic_rejects_a_turn_of_thinking_only_wherever_it_stands(final: bool) -> None:
    buffer = [user("plan"), THINKING_ONLY, *([] if final else [user("ok")])]

    assert rejections("anthropic", *buffer) == [
        (
            1,
            "empty_turn",
            "the assistant message at message 1 holds only thinking, and Anthropic refuses an "
            "assistant message whose last block is thinking",
        )
    ]


def test_anthropic_takes_thinking_before_a_server_tool_block() -> None:
    assert verdict("anthropic", user("plan"), kept_blocks("anthropic", THINKING, SEARCH)).accepted


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_an_empty_user_message_right_after_results_joins_their_turn_and_is_not_empty(
    provider: str,
) -> None:
    assert verdict(
        provider, user("go"), assistant("c1"), result("c1"), user(""), user("x")
    ).accepted


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_openai_takes_empty_messages(provider: str) -> None:
    assert verdict(provider, user(""), assistant(content=None), user("x")).accepted


EMPTY_USER = user("")
EMPTY_ASSISTANT = assistant(content=None)


def only_thinking(turn: dict[str, Any]) -> bool:
    blocks = turn["content"]
    return isinstance(blocks, list) and bool(blocks) and all(b["type"] in THINKS for b in blocks)


THINKS = ("thinking", "redacted_thinking")


@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(
            [
                *[user(), EMPTY_USER, EMPTY_ASSISTANT, assistant("c1"), result("c1"), system()],
                *[SERVER_ONLY, THINKING_ONLY, THOUGHT_ONLY],
            ]
        ),
        max_size=7,
    ),
    st.sampled_from(["anthropic", "gemini"]),
)
@example([user(), SERVER_ONLY, user()], "anthropic")
@example([user(), THINKING_ONLY], "anthropic")
@example([user(), THOUGHT_ONLY, user()], "gemini")
def test_an_empty_turn_is_named_exactly_when_the_exporter_writes_one(
    rows: list[dict[str, Any]], provider: str
) -> None:
    """Or, for Anthropic, a turn of thinking only, which it refuses wherever it stands."""
    buffer = parse_messages(rows)
    body = write(buffer, provider)
    turns = body["contents"] if provider == "gemini" else body["messages"]
    key = "parts" if provider == "gemini" else "content"
    final = len(turns) - 1
    written_empty = [
        turn
        for position, turn in enumerate(turns)
        if (provider == "anthropic" and only_thinking(turn))
        or (
            turn[key] in ("", [])
            and not (provider == "anthropic" and turn["role"] == "assistant" and position == final)
        )
    ]
    named = [r for r in check(buffer, provider).rejections if r.reason == "empty_turn"]

    assert len(named) == len(written_empty)


ROWS = st.sampled_from(
    [
        user(),
        user("again"),
        EMPTY_USER,
        EMPTY_ASSISTANT,
        system(),
        assistant(content="prose"),
        assistant("c1"),
        assistant("c2", "c3"),
        assistant("c1", content="again"),
        result("c1"),
        result("c2"),
        result("c3"),
        result("c9"),
        placeholder("c1"),
        REASONING,
        SERVER_ONLY,
        THINKING_ONLY,
        THOUGHT_ONLY,
    ]
)


@settings(max_examples=500)
@given(st.lists(ROWS, max_size=8), st.sampled_from(PROVIDERS))
@example([user(), assistant("c1"), system(), result("c1"), user()], "anthropic")
@example([user(), assistant("c1"), system(), result("c1"), user()], "gemini")
@example([user(), assistant("c1"), REASONING, result("c1")], "openai-chat")
@example([user(), REASONING, assistant("c1"), result("c1")], "gemini")
def test_the_verdict_on_a_buffer_is_the_verdict_on_what_the_exporter_sends(
    rows: list[dict[str, Any]], provider: str
) -> None:
    """Writing a buffer in a provider's format and reading it back gives what that provider
    would be sent; the check must say the same of both (a system message the exporter
    lifts out, a Responses item it leaves out, results it regroups)."""
    buffer = parse_messages(rows)
    try:
        [sent] = read(write(buffer, provider), provider)
    except InvalidInput:
        return
    again = parse_messages(sent.messages)

    assert check(buffer, provider).accepted == check(again, provider).accepted


# Parts that are not text: every exporter translates another provider's media into its own
# shape where it takes them (formats/media.py), and the verdict refuses what it cannot.

PNG = "iVBORw0KGgo="
IMAGES: dict[str, dict[str, Any]] = {
    "anthropic": {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    },
    "openai-chat": {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    "openai-responses": {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
    "gemini": {"inlineData": {"mimeType": "image/png", "data": PNG}},
}
UNTRANSLATABLE: dict[str, dict[str, Any]] = {
    "anthropic": {"type": "search_result", "source": "https://x", "title": "x", "content": []},
    "openai-chat": {"type": "file", "file": {"file_id": "file-abc"}},
    "openai-responses": {"type": "input_file", "file_id": "file-abc"},
    "gemini": {"fileData": {"mimeType": "image/png", "fileUri": "https://x/files/1"}},
}
"""A part of each provider's that no other provider can be sent: a file or a search
result only that provider holds."""


def holding(part: dict[str, Any], role: str = "user") -> list[dict[str, Any]]:
    return [{"role": role, "content": [{"type": "text", "text": "see this"}, part]}]


@pytest.mark.parametrize("family", list(IMAGES))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_inline_image_in_any_providers_shape_is_taken_by_every_provider(
    family: str, provider: str
) -> None:
    assert rejections(provider, *holding(IMAGES[family]), assistant(content="ok")) == []


@pytest.mark.parametrize("family", list(UNTRANSLATABLE))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_part_only_its_own_provider_can_be_sent_is_refused_by_the_others(
    family: str, provider: str
) -> None:
    found = rejections(provider, *holding(UNTRANSLATABLE[family]), assistant(content="ok"))

    if family == provider:
        assert found == []
    else:
        [(index, reason, sentence)] = found
        assert (index, reason) == (0, "refused_part")
        assert sentence.startswith("the user message at message 0 holds a")
        assert f"which {PROVIDER_NAMES[provider]} does not take there" in sentence


def test_the_refusal_names_the_part_and_both_providers() -> None:
    [(_, _, sentence)] = rejections("anthropic", *holding(UNTRANSLATABLE["gemini"]))

    assert sentence == (
        "the user message at message 0 holds a Gemini fileData part in the shape of Gemini, "
        "which Anthropic does not take there, and which cannot be written as one of "
        "Anthropic's parts there"
    )


def test_a_refusal_names_an_opentelemetry_uri_part_with_its_article() -> None:
    uri = {"type": "uri", "modality": "image", "uri": "https://example.com/cat.png"}
    [(_, _, sentence)] = rejections("gemini", *holding(uri))

    assert sentence.startswith("the user message at message 0 holds a uri part in the shape")


def test_openai_refuses_its_own_image_in_a_tool_message_which_holds_text_only() -> None:
    buffer = [
        user("draw it"),
        assistant("c1"),
        {"role": "tool", "content": [IMAGES["openai-chat"]], "metadata": {"tool_call_id": "c1"}},
    ]
    [(index, reason, sentence)] = rejections("openai-chat", *buffer)

    assert (index, reason) == (2, "refused_part")
    assert sentence == (
        "the tool message at message 2 holds an image_url part, which OpenAI takes in no tool "
        "message"
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_in_any_spelling_and_parts_of_no_known_shape_are_not_judged(provider: str) -> None:
    spellings = [
        {"type": "text", "text": "a"},
        {"type": "input_text", "text": "b"},
        {"type": "output_text", "text": "c"},
        {"text": "d"},
        {"type": "something_new", "payload": 1},
        {"data": "no type, no known key"},
        "a bare string",
    ]
    assert rejections(provider, {"role": "user", "content": spellings}) == []


@pytest.mark.parametrize(
    ("part", "named"),
    [
        ({"type": "text"}, "a text part"),  # OpenTelemetry's, when content is not captured
        ({"type": "text", "text": None}, "a text part"),
        ({"type": "input_text", "text": 5}, "an input_text part"),
        ({"type": "output_text", "content": "OpenTelemetry's key"}, "an output_text part"),
    ],
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_text_part_without_its_text_is_refused_by_every_provider(
    provider: str, part: dict[str, Any], named: str
) -> None:
    [(index, reason, sentence)] = rejections(provider, *holding(part), assistant(content="ok"))

    assert (index, reason) == (0, "refused_part")
    assert sentence == (
        f"the user message at message 0 holds {named} whose text is missing or not a string, "
        "which no provider takes"
    )


def test_an_image_in_a_tool_result_goes_where_each_provider_takes_one() -> None:
    """Anthropic and OpenAI Responses take an image in a result, Gemini any JSON in its
    ``functionResponse.response``; an OpenAI Chat tool message holds text only."""
    buffer = [
        user("draw it"),
        assistant("c1"),
        {"role": "tool", "content": [IMAGES["gemini"]], "metadata": {"tool_call_id": "c1"}},
    ]
    assert verdict("gemini", *buffer).accepted
    assert verdict("anthropic", *buffer).accepted
    assert verdict("openai-responses", *buffer).accepted
    assert [r.reason for r in verdict("openai-chat", *buffer).rejections] == ["refused_part"]


def test_several_refused_parts_in_one_message_are_one_refusal() -> None:
    both = [UNTRANSLATABLE["gemini"], UNTRANSLATABLE["openai-chat"]]
    found = rejections("anthropic", {"role": "user", "content": both})

    assert [(index, reason) for index, reason, _ in found] == [(0, "refused_part")]


def test_a_gemini_request_with_an_image_beside_a_result_is_written_for_every_provider() -> None:
    """Read from a Gemini body as an older model sends it (the image beside the
    ``functionResponse``): every export carries the image in its own shape."""
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "show me the chart"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "render"}}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "c1", "name": "render", "response": {}}},
                    IMAGES["gemini"],
                ],
            },
            {"role": "model", "parts": [{"text": "Here it is."}]},
        ]
    }
    [conversation] = read(body, "gemini")
    messages = parse_messages(conversation.messages)

    assert all(v.accepted for v in check_all(messages).values())
    anthropic = write(messages, "anthropic")["messages"][2]["content"]
    assert [block["type"] for block in anthropic] == ["tool_result", "image"]


def test_an_openai_refusal_is_an_assistants_and_reaches_the_others_as_its_text() -> None:
    refusal = {"type": "refusal", "refusal": "I cannot help with that."}
    answer = {"role": "assistant", "content": [refusal]}

    assert all(v.accepted for v in check_all(parse_messages([user("do it"), answer])).values())
    anthropic = write(parse_messages([user("do it"), answer]), "anthropic")["messages"][-1]
    assert anthropic["content"] == [{"type": "text", "text": "I cannot help with that."}]
    [(_, _, sentence)] = rejections("openai-chat", {"role": "user", "content": [refusal]})
    assert sentence.endswith("holds a refusal part, which OpenAI takes in no user message")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_part_named_as_a_providers_but_not_in_its_shape_is_refused_by_all(
    provider: str,
) -> None:
    """OpenHands keeps ``{"type": "image", "image_urls": [...]}``: Anthropic's type name,
    without its ``source``."""
    image = {"type": "image", "image_urls": ["https://example.com/a.png"]}
    [(_, reason, sentence)] = rejections(provider, {"role": "user", "content": [image]})

    assert reason == "refused_part"
    assert sentence == (
        "the user message at message 0 holds an image part in no provider's shape (a part "
        "of that type holds other keys), which none takes"
    )


def test_media_cross_only_as_what_they_are() -> None:
    """A ``file_url`` may be any kind of file, and a URL source may hold a data URL of
    another kind: neither is guessed at. ``image/jpg`` is JPEG; an MP3 is ``audio/mp3`` to
    Gemini; an empty refusal is a refusal."""
    document = {"type": "input_file", "file_url": "https://example.com/a.docx"}
    audio_as_image = {
        "type": "image",
        "source": {"type": "url", "url": "data:audio/wav;base64,UklG"},
    }
    jpg = {"type": "image_url", "image_url": {"url": "data:image/jpg;base64,/9j/"}}
    mp3 = {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}}

    assert [r.reason for r in verdict("anthropic", *holding(document)).rejections] == [
        "refused_part"
    ]
    assert not verdict("openai-chat", *holding(audio_as_image)).accepted
    written = write(parse_messages(holding(jpg)), "anthropic")["messages"][0]["content"][-1]
    assert written["source"]["media_type"] == "image/jpeg"
    gemini = write(parse_messages(holding(mp3)), "gemini")["contents"][0]["parts"][-1]
    assert gemini == {"inlineData": {"mimeType": "audio/mp3", "data": "SUQz"}}
    empty = {"role": "assistant", "content": [{"type": "refusal", "refusal": ""}]}
    assert verdict("openai-chat", user("do it"), empty).accepted


@pytest.mark.parametrize(
    ("provider", "part"),
    [
        ("openai-chat", {"type": "file", "file": {"file_data": "data:application/pdf;base64,JV"}}),
        ("openai-responses", {"type": "input_file", "file_data": "data:application/pdf;base64,JV"}),
    ],
)
def test_an_openai_file_sent_inline_needs_its_filename(provider: str, part: dict[str, Any]) -> None:
    """The OpenAI APIs answer 400 "Missing required parameter" without it, though their SDKs'
    types leave it optional (openai/openai-agents-python#1513, laravel/ai#321)."""
    [(_, reason, _)] = rejections(provider, {"role": "user", "content": [part]})
    named = (
        {**part, "file": {**part["file"], "filename": "a.pdf"}}
        if "file" in part
        else {
            **part,
            "filename": "a.pdf",
        }
    )

    assert reason == "refused_part"
    assert rejections(provider, {"role": "user", "content": [named]}) == []


def _anthropic_ids(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (block["type"], block["id"] if block["type"] == "tool_use" else block["tool_use_id"])
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] in ("tool_use", "tool_result")
    ]


def test_an_id_declared_again_in_a_later_turn_is_written_unique_for_anthropic() -> None:
    """Some models (Kimi K2) number calls per turn, so an id comes back turn after turn;
    Anthropic refuses a body whose tool_use ids repeat ("tool_use ids must be unique"), and
    the verdict says it accepts: the export makes each declaration's id its own."""
    messages = parse_messages(
        [
            user("list the files twice"),
            assistant("functions.bash:0"),
            result("functions.bash:0", "a.txt"),
            assistant("functions.bash:0"),
            result("functions.bash:0", "a.txt b.txt"),
            {"role": "assistant", "content": "done"},
        ]
    )

    body = write(messages, "anthropic")

    assert _anthropic_ids(body) == [
        ("tool_use", "functions_bash_0"),
        ("tool_result", "functions_bash_0"),
        ("tool_use", "functions_bash_0_2"),
        ("tool_result", "functions_bash_0_2"),
    ]
    assert check(messages, "anthropic").accepted


def test_an_id_declared_twice_in_one_turn_is_answered_in_order_for_anthropic() -> None:
    twice = {
        "role": "assistant",
        "content": None,
        "metadata": {"tool_calls": [{"tool_call_id": "c1", "name": "f"}] * 2},
    }
    messages = parse_messages([user("go"), twice, result("c1", "one"), result("c1", "two")])

    body = write(messages, "anthropic")

    assert _anthropic_ids(body) == [
        ("tool_use", "c1"),
        ("tool_use", "c1_2"),
        ("tool_result", "c1"),
        ("tool_result", "c1_2"),
    ]


# Anthropic and blank text: it answers 400 "text content blocks must be non-empty" to an
# empty text block anywhere, and "text content blocks must contain non-whitespace text" to
# a message whose only text is whitespace (a final assistant turn too: "final assistant
# content cannot end with trailing whitespace").

BLANKS = [" ", "\n\t", [{"type": "text", "text": " "}], [{"type": "text", "text": "\n"}] * 2]


@pytest.mark.rule("MEM-5")
@pytest.mark.parametrize("blank", BLANKS, ids=["space", "newline-tab", "block", "two-blocks"])
def test_anthropic_rejects_a_message_of_blank_text_wherever_it_stands(blank: Any) -> None:
    blank_user = {"role": "user", "content": blank, "metadata": {}}
    blank_final = {"role": "assistant", "content": blank, "metadata": {}}

    assert rejections("anthropic", blank_user, assistant(content="hi")) == [
        (
            0,
            "empty_turn",
            "the user message at message 0 holds only blank text, and Anthropic refuses a "
            "message whose text is all whitespace",
        )
    ]
    assert [(r[0], r[1]) for r in rejections("anthropic", user("hi"), blank_final)] == [
        (1, "empty_turn")
    ]


@pytest.mark.rule("MEM-5")
def test_anthropic_rejects_an_empty_text_block_even_beside_real_text() -> None:
    empty_block = {"type": "text", "text": ""}
    beside_text = {"role": "user", "content": [empty_block, {"type": "text", "text": "hi"}]}
    beside_call = {**assistant("c1"), "content": [empty_block]}

    assert rejections("anthropic", beside_text, beside_call, result("c1")) == [
        (
            0,
            "refused_part",
            "the user message at message 0 holds an empty text block, which Anthropic refuses",
        ),
        (
            1,
            "refused_part",
            "the assistant message at message 1 holds an empty text block, which Anthropic refuses",
        ),
    ]


def test_a_message_of_an_empty_and_a_blank_text_block_is_one_rejection() -> None:
    both = {
        "role": "user",
        "content": [{"type": "text", "text": ""}, {"type": "text", "text": " "}],
    }

    assert [(r[0], r[1]) for r in rejections("anthropic", both, assistant(content="hi"))] == [
        (0, "refused_part")
    ]


def test_anthropic_takes_blank_text_beside_real_text_or_a_call() -> None:
    """Refused only where its documented answers say so; a blank block beside other text
    is taken (LibreChat-AI/agents#124 tried it), and beside a call is not judged."""
    beside_text = {
        "role": "user",
        "content": [{"type": "text", "text": " "}, {"type": "text", "text": "real"}],
    }

    assert verdict("anthropic", beside_text, assistant(content="hi")).accepted
    assert verdict("anthropic", user("go"), assistant("c1", content=" "), result("c1")).accepted


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_openai_takes_blank_text(provider: str) -> None:
    blank = {
        "role": "user",
        "content": [{"type": "text", "text": ""}, {"type": "text", "text": " "}],
    }

    assert verdict(provider, user(" "), assistant(content=" "), blank).accepted
