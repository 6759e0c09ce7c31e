"""SWE-agent trajectories and mini-swe-agent trajectories read into the stored shape: the
history the model saw, each call paired with its result by the nearest declaration, ids
made unique for the buffer, the run's info kept, and a crash told by its exit status."""

from __future__ import annotations

import ast
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buffers import healing
from buffers.healing import InvalidInput, Message, declared_call_ids, result_call_id
from buffers.healing.formats import (
    READABLE,
    Converted,
    Skipped,
    Source,
    detect_source,
    parse_lines,
)
from buffers.healing.formats import read as read_provider
from buffers.healing.formats import swe_agent as swe_agent_module
from buffers.healing.formats.swe_agent import FORMAT, REPLAY_CONFIG_LIMIT, fits, read
from tests.healing.test_formats import ROUND_TRIPS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OWN = FIXTURES / "swe-agent"
DEMO = Path(__file__).resolve().parents[2] / "buffers" / "demo"


def source_of(path: Path) -> Source:
    text = path.read_text()
    if path.suffix == ".jsonl":
        return parse_lines(text)
    try:
        return Source(document=json.loads(text))
    except json.JSONDecodeError:
        return parse_lines(text)


def fixture(name: str) -> dict[str, Any]:
    value = json.loads((OWN / name).read_text())
    assert isinstance(value, dict)
    return value


def one(document: object) -> Converted:
    [conversation] = read(Source(document=document)).conversations
    return conversation


def messages_of(document: object) -> list[Message]:
    return healing.parse_messages(one(document).messages, json_checked=True)


def pairs(messages: list[Message]) -> tuple[list[str], list[str | None]]:
    return (
        [cid for m in messages for cid in declared_call_ids(m)],
        [result_call_id(m) for m in messages if m.role == "tool"],
    )


def problems_of(document: object) -> list[str]:
    with pytest.raises(InvalidInput) as refused:
        read(Source(document=document))
    return [str(problem) for problem in refused.value.problems]


def healed(messages: list[Message]) -> list[Message]:
    plan = healing.plan_heal(healing.facts_from_messages(messages))
    return healing.apply_plan(messages, plan)


def kept(message: Message) -> dict[str, Any]:
    value = message.metadata.get("swe_agent")
    assert isinstance(value, dict)
    return value


def calls(message: Message) -> list[dict[str, Any]]:
    value = message.metadata.get("tool_calls")
    assert isinstance(value, list)
    return value  # type: ignore[return-value]


# The history is the conversation.


def test_a_clean_run_reads_its_history_with_every_call_answered_by_the_message_after_it() -> None:
    reading = read(source_of(OWN / "clean.traj"))
    [conversation] = reading.conversations
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert [m.role for m in messages] == ["system", "user", *["assistant", "tool"] * 5]
    declared, answered = pairs(messages)
    assert declared == answered
    assert len(declared) == 5
    for index, message in enumerate(messages):
        if message.role == "assistant":
            assert result_call_id(messages[index + 1]) == declared_call_ids(message)[0]
    analysis = healing.analyze(messages)
    assert analysis.unanswered == ()
    assert analysis.findings == ()
    assert (reading.entries, reading.unit) == (12, "message")
    assert conversation.title == ""


def test_contents_stay_as_the_cache_processor_left_them_strings_and_parts_alike() -> None:
    messages = messages_of(fixture("clean.traj"))

    assert messages[1].content == fixture("clean.traj")["history"][1]["content"]
    assert isinstance(messages[3].content, list)
    assert isinstance(messages[11].content, str)
    assert kept(messages[7])["cache_control"] == {"type": "ephemeral"}


def test_swe_agents_own_keys_are_kept_under_its_namespace() -> None:
    messages = messages_of(fixture("clean.traj"))

    assistant, result = messages[2], messages[3]
    assert set(kept(assistant)) == {"agent", "message_type", "thought", "action", "thinking_blocks"}
    assert kept(assistant)["action"] == 'grep -rn "def divide" /testbed/calc'
    assert kept(result) == {
        "agent": "main",
        "message_type": "observation",
        "tool_call_ids": ["call_HEyPiBdkqtutlAV3xpxXrYMw"],
    }
    assert kept(messages[0]) == {"agent": "main", "message_type": "system_prompt"}
    assert set(assistant.metadata) == {"tool_calls", "swe_agent"}
    assert assistant.metadata["tool_calls"] == [
        {
            "id": "call_HEyPiBdkqtutlAV3xpxXrYMw",
            "type": "function",
            "function": {
                "arguments": '{"command":"grep -rn \\"def divide\\" /testbed/calc"}',
                "name": "bash",
            },
        }
    ]


def test_the_run_info_environment_replay_config_and_steps_are_kept_on_the_conversation() -> None:
    document = fixture("clean.traj")
    metadata = one(document).metadata["swe_agent"]

    assert metadata["info"] == document["info"]
    assert metadata["info"]["exit_status"] == "submitted"
    assert metadata["environment"] == "main"
    assert metadata["replay_config"] == document["replay_config"]
    assert len(metadata["trajectory"]) == 5
    assert all("query" not in step for step in metadata["trajectory"])
    assert metadata["trajectory"][0]["observation"] == document["trajectory"][0]["observation"]


REPEATS = "repeats the history the model was sent"


def test_each_steps_query_is_left_out_and_said_to_repeat_the_history() -> None:
    reading = read(source_of(OWN / "clean.traj"))

    assert reading.skipped == [Skipped(f"trajectory[{i}].query", REPEATS) for i in range(5)]


def test_the_steps_messages_of_before_1_1_and_a_retry_agents_attempts_are_said_left_out() -> None:
    document = fixture("clean.traj")
    steps = document.pop("trajectory")[:2]
    document["trajectory"] = [
        {**{k: v for k, v in step.items() if k != "query"}, "messages": step["query"]}
        for step in steps
    ]
    document["attempts"] = [{"trajectory": steps, "info": {}}, {"info": {}}]

    reading = read(Source(document=document))

    assert reading.skipped == [
        Skipped("trajectory[0].messages", REPEATS),
        Skipped("trajectory[1].messages", REPEATS),
        Skipped("attempts[0].trajectory[0].query", REPEATS),
        Skipped("attempts[0].trajectory[1].query", REPEATS),
    ]
    metadata = one(document).metadata["swe_agent"]
    assert all("messages" not in step for step in metadata["trajectory"])
    assert all("query" not in step for step in metadata["attempts"][0]["trajectory"])
    assert metadata["attempts"][1] == {"info": {}}


def test_a_query_that_is_not_a_list_of_messages_repeats_nothing_and_is_kept() -> None:
    document = fixture("clean.traj")
    document["trajectory"][0]["query"] = "custom"

    reading = read(Source(document=document))

    assert "trajectory[0].query" not in {s.where for s in reading.skipped}
    assert one(document).metadata["swe_agent"]["trajectory"][0]["query"] == "custom"


def test_reading_does_not_change_the_document() -> None:
    document = fixture("clean.traj")
    before = copy.deepcopy(document)

    read(Source(document=document))

    assert document == before


def test_a_replay_config_too_large_to_keep_is_left_out_and_said_to_be() -> None:
    document = fixture("clean.traj")
    document["replay_config"] = json.dumps({"problem_statement": "x" * REPLAY_CONFIG_LIMIT})

    reading = read(Source(document=document))

    assert "replay_config" not in reading.conversations[0].metadata["swe_agent"]
    [skipped] = [s for s in reading.skipped if s.why != REPEATS]
    assert skipped.where == "replay_config"
    assert "left out" in skipped.why


# A crash.


def test_swe_agents_own_crash_has_no_unanswered_call_and_says_so_in_its_exit_status() -> None:
    conversation = one(fixture("crashed.traj"))
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert [m.role for m in messages][-2:] == ["assistant", "user"]
    exit_turn = messages[-2]
    assert str(exit_turn.content).startswith("Exit due to environment error")
    assert "tool_calls" not in exit_turn.metadata
    assert kept(exit_turn)["tool_calls"] is None
    assert healing.analyze(messages).unanswered == ()
    assert conversation.metadata["swe_agent"]["info"]["exit_status"] == "exit_environment_error"


def test_a_history_cut_after_a_call_has_that_call_unanswered_and_heals_right_after_it() -> None:
    messages = messages_of(fixture("unanswered.traj"))

    [unanswered] = healing.analyze(messages).unanswered
    assert unanswered.declared_at == len(messages) - 1
    assert unanswered.tool_call_id == "call_Nc5B1nfaPxuZf69rsnNFdj7U"
    after = healed(messages)
    assert after[-1].metadata == {"tool_call_id": unanswered.tool_call_id, "healed": True}
    assert healing.analyze(after).unanswered == ()


def test_a_text_only_run_reads_as_plain_messages_with_its_demonstration_marked() -> None:
    conversation = one(fixture("legacy.traj"))
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert pairs(messages) == ([], [])
    assert [m.role for m in messages][:3] == ["system", "user", "user"]
    assert kept(messages[1])["is_demo"] is True
    assert "is_demo" not in kept(messages[2])
    assert kept(messages[-1])["action"] == "submit\n"
    assert conversation.metadata["swe_agent"]["environment"] == "swe_main"
    state = conversation.metadata["swe_agent"]["trajectory"][0]["state"]
    assert isinstance(state, str)


@pytest.mark.parametrize("finished", [0, 2])
def test_a_retry_agents_file_while_it_runs_is_refused_naming_the_attempt_files(
    finished: int,
) -> None:
    """While a retry agent runs (or once it is killed) its ``.traj`` holds only the attempts
    it finished, ``{"attempts": [...]}``: the one that was running is in
    ``attempt_N/<id>.traj`` beside it, and that is the crashed transcript."""
    document = {"attempts": [fixture("clean.traj") for _ in range(finished)]}

    with pytest.raises(InvalidInput) as refused:
        detect_source(Source(document=document))

    [problem] = refused.value.problems
    assert problem.path == "file"
    assert "SWE-agent retry agent" in problem.message
    assert "attempt_" in problem.message


def test_a_demonstration_file_of_history_alone_is_read() -> None:
    document = {"history": fixture("clean.traj")["history"][1:4]}

    assert fits(Source(document=document))
    messages = messages_of(document)
    assert [m.role for m in messages] == ["user", "assistant", "tool"]


# Ids.


@pytest.mark.rule("MEM-11")
def test_an_id_declared_again_is_made_unique_and_each_result_answers_the_nearest_declaration() -> (
    None
):
    call = {
        "id": "call_submit",
        "type": "function",
        "function": {"name": "submit", "arguments": "{}"},
    }
    document = {
        "trajectory": [],
        "info": {},
        "history": [
            {"role": "assistant", "content": "demo", "tool_calls": [call], "is_demo": True},
            {"role": "tool", "content": "demo diff", "tool_call_ids": ["call_submit"]},
            {"role": "user", "content": "now the real task"},
            {"role": "assistant", "content": "done", "tool_calls": [call]},
            {"role": "tool", "content": "real diff", "tool_call_ids": ["call_submit"]},
            {"role": "assistant", "content": "again", "tool_calls": [call]},
            {"role": "tool", "content": "same diff", "tool_call_ids": ["call_submit"]},
        ],
    }
    messages = messages_of(document)

    assert pairs(messages) == (
        ["call_submit", "call_submit#2", "call_submit#3"],
        ["call_submit", "call_submit#2", "call_submit#3"],
    )
    assert calls(messages[3])[0]["swe_agent"] == {"id": "call_submit"}
    assert "swe_agent" not in calls(messages[0])[0]
    assert kept(messages[4])["tool_call_ids"] == ["call_submit"]
    assert healing.analyze(messages).findings == ()


@pytest.mark.rule("MEM-11")
def test_a_made_up_suffix_skips_an_id_the_file_already_declares() -> None:
    def turn(cid: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }

    document = {"trajectory": [], "info": {}, "history": [turn("a"), turn("a#2"), turn("a")]}

    assert pairs(messages_of(document))[0] == ["a", "a#2", "a#3"]


@pytest.mark.rule("MEM-11")
def test_a_result_naming_several_ids_answers_the_first_as_swe_agent_sends_it() -> None:
    document = fixture("clean.traj")
    document["history"][3]["tool_call_ids"].append("call_other")

    messages = messages_of(document)

    assert result_call_id(messages[3]) == "call_HEyPiBdkqtutlAV3xpxXrYMw"
    assert kept(messages[3])["tool_call_ids"] == ["call_HEyPiBdkqtutlAV3xpxXrYMw", "call_other"]


def test_a_calls_keys_beyond_openais_move_under_the_calls_namespace() -> None:
    document = fixture("clean.traj")
    document["history"][2]["tool_calls"][0]["index"] = 0

    call = calls(messages_of(document)[2])[0]

    assert set(call) == {"id", "type", "function", "swe_agent"}
    assert call["swe_agent"] == {"index": 0}


# What is wrong is named where it is.


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda h: h[3].pop("tool_call_ids"), "history[3].tool_call_ids: is missing"),
        (lambda h: h[3].update(tool_call_ids=[]), "history[3].tool_call_ids: is empty"),
        (lambda h: h[3].update(tool_call_ids=[""]), "history[3].tool_call_ids[0]: is not a usable"),
        (lambda h: h[2]["tool_calls"][0].pop("id"), "history[2].tool_calls[0].id: is missing"),
        (lambda h: h[4].update(role="robot"), "history[4].role: must be one of system, user"),
        (lambda h: h[5].update(content=7), "history[5].content: must be a string, a list"),
        (lambda h: h.__setitem__(6, "text"), "history[6]: must be an object, not a string"),
        (lambda h: h[1].update(content="nul \x00"), "history[1].content: holds the character"),
    ],
)
def test_a_malformed_message_is_refused_at_its_place(change: Any, problem: str) -> None:
    document = fixture("clean.traj")
    change(document["history"])

    [found] = problems_of(document)

    assert found.startswith(problem)


def test_a_trajectory_with_an_empty_history_holds_no_conversation() -> None:
    document = {**fixture("clean.traj"), "history": []}

    assert problems_of(document) == ["file: holds no conversation: its history is empty"]


# mini-swe-agent.


def test_a_mini_swe_agent_v2_run_keeps_its_exit_on_the_conversation_not_as_a_message() -> None:
    document = fixture("mini-swe-agent-v2.traj.json")
    reading = read(Source(document=document))
    [conversation] = reading.conversations
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert [m.role for m in messages] == ["system", "user", *["assistant", "tool"] * 3, "assistant"]
    assert (reading.entries, reading.unit) == (10, "message")
    assert conversation.title == "acme__calc-42"
    metadata = conversation.metadata["swe_agent"]
    assert metadata["trajectory_format"] == "mini-swe-agent-1.1"
    assert metadata["info"]["exit_status"] == "Submitted"
    [exit_message] = metadata["exits"]
    assert exit_message == {k: v for k, v in document["messages"][9].items() if k != "role"}


def test_the_submit_that_ended_a_mini_swe_agent_run_is_set_aside_not_left_unanswered() -> None:
    document = fixture("mini-swe-agent-v2.traj.json")
    messages = messages_of(document)

    submitting = messages[-1]
    assert "tool_calls" not in submitting.metadata
    assert kept(submitting)["submitted_calls"] == document["messages"][8]["tool_calls"]
    assert submitting.content == "The fix works. Submitting."
    analysis = healing.analyze(messages)
    assert analysis.unanswered == ()
    assert analysis.findings == ()
    declared, answered = pairs(messages)
    assert declared == answered


def test_a_mini_swe_agent_run_that_ended_on_an_error_leaves_its_calls_unanswered() -> None:
    document = fixture("mini-swe-agent-v2.traj.json")
    document["messages"][9] = {
        "role": "exit",
        "content": "",
        "extra": {"exit_status": "TimeoutError", "exception_str": "timed out", "traceback": "..."},
    }

    messages = messages_of(document)

    [unanswered] = healing.analyze(messages).unanswered
    assert unanswered.tool_call_id == "call_8YMKACpUWfcph7XOSSBU49fz"


def test_mini_swe_agent_v2_extra_moves_under_the_namespace_with_the_facts_people_want() -> None:
    document = fixture("mini-swe-agent-v2.traj.json")
    messages = messages_of(document)

    assistant, result = messages[2], messages[3]
    assert kept(assistant) == {"extra": document["messages"][2]["extra"]}
    assert "extra" not in assistant.metadata
    assert assistant.metadata["facts"] == {
        "time": "2026-01-12T10:05:05.192000+00:00",
        "model": "gpt-5-mini-2025-08-07",
        "usage": {"input": 1100, "output": 96, "cached": 0, "reasoning": 64, "total": 1196},
        "finish_reason": "tool_calls",
    }
    assert assistant.metadata["function_call"] is None
    assert result.metadata["facts"] == {"time": "2026-01-12T10:05:05.612000+00:00"}
    assert result.metadata["tool_call_id"] == "call_y9jPJwzlPvEYAZcpiPBkIUVq"


def test_a_mini_swe_agent_v1_run_gives_the_messages_it_gave_when_read_as_openai_chat() -> None:
    document = fixture("mini-swe-agent-v1.traj.json")

    [as_openai] = read_provider(document, "openai-chat")
    conversation = one(document)

    assert conversation.messages == as_openai.messages
    assert conversation.metadata == {"swe_agent": as_openai.metadata}
    assert conversation.title == "acme__calc-42"


def test_a_mini_swe_agent_file_is_no_longer_claimed_as_openai_chat() -> None:
    for name in ("mini-swe-agent-v1.traj.json", "mini-swe-agent-v2.traj.json"):
        source = Source(document=fixture(name))

        assert not READABLE["openai-chat"].fits(source)
        assert detect_source(source) is FORMAT


def test_a_mini_swe_agent_run_on_a_responses_model_is_refused_saying_why() -> None:
    document = fixture("mini-swe-agent-v2.traj.json")
    document["messages"][2] = {"object": "response", "output": []}

    [problem] = problems_of(document)

    assert problem.startswith("messages[2]: is an OpenAI Responses item")


def test_a_mini_swe_agent_message_is_checked_as_openai_chat_checks_it() -> None:
    document = fixture("mini-swe-agent-v2.traj.json")
    del document["messages"][3]["tool_call_id"]

    assert problems_of(document) == ["messages[3].tool_call_id: is missing"]


# Detection.


@pytest.mark.parametrize("path", sorted(OWN.iterdir()), ids=lambda p: p.name)
def test_every_fixture_fits_and_is_detected_as_a_swe_agent_trajectory(path: Path) -> None:
    source = source_of(path)

    assert fits(source)
    assert detect_source(source) is FORMAT


OTHERS = sorted(
    path
    for folder in FIXTURES.iterdir()
    if folder.is_dir() and folder != OWN
    for path in folder.iterdir()
    if path.is_file()
)


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_other_formats_file_fits(path: Path) -> None:
    assert not fits(source_of(path))


@pytest.mark.parametrize(("format", "document"), ROUND_TRIPS)
def test_no_provider_document_fits(format: str, document: object) -> None:
    assert not fits(Source(document=document))


@pytest.mark.parametrize("path", sorted(DEMO.iterdir()), ids=lambda p: p.name)
def test_no_stored_transcript_fits(path: Path) -> None:
    assert not fits(source_of(path))


@pytest.mark.parametrize(
    "document",
    [
        {"history": [{"role": "user", "content": "hi"}]},
        {"history": [], "trajectory": []},
        {"messages": [], "trajectory_format": "other-agent-1"},
        {"history": [{"id": 1, "timestamp": "t", "source": "user", "action": "message"}]},
        [{"history": [], "trajectory": [], "info": {}}],
    ],
)
def test_a_near_miss_does_not_fit(document: object) -> None:
    assert not fits(Source(document=document))


def test_a_trajectory_as_lines_does_not_fit() -> None:
    line = json.dumps(fixture("crashed.traj"))

    assert not fits(parse_lines(line))


# Nothing a file holds breaks the reader.


def test_the_reader_imports_no_other_agent_runtimes_reader() -> None:
    runtimes = {
        module.rsplit(".", 1)[-1]
        for format in READABLE.values()
        if (module := format.read.__module__) != "buffers.healing.formats"
    }
    tree = ast.parse(Path(swe_agent_module.__file__).read_text())
    imported = {
        name.rsplit(".", 1)[-1]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for name in [node.module or "", *(alias.name for alias in node.names)]
    }

    assert {"swe_agent", "codex", "openhands"} <= runtimes
    assert not imported & (runtimes - {"swe_agent"})


SWAPS: list[object] = [{}, [], "", 7, True, None, [{}], ["x"]]
KINDS = ("role", "type")


def mutations(value: object, path: str = "") -> Iterator[tuple[str, object]]:
    """``value`` with one value inside it (or itself) swapped for one of another type or, in
    an object, dropped, each change named by its path. Objects of one shape (the same keys
    and kind, under the same name) are changed inside in the first of them only, and so are
    a list's items of one type."""
    yield from _mutations(value, path, "", set())


def _mutations(value: object, path: str, name: str, seen: set[str]) -> Iterator[tuple[str, object]]:
    for swap in SWAPS:
        if type(swap) is not type(value) or swap != value:
            yield f"{path or '.'} = {swap!r}", swap
    if isinstance(value, dict):
        for key, inside in value.items():
            yield f"{path}.{key} dropped", {k: v for k, v in value.items() if k != key}
            if _seen(inside, key, seen):
                continue
            for change, changed in _mutations(inside, f"{path}.{key}", key, seen):
                yield change, {**value, key: changed}
    elif isinstance(value, list):
        for index, inside in enumerate(value):
            if _seen(inside, f"{name}[]", seen, items=True):
                continue
            for change, changed in _mutations(inside, f"{path}[{index}]", f"{name}[]", seen):
                yield change, [*value[:index], changed, *value[index + 1 :]]


def _seen(value: object, name: str, seen: set[str], *, items: bool = False) -> bool:
    """Whether an object (or a list's item) of this shape was changed already; marks it."""
    if isinstance(value, dict):
        shape = f"{name}{sorted(value)}{[str(value.get(key)) for key in KINDS]}"
    elif items:
        shape = f"{name}{type(value).__name__}"
    else:
        return False
    if shape in seen:
        return True
    seen.add(shape)
    return False


@pytest.mark.parametrize("path", sorted(OWN.iterdir()), ids=lambda p: p.name)
def test_a_fixture_with_any_value_swapped_or_dropped_reads_or_is_refused_with_reasons(
    path: Path,
) -> None:
    document = json.loads(path.read_text())
    before = copy.deepcopy(document)

    for change, changed in mutations(document):
        try:
            reading = read(Source(document=changed))
        except InvalidInput:
            continue
        except Exception as error:  # what the reader let escape is the failure
            pytest.fail(f"{change}: {type(error).__name__}: {error}")
        for conversation in reading.conversations:
            try:
                healing.parse_messages(conversation.messages, json_checked=True)
            except InvalidInput as error:
                pytest.fail(f"{change}: read gave a message the app refuses: {error}")

    assert document == before
