"""Codex CLI rollouts read into the stored shape, each response item once, and written
back as the rollout Codex resumes, with healed calls answered in Codex's own lines."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buffers import healing
from buffers.healing import InvalidInput, Message
from buffers.healing.formats import Converted, Reading, Source, detect_source, parse_lines
from buffers.healing.formats.codex import FORMAT, fits, native_name, read, write_native
from tests.healing.test_claude_code import NATIVE_NAME, mutated, parsed_lines
from tests.healing.test_formats import SAMPLES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CODEX = FIXTURES / "codex"
OTHERS = sorted(
    path for path in FIXTURES.glob("*/*") if path.is_file() and path.parent.name != "codex"
)
INTERRUPTED = healing.INTERRUPTED_TEXT


def source_of(path: Path) -> Source:
    """A fixture as the import sees it: JSONL lines, or one JSON document."""
    text = path.read_text()
    if path.suffix == ".jsonl":
        return parse_lines(text)
    try:
        return Source(document=json.loads(text))
    except json.JSONDecodeError:
        return parse_lines(text)


def reading(name: str) -> Reading:
    return read(parse_lines((CODEX / name).read_text()))


def conversation(name: str) -> Converted:
    [converted] = reading(name).conversations
    return converted


def messages_of(name_or_text: str) -> list[Message]:
    if name_or_text.endswith(".jsonl"):
        return healing.parse_messages(conversation(name_or_text).messages, json_checked=True)
    [converted] = read(parse_lines(name_or_text)).conversations
    return healing.parse_messages(converted.messages, json_checked=True)


def unanswered(messages: list[Message]) -> list[str]:
    return [call.tool_call_id for call in healing.analyze(messages).unanswered]


def calls(messages: list[Message]) -> list[str]:
    return [cid for m in messages for cid in healing.declared_call_ids(m)]


def results(messages: list[Message]) -> list[str | None]:
    return [healing.result_call_id(m) for m in messages if m.role == "tool"]


def meta(message: Message) -> dict[str, Any]:
    return cast(dict[str, Any], message.metadata)


def texts(messages: list[Message]) -> list[str]:
    """The text of every message, part by part."""
    found: list[str] = []
    for message in messages:
        content: Any = message.content
        parts = content if isinstance(content, list) else [content]
        found.extend(p["text"] if isinstance(p, dict) else p for p in parts if p is not None)
    return found


def heal(messages: list[Message]) -> list[Message]:
    plan = healing.plan_heal(healing.facts_from_messages(messages))
    return healing.apply_plan(messages, plan)


def line(kind: str, payload: dict[str, Any], at: str = "2026-02-23T14:05:11.402Z") -> str:
    return json.dumps({"timestamp": at, "type": kind, "payload": payload}, separators=(",", ":"))


HEADER = line(
    "session_meta",
    {
        "id": "019c8e21-0000-7000-8000-000000000001",
        "timestamp": "2026-02-23T14:05:07.913Z",
        "cwd": "/home/dev/toycalc",
        "originator": "codex_cli_rs",
        "cli_version": "0.104.0",
    },
)
PROMPT = line(
    "response_item",
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix it."}]},
)


def rollout(*lines: str) -> str:
    return "\n".join([HEADER, PROMPT, *lines]) + "\n"


# Reading.


def test_a_clean_rollout_reads_as_its_response_items_with_every_call_answered() -> None:
    read_as = reading("clean.jsonl")
    messages = messages_of("clean.jsonl")

    assert (read_as.entries, read_as.unit, read_as.skipped) == (43, "line", [])
    assert [m.role for m in messages] == [
        "system",
        "user",
        "user",
        "user",
        *["assistant", "assistant", "tool", "tool"],
        *["assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"],
    ]
    assert calls(messages) == [
        "call_q7Hn2VtR8LkPz3XcWm1aYs4D",
        "call_J5uB9fKe0TgQw2NvRd6xLp8Z",
        "call_Xr4mT1wZc8Hs0PqLb7NeVu2K",
        "call_Dk3pW9sYb1Rf6TzMq0HcNj5E",
        "call_Ln8fV2qHs6Yc1XbKt9GwRe3M",
    ]
    assert results(messages) == calls(messages)
    assert unanswered(messages) == []
    assert healing.analyze(messages).findings == ()


def test_the_parallel_calls_join_the_assistant_message_they_follow() -> None:
    commentary = messages_of("clean.jsonl")[5]

    assert commentary.content == [
        {"type": "output_text", "text": "I'll read the function and its test first."}
    ]
    assert meta(commentary)["responses"] == {"type": "message", "phase": "commentary"}
    assert [c["function"]["name"] for c in meta(commentary)["tool_calls"]] == [
        "exec_command",
        "exec_command",
    ]
    assert meta(commentary)["tool_calls"][0]["function"]["arguments"] == (
        '{"cmd":"sed -n \'1,40p\' toycalc/stats.py","workdir":"/home/dev/toycalc"}'
    )


def test_reasoning_and_a_web_search_are_kept_as_responses_items_and_take_no_result() -> None:
    messages = messages_of("clean.jsonl")
    kept = [meta(m)["responses_item"]["type"] for m in messages if "responses_item" in meta(m)]

    assert kept == ["reasoning", "reasoning", "web_search_call"]
    web_search = messages[12]
    assert web_search.content is None
    assert healing.declared_call_ids(web_search) == ["call_Ln8fV2qHs6Yc1XbKt9GwRe3M"]


def test_a_custom_tool_call_is_a_canonical_call_that_keeps_its_item() -> None:
    messages = messages_of("clean.jsonl")
    [call] = meta(messages[8])["tool_calls"]
    item = call["codex"]["item"]

    assert call["id"] == "call_Xr4mT1wZc8Hs0PqLb7NeVu2K"
    assert call["function"]["name"] == "apply_patch"
    assert json.loads(call["function"]["arguments"]) == {"input": item["input"]}
    assert item["type"] == "custom_tool_call"
    assert item["input"].startswith("*** Begin Patch\n")
    output = messages[9]
    assert meta(output)["tool_call_id"] == call["id"]
    assert meta(output)["codex"]["item"] == {"type": "custom_tool_call_output"}
    assert "responses" not in meta(output)


def test_each_response_item_is_one_message_and_no_event_makes_one() -> None:
    messages = messages_of("clean.jsonl")
    prompt = (
        "`average([])` crashes with StatisticsError. Make it return 0.0 for an empty "
        "list and check the tests."
    )
    [answer] = texts(messages[-1:])

    assert texts(messages).count(prompt) == 1
    assert texts(messages).count(answer) == 1
    assert "**Inspecting stats module and its test**" not in texts(messages)


def test_a_hundred_turn_contexts_and_events_make_no_message_of_their_own() -> None:
    context = line(
        "turn_context",
        {"model": "gpt-5.3-codex", "user_instructions": "# AGENTS.md\n- Keep it small."},
    )
    echo = line("event_msg", {"type": "user_message", "message": "Fix it."})
    answer = line(
        "response_item",
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done."}],
        },
    )
    messages = messages_of(rollout(*[context, echo] * 100, answer, *[context] * 100))

    assert texts(messages) == ["Fix it.", "Done."]


def test_turn_context_gives_the_model_and_token_count_the_usage_of_the_turn_before() -> None:
    messages = messages_of("clean.jsonl")
    commentary, first_output = messages[5], messages[6]

    assert meta(commentary)["facts"] == {
        "time": "2026-02-23T14:05:15.702Z",
        "model": "gpt-5.3-codex",
        "usage": {"input": 9120, "output": 212, "cached": 3456, "reasoning": 128, "total": 9332},
    }
    assert meta(first_output)["facts"] == {"time": "2026-02-23T14:05:15.911Z"}
    assert meta(messages[4])["facts"] == {
        "time": "2026-02-23T14:05:15.031Z",
        "model": "gpt-5.3-codex",
    }
    assert [meta(m)["facts"].get("model") for m in messages[:4]] == [None] * 4


def test_a_token_count_after_a_result_gives_no_usage() -> None:
    count = line(
        "event_msg",
        {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 5}}},
    )

    [prompt] = messages_of(rollout(count))

    assert "usage" not in meta(prompt)["facts"]


def test_injected_context_stays_a_message_flagged_as_injected() -> None:
    messages = messages_of("clean.jsonl")

    assert [meta(m).get("codex", {}).get("injected") for m in messages[:4]] == [
        "permissions",
        "agents_md",
        "environment_context",
        None,
    ]
    assert meta(messages[0])["openai_role"] == "developer"


def test_the_session_meta_is_the_conversations_metadata_and_there_is_no_title() -> None:
    converted = conversation("clean.jsonl")
    kept = converted.metadata["codex"]
    first_line = (CODEX / "clean.jsonl").read_text().split("\n")[0]

    assert converted.title == ""
    assert kept["layout"] == "current"
    assert kept["session_meta_line"] == first_line
    session = kept["session_meta"]
    assert session["id"] == "019c8e21-4b7a-7d31-9f0e-3a5c2b8d41e6"
    assert (
        session["cwd"],
        session["cli_version"],
        session["originator"],
        session["model_provider"],
    ) == (
        "/home/dev/toycalc",
        "0.104.0",
        "codex_cli_rs",
        "openai",
    )
    assert session["git"]["branch"] == "main"


def test_a_crashed_rollout_has_its_parallel_calls_unanswered_and_its_cut_off_line_skipped() -> None:
    read_as = reading("crashed.jsonl")
    messages = messages_of("crashed.jsonl")

    assert unanswered(messages) == [
        "call_Hs5eK0yPw3Rj8NcTb1Ug6XqA",
        "call_Mz9aL4dGv7Qo2FhYk5Rn0TsB",
    ]
    assert results(messages) == ["call_Vb2nQ8rTx5Mk1LsHd7Zp0WfC"]
    assert read_as.entries == 23
    [cut_off] = read_as.skipped
    assert cut_off.where == "line 24"
    assert cut_off.why.startswith("is not JSON: Unterminated string")


def test_an_end_event_with_the_calls_id_does_not_answer_it() -> None:
    call = line(
        "response_item",
        {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"},
    )
    ended = line(
        "event_msg",
        {"type": "exec_command_end", "call_id": "c1", "exit_code": 0, "aggregated_output": "ok"},
    )

    assert unanswered(messages_of(rollout(call, ended))) == ["c1"]


def test_a_call_answered_after_a_resume_is_answered() -> None:
    call = line(
        "response_item",
        {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"},
    )
    output = line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "x"})

    assert unanswered(messages_of(rollout(call, PROMPT, output))) == []


def test_an_interrupted_call_has_codex_s_aborted_output_and_is_answered() -> None:
    messages = messages_of("interrupted.jsonl")

    assert unanswered(messages) == []
    assert messages[4].content == "Wall time: 5.2 seconds\naborted by user"
    assert meta(messages[5])["codex"]["injected"] == "turn_aborted"
    assert [m.content for m in messages if m.role == "user"][-1] == [
        {"type": "input_text", "text": "Too slow, use n=5 instead."}
    ]


def test_a_compacted_history_is_never_expanded_and_each_prompt_is_read_once() -> None:
    messages = messages_of("compacted_resumed.jsonl")
    found = texts(messages)
    injected = [meta(m).get("codex", {}).get("injected") for m in messages]

    assert len(calls(messages)) == 2
    assert unanswered(messages) == []
    assert found.count("Add a median() function next to average().") == 1
    assert found.count("Now document both functions in README.md.") == 1
    assert injected.count("permissions") == 2
    assert injected.count("agents_md") == 2
    assert injected.count("environment_context") == 2
    compacted = [
        kept
        for m in messages
        for kept in meta(m).get("codex", {}).get("before", [])
        if kept["type"] == "compacted"
    ]
    assert len(compacted) == 1
    assert len(compacted[0]["payload"]["replacement_history"]) == 3


def test_a_legacy_rollout_reads_its_bare_items_and_state_lines_as_bookkeeping() -> None:
    read_as = reading("legacy.jsonl")
    messages = messages_of("legacy.jsonl")
    kept = read_as.conversations[0].metadata["codex"]

    assert (read_as.entries, read_as.skipped) == (18, [])
    assert kept["layout"] == "legacy"
    assert kept["session_meta"]["id"] == "7d3f0b62-91c4-4e8a-b5d2-0c6e1f9a3b47"
    assert "session_meta_line" not in kept
    assert [meta(m).get("codex", {}).get("injected") for m in messages[:3]] == [
        "user_instructions",
        "environment_context",
        None,
    ]
    assert meta(messages[0])["codex"]["before"] == [{"record_type": "state"}]
    assert unanswered(messages) == []


@pytest.mark.rule("MEM-11")
def test_legacy_calls_pair_on_call_id_never_on_the_items_own_id() -> None:
    messages = messages_of("legacy.jsonl")
    declared = [c for m in messages for c in meta(m).get("tool_calls", [])]

    assert calls(messages) == [
        "call_8sKq2LmZ0fXv4TcB1nYh7RwE",
        "call_3Gv9pTz1KxQm6WcR0bHs8NdJ",
        "call_Yb5eH0rNq2Vw7JkD4sXt1MfP",
    ]
    assert results(messages) == calls(messages)
    assert declared[0]["responses"] == {
        "type": "function_call",
        "id": "fc_6874c9e5b2d48190a7f3c1e6d8b04a29",
    }


@pytest.mark.rule("MEM-11")
def test_a_local_shell_call_is_answered_by_a_function_call_output_with_its_call_id() -> None:
    messages = messages_of("legacy.jsonl")
    [call] = meta(messages[7])["tool_calls"]

    assert call["id"] == "call_Yb5eH0rNq2Vw7JkD4sXt1MfP"
    assert call["function"]["name"] == "local_shell"
    assert json.loads(call["function"]["arguments"])["command"] == [
        "bash",
        "-lc",
        "python -m pytest -q",
    ]
    assert call["codex"]["item"]["id"] == "lsh_6874c9ee0d5c8190b9e1f2a7c4d3b650"
    assert meta(messages[8])["tool_call_id"] == call["id"]


def test_a_local_shell_call_without_a_call_id_is_named_by_its_item_id() -> None:
    shell = line(
        "response_item",
        {"type": "local_shell_call", "id": "lsh_1", "call_id": None, "action": {"type": "exec"}},
    )

    assert unanswered(messages_of(rollout(shell))) == ["lsh_1"]


def test_junk_lines_and_unknown_types_are_skipped_with_their_reasons() -> None:
    read_as = reading("junk.jsonl")
    messages = messages_of("junk.jsonl")

    assert [(s.where, s.why) for s in read_as.skipped if s.where != "line 4"] == [
        ("line 7", "a line of type 'frobnicate_v9', which holds no conversation"),
        ("line 8", "a response item of type 'additional_tools', which is no conversation item"),
        ("line 9", "a list, not a rollout line (an object)"),
        ("line 10", "a number, not a rollout line (an object)"),
        ("line 11", "a line of type 'event_msg' without a payload object"),
    ]
    assert read_as.skipped[0].where == "line 4"
    assert read_as.skipped[0].why.startswith("is not JSON")
    assert read_as.entries == 7
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert unanswered(messages) == []


def test_an_event_that_cannot_be_stored_is_skipped_not_refused() -> None:
    """(A U+0000 is replaced, not refused: tests/healing/test_storable_copy.py.)"""
    deep = json.loads("[" * 70 + "]" * 70)
    ended = line("event_msg", {"type": "exec_command_end", "aggregated_output": deep})

    read_as = read(parse_lines(rollout(ended)))

    [skipped] = read_as.skipped
    assert skipped.where == "line 3"
    assert "more than 64 levels deep" in skipped.why


def test_a_headerless_fragment_of_a_rollout_is_read() -> None:
    source = parse_lines("\n".join(rollout().split("\n")[1:]))

    assert fits(source)
    assert [m.role for m in messages_of(rollout().split("\n", 1)[1])] == ["user"]
    assert read(source).conversations[0].metadata == {"codex": {"layout": "current"}}


@pytest.mark.parametrize(
    ("lines", "problems"),
    [
        (
            [line("response_item", {"type": "function_call", "name": "f", "arguments": "{}"})],
            ["line 3: payload.call_id: is missing"],
        ),
        (['{"timestamp":"t","type":"response_item"}'], ["line 3: payload: is missing"]),
        (
            [line("response_item", "hi")],  # type: ignore[arg-type]
            ["line 3: payload: must be an object, not a string"],
        ),
        ([line("response_item", {"role": "user"})], ["line 3: payload.type: is missing"]),
        (
            [line("response_item", {"type": "message", "role": "robot", "content": []})],
            [
                "line 3: payload.role: must be one of user, assistant, system, developer, "
                "not 'robot'"
            ],
        ),
        (
            [line("response_item", {"type": "custom_tool_call", "call_id": "c", "name": "p"})],
            ["line 3: payload.input: is missing"],
        ),
        (
            [line("response_item", {"type": "local_shell_call", "action": {}})],
            ["line 3: payload.call_id: is missing"],
        ),
        (
            [line("response_item", {"type": "function_call_output", "call_id": "c"})],
            ["line 3: payload.output: is missing"],
        ),
        (
            [line("response_item", {"type": "function_call_output", "call_id": "c", "output": 1})],
            ["line 3: payload.output: must be a string or a list of content parts, not a number"],
        ),
        (
            [line("response_item", {"type": "function_call_output", "call_id": "", "output": ""})],
            ['line 3: payload.call_id: is not a usable id (it is empty, blank or "0")'],
        ),
    ],
)
def test_what_is_wrong_inside_a_response_item_is_refused_at_its_place(
    lines: list[str], problems: list[str]
) -> None:
    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(rollout(*lines)))

    assert [str(problem) for problem in caught.value.problems] == problems


def test_a_legacy_items_problem_is_named_by_its_line_and_key() -> None:
    text = (CODEX / "legacy.jsonl").read_text().replace('"name":"shell",', "")

    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(text))

    assert [str(problem) for problem in caught.value.problems] == ["line 8: name: is missing"]


def test_a_rollout_with_no_response_item_holds_no_conversation() -> None:
    started = line("event_msg", {"type": "task_started", "turn_id": "t1"})

    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(f"{HEADER}\n{started}\n"))

    [problem] = caught.value.problems
    assert problem.path == "file"
    assert problem.message == "holds no conversation: 2 of 2 lines read, none a response item"


# Items and lines of later Codex versions.


def written_back(text: str) -> str:
    [converted] = read(parse_lines(text)).conversations
    return write_native(healing.parse_messages(converted.messages), converted.metadata)


def test_context_compaction_and_the_older_compaction_summary_are_kept_as_compaction_is() -> None:
    items = [
        {"type": "compaction_summary", "encrypted_content": "gAAAAold"},
        {"type": "compaction", "encrypted_content": "gAAAAnew"},
        {"type": "context_compaction", "id": "cmp_1", "encrypted_content": "gAAAActx"},
        {"type": "context_compaction"},
    ]
    text = rollout(*(line("response_item", item) for item in items))

    read_as = read(parse_lines(text))
    messages = messages_of(text)

    assert read_as.skipped == []
    assert [meta(m).get("responses_item") for m in messages] == [None, *items]
    assert [(m.role, m.content) for m in messages[1:]] == [("assistant", None)] * 4
    assert calls(messages) == []
    assert written_back(text) == text


def test_world_state_and_inter_agent_metadata_lines_are_bookkeeping_kept_in_place() -> None:
    world = line("world_state", {"full": True, "state": {"cwd": "/home/dev/toycalc"}})
    patch = line("world_state", {"full": False, "state": {"shell": "zsh"}})
    delivery = line("inter_agent_communication_metadata", {"trigger_turn": True})
    answer = line(
        "response_item",
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
    )
    text = rollout(world, delivery, answer, patch)

    read_as = read(parse_lines(text))
    [_, reply] = messages_of(text)

    assert (read_as.skipped, read_as.entries) == ([], 6)
    assert [kept["type"] for kept in meta(reply)["codex"]["before"]] == [
        "world_state",
        "inter_agent_communication_metadata",
    ]
    assert [kept["type"] for kept in meta(reply)["codex"]["after"]] == ["world_state"]
    assert written_back(text) == text


# Messages between agents.

TASK = "Count the lines of every .py file under toycalc/ and report the total."
ENVELOPE = "Message Type: MESSAGE\nTask name: /root/counter\nSender: /root\nPayload:\n"


def test_a_sub_agents_task_is_a_user_message_from_the_agent_that_sent_it() -> None:
    read_as = reading("agents.jsonl")
    messages = messages_of("agents.jsonl")
    task = messages[2]

    assert read_as.skipped == []
    assert [m.role for m in messages] == [
        *["system", "user", "user", "assistant", "tool", "assistant"],
        *["user", "assistant"],
    ]
    assert task.content == [{"type": "input_text", "text": TASK}]
    assert (meta(task)["codex"]["author"], meta(task)["codex"]["recipient"]) == (
        "/root",
        "/root/counter",
    )
    assert meta(task)["codex"]["item"]["type"] == "agent_message"
    assert "injected" not in meta(task)["codex"]
    assert meta(task)["facts"] == {"time": "2026-07-21T16:40:02.124Z"}
    assert [kept["type"] for kept in meta(task)["codex"]["before"]] == [
        "event_msg",
        "inter_agent_communication_metadata",
    ]
    assert unanswered(messages) == []


def test_an_agent_messages_encrypted_content_is_kept_but_not_shown_as_text() -> None:
    message = messages_of("agents.jsonl")[6]
    item = meta(message)["codex"]["item"]

    assert message.content == [{"type": "input_text", "text": ENVELOPE}]
    assert item["id"] == "amsg_6a1f0c3e9d2b47a5"
    assert item["content"][1]["type"] == "encrypted_content"
    assert item["content"][1]["encrypted_content"].startswith("gAAAAAB")


def test_an_agent_message_of_encrypted_content_only_has_no_text() -> None:
    sealed = line(
        "response_item",
        {
            "type": "agent_message",
            "author": "/root/counter",
            "recipient": "/root",
            "content": [{"type": "encrypted_content", "encrypted_content": "gAAAAsealed"}],
        },
    )
    text = rollout(sealed)

    message = messages_of(text)[1]

    assert (message.role, message.content) == ("user", None)
    assert meta(message)["codex"]["author"] == "/root/counter"
    assert written_back(text) == text


def test_an_agent_message_is_exported_as_the_user_message_the_model_read() -> None:
    converted = conversation("agents.jsonl")
    messages = healing.parse_messages(converted.messages, json_checked=True)

    items = healing.formats.write(messages, "openai-responses", {})["input"]

    assert {"role": "user", "content": [{"type": "input_text", "text": TASK}]}.items() <= (
        items[2].items()
    )
    assert not any(item.get("type") == "agent_message" for item in items)


def test_a_rollout_with_agent_messages_is_written_back_as_it_was_read() -> None:
    converted = conversation("agents.jsonl")
    messages = healing.parse_messages(converted.messages, json_checked=True)

    assert write_native(messages, converted.metadata) == (CODEX / "agents.jsonl").read_text()


@pytest.mark.parametrize(
    ("payload", "shown"),
    [
        (
            {"author": "/root", "recipient": "/root/counter", "other_recipients": []},
            [{"type": "input_text", "text": TASK}],
        ),
        (
            {"encrypted_content": "gAAAAsealed", "author": "/root", "recipient": "/root/counter"},
            [{"type": "input_text", "text": ENVELOPE}],
        ),
    ],
)
def test_an_inter_agent_communication_line_is_the_agent_message_the_model_saw(
    payload: dict[str, Any], shown: list[dict[str, str]]
) -> None:
    sealed = "encrypted_content" in payload
    sent = line(
        "inter_agent_communication",
        {**payload, "content": "" if sealed else TASK, "trigger_turn": False},
    )
    text = rollout(sent)

    message = messages_of(text)[1]

    assert (message.role, message.content) == ("user", shown)
    assert (meta(message)["codex"]["author"], meta(message)["codex"]["recipient"]) == (
        "/root",
        "/root/counter",
    )
    assert meta(message)["codex"]["line"] == json.loads(sent)
    assert read(parse_lines(text)).skipped == []
    assert written_back(text) == text


def test_a_new_task_sent_encrypted_is_announced_as_one() -> None:
    sent = line(
        "inter_agent_communication",
        {
            "author": "/root",
            "recipient": "/root/counter",
            "content": "",
            "encrypted_content": "gAAAAsealed",
            "trigger_turn": True,
        },
    )

    message = messages_of(rollout(sent))[1]

    assert message.content == [
        {"type": "input_text", "text": ENVELOPE.replace("Type: MESSAGE", "Type: NEW_TASK")}
    ]


@pytest.mark.parametrize(
    ("kind", "payload", "problems"),
    [
        (
            "response_item",
            {"type": "agent_message", "recipient": "/root", "content": []},
            ["line 3: payload.author: is missing"],
        ),
        (
            "response_item",
            {"type": "agent_message", "author": "/a", "recipient": 7, "content": "hi"},
            [
                "line 3: payload.recipient: must be a string, not a number",
                "line 3: payload.content: must be a list of input_text and encrypted_content "
                "parts, not a string",
            ],
        ),
        (
            "response_item",
            {
                "type": "agent_message",
                "author": "/a",
                "recipient": "/b",
                "content": [
                    {"type": "input_text", "text": "ok"},
                    {"type": "input_image", "image_url": "x"},
                    {"type": "encrypted_content"},
                    "text",
                ],
            },
            [
                "line 3: payload.content[1].type: must be one of input_text, encrypted_content, "
                "not 'input_image'",
                "line 3: payload.content[2].encrypted_content: is missing",
                "line 3: payload.content[3]: must be an object, not a string",
            ],
        ),
        (
            "inter_agent_communication",
            {"author": "/a", "recipient": "/b", "content": 1, "trigger_turn": "yes"},
            [
                "line 3: payload.content: must be a string, not a number",
                "line 3: payload.trigger_turn: must be true or false, not a string",
            ],
        ),
        (
            "inter_agent_communication",
            {"author": "/a", "recipient": "/b", "content": "", "encrypted_content": 5},
            [
                "line 3: payload.encrypted_content: must be a string, not a number",
                "line 3: payload.trigger_turn: is missing",
            ],
        ),
        ("inter_agent_communication", [], ["line 3: payload: must be an object, not a list"]),
    ],
)
def test_what_is_wrong_inside_a_message_between_agents_is_refused_at_its_place(
    kind: str, payload: Any, problems: list[str]
) -> None:
    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(rollout(line(kind, payload))))

    assert [str(problem) for problem in caught.value.problems] == problems


# Rolled-back turns.

ROLLED_BACK = "rolled back by the user (thread_rolled_back) at line 20: Codex resumes without it"


def test_the_turn_a_rollback_undid_is_skipped_line_by_line_with_the_context_sent_for_it() -> None:
    read_as = reading("rolled_back.jsonl")
    messages = messages_of("rolled_back.jsonl")

    assert [(s.where, s.why) for s in read_as.skipped] == [
        ("line 13", ROLLED_BACK),
        ("line 15", ROLLED_BACK),
        ("line 18", ROLLED_BACK),
    ]
    assert read_as.entries == 26
    assert "Also delete tests/ while you are at it." not in texts(messages)
    assert [t for m in messages if m.role == "user" for t in texts([m])][-2:] == [
        "Make average() return 0.0 for an empty list.",
        "Instead, add a test for the empty list.",
    ]
    assert [meta(m).get("codex", {}).get("injected") for m in messages].count(
        "environment_context"
    ) == 1


def test_a_call_in_a_rolled_back_turn_is_not_left_unanswered() -> None:
    messages = messages_of("rolled_back.jsonl")

    assert "call_Zt5bQ0wJn8Rf3MsGy6Hc1VkA" not in calls(messages)
    assert unanswered(messages) == []
    assert healing.analyze(messages).findings == ()


def test_a_token_count_after_rolled_back_lines_gives_no_usage_to_the_turn_before() -> None:
    messages = messages_of("rolled_back.jsonl")
    done, added = messages[6], messages[-1]

    assert texts([done]) == ["Done: average([]) returns 0.0 now."]
    assert "usage" not in meta(done)["facts"]
    assert meta(added)["facts"]["usage"]["total"] == 9498


def test_a_rolled_back_rollout_is_written_back_with_the_undone_lines_in_place() -> None:
    converted = conversation("rolled_back.jsonl")
    messages = healing.parse_messages(converted.messages, json_checked=True)

    written = write_native(messages, converted.metadata)

    assert written == (CODEX / "rolled_back.jsonl").read_text()
    assert read(parse_lines(written)).skipped == reading("rolled_back.jsonl").skipped


def say(text: str, role: str = "user") -> str:
    part = "output_text" if role == "assistant" else "input_text"
    message = {"type": "message", "role": role, "content": [{"type": part, "text": text}]}
    return line("response_item", message)


def rolled_back(turns: object) -> str:
    return line("event_msg", {"type": "thread_rolled_back", "num_turns": turns})


def test_rolling_back_more_turns_than_there_are_keeps_the_context_before_the_first() -> None:
    context = say("<environment_context>\n  <cwd>/home/dev</cwd>\n</environment_context>")
    text = "\n".join([HEADER, context, PROMPT, say("Done.", "assistant"), rolled_back(5)])

    read_as = read(parse_lines(text))

    assert [m.content for m in messages_of(text)] == [json.loads(context)["payload"]["content"]]
    assert [s.where for s in read_as.skipped] == ["line 3", "line 4"]
    assert written_back(text) == text + "\n"


def test_each_rollback_undoes_the_last_turns_that_survived_the_ones_before() -> None:
    text = "\n".join(
        [
            HEADER,
            PROMPT,
            say("One.", "assistant"),
            say("Two?"),
            rolled_back(1),
            say("Three?"),
            say("Three.", "assistant"),
            rolled_back(1),
            say("Four?"),
            rolled_back(0),
        ]
    )

    read_as = read(parse_lines(text))

    assert texts(messages_of(text)) == ["Fix it.", "One.", "Four?"]
    assert [(s.where, s.why.split(":")[0]) for s in read_as.skipped] == [
        ("line 4", "rolled back by the user (thread_rolled_back) at line 5"),
        ("line 6", "rolled back by the user (thread_rolled_back) at line 8"),
        ("line 7", "rolled back by the user (thread_rolled_back) at line 8"),
    ]


def test_an_agent_message_is_a_turn_a_rollback_can_undo() -> None:
    task = line(
        "response_item",
        {
            "type": "agent_message",
            "author": "/root",
            "recipient": "/root/counter",
            "content": [{"type": "input_text", "text": "And the tests?"}],
        },
    )
    text = rollout(say("212.", "assistant"), task, say("96.", "assistant"), rolled_back(1))

    assert texts(messages_of(text)) == ["Fix it.", "212."]


def test_a_rollback_reaches_no_line_before_a_compacted_history() -> None:
    compacted = line(
        "compacted",
        {
            "message": "",
            "replacement_history": [
                json.loads(PROMPT)["payload"],
                {"type": "compaction", "encrypted_content": "gAAAAsummary"},
            ],
        },
    )
    text = rollout(say("Fixed.", "assistant"), compacted, say("Now?"), say("Now.", "assistant"))

    undone = read(parse_lines(text + rolled_back(2)))

    assert texts(messages_of(text + rolled_back(2))) == ["Fix it.", "Fixed."]
    assert [s.where for s in undone.skipped] == ["line 5", "line 6"]


@pytest.mark.parametrize("turns", [-1, "1", 1.5, True, 2**32, None])
def test_a_rollback_codex_cannot_read_is_skipped_and_undoes_nothing(turns: object) -> None:
    text = rollout(say("Done.", "assistant"), rolled_back(turns))

    read_as = read(parse_lines(text))

    assert texts(messages_of(text)) == ["Fix it.", "Done."]
    assert [(s.where, s.why) for s in read_as.skipped] == [
        (
            "line 4",
            "a thread_rolled_back event whose payload.num_turns is not a whole number from 0 "
            "to 4294967295: Codex cannot read it, and it undoes nothing",
        )
    ]
    assert written_back(text) == text


TOO_DEEP = "[" * 70 + "]" * 70
"""A value no database stores (a U+0000 is replaced, not refused: test_storable_copy.py)."""


def test_a_rollback_that_cannot_be_stored_is_left_out_and_undoes_nothing() -> None:
    undo = rolled_back(1).replace('"2026-02-23T14:05:11.402Z"', TOO_DEEP)
    text = rollout(say("Done.", "assistant"), undo)

    read_as = read(parse_lines(text))
    [converted] = read_as.conversations

    assert texts(messages_of(text)) == ["Fix it.", "Done."]
    assert [(s.where, s.why) for s in read_as.skipped] == [
        ("line 4", "a line that nests arrays or objects more than 64 levels deep (left out)")
    ]
    written = write_native(healing.parse_messages(converted.messages), converted.metadata)
    assert texts(messages_of(written)) == ["Fix it.", "Done."]


def test_a_rolled_back_line_that_cannot_be_stored_is_refused_as_any_item() -> None:
    text = rollout(say("a").replace('"2026-02-23T14:05:11.402Z"', TOO_DEEP), rolled_back(1))

    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(text))

    assert [str(problem) for problem in caught.value.problems] == [
        "line 3: nests arrays or objects more than 64 levels deep"
    ]


# Detection.


@pytest.mark.parametrize("name", sorted(p.name for p in CODEX.glob("*.jsonl")))
def test_every_codex_fixture_is_detected_as_a_codex_rollout(name: str) -> None:
    found = detect_source(source_of(CODEX / name))

    assert found is FORMAT
    assert found.named == "a Codex CLI rollout"
    assert (found.provider, found.lines) == ("openai-responses", True)


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_other_formats_fixture_fits(path: Path) -> None:
    assert not fits(source_of(path))


@pytest.mark.parametrize("format", SAMPLES)
def test_no_provider_sample_fits(format: str) -> None:
    document = SAMPLES[format]
    entries = next(document[key] for key in ("messages", "input", "contents") if key in document)
    as_lines = parse_lines("\n".join(json.dumps(entry) for entry in entries))

    assert not fits(Source(document=document))
    assert not fits(Source(document=entries))
    assert not fits(as_lines)


def test_responses_items_written_as_jsonl_without_codexs_header_do_not_fit() -> None:
    legacy_body = (CODEX / "legacy.jsonl").read_text().split("\n", 1)[1]
    state_free = "\n".join(x for x in legacy_body.split("\n") if "record_type" not in x)

    assert not fits(parse_lines(state_free))


def test_a_legacy_header_and_a_rollout_as_a_json_array_are_not_claimed_by_the_family() -> None:
    lines = [json.loads(x) for x in (CODEX / "clean.jsonl").read_text().split("\n") if x]

    assert detect_source(Source(document=lines)) is FORMAT


# Writing the rollout back.


@pytest.mark.parametrize("name", ["clean.jsonl", "interrupted.jsonl", "compacted_resumed.jsonl"])
def test_a_clean_rollout_is_written_back_as_it_was_read(name: str) -> None:
    converted = conversation(name)
    messages = healing.parse_messages(converted.messages, json_checked=True)

    assert write_native(messages, converted.metadata) == (CODEX / name).read_text()


def test_writing_keeps_every_object_line_in_place_and_drops_what_is_not_one() -> None:
    converted = conversation("junk.jsonl")
    messages = healing.parse_messages(converted.messages, json_checked=True)
    objects = [x for x in (CODEX / "junk.jsonl").read_text().split("\n") if x.startswith("{")]

    assert write_native(messages, converted.metadata) == "\n".join(objects) + "\n"


def test_writing_a_crashed_rollout_drops_its_cut_off_tail_and_ends_with_a_newline() -> None:
    converted = conversation("crashed.jsonl")
    messages = healing.parse_messages(converted.messages, json_checked=True)
    whole = (CODEX / "crashed.jsonl").read_text().split("\n")[:23]

    assert write_native(messages, converted.metadata) == "\n".join(whole) + "\n"


@pytest.mark.rule("MEM-3")
def test_a_healed_crashed_rollout_answers_each_call_in_codexs_lines_after_its_turn() -> None:
    converted = conversation("crashed.jsonl")
    healed = heal(healing.parse_messages(converted.messages, json_checked=True))

    written = write_native(healed, converted.metadata).split("\n")

    original = (CODEX / "crashed.jsonl").read_text().split("\n")
    assert written[:22] == original[:22]
    assert [json.loads(x) for x in written[22:24]] == [
        {
            "timestamp": "2026-02-23T14:55:09.981Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": cid, "output": INTERRUPTED},
        }
        for cid in ("call_Hs5eK0yPw3Rj8NcTb1Ug6XqA", "call_Mz9aL4dGv7Qo2FhYk5Rn0TsB")
    ]
    assert written[22].startswith('{"timestamp":"2026-02-23T14:55:09.981Z","type":"response_item"')
    assert written[24:] == [original[22], ""]


def test_a_healed_rollout_read_again_has_every_call_answered_directly_after_its_turn() -> None:
    converted = conversation("crashed.jsonl")
    healed = heal(healing.parse_messages(converted.messages, json_checked=True))

    again = messages_of(write_native(healed, converted.metadata))

    assert unanswered(again) == []
    assert healing.analyze(again).findings == ()
    assert [m.content for m in again[-2:]] == [INTERRUPTED, INTERRUPTED]


def test_healed_custom_and_shell_calls_are_answered_in_the_output_type_codex_pairs() -> None:
    patch_call = {
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": "p1",
        "name": "apply_patch",
        "input": "*** Begin Patch\n*** End Patch\n",
    }
    shell_call = {
        "type": "local_shell_call",
        "call_id": "s1",
        "status": "completed",
        "action": {"type": "exec", "command": ["ls"]},
    }
    patch = line("response_item", patch_call, at="2026-02-23T14:05:12.000Z")
    shell = line("response_item", shell_call, at="2026-02-23T14:05:12.500Z")
    count = line("event_msg", {"type": "token_count", "info": None}, at="2026-02-23T14:05:13.000Z")
    text = rollout(patch, shell, count)
    [converted] = read(parse_lines(text)).conversations
    healed = heal(healing.parse_messages(converted.messages, json_checked=True))

    written = write_native(healed, converted.metadata).split("\n")

    assert written[:4] == text.split("\n")[:4]
    assert [json.loads(x)["payload"] for x in written[4:6]] == [
        {"type": "custom_tool_call_output", "call_id": "p1", "output": INTERRUPTED},
        {"type": "function_call_output", "call_id": "s1", "output": INTERRUPTED},
    ]
    assert {json.loads(x)["timestamp"] for x in written[4:6]} == {"2026-02-23T14:05:12.500Z"}
    assert written[6:] == [count, ""]
    assert unanswered(messages_of("\n".join(written))) == []


@pytest.mark.rule("MEM-3")
def test_a_user_turn_appended_in_the_app_follows_the_placeholders_as_a_response_item() -> None:
    converted = conversation("crashed.jsonl")
    messages = healing.parse_messages(converted.messages, json_checked=True)
    turn = Message(role="user", content="Try again, one suite at a time.")
    plan = healing.plan_append(healing.facts_from_messages(messages), [turn])

    written = write_native(healing.apply_plan(messages, plan), converted.metadata).split("\n")

    assert [json.loads(x)["payload"]["type"] for x in written[22:24]] == [
        "function_call_output",
        "function_call_output",
    ]
    assert json.loads(written[24])["payload"]["type"] == "token_count"
    assert json.loads(written[25]) == {
        "timestamp": "2026-02-23T14:55:09.984Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Try again, one suite at a time."}],
        },
    }
    assert written[26:] == [""]


def test_a_paginated_rollout_is_written_with_its_ordinals_renumbered() -> None:
    def numbered(text: str, ordinal: int) -> str:
        return text.replace('Z","type"', f'Z","ordinal":{ordinal},"type"', 1)

    call = line(
        "response_item",
        {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"},
    )
    count = line("event_msg", {"type": "token_count", "info": None})
    original = [numbered(x, n) for n, x in enumerate([HEADER, PROMPT, call, count])]
    [converted] = read(parse_lines("\n".join(original) + "\n")).conversations
    healed = heal(healing.parse_messages(converted.messages, json_checked=True))

    written = write_native(healed, converted.metadata).split("\n")[:-1]

    assert converted.metadata["codex"]["paginated"] is True
    assert [json.loads(x)["ordinal"] for x in written] == [0, 1, 2, 3, 4]
    assert written[:3] == original[:3]
    assert json.loads(written[3])["payload"]["type"] == "function_call_output"
    assert written[4] == numbered(count, 4)


def test_a_legacy_rollout_is_not_written_back() -> None:
    converted = conversation("legacy.jsonl")
    messages = healing.parse_messages(converted.messages, json_checked=True)

    with pytest.raises(InvalidInput) as caught:
        write_native(messages, converted.metadata)

    [problem] = caught.value.problems
    assert "2025 Codex rollout" in problem.message
    assert "export it as OpenAI Responses" in problem.message


def test_a_conversation_not_read_from_a_rollout_is_not_written_as_one() -> None:
    with pytest.raises(InvalidInput) as caught:
        write_native([Message(role="user", content="hi")], {"model": "gpt-4o"})

    [problem] = caught.value.problems
    assert "has no Codex session_meta line" in problem.message


def test_the_file_name_is_the_rollouts_start_and_session_id() -> None:
    assert native_name(conversation("clean.jsonl").metadata) == (
        "rollout-2026-02-23T14-05-07-019c8e21-4b7a-7d31-9f0e-3a5c2b8d41e6.jsonl"
    )
    assert native_name({}) == ""


@pytest.mark.parametrize(
    ("session", "started"),
    [
        ('a\nb"c', "2026-02-23T14:05:07.913Z"),
        ("019c8e21", '2026-02-23"\r\nX-Y: 1\u00e9'),
        ("\u0661\u00e9/../x", "2026-02-23T14:05:07\u2028"),
    ],
)
def test_a_file_name_from_the_rollouts_own_data_is_ascii_letters_digits_dots_and_dashes(
    session: str, started: str
) -> None:
    metadata = {"codex": {"session_meta": {"id": session, "timestamp": started}}}

    name = native_name(metadata)

    assert re.fullmatch(r"rollout-[A-Za-z0-9._-]+\.jsonl", name)


def test_a_codex_conversation_exports_as_responses_with_its_calls_paired() -> None:
    converted = conversation("clean.jsonl")
    messages = healing.parse_messages(converted.messages, json_checked=True)

    body = healing.formats.write(messages, "openai-responses", {})
    items = body["input"]
    called = [i["call_id"] for i in items if i.get("type") == "function_call"]
    answered = [i["call_id"] for i in items if i.get("type") == "function_call_output"]

    assert called == answered == calls(messages)
    assert [i["type"] for i in items if i.get("type") not in ("message", None)].count(
        "reasoning"
    ) == 2


# Any lines: read or refused with InvalidInput, never an exception; what is read writes back.

VALUES = (
    st.none()
    | st.integers(-1, 2)
    | st.sampled_from(
        ["", "c1", "user", "assistant", "developer", "robot", "\u0000", "2026-02-23T14:05:11.402Z"]
    )
)
PAYLOAD_KEYS = [
    "type", "role", "content", "call_id", "id", "name", "arguments", "input", "output",
    "action", "info", "model", "last_token_usage", "input_tokens", "author", "recipient",
    "text", "encrypted_content", "trigger_turn", "num_turns", "replacement_history",
]  # fmt: skip
PAYLOAD_TYPES = [
    "message", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "reasoning", "ghost_snapshot",
    "token_count", "additional_tools", "agent_message", "input_text", "encrypted_content",
    "context_compaction", "thread_rolled_back",
]  # fmt: skip
payloads = st.recursive(
    VALUES | st.sampled_from(PAYLOAD_TYPES),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(PAYLOAD_KEYS), inner, max_size=5)
    ),
    max_leaves=20,
)
rollout_lines = st.fixed_dictionaries(
    {"timestamp": VALUES, "type": st.sampled_from([*PAYLOAD_TYPES, "response_item",
     "event_msg", "turn_context", "compacted", "session_meta", "world_state",
     "inter_agent_communication", "inter_agent_communication_metadata"])},
    optional={"payload": payloads, "ordinal": st.integers(0, 3), "record_type": VALUES},
) | payloads  # fmt: skip


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(rollout_lines, max_size=8), headed=st.booleans())
def test_any_lines_are_read_or_refused_never_an_exception(values: list[Any], headed: bool) -> None:
    text = "\n".join([*([HEADER] if headed else []), *(json.dumps(v) for v in values)])
    source = parse_lines(text)

    fits(source)
    try:
        read_as = read(source)
    except InvalidInput:
        return
    [converted] = read_as.conversations
    messages = healing.parse_messages(converted.messages)
    try:
        written = write_native(messages, converted.metadata)
    except InvalidInput:
        assert not headed
        return
    again = read(parse_lines(written))
    assert len(again.conversations[0].messages) == len(messages)


# The fixtures' lines with values of other types, or keys dropped: read or refused with
# InvalidInput, and what is read heals and writes back.

FIXTURE_VALUES = [parsed_lines(path) for path in sorted(CODEX.glob("*.jsonl"))]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_fixture_lines_with_values_of_other_types_are_read_or_refused_and_written_back(
    data: st.DataObject,
) -> None:
    values = mutated(data.draw(st.sampled_from(FIXTURE_VALUES), label="fixture"), data)
    source = parse_lines("\n".join(json.dumps(value) for value in values))

    fits(source)
    try:
        read_as = read(source)
    except InvalidInput:
        return
    [converted] = read_as.conversations
    assert NATIVE_NAME.fullmatch(native_name(converted.metadata))
    healed = heal(healing.parse_messages(converted.messages, json_checked=True))
    try:
        written = write_native(healed, converted.metadata)
    except InvalidInput:
        return
    [again] = read(parse_lines(written)).conversations
    assert unanswered(healing.parse_messages(again.messages, json_checked=True)) == []


# Turns and rollbacks in any order: the rollout written back reads as it was read, and
# once healed, every call is answered.

turn_lines = st.sampled_from(
    [
        PROMPT,
        say("<environment_context>\n  <cwd>/home/dev</cwd>\n</environment_context>"),
        say("Done.", "assistant"),
        line(
            "response_item",
            {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"},
        ),
        line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        line(
            "response_item",
            {
                "type": "agent_message",
                "author": "/root",
                "recipient": "/root/counter",
                "content": [{"type": "input_text", "text": "And the tests?"}],
            },
        ),
        line(
            "inter_agent_communication",
            {"author": "/root", "recipient": "/a", "content": "Go.", "trigger_turn": True},
        ),
        line("compacted", {"message": "", "replacement_history": [json.loads(PROMPT)["payload"]]}),
        line("compacted", {"message": "Summary."}),
        line(
            "event_msg", {"type": "token_count", "info": {"last_token_usage": {"total_tokens": 9}}}
        ),
        *[rolled_back(turns) for turns in (0, 1, 2, 3)],
    ]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(lines=st.lists(turn_lines, min_size=1, max_size=14))
def test_rolled_back_turns_are_written_back_in_place_and_read_again_the_same(
    lines: list[str],
) -> None:
    text = "\n".join([HEADER, *lines]) + "\n"
    try:
        read_as = read(parse_lines(text))
    except InvalidInput:
        return
    [converted] = read_as.conversations
    messages = healing.parse_messages(converted.messages, json_checked=True)

    healed = heal(messages)

    assert write_native(messages, converted.metadata) == text
    again = read(parse_lines(write_native(healed, converted.metadata)))
    assert len(again.skipped) == len(read_as.skipped)
    [reread] = again.conversations
    assert [m["content"] for m in reread.messages] == [m.content for m in healed]
    assert unanswered(healing.parse_messages(reread.messages)) == []
