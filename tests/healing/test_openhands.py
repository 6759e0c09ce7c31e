"""OpenHands event streams read into the stored shape, as OpenHands itself makes messages of
them for the model: one assistant turn per model response with every call it declared,
results paired on their tool call id, a finished run's finish as plain text, events that are
not conversation skipped and kept, and the agent SDK's events by the SDK's rules."""

from __future__ import annotations

import ast
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buffers import healing
from buffers.healing import InvalidInput, Message, declared_call_ids, result_call_id, sendability
from buffers.healing.formats import (
    READABLE,
    Converted,
    Entry,
    Reading,
    Skipped,
    Source,
    detect_source,
    parse_lines,
)
from buffers.healing.formats import openhands as openhands_module
from buffers.healing.formats.openhands import FORMAT, fits, read
from tests.healing.test_formats import ROUND_TRIPS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OWN = FIXTURES / "openhands"
DEMO = Path(__file__).resolve().parents[2] / "buffers" / "demo"


def source_of(path: Path) -> Source:
    text = path.read_text()
    if path.suffix == ".jsonl":
        return parse_lines(text)
    try:
        return Source(document=json.loads(text))
    except json.JSONDecodeError:
        return parse_lines(text)


def events(name: str) -> list[dict[str, Any]]:
    value = json.loads((OWN / name).read_text())
    assert isinstance(value, list)
    return value


def lines(values: list[Any]) -> Source:
    return parse_lines("\n".join(v if isinstance(v, str) else json.dumps(v) for v in values))


def reading_of(source: Source) -> Reading:
    return read(source)


def one(source: Source) -> Converted:
    [conversation] = read(source).conversations
    return conversation


def messages_of(source: Source) -> list[Message]:
    return healing.parse_messages(one(source).messages, json_checked=True)


def pairs(messages: list[Message]) -> tuple[list[str], list[str | None]]:
    return (
        [cid for m in messages for cid in declared_call_ids(m)],
        [result_call_id(m) for m in messages if m.role == "tool"],
    )


def shape(messages: list[Message]) -> list[str]:
    """Each message's role, with the number of calls an assistant turn declares."""
    return [
        f"{m.role}[{len(declared_call_ids(m))}]" if declared_call_ids(m) else m.role
        for m in messages
    ]


def problems_of(source: Source) -> list[str]:
    with pytest.raises(InvalidInput) as refused:
        read(source)
    return [str(problem) for problem in refused.value.problems]


def kept(message: Message) -> dict[str, Any]:
    value = message.metadata.get("openhands")
    assert isinstance(value, dict)
    return value


def calls(message: Message) -> list[dict[str, Any]]:
    value = message.metadata.get("tool_calls")
    assert isinstance(value, list)
    return value  # type: ignore[return-value]


def healed(messages: list[Message]) -> list[Message]:
    plan = healing.plan_heal(healing.facts_from_messages(messages))
    return healing.apply_plan(messages, plan)


def response(ident: str, *call_ids: str) -> dict[str, Any]:
    """A model response (OpenHands 0.x keeps it in ``tool_call_metadata``) calling
    ``execute_bash`` once per call id."""
    calls = [
        {"id": cid, "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}
        for cid in call_ids
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    return {"id": ident, "choices": [{"index": 0, "message": message}]}


def said(ident: int, source: str, text: str) -> dict[str, Any]:
    """A ``message`` action: the user's message or the agent's reply."""
    return {
        "id": ident,
        "timestamp": f"2025-10-14T09:12:{ident:02d}.000001",
        "source": source,
        "message": text,
        "action": "message",
        "args": {"content": text, "image_urls": None, "wait_for_response": False},
    }


def run(ident: int, made_by: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A ``run`` action, one call of the model response ``made_by``."""
    return {
        "id": ident,
        "timestamp": f"2025-10-14T09:12:{ident:02d}.000001",
        "source": "agent",
        "message": "Running command: ls",
        "action": "run",
        "tool_call_metadata": {
            "function_name": "execute_bash",
            "tool_call_id": call_id,
            "model_response": made_by,
            "total_calls_in_response": len(made_by["choices"][0]["message"]["tool_calls"]),
        },
        "args": {"command": "ls", "thought": ""},
    }


def ran(ident: int, action: dict[str, Any], output: str) -> dict[str, Any]:
    """The observation of a ``run`` action: its call's result."""
    return {
        "id": ident,
        "timestamp": f"2025-10-14T09:12:{ident:02d}.000001",
        "source": "agent",
        "message": "Command `ls` executed with exit code 0.",
        "cause": action["id"],
        "observation": "run",
        "tool_call_metadata": action["tool_call_metadata"],
        "content": output,
        "extras": {"command": "ls", "metadata": {"exit_code": 0}},
    }


def sent(messages: list[Message]) -> list[str]:
    """Each message as OpenHands sends it: its role and its text, or the calls it declares or
    answers."""
    return [
        f"{m.role} {' '.join(declared_call_ids(m))}"
        if declared_call_ids(m)
        else f"tool {result_call_id(m)}"
        if m.role == "tool"
        else f"{m.role} {m.content}"
        for m in messages
    ]


def every_provider_accepts(messages: list[Message]) -> bool:
    return all(verdict.accepted for verdict in sendability.check_all(messages).values())


# OpenHands 0.x.


def test_a_finished_run_reads_as_openhands_sends_it_with_nothing_unanswered() -> None:
    reading = reading_of(source_of(OWN / "clean.json"))
    [conversation] = reading.conversations
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert shape(messages) == [
        "system",
        "user",
        "assistant[1]",
        "tool",
        "assistant[2]",
        "tool",
        "tool",
        "assistant[1]",
        "tool",
        "assistant",
    ]
    declared, answered = pairs(messages)
    assert declared == answered
    analysis = healing.analyze(messages)
    assert analysis.unanswered == ()
    assert analysis.findings == ()
    assert (reading.entries, reading.unit) == (15, "event")
    assert conversation.title == ""


@pytest.mark.rule("MEM-11")
def test_the_calls_of_one_response_are_one_turn_though_its_actions_come_one_at_a_time() -> None:
    messages = messages_of(source_of(OWN / "clean.json"))
    stream = events("clean.json")

    turn = messages[4]
    assert declared_call_ids(turn) == [
        "toolu_01Au6areacaytKqRSgym25ki",
        "toolu_01e2qxZutYDfUmqGK9aWMNZn",
    ]
    assert turn.content == "`divide` has no zero check. I'll add one and then run the tests."
    assert kept(turn)["model_response"] == stream[7]["tool_call_metadata"]["model_response"]
    assert [action["id"] for action in kept(turn)["actions"]] == [7, 9]
    assert all("model_response" not in a["tool_call_metadata"] for a in kept(turn)["actions"])
    assert calls(turn)[1] == {
        "id": "toolu_01e2qxZutYDfUmqGK9aWMNZn",
        "type": "function",
        "function": stream[9]["tool_call_metadata"]["model_response"]["choices"][0]["message"][
            "tool_calls"
        ][1]["function"],
        "openhands": {"index": 2},
    }
    assert [result_call_id(m) for m in messages[5:7]] == declared_call_ids(turn)


def test_a_model_turn_has_the_facts_of_its_response() -> None:
    messages = messages_of(source_of(OWN / "clean.json"))

    assert messages[2].metadata["facts"] == {
        "time": "2025-10-14T09:12:06.402881",
        "model": "claude-sonnet-4-5-20250929",
        "usage": {"input": 6120, "output": 88, "cached": 0, "total": 6208},
        "finish_reason": "tool_calls",
    }
    assert messages[3].metadata["facts"] == {"time": "2025-10-14T09:12:07.055172"}


def test_a_result_keeps_its_event_less_the_copy_of_the_model_response() -> None:
    messages = messages_of(source_of(OWN / "clean.json"))
    stream = events("clean.json")

    result = messages[3]
    assert result.content == stream[6]["content"]
    assert set(result.metadata) == {"tool_call_id", "openhands", "facts"}
    assert kept(result)["cause"] == 5
    assert kept(result)["extras"] == stream[6]["extras"]
    assert kept(result)["tool_call_metadata"] == {
        "function_name": "execute_bash",
        "tool_call_id": "toolu_01snMBy8vtHLkvrbIzP5J9iq",
        "total_calls_in_response": 1,
    }


def test_finish_is_plain_assistant_text_with_the_final_message_and_declares_no_call() -> None:
    messages = messages_of(source_of(OWN / "clean.json"))
    finish = events("clean.json")[13]

    last = messages[-1]
    assert last.role == "assistant"
    assert "tool_calls" not in last.metadata
    assert last.content == [
        {"type": "text", "text": "Done: `divide` now raises ValueError for a zero divisor."},
        {"type": "text", "text": finish["args"]["final_thought"]},
    ]
    assert kept(last)["finish"] == {
        "tool_call_id": "toolu_01DbP4P4v4fMLV0l9ZDLYWmk",
        "function_name": "finish",
        **finish["args"],
    }


def test_a_finish_whose_final_message_says_the_same_is_its_text_alone() -> None:
    stream = events("clean.json")
    stream[13]["args"]["final_thought"] = stream[13]["args"]["thought"]

    last = messages_of(Source(document=stream))[-1]

    assert last.content == "Done: `divide` now raises ValueError for a zero divisor."


def test_events_that_are_not_conversation_are_skipped_said_and_kept_on_the_next_message() -> None:
    reading = reading_of(source_of(OWN / "clean.json"))
    [conversation] = reading.conversations
    stream = events("clean.json")

    assert [(s.where, s.why.split(",")[0]) for s in reading.skipped] == [
        ("[2]", "an action of type 'recall'"),
        ("[3]", "an observation of type 'agent_state_changed'"),
        ("[4]", "an observation of type 'recall'"),
        ("[14]", "an observation of type 'agent_state_changed'"),
    ]
    assert reading.skipped[0].why.endswith("kept in the metadata of the next message")
    assert reading.skipped[-1].why.endswith("kept in the conversation's metadata")
    turn = conversation.messages[2]
    assert turn["metadata"]["openhands"]["passthrough"] == stream[2:5]
    assert conversation.metadata["openhands"] == {
        "agent_state": {"agent_state": "finished", "reason": ""},
        "passthrough": [stream[14]],
    }


def test_the_system_and_user_messages_keep_their_events_less_their_content() -> None:
    messages = messages_of(source_of(OWN / "clean.json"))
    stream = events("clean.json")

    system, user = messages[0], messages[1]
    assert system.content == stream[0]["args"]["content"]
    assert kept(system)["args"]["tools"] == stream[0]["args"]["tools"]
    assert "content" not in kept(system)["args"]
    assert user.content == stream[1]["args"]["content"]
    assert kept(user)["source"] == "user"


def test_a_user_message_sent_while_a_tool_runs_comes_before_the_turn_as_openhands_sends_it() -> (
    None
):
    """OpenHands holds a response's turn until its calls have their results and sends what
    came meanwhile before it (``ConversationMemory``'s pending tool call messages)."""
    first, second = run(2, response("r1", "t1"), "t1"), run(4, response("r2", "t2"), "t2")
    stream = [
        said(1, "user", "hi"),
        first,
        ran(3, first, "a.txt"),
        second,
        said(5, "user", "also check pwd"),
        ran(6, second, "/workspace"),
        said(7, "agent", "ok"),
    ]

    messages = messages_of(Source(document=stream))

    assert sent(messages) == [
        "user hi",
        "assistant t1",
        "tool t1",
        "user also check pwd",
        "assistant t2",
        "tool t2",
        "assistant ok",
    ]
    assert healing.analyze(messages).findings == ()
    assert every_provider_accepts(messages)


def test_a_response_whose_results_come_apart_is_sent_whole_once_the_last_one_came() -> None:
    made_by = response("r1", "t1", "t2")
    first, second = run(2, made_by, "t1"), run(5, made_by, "t2")
    stream = [
        said(1, "user", "hi"),
        first,
        ran(3, first, "a.txt"),
        said(4, "user", "and b?"),
        second,
        ran(6, second, "b.txt"),
    ]

    messages = messages_of(Source(document=stream))

    assert sent(messages) == ["user hi", "user and b?", "assistant t1 t2", "tool t1", "tool t2"]
    assert kept(messages[2])["actions"][1]["id"] == 5
    assert healing.analyze(messages).findings == ()


def test_a_call_that_never_got_its_result_stays_unanswered_where_the_run_stopped() -> None:
    """OpenHands would leave such a turn out; here it stays where its first action came, with
    the results its other calls got, for healing to answer."""
    made_by = response("r1", "t1", "t2")
    first = run(2, made_by, "t1")
    stream = [said(1, "user", "hi"), first, said(3, "user", "hurry"), ran(4, first, "a.txt")]

    messages = messages_of(Source(document=stream))

    assert sent(messages) == ["user hi", "assistant t1 t2", "tool t1", "user hurry"]
    [unanswered] = healing.analyze(messages).unanswered
    assert (unanswered.tool_call_id, unanswered.declared_at) == ("t2", 1)
    after = healed(messages)
    assert healing.analyze(after).unanswered == ()
    assert every_provider_accepts(after)


def test_events_are_read_in_the_order_of_their_ids_and_the_conversation_says_so() -> None:
    action = run(2, response("r1", "t1"), "t1")
    stream = [said(1, "user", "hi"), ran(3, action, "a.txt"), action, said(4, "agent", "ok")]

    conversation = one(Source(document=stream))
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert sent(messages) == ["user hi", "assistant t1", "tool t1", "assistant ok"]
    assert healing.analyze(messages).findings == ()
    assert conversation.metadata["openhands"] == {"reordered_by_id": True}


def test_a_folders_event_files_joined_in_the_order_of_their_names_read_as_the_stream() -> None:
    """``jq -s . events/*.json`` lists ``10.json`` before ``2.json``."""
    stream = events("clean.json")
    by_name = sorted(stream, key=lambda event: f"{event['id']}.json")
    assert by_name != stream

    assert one(Source(document=by_name)).messages == one(Source(document=stream)).messages


def test_an_event_written_twice_is_read_once_and_the_repeat_named() -> None:
    stream = events("clean.json")

    reading = read(lines([*stream, stream[6]]))

    [conversation] = reading.conversations
    assert conversation.messages == one(Source(document=stream)).messages
    assert (
        Skipped("line 16", "a repeat of line 7 (the same id), which OpenHands holds as one event")
        in reading.skipped
    )
    assert "reordered_by_id" not in conversation.metadata["openhands"]


def test_events_never_added_to_a_stream_have_no_id_to_order_or_repeat_by() -> None:
    """OpenHands gives an event it never added to a stream the id -1 (the null
    observations padding a 2024 evaluation history's pairs): two of them are no repeat,
    and they move nothing to the front."""
    action = run(2, response("r1", "t1"), "t1")
    padding = {
        "id": -1,
        "timestamp": "2025-10-14T09:12:03.500000",
        "source": "agent",
        "message": "No observation",
        "observation": "null",
        "content": "",
        "extras": {},
    }
    stream = [said(1, "user", "hi"), action, ran(3, action, "a.txt"), padding, padding]
    stream.append(said(4, "agent", "ok"))

    reading = read(Source(document=stream))

    [conversation] = reading.conversations
    messages = healing.parse_messages(conversation.messages, json_checked=True)
    assert sent(messages) == ["user hi", "assistant t1", "tool t1", "assistant ok"]
    assert "reordered_by_id" not in conversation.metadata.get("openhands", {})
    assert not any("repeat" in skipped.why for skipped in reading.skipped)


def test_an_agent_sdk_event_written_twice_is_read_once_too() -> None:
    source = source_of(OWN / "sdk-v1-events.jsonl")
    assert source.lines is not None
    values: list[Any] = [entry.value for entry in source.lines]

    reading = read(lines([*values[:5], values[4], *values[5:]]))

    messages = healing.parse_messages(reading.conversations[0].messages, json_checked=True)
    assert messages == messages_of(source)
    assert (
        Skipped("line 6", "a repeat of line 5 (the same id), which OpenHands holds as one event")
        in reading.skipped
    )


def test_a_run_that_died_with_a_command_running_has_that_call_unanswered() -> None:
    conversation = one(source_of(OWN / "crashed.json"))
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert shape(messages) == ["user", "assistant[1]", "tool", "assistant[1]"]
    [unanswered] = healing.analyze(messages).unanswered
    assert unanswered.tool_call_id == "toolu_01V1u8hpBDjUPT7o922omEr4"
    assert conversation.metadata["openhands"]["agent_state"] == {"agent_state": "error"}
    after = healed(messages)
    assert after[-1].metadata == {"tool_call_id": unanswered.tool_call_id, "healed": True}


def test_a_call_whose_action_was_never_emitted_is_declared_and_unanswered() -> None:
    reading = reading_of(source_of(OWN / "crashed-eval-output.jsonl"))
    [conversation] = reading.conversations
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert shape(messages) == ["system", "user", "assistant[1]", "tool", "assistant[2]", "tool"]
    [unanswered] = healing.analyze(messages).unanswered
    assert unanswered.tool_call_id == "toolu_01ufeI3arMiv8SfjAX7DbA9f"
    assert unanswered.declared_at == 4


def test_an_evaluation_record_is_a_conversation_titled_by_its_instance() -> None:
    reading = reading_of(source_of(OWN / "crashed-eval-output.jsonl"))
    [conversation] = reading.conversations
    record = json.loads((OWN / "crashed-eval-output.jsonl").read_text())

    assert conversation.title == "acme__calc-42"
    metadata = conversation.metadata["openhands"]
    assert metadata == {k: v for k, v in record.items() if k != "history"}
    assert metadata["error"].startswith("RuntimeError: Agent reached maximum budget")
    assert [s.where for s in reading.skipped] == ["line 1: history[2]", "line 1: history[3]"]
    assert (reading.entries, reading.unit) == (8, "event")


def test_an_evaluation_record_read_as_one_json_object_is_read_too() -> None:
    record = json.loads((OWN / "crashed-eval-output.jsonl").read_text())

    reading = read(Source(document=record))

    assert reading.conversations[0].title == "acme__calc-42"
    assert [s.where for s in reading.skipped] == ["history[2]", "history[3]"]


def test_several_evaluation_records_are_one_conversation_each() -> None:
    record = json.loads((OWN / "crashed-eval-output.jsonl").read_text())
    other = {**copy.deepcopy(record), "instance_id": "acme__calc-43"}
    empty = {**record, "instance_id": "acme__calc-44", "history": []}

    reading = read(lines([record, other, empty]))

    assert [c.title for c in reading.conversations] == ["acme__calc-42", "acme__calc-43"]
    assert reading.skipped[-1].where == "line 3"
    assert "holds no message" in reading.skipped[-1].why


def test_openhands_own_result_for_an_action_it_never_ran_answers_the_call_as_an_error() -> None:
    stream = events("crashed.json")
    action = stream[9]
    stream.insert(
        10,
        {
            "id": 11,
            "timestamp": "2024-12-18T14:04:41.850001",
            "source": "agent",
            "message": "The action has not been executed.",
            "cause": 9,
            "observation": "error",
            "tool_call_metadata": action["tool_call_metadata"],
            "content": "The action has not been executed.",
            "extras": {"error_id": "AGENT_ERROR$ERROR_ACTION_NOT_EXECUTED_ERROR"},
        },
    )

    messages = messages_of(Source(document=stream))

    result = messages[-1]
    assert result.metadata["is_error"] is True
    assert kept(result)["not_executed"] is True
    assert healing.analyze(messages).unanswered == ()


def test_an_error_observation_of_a_command_that_ran_is_an_error_not_marked_as_never_run() -> None:
    stream = events("clean.json")
    stream[6] = {**stream[6], "observation": "error", "content": "bash: grep: not found"}

    result = messages_of(Source(document=stream))[3]

    assert result.metadata["is_error"] is True
    assert "not_executed" not in kept(result)


def test_a_stream_from_before_function_calling_reads_as_text_messages() -> None:
    stream = [
        {
            "id": 0,
            "timestamp": "2024-09-02T10:00:00.000001",
            "source": "user",
            "message": "List the files.",
            "action": "message",
            "args": {"content": "List the files.", "images_urls": None, "wait_for_response": False},
        },
        {
            "id": 1,
            "timestamp": "2024-09-02T10:00:02.000001",
            "source": "agent",
            "message": "Running command: ls",
            "action": "run",
            "args": {"command": "ls", "thought": "Let me look.", "keep_prompt": True},
        },
        {
            "id": 2,
            "timestamp": "2024-09-02T10:00:03.000001",
            "source": "agent",
            "message": "Command `ls` executed with exit code 0.",
            "cause": 1,
            "observation": "run",
            "content": "README.md  calc",
            "extras": {"command_id": -1, "command": "ls", "exit_code": 0},
        },
    ]

    messages = messages_of(Source(document=stream))

    assert [(m.role, m.content) for m in messages] == [
        ("user", "List the files."),
        ("assistant", "Let me look.\n\nRunning command: ls"),
        ("user", "README.md  calc"),
    ]
    assert pairs(messages) == ([], [])


def test_a_2024_evaluation_history_of_action_observation_pairs_is_read_pair_by_pair() -> None:
    stream = events("crashed.json")
    user, nothing, action, observation = stream[4], stream[6], stream[7], stream[8]
    record = {"instance_id": "x", "history": [[user, nothing], [action, observation]]}

    reading = read(Source(document=record))

    assert shape(healing.parse_messages(reading.conversations[0].messages)) == [
        "user",
        "assistant[1]",
        "tool",
    ]
    assert reading.skipped[0].where == "history[0][1]"


def test_the_apis_trajectory_object_and_a_single_event_file_are_read() -> None:
    stream = events("crashed.json")

    api = one(Source(document={"trajectory": stream}))
    single = one(Source(document=stream[4]))

    assert len(api.messages) == 4
    assert [m["role"] for m in single.messages] == ["user"]


def test_an_observations_copy_of_its_turns_response_is_kept_once_on_the_turn() -> None:
    messages = messages_of(source_of(OWN / "clean.json"))

    assert all(
        "model_response" not in kept(m)["tool_call_metadata"] for m in messages if m.role == "tool"
    )


def test_a_copy_of_a_response_that_differs_from_its_turns_is_kept_where_it_is() -> None:
    stream = events("clean.json")
    other = copy.deepcopy(stream[9]["tool_call_metadata"]["model_response"])
    other["usage"]["completion_tokens"] = 1
    stream[9]["tool_call_metadata"]["model_response"] = other
    stream[10]["tool_call_metadata"]["model_response"] = other

    messages = messages_of(Source(document=stream))

    turn, result = messages[4], messages[6]
    assert kept(turn)["model_response"] == stream[7]["tool_call_metadata"]["model_response"]
    assert "model_response" not in kept(turn)["actions"][0]["tool_call_metadata"]
    assert kept(turn)["actions"][1]["tool_call_metadata"]["model_response"] == other
    assert kept(result)["tool_call_metadata"]["model_response"] == other


def test_an_observation_whose_action_is_not_in_the_stream_keeps_its_response() -> None:
    stream = events("clean.json")
    response = stream[6]["tool_call_metadata"]["model_response"]
    del stream[5]

    messages = messages_of(Source(document=stream))

    result = messages[2]
    assert result.role == "tool"
    assert kept(result)["tool_call_metadata"]["model_response"] == response


def test_a_user_messages_images_become_image_parts() -> None:
    stream = events("clean.json")
    stream[1]["args"]["image_urls"] = ["data:image/png;base64,iVBORw0KGgo="]

    user = messages_of(Source(document=stream))[1]

    assert user.content == [
        {"type": "text", "text": stream[1]["args"]["content"]},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]


@pytest.mark.parametrize("urls", [None, []])
def test_a_user_message_without_images_is_its_text(urls: object) -> None:
    stream = events("clean.json")
    stream[1]["args"]["image_urls"] = urls

    user = messages_of(Source(document=stream))[1]

    assert user.content == stream[1]["args"]["content"]


@pytest.mark.parametrize(
    ("urls", "problem"),
    [
        (
            "data:image/png;base64,iVBORw0KGgo=",
            "args.image_urls: must be a list of URLs, not a string",
        ),
        (7, "args.image_urls: must be a list of URLs, not a number"),
        (True, "args.image_urls: must be a list of URLs, not a boolean"),
        ({"url": "https://x/a.png"}, "args.image_urls: must be a list of URLs, not an object"),
        (["https://x/a.png", 7], "args.image_urls[1]: must be a URL (a string), not a number"),
        ([None], "args.image_urls[0]: must be a URL (a string), not null"),
    ],
)
def test_image_urls_that_are_not_a_list_of_urls_are_refused_at_their_place(
    urls: object, problem: str
) -> None:
    stream = events("crashed.json")
    stream[4]["args"]["image_urls"] = urls

    assert problems_of(lines(stream)) == [f"line 5: {problem}"]


# A log is read as a log.


def test_junk_and_a_cut_off_last_line_are_skipped_and_named() -> None:
    stream = events("crashed.json")
    last = json.dumps(stream[-1])
    values: list[Any] = [
        *stream[:5],
        "not json at all",
        42,
        *stream[5:-1],
        last[: last.rindex(",")],
    ]

    reading = read(lines(values))

    why = {s.where: s.why for s in reading.skipped}
    assert why["line 6"].startswith("is not JSON")
    assert why["line 7"] == "is a number, not an event"
    assert "cut off" in why[f"line {len(values)}"]
    assert len(reading.conversations[0].messages) == 4


@pytest.mark.parametrize(
    ("index", "change", "problem"),
    [
        (
            8,
            lambda e: e["tool_call_metadata"].pop("tool_call_id"),
            "tool_call_metadata.tool_call_id: is missing",
        ),
        (
            7,
            lambda e: e["tool_call_metadata"].pop("model_response"),
            "tool_call_metadata.model_response: is missing",
        ),
        (
            7,
            lambda e: e["tool_call_metadata"]["model_response"]["choices"][0]["message"][
                "tool_calls"
            ][0].pop("id"),
            "tool_call_metadata.model_response.choices[0].message.tool_calls[0].id: is missing",
        ),
        (4, lambda e: e["args"].update(content=None), "args.content: must be a string"),
        (8, lambda e: e.update(content=["x"]), "content: must be a string"),
    ],
)
def test_what_is_wrong_inside_an_event_is_refused_at_its_line_and_path(
    index: int, change: Any, problem: str
) -> None:
    stream = events("crashed.json")
    change(stream[index])

    [found] = problems_of(lines(stream))

    assert found.startswith(f"line {index + 1}: {problem}")


def test_a_stream_of_state_changes_only_holds_no_conversation() -> None:
    stream = [e for e in events("crashed.json") if e.get("observation") == "agent_state_changed"]

    assert problems_of(Source(document=stream)) == [
        "file: holds no conversation: none of its 4 events is a message, an action or an "
        "observation of one"
    ]


# The agent SDK.


def test_agent_sdk_events_read_by_the_sdks_rules_with_finish_an_answered_call() -> None:
    reading = reading_of(source_of(OWN / "sdk-v1-events.jsonl"))
    [conversation] = reading.conversations
    messages = healing.parse_messages(conversation.messages, json_checked=True)

    assert shape(messages) == [
        "system",
        "user",
        "assistant[2]",
        "tool",
        "tool",
        "assistant[1]",
        "tool",
        "assistant[1]",
        "tool",
    ]
    declared, answered = pairs(messages)
    assert declared == answered
    assert calls(messages[7])[0]["function"]["name"] == "finish"
    assert healing.analyze(messages).findings == ()
    assert conversation.metadata["openhands"]["execution_status"] == "finished"
    assert [s.where for s in reading.skipped] == ["line 3", "line 12"]
    assert (reading.entries, reading.unit) == (12, "event")


def test_agent_sdk_calls_and_text_are_written_in_openais_spelling() -> None:
    messages = messages_of(source_of(OWN / "sdk-v1-events.jsonl"))

    turn = messages[2]
    assert turn.content == [{"type": "text", "text": "Let me find `divide` and look at the file."}]
    assert calls(turn)[0] == {
        "id": "toolu_01zwS25Bmw9ZtEyFbdDgWr5W",
        "type": "function",
        "function": {
            "name": "terminal",
            "arguments": '{"command": "grep -rn \\"def divide\\" calc", "security_risk": "LOW", '
            '"summary": "Locate divide"}',
        },
        "openhands": {"origin": "completion"},
    }
    assert [a["kind"] for a in kept(turn)["actions"]] == ["ActionEvent", "ActionEvent"]
    assert messages[3].content == [{"type": "text", "text": "calc/ops.py:9:def divide(a, b):"}]
    assert "part_keys" not in kept(messages[3])
    assert messages[0].content.startswith("You are OpenHands agent")  # type: ignore[union-attr]


def test_agent_sdk_errors_and_rejections_answer_their_calls() -> None:
    source = source_of(OWN / "sdk-v1-events.jsonl")
    assert source.lines is not None
    values: list[Any] = [entry.value for entry in source.lines]
    error = {
        "id": "0b7f4f0e-5f1e-4a62-9d1c-8f6f3c2b1a00",
        "timestamp": "2026-01-20T10:02:05.702511",
        "source": "agent",
        "tool_name": "terminal",
        "tool_call_id": "toolu_01zwS25Bmw9ZtEyFbdDgWr5W",
        "error": "Tool terminal crashed",
        "kind": "AgentErrorEvent",
    }
    rejection = {
        "id": "0b7f4f0e-5f1e-4a62-9d1c-8f6f3c2b1a01",
        "timestamp": "2026-01-20T10:02:05.761093",
        "source": "user",
        "tool_name": "file_editor",
        "tool_call_id": "toolu_010J34o7BNPHsN2FEhrexQYu",
        "rejection_reason": "not that file",
        "action_id": "82d4f4eb-6c9c-4372-a2f4-9f51f9570b09",
        "kind": "UserRejectObservation",
    }
    values[5:7] = [error, rejection]

    messages = messages_of(lines(values))

    assert (messages[3].content, messages[3].metadata["is_error"]) == (
        "Tool terminal crashed",
        True,
    )
    assert messages[4].content == "Action rejected: not that file"
    assert healing.analyze(messages).findings == ()


def test_an_agent_sdk_action_cut_off_before_its_observation_is_unanswered() -> None:
    source = source_of(OWN / "sdk-v1-events.jsonl")
    assert source.lines is not None

    messages = messages_of(lines([entry.value for entry in source.lines][:8]))

    [unanswered] = healing.analyze(messages).unanswered
    assert unanswered.tool_call_id == "toolu_01kGM8oQ0brDGXwcwgFNmsuu"


def test_a_text_parts_keys_other_than_the_defaults_are_kept() -> None:
    source = source_of(OWN / "sdk-v1-events.jsonl")
    assert source.lines is not None
    values: list[Any] = [entry.value for entry in source.lines]
    values[1]["llm_message"]["content"][0]["cache_prompt"] = True

    user = messages_of(lines(values))[1]

    assert user.content == [
        {"type": "text", "text": values[1]["llm_message"]["content"][0]["text"]}
    ]
    assert kept(user)["part_keys"] == {"0": {"cache_prompt": True}}


def test_the_thoughts_of_several_actions_of_one_response_keep_their_parts_keys_in_place() -> None:
    first, second = sdk_actions(2, response="r1")
    first["thought"] = [{"type": "text", "text": "a", "cache_prompt": True}]
    second["thought"] = [
        {"type": "text", "text": "b"},
        {"type": "text", "text": "c", "cache_prompt": True},
    ]

    [turn] = messages_of(Source(document=[first, second]))

    assert turn.content == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
        {"type": "text", "text": "c"},
    ]
    assert kept(turn)["part_keys"] == {"0": {"cache_prompt": True}, "2": {"cache_prompt": True}}


def test_the_calls_a_user_message_carries_are_kept_though_only_an_assistant_declares() -> None:
    source = source_of(OWN / "sdk-v1-events.jsonl")
    assert source.lines is not None
    values: list[Any] = [entry.value for entry in source.lines]
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    values[1]["llm_message"]["tool_calls"] = [call]

    user = messages_of(lines(values))[1]

    assert "tool_calls" not in user.metadata
    assert kept(user)["llm_message"]["tool_calls"] == [call]


def test_many_actions_of_one_response_are_one_turn_with_every_call() -> None:
    """(Built once, not rebuilt per action: benchmarks measure the speed.)"""
    actions = sdk_actions(5_000, response="r1")
    source = Source(lines=tuple(Entry(f"line {n}", a, True) for n, a in enumerate(actions, 1)))

    [turn] = read(source).conversations[0].messages

    assert len(turn["metadata"]["tool_calls"]) == len(turn["content"]) == 5_000


def test_an_agent_sdk_call_without_an_id_is_refused_at_its_place() -> None:
    source = source_of(OWN / "sdk-v1-events.jsonl")
    assert source.lines is not None
    values: list[Any] = [entry.value for entry in source.lines]
    del values[3]["tool_call"]["id"]

    assert problems_of(lines(values)) == ["line 4: tool_call.id: is missing"]


# Detection.


@pytest.mark.parametrize("path", sorted(OWN.iterdir()), ids=lambda p: p.name)
def test_every_fixture_fits_and_is_detected_as_an_openhands_event_stream(path: Path) -> None:
    source = source_of(path)

    assert fits(source)
    assert detect_source(source) is FORMAT


@pytest.mark.parametrize("path", sorted(OWN.glob("*.json")), ids=lambda p: p.name)
def test_a_stream_written_as_jsonl_fits_too(path: Path) -> None:
    values = json.loads(path.read_text())

    assert detect_source(lines(values)) is FORMAT


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
        [],
        [{"id": 1, "timestamp": "t", "source": "user"}],
        [{"id": "1", "timestamp": "t", "source": "user", "action": "message", "args": {}}],
        [{"id": 1, "timestamp": "t", "source": "user", "action": "message", "observation": "x"}],
        [{"id": True, "timestamp": "t", "source": "user", "action": "message"}],
        [{"id": 1, "timestamp": "t", "source": "user", "action": "message"}, {"role": "user"}],
        {"history": [{"role": "user", "content": "hi"}], "trajectory": [], "info": {}},
        {"history": []},
        {"title": "t", "source": "s", "messages": []},
    ],
)
def test_a_near_miss_does_not_fit(document: object) -> None:
    assert not fits(Source(document=document))


# Nothing a file holds breaks the reader.


def test_the_reader_imports_no_other_agent_runtimes_reader() -> None:
    runtimes = {
        module.rsplit(".", 1)[-1]
        for format in READABLE.values()
        if (module := format.read.__module__) != "buffers.healing.formats"
    }
    tree = ast.parse(Path(openhands_module.__file__).read_text())
    imported = {
        name.rsplit(".", 1)[-1]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for name in [node.module or "", *(alias.name for alias in node.names)]
    }

    assert {"swe_agent", "codex", "openhands"} <= runtimes
    assert not imported & (runtimes - {"openhands"})


SWAPS: list[object] = [{}, [], "", 7, True, None, [{}], ["x"]]
KINDS = ("action", "observation", "kind", "source", "role", "type")


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


def fixture_values(path: Path) -> list[Any]:
    source = source_of(path)
    if source.lines is not None:
        return [entry.value for entry in source.lines]
    assert isinstance(source.document, list)
    return source.document


@pytest.mark.parametrize("path", sorted(OWN.iterdir()), ids=lambda p: p.name)
def test_a_fixture_with_any_value_swapped_or_dropped_reads_or_is_refused_with_reasons(
    path: Path,
) -> None:
    values = fixture_values(path)
    before = copy.deepcopy(values)

    for change, changed in mutations(values):
        if isinstance(changed, list):  # lines of storable values, as parse_lines vouches
            source = Source(
                lines=tuple(Entry(f"line {n}", v, True) for n, v in enumerate(changed, 1))
            )
        else:
            source = Source(document=changed)
        try:
            reading = read(source)
        except InvalidInput:
            continue
        except Exception as error:  # what the reader let escape is the failure
            pytest.fail(f"{change}: {type(error).__name__}: {error}")
        for conversation in reading.conversations:
            try:
                healing.parse_messages(conversation.messages, json_checked=True)
            except InvalidInput as error:
                pytest.fail(f"{change}: read gave a message the app refuses: {error}")

    assert values == before


def sdk_actions(count: int, *, response: str) -> list[dict[str, Any]]:
    """``count`` agent SDK actions of one model response, each with a thought."""
    return [
        {
            "id": f"a{index}",
            "timestamp": "2026-01-20T10:02:03.000001",
            "source": "agent",
            "thought": [{"type": "text", "text": f"step {index}"}],
            "tool_call": {"id": f"call_{index}", "name": "terminal", "arguments": "{}"},
            "llm_response_id": response,
            "kind": "ActionEvent",
        }
        for index in range(count)
    ]
