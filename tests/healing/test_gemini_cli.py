"""Gemini CLI chats (both layouts) read into the stored shape: one assistant turn per gemini
message with its calls answered right after it, the log replayed as the CLI replays it,
notices kept aside, and every other format's files left alone."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buffers import healing
from buffers.healing import InvalidInput, Message, declared_call_ids, result_call_id
from buffers.healing.formats import (
    READABLE,
    Converted,
    Reading,
    Source,
    detect_source,
    gemini,
    parse_lines,
    write,
)
from buffers.healing.formats import _family as family
from buffers.healing.formats.gemini_cli import FORMAT, fits, read
from buffers.healing.messages import describe
from tests.healing.test_formats import ROUND_TRIPS, SAMPLES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OURS = FIXTURES / "gemini-cli"
HEADER = {"sessionId": "s-1", "projectHash": "h-1", "startTime": "2026-01-01T00:00:00Z"}
CHECKPOINT = "checkpoint-divide-by-zero.json"
RESTORE_CHECKPOINT = "2026-07-16T10-05-42_877Z-calc.py-replace.json"


def source_of(path: Path) -> Source:
    text = path.read_text()
    if path.suffix == ".jsonl":
        return parse_lines(text)
    try:
        return Source(document=json.loads(text))
    except json.JSONDecodeError:
        return parse_lines(text)


def log(*records: object) -> Source:
    return parse_lines("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records))


def reading(name: str) -> Reading:
    return read(source_of(OURS / name))


def conversation(name: str) -> Converted:
    [only] = reading(name).conversations
    return only


def messages_of(name: str) -> list[Message]:
    return healing.parse_messages(conversation(name).messages, json_checked=True)


def shape(messages: list[Message]) -> str:
    """``u a2 t t a0``: each row's role, an assistant turn with how many calls it declares."""
    return " ".join(
        f"a{len(declared_call_ids(m))}" if m.role == "assistant" else m.role[0] for m in messages
    )


def unanswered(messages: list[Message]) -> list[str]:
    return [call.tool_call_id for call in healing.analyze(messages).unanswered]


def problems_of(source: Source) -> list[str]:
    with pytest.raises(InvalidInput) as caught:
        read(source)
    return [str(problem) for problem in caught.value.problems]


def calls(message: Message) -> list[Any]:
    value = message.metadata["tool_calls"]
    assert isinstance(value, list)
    return value


def text(message: Message) -> str:
    assert isinstance(message.content, str)
    return message.content


def kept(message: Message) -> dict[str, Any]:
    value = message.metadata.get("gemini_cli", {})
    assert isinstance(value, dict)
    return value


def gemini_message(content: object = "", **fields: object) -> dict[str, Any]:
    return {"id": "g1", "timestamp": "t", "type": "gemini", "content": content, **fields}


def user_message(content: object, id: str = "u1") -> dict[str, Any]:
    return {"id": id, "timestamp": "t", "type": "user", "content": content}


def call(id: str, name: str = "read_file", **fields: object) -> dict[str, Any]:
    return {"id": id, "name": name, "args": {"file_path": "a.py"}, **fields}


def answered(id: str, response: dict[str, Any], name: str = "read_file") -> list[Any]:
    return [{"functionResponse": {"id": id, "name": name, "response": response}}]


# The fixtures, message by message.


def test_each_fixture_is_one_conversation_of_the_expected_turns() -> None:
    expected = {
        "clean.json": "u a2 t t a1 t a1 t a0",
        "crashed.json": "u a2 t t a1 t u a2",
        "error_result.json": "u a1 t a1 t u a0",
        "clean.jsonl": "u u a2 t t a2 t t a1 t a0",
        "crashed.jsonl": "u u a1 t a2 t t a1 t u a0",
        "skill_activation.jsonl": "u u a1 t a0 u a1 t a0",
        "rewound.jsonl": "u a1 t a0 u a0",
        "image_result.jsonl": "u a1 t a0",
        "killed_mid_tool.jsonl": "u a0",
        CHECKPOINT: "u u a1 t a1 t a0",
        RESTORE_CHECKPOINT: "u u a1 t a1 t a0 u a1",
    }

    assert {p.name: shape(messages_of(p.name)) for p in sorted(OURS.iterdir())} == expected


@pytest.mark.rule("MEM-11")
@pytest.mark.parametrize("name", sorted(p.name for p in OURS.iterdir()))
def test_every_result_directly_follows_the_turn_that_declares_its_call(name: str) -> None:
    messages = messages_of(name)
    analysis = healing.analyze(messages)

    assert [f.kind for f in analysis.findings if f.kind != "unanswered_call"] == []
    for index, message in enumerate(messages):
        if message.role == "tool":
            owner = analysis.declared_at[str(result_call_id(message))]
            assert all(m.role == "tool" for m in messages[owner + 1 : index])


def test_a_legacy_session_keeps_thoughts_tokens_and_call_details_in_its_namespace() -> None:
    messages = messages_of("clean.json")
    first = messages[1]

    assert first.content == (
        "I'll read the calculator module and run the test suite to reproduce the failure."
    )
    assert first.metadata["facts"] == {
        "time": "2026-03-24T14:05:45.208Z",
        "model": "gemini-3-flash-preview",
        "usage": {"input": 8421, "output": 38, "cached": 0, "reasoning": 187, "total": 8646},
    }
    assert kept(first)["id"] == "c9e4b2d6-1a7f-4e3c-9d58-0b6a3f2e7c91"
    assert kept(first)["thoughts"][0]["subject"] == "Reproducing the Failure"
    assert kept(first)["tokens"]["tool"] == 0
    [read_file, shell] = calls(first)
    assert read_file["function"] == {"name": "read_file", "arguments": '{"file_path":"calc.py"}'}
    assert shell["gemini_cli"]["displayName"] == "Shell"
    assert shell["gemini_cli"]["status"] == "success"
    assert text(messages[3]).startswith("Output: .F.")
    assert "is_error" not in messages[3].metadata
    assert messages[3].metadata["facts"] == {"time": "2026-03-24T14:05:47.934Z"}
    edit = calls(messages[4])[0]["gemini_cli"]
    assert edit["resultDisplay"]["fileName"] == "calc.py"


def test_a_plain_result_is_not_kept_twice() -> None:
    tool = messages_of("clean.json")[2]

    assert tool.metadata["tool_call_id"] == "read_file_1774361145210_0"
    assert "gemini_cli" not in tool.metadata


def test_the_session_fields_stay_on_the_conversation_and_the_summary_is_its_title() -> None:
    found = conversation("clean.json")

    assert found.title == "Fix floor division bug in calc divide"
    assert found.metadata["gemini_cli"]["layout"] == "json"
    assert found.metadata["gemini_cli"]["session"] == {
        "sessionId": "7f3c2a91-4b6e-4d2a-9c1f-3e8b5d0a6c47",
        "projectHash": "deaadaddd581e16a660cef88e61ad8a5edebf6afc4ff764e2ece006594dcb007",
        "startTime": "2026-03-24T14:05:11.482Z",
        "lastUpdated": "2026-03-24T14:06:06.783Z",
        "kind": "main",
        "summary": "Fix floor division bug in calc divide",
    }
    assert reading("clean.json").entries == 7
    assert reading("clean.json").unit == "message"


def test_info_error_and_warning_messages_are_notices_kept_with_their_place() -> None:
    notices = conversation("clean.json").metadata["gemini_cli"]["notices"]

    assert [(n["at"], n["type"]) for n in notices] == [(0, "info"), (0, "info")]
    assert notices[1]["content"].startswith("Memory reloaded successfully.")
    assert [
        (n["at"], n["type"], n["content"])
        for n in conversation("crashed.json").metadata["gemini_cli"]["notices"]
    ] == [(6, "info", "Request cancelled.")]
    [error] = conversation("error_result.json").metadata["gemini_cli"]["notices"]
    assert (error["at"], error["type"]) == (5, "error")
    assert all(m.role != "system" for m in messages_of("error_result.json"))


@pytest.mark.rule("MEM-11")
def test_calls_with_no_result_or_a_status_not_final_are_unanswered() -> None:
    messages = messages_of("crashed.json")

    assert unanswered(messages) == [
        "run_shell_command_1774516388906_0",
        "read_file_1774516388907_1",
    ]
    last = calls(messages[-1])
    assert [c["gemini_cli"]["status"] for c in last] == ["executing", "scheduled"]


def test_a_cancelled_call_is_answered_as_an_error() -> None:
    cancelled = messages_of("crashed.json")[5]

    assert cancelled.metadata["tool_call_id"] == "run_shell_command_1774516363117_0"
    assert cancelled.metadata["is_error"] is True
    assert cancelled.content == "[Operation Cancelled] Reason: User denied execution."


def test_a_failed_call_is_an_error_result_and_a_string_prompt_stays_a_string() -> None:
    messages = messages_of("error_result.json")

    assert messages[0].content == "What does calculator.py do?"
    assert messages[2].metadata["is_error"] is True
    assert messages[2].content == "File not found: /home/dana/projects/calc-app/calculator.py"
    assert "is_error" not in messages[4].metadata
    assert conversation("error_result.json").title == "Explain the calc module"


@pytest.mark.rule("MEM-3")
def test_healing_a_crashed_chat_answers_each_open_call_right_after_its_turn() -> None:
    messages = messages_of("crashed.json")

    healed = healing.apply_plan(messages, healing.plan_heal(healing.facts_from_messages(messages)))

    assert shape(healed) == "u a2 t t a1 t u a2 t t"
    assert [result_call_id(m) for m in healed[-2:]] == unanswered(messages)
    assert all(m.content == healing.INTERRUPTED_TEXT for m in healed[-2:])
    assert unanswered(healed) == []


# The JSONL log, replayed.


def test_a_message_written_again_is_read_once_with_its_last_body() -> None:
    messages = messages_of("clean.jsonl")
    first = messages[2]

    assert kept(first)["id"] == "8d4f2b6a-1e97-4c30-a5d8-3b7e0f9c2a41"
    assert declared_call_ids(first) == [
        "read_file__read_file_1784017904781_0",
        "read_file__read_file_1784017904782_1",
    ]
    assert sum(len(declared_call_ids(m)) for m in messages) == 5
    assert reading("clean.jsonl").entries == 24
    assert reading("clean.jsonl").skipped == []


def test_results_the_cli_echoes_as_user_messages_are_read_once() -> None:
    messages = messages_of("clean.jsonl")

    assert [m.role for m in messages].count("tool") == 5
    assert kept(messages[3])["echoed_by"] == "f6a0d3c9-4b18-4e7a-9c25-d8b1e6f3a074"


def test_the_environment_context_is_a_user_turn_the_cli_does_not_resume_with() -> None:
    messages = messages_of("clean.jsonl")

    assert text(messages[0]).startswith("<session_context>\nThis is the Gemini CLI.")
    assert kept(messages[0]) == {
        "id": "d04923d38bb0f6017037e74183378ef4",
        "ignored_on_resume": True,
    }
    assert "ignored_on_resume" not in kept(messages[1])


def test_set_records_make_the_session_fields_and_the_title() -> None:
    found = conversation("clean.jsonl")
    kept_here = found.metadata["gemini_cli"]

    assert found.title == "Add modulo function with test to calc app"
    assert kept_here["layout"] == "jsonl"
    assert kept_here["session"]["lastUpdated"] == "2026-07-14T08:32:19.204Z"
    assert kept_here["session"]["memoryScratchpad"]["validationStatus"] == "passed"
    assert "messages" not in kept_here["session"]
    assert [(n["at"], n["type"]) for n in kept_here["notices"]] == [(11, "info")]


def test_what_a_snapshot_leaves_out_is_skipped_and_said() -> None:
    skipped = reading("crashed.jsonl").skipped

    assert [s.where for s in skipped] == ["line 18", "line 22"]
    assert all("$set.messages snapshot on line 24 leaves out" in s.why for s in skipped)
    contents = [m.content for m in messages_of("crashed.jsonl") if m.role == "user"]
    assert contents.count(contents[-1]) == 1


def test_a_snapshot_message_given_as_parts_keeps_its_thoughts_and_signatures() -> None:
    messages = messages_of("crashed.jsonl")
    grep = messages[2]

    assert grep.content == "I'll find every use of `subtract` first."
    assert [p.get("thought", False) for p in kept(grep)["content"]] == [True, False, False]
    [declared] = calls(grep)
    assert declared["gemini"]["part"]["thoughtSignature"].startswith("CiQBjz1r")
    assert declared["gemini_cli"]["displayName"] == "SearchText"
    edits = messages[4]
    assert [c.get("gemini", {}).get("part", {}).keys() for c in calls(edits)] == [
        {"thoughtSignature"},
        set(),
    ]


def test_a_batch_result_holding_every_call_of_the_batch_answers_each_with_its_own() -> None:
    messages = messages_of("crashed.jsonl")

    assert [(text(m)[:22], m.metadata.get("is_error", False)) for m in messages[5:7]] == [
        ("Successfully modified ", False),
        ("Failed to edit, 0 occu", True),
    ]
    assert "result" not in kept(messages[5])
    assert messages[8].metadata["is_error"] is True


def test_a_user_prompt_expanded_from_files_is_its_whole_text_and_keeps_what_was_typed() -> None:
    prompt = messages_of("crashed.jsonl")[9]

    assert text(prompt).startswith("Fix the import in @test_calc.py, then run only that file.")
    assert "--- End of content ---" in text(prompt)
    assert kept(prompt)["displayContent"] == [
        {"text": "Fix the import in @test_calc.py, then run only that file."}
    ]


@pytest.mark.rule("MEM-11")
def test_a_skill_activation_recorded_twice_is_declared_and_answered_once() -> None:
    messages = messages_of("skill_activation.jsonl")

    assert declared_call_ids(messages[2]) == ["activate_skill-1784560848019-7e3a91c05bd2f"]
    assert messages[4].content == ""
    assert kept(messages[4])["content"] == [
        {"functionCall": {"name": "activate_skill", "args": {"name": "pytest-runner"}}}
    ]
    assert [result_call_id(m) for m in messages if m.role == "tool"] == [
        "activate_skill-1784560848019-7e3a91c05bd2f",
        "run_shell_command__run_shell_command_1784560852846_0",
    ]


def test_a_rewind_removes_its_message_and_every_later_one() -> None:
    found = reading("rewound.jsonl")
    [only] = found.conversations
    messages = healing.parse_messages(only.messages)

    assert [m.content for m in messages if m.role == "user"] == [
        "List the functions in calc.py.",
        "Add a docstring to divide.",
    ]
    assert "notices" not in only.metadata["gemini_cli"]
    assert [s.where for s in found.skipped] == ["line 9", "line 13", "line 14", "line 21"]
    assert all("$rewindTo on line 16 removes" in s.why for s in found.skipped[:3])
    assert "the line is cut off" in found.skipped[3].why


def test_a_torn_last_line_leaves_the_body_written_before_it() -> None:
    last = messages_of("rewound.jsonl")[-1]

    assert last.content == "I'll add a one-line docstring to `divide`."
    assert declared_call_ids(last) == []


def test_a_rewind_to_an_unknown_id_removes_every_message() -> None:
    found = read(
        log(HEADER, user_message("one", "a"), {"$rewindTo": "zzz"}, user_message("two", "b"))
    )

    assert [row["content"] for row in found.conversations[0].messages] == ["two"]
    assert [s.where for s in found.skipped] == ["line 2"]


def test_a_message_written_again_after_a_rewind_goes_to_the_end() -> None:
    found = read(
        log(
            HEADER,
            user_message("one", "a"),
            user_message("two", "b"),
            {"$rewindTo": "a"},
            user_message("two again", "b"),
            user_message("one again", "a"),
        )
    )

    assert [row["content"] for row in found.conversations[0].messages] == ["two again", "one again"]
    assert found.skipped == []


def test_lines_that_are_not_records_are_skipped_and_said_never_fatal() -> None:
    found = read(
        log(HEADER, "[1, 2]", {"event": "x"}, "not json", user_message("hi"), '{"id": "u2", "ty')
    )

    assert [row["content"] for row in found.conversations[0].messages] == ["hi"]
    assert [(s.where, s.why.split(":")[0]) for s in found.skipped] == [
        ("line 2", "is a list, not a record"),
        ("line 3", "is not a Gemini CLI record"),
        ("line 4", "is not JSON"),
        ("line 6", "is not JSON"),
    ]
    assert found.entries == 2


def test_a_log_sent_as_a_json_array_reads_like_its_lines() -> None:
    document = [HEADER, user_message("hi"), gemini_message("hello")]

    assert fits(Source(document=document))
    found = read(Source(document=document))
    assert [row["content"] for row in found.conversations[0].messages] == ["hi", "hello"]
    assert found.unit == "record"


def test_a_legacy_session_written_on_one_line_is_read_from_its_header() -> None:
    found = read(log({**HEADER, "messages": [user_message("hi"), gemini_message("hello")]}))

    assert [row["role"] for row in found.conversations[0].messages] == ["user", "assistant"]


# Pairing rules on small logs.


@pytest.mark.rule("MEM-11")
def test_a_function_call_in_content_without_an_answer_is_unanswered() -> None:
    turn = gemini_message([{"functionCall": {"id": "c1", "name": "glob", "args": {}}}])
    messages = healing.parse_messages(read(log(HEADER, turn)).conversations[0].messages)

    assert unanswered(messages) == ["c1"]


@pytest.mark.rule("MEM-11")
def test_a_function_call_in_content_is_answered_by_the_next_user_message() -> None:
    turn = gemini_message([{"functionCall": {"id": "c1", "name": "glob", "args": {}}}])
    echo = user_message(answered("c1", {"output": "a.py"}, "glob"), "u2")
    messages = healing.parse_messages(read(log(HEADER, turn, echo)).conversations[0].messages)

    assert shape(messages) == "a1 t"
    assert messages[1].content == "a.py"
    assert kept(messages[1])["message_id"] == "u2"


@pytest.mark.rule("MEM-11")
def test_calls_and_responses_without_ids_pair_by_name_with_a_made_up_id() -> None:
    turn = gemini_message([{"functionCall": {"name": "glob", "args": {}}}])
    echo = user_message([{"functionResponse": {"name": "glob", "response": {"output": "x"}}}])
    messages = healing.parse_messages(read(log(HEADER, turn, echo)).conversations[0].messages)

    assert declared_call_ids(messages[0]) == ["gemini_synth_g1_0"]
    assert result_call_id(messages[1]) == "gemini_synth_g1_0"
    assert calls(messages[0])[0]["gemini"] == {"synthesized_id": True}
    assert messages[1].metadata["gemini"] == {"synthesized_id": True}


def test_a_result_for_no_call_is_kept_as_an_orphan() -> None:
    echo = user_message(answered("nobody", {"output": "x"}, "glob"))
    messages = healing.parse_messages(
        read(log(HEADER, user_message("hi", "u0"), echo)).conversations[0].messages
    )

    assert [f.kind for f in healing.analyze(messages).findings] == ["orphan_result"]
    assert messages[1].metadata["gemini"] == {"name": "glob"}


@pytest.mark.rule("MEM-11")
@pytest.mark.parametrize(
    "entry",
    [
        call("c1", status="success"),
        call("c1", status="success", result=None),
        call("c1", status="success", result=[]),
        call("c1", status="awaiting_approval", result=answered("c1", {"output": "x"})),
        call("c1", status="success", result=answered("other", {"output": "x"})),
    ],
    ids=["no result", "null", "empty", "not finished", "another call's"],
)
def test_a_call_without_its_own_final_result_is_unanswered(entry: dict[str, Any]) -> None:
    turn = gemini_message("", toolCalls=[entry])
    messages = healing.parse_messages(read(log(HEADER, turn)).conversations[0].messages)

    assert unanswered(messages) == ["c1"]


def test_a_result_part_without_an_id_answers_its_call() -> None:
    result = [{"functionResponse": {"name": "read_file", "response": {"output": "x"}}}]
    turn = gemini_message("", toolCalls=[call("c1", status="success", result=result)])
    messages = healing.parse_messages(read(log(HEADER, turn)).conversations[0].messages)

    assert shape(messages) == "a1 t"
    assert kept(messages[1])["result"] == result


IMAGE = {"inlineData": {"mimeType": "image/png", "data": "AA=="}}


@pytest.mark.parametrize(
    ("result", "content", "is_error"),
    [
        ("plain text", "plain text", False),
        (
            answered("c1", {"output": "partial", "error": "[Operation Cancelled] x"}),
            "partial\n[Operation Cancelled] x",
            True,
        ),
        (
            answered("c1", {"llmContent": "x", "returnDisplay": "y"}),
            '{"llmContent":"x","returnDisplay":"y"}',
            False,
        ),
        ([*answered("c1", {}), IMAGE], [IMAGE], False),
    ],
    ids=["string", "output and error", "other keys", "binary"],
)
def test_each_result_shape_becomes_tool_content(
    result: object, content: object, is_error: bool
) -> None:
    turn = gemini_message("", toolCalls=[call("c1", status="success", result=result)])
    tool = read(log(HEADER, turn)).conversations[0].messages[1]

    assert tool["content"] == content
    assert tool["metadata"].get("is_error", False) is is_error


def test_user_parts_that_are_not_all_text_stay_parts() -> None:
    rows = read(log(HEADER, user_message([{"text": "look"}, IMAGE]))).conversations[0].messages

    assert rows[0]["content"] == [{"type": "text", "text": "look"}, IMAGE]


@pytest.mark.parametrize("text", ["/memory refresh", "? help", "  ", "<hook_context>x"])
def test_user_text_the_cli_leaves_out_on_resume_is_marked(text: str) -> None:
    rows = read(log(HEADER, user_message(text))).conversations[0].messages

    assert rows[0]["metadata"]["gemini_cli"]["ignored_on_resume"] is True


# Errors: said where they are, all at once.


def test_what_is_wrong_inside_a_message_is_named_at_its_place() -> None:
    document = {
        **HEADER,
        "messages": [
            user_message(7),
            gemini_message(
                "",
                toolCalls=[{"name": "f", "args": []}, call("c2", result=[{"functionResponse": 1}])],
            ),
            {"id": "x", "type": 3, "content": ""},
        ],
    }

    assert problems_of(Source(document=document)) == [
        "messages[0].content: must be a string or a list of parts, not a number",
        "messages[1].toolCalls[0].id: is missing",
        "messages[1].toolCalls[0].args: must be an object, not a list",
        "messages[1].toolCalls[1].result[0].functionResponse: must be an object, not a number",
        "messages[2].type: must be a string, not a number",
    ]


def test_a_problem_in_a_log_names_its_line_and_the_path_inside_the_record() -> None:
    snapshot = {"$set": {"messages": [gemini_message([{"functionCall": {"args": {}}}])]}}
    turn = gemini_message("", toolCalls=[call("c1", args={"x": float("nan")})])
    turn["id"] = "g2"

    assert problems_of(log(HEADER, snapshot, turn)) == [
        "line 2: $set.messages[0].content[0].functionCall.name: is missing",
        "line 3: toolCalls[0].args.x: holds a number that JSON cannot carry (NaN or infinity)",
    ]


def test_a_message_the_replay_removed_is_not_checked() -> None:
    broken = {"id": "b", "type": "user", "content": 7}
    found = read(log(HEADER, user_message("hi", "a"), broken, {"$rewindTo": "b"}))

    assert [row["content"] for row in found.conversations[0].messages] == ["hi"]


def test_a_value_that_cannot_be_stored_is_named_at_its_place() -> None:
    """(A U+0000 or a lone surrogate is replaced, not refused: test_storable_copy.py.)"""
    deep = json.loads("[" * 70 + "]" * 70)
    assert problems_of(log(HEADER, {"$set": {"summary": deep}}, user_message("x"))) == [
        "line 2: $set.summary: nests arrays or objects more than 64 levels deep"
    ]


@pytest.mark.parametrize(
    ("source", "sentence"),
    [
        (log(HEADER), "holds no conversation: no user or gemini message (nothing)"),
        (
            Source(document={**HEADER, "messages": [{"id": "i", "type": "info", "content": "x"}]}),
            "holds no conversation: no user or gemini message (only 1 notice)",
        ),
        (
            log(HEADER, user_message("hi"), {"$set": {"messages": []}}),
            "holds no conversation: no user or gemini message (nothing)",
        ),
    ],
    ids=["header only", "notices only", "emptied by a snapshot"],
)
def test_a_chat_with_no_conversation_is_refused(source: Source, sentence: str) -> None:
    assert problems_of(source) == [f"file: {sentence}"]


# The signature: this format's files and no other's.


@pytest.mark.parametrize("name", sorted(p.name for p in OURS.iterdir()))
def test_every_fixture_fits_and_no_provider_format_claims_it(name: str) -> None:
    source = source_of(OURS / name)

    assert fits(source)
    assert source.is_lines or family(source.document) is None


OTHERS = sorted(p for p in FIXTURES.glob("*/*") if p.is_file() and p.parent.name != "gemini-cli")


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_other_formats_fixture_fits(path: Path) -> None:
    assert not fits(source_of(path))


GEMINI_FILES: list[object] = [
    SAMPLES["gemini"]["contents"],
    {"history": [{"role": "user", "content": "hi", "agent": "main"}]},
    [{"sessionId": "s", "messageId": 0, "timestamp": "t", "type": "user", "message": "/help"}],
    {"sessionId": "s", "projectHash": "h", "messages": [{"role": "user", "content": "hi"}]},
    {"sessionId": "s", "projectHash": "h"},
    {"title": "t", "messages": [{"role": "user", "content": "hi", "metadata": {}}]},
]


@pytest.mark.parametrize(
    "document",
    [*(document for _, document in ROUND_TRIPS), *GEMINI_FILES],
    ids=lambda d: json.dumps(d)[:40],
)
def test_no_provider_body_bare_checkpoint_or_prompt_log_fits(document: object) -> None:
    assert not fits(Source(document=document))


def test_a_claude_code_or_codex_log_does_not_fit() -> None:
    claude = {"type": "user", "sessionId": "s", "uuid": "u", "message": {"role": "user"}}
    codex = {"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}

    assert not fits(log(claude, {**claude, "projectHash": "h"}))
    assert not fits(log(codex))
    assert not fits(log({**HEADER, "type": "session_meta"}))


def test_the_format_is_registered_as_a_gemini_cli_log() -> None:
    registered = READABLE["gemini-cli"]

    assert registered is FORMAT
    assert registered.named == "a Gemini CLI chat"
    assert registered.provider == "gemini"
    assert registered.lines is True
    assert registered.write_native is None


def test_a_healed_chat_exports_to_gemini_with_each_call_answered_and_its_signature() -> None:
    messages = messages_of("crashed.jsonl")
    healed = healing.apply_plan(messages, healing.plan_heal(healing.facts_from_messages(messages)))

    body = gemini.write(healed, {})

    model = body["contents"][2]
    assert model["parts"][-1]["thoughtSignature"].startswith("CiQBjz1r")
    assert model["parts"][-1]["functionCall"]["id"] == "grep_search__grep_search_1784196164533_0"
    again = healing.parse_messages(gemini.read(body).messages)
    assert unanswered(again) == []


# Checkpoints: /chat save and /restore.


def test_a_chat_save_checkpoint_reads_its_history_as_gemini_contents_keeping_its_auth_type() -> (
    None
):
    history = json.loads((OURS / CHECKPOINT).read_text())["history"]
    found = reading(CHECKPOINT)

    [only] = found.conversations
    assert only.messages == gemini.read(history).messages
    assert only.metadata == {
        "gemini_cli": {"layout": "chat-checkpoint", "checkpoint": {"authType": "oauth-personal"}}
    }
    assert (found.entries, found.unit) == (7, "checkpoint content")
    assert unanswered(messages_of(CHECKPOINT)) == []


def test_a_restore_checkpoint_reads_its_client_history_keeping_the_call_it_was_made_for() -> None:
    document = json.loads((OURS / RESTORE_CHECKPOINT).read_text())
    found = conversation(RESTORE_CHECKPOINT)

    assert found.messages == gemini.read(document["clientHistory"]).messages
    assert found.metadata["gemini_cli"] == {
        "layout": "restore-checkpoint",
        "checkpoint": {
            key: document[key] for key in ("history", "toolCall", "commitHash", "messageId")
        },
    }
    assert unanswered(messages_of(RESTORE_CHECKPOINT)) == ["replace__replace_1784196342877_0"]


@pytest.mark.parametrize("name", [CHECKPOINT, RESTORE_CHECKPOINT])
def test_a_checkpoint_is_detected_as_a_gemini_cli_file(name: str) -> None:
    assert detect_source(source_of(OURS / name)) is FORMAT


def test_a_restore_checkpoint_without_client_history_is_refused_saying_why() -> None:
    document = {
        "history": [{"type": "user", "text": "fix it", "id": 1}],
        "toolCall": {"name": "replace", "args": {}},
        "commitHash": "7c1e4b9",
    }

    assert fits(Source(document=document))
    assert problems_of(Source(document=document)) == [
        "clientHistory: is missing: without it a /restore checkpoint holds no conversation "
        "(its history is the CLI's display items, not the contents sent to the model)"
    ]


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (
            {"history": [{"role": "model", "parts": [{"functionCall": {}}]}], "authType": "x"},
            "history[0].parts[0].functionCall.name: is missing",
        ),
        (
            {"history": 7, "authType": "x"},
            "history: must be a list of Gemini contents, not a number",
        ),
        ({"history": [], "authType": "x"}, "history: holds no conversation: it is empty"),
        (
            {"clientHistory": [{"role": "user"}], "toolCall": {"name": "replace", "args": {}}},
            "clientHistory[0].parts: is missing",
        ),
    ],
    ids=["bad content", "not a list", "empty", "restore"],
)
def test_what_is_wrong_in_a_checkpoint_is_named_at_its_place(
    document: dict[str, Any], problem: str
) -> None:
    assert problems_of(Source(document=document)) == [problem]


# Images nested in a result, as the CLI sends them to gemini-3 models.

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_an_image_nested_in_a_result_goes_back_nested_to_gemini_and_the_text_elsewhere() -> None:
    """The image a gemini-3 model's tool gave is kept for the Gemini export, which nests it
    again; the content is the text, which the other providers' exports carry (they have
    no place for a tool's Gemini image)."""
    messages = messages_of("image_result.jsonl")
    tool = messages[2]

    assert tool.content == "Binary content provided (1 item(s))."
    assert "gemini_cli" not in tool.metadata
    [part] = gemini.write(messages, {})["contents"][2]["parts"]
    assert part == {
        "functionResponse": {
            "id": "read_file__read_file_1784277612540_0",
            "name": "read_file",
            "response": {"output": "Binary content provided (1 item(s))."},
            "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}],
        }
    }
    [result] = write(messages, "anthropic")["messages"][2]["content"]
    assert result["content"] == "Binary content provided (1 item(s))."
    chat = write(messages, "openai-chat")["messages"]
    assert [m["content"] for m in chat if m["role"] == "tool"] == [tool.content]


def test_an_image_beside_a_result_goes_back_to_gemini_beside_its_response() -> None:
    """Before gemini-3 a tool's image came beside its ``functionResponse``, as a part of its
    own: the Gemini export writes it there again, not as JSON inside the response (which
    Gemini takes, but its model reads as text)."""
    response = {"output": "Binary content provided (1 item(s))."}
    result = [*answered("c1", response), IMAGE]
    turn = gemini_message("", toolCalls=[call("c1", status="success", result=result)])
    messages = healing.parse_messages(read(log(HEADER, turn)).conversations[0].messages)

    assert gemini.write(messages, {})["contents"][1]["parts"] == [
        {"functionResponse": {"id": "c1", "name": "read_file", "response": response}},
        IMAGE,
    ]


def test_an_image_nested_in_a_result_a_user_message_gives_goes_back_nested_too() -> None:
    response = {"output": "Binary content provided (1 item(s))."}
    nested = {
        "functionResponse": {
            "id": "c1",
            "name": "read_file",
            "response": response,
            "parts": [IMAGE],
        }
    }
    turn = gemini_message([{"functionCall": {"id": "c1", "name": "read_file", "args": {}}}])
    rows = read(log(HEADER, turn, user_message([nested]))).conversations[0].messages

    assert rows[1]["content"] == response["output"]
    written = gemini.write(healing.parse_messages(rows), {})
    assert written["contents"][1]["parts"] == [nested]


# A run stopped while its tools ran: the CLI had not recorded the calls.


def test_a_last_gemini_message_with_no_text_and_no_calls_is_marked_and_said() -> None:
    found = reading("killed_mid_tool.jsonl")
    [only] = found.conversations
    last = only.messages[-1]

    assert last["metadata"]["gemini_cli"]["calls_not_recorded"] is True
    assert "tool_calls" not in last["metadata"]
    [said] = found.skipped
    assert said.where == "line 6"
    assert "the run most likely stopped while its tool calls ran" in said.why
    assert "calls_not_recorded" in said.why


def test_a_single_object_chat_ending_on_such_a_message_is_marked_and_said_too() -> None:
    found = read(Source(document={**HEADER, "messages": [user_message("go"), gemini_message("")]}))

    assert [s.where for s in found.skipped] == ["messages[1]"]
    assert found.conversations[0].messages[-1]["metadata"]["gemini_cli"]["calls_not_recorded"]


@pytest.mark.parametrize(
    "records",
    [
        [gemini_message(""), user_message("still there?", id="u2")],
        [gemini_message("Done.")],
        [gemini_message("", toolCalls=[call("c1", status="executing")])],
    ],
    ids=["not last", "with text", "with calls"],
)
def test_a_gemini_message_with_text_calls_or_a_successor_is_not_marked(
    records: list[dict[str, Any]],
) -> None:
    found = read(log(HEADER, user_message("go"), *records))

    assert found.skipped == []
    rows = found.conversations[0].messages
    assert not any("calls_not_recorded" in r["metadata"].get("gemini_cli", {}) for r in rows)


# Found in review: each was a crash, a silent loss or a slow read.


@pytest.mark.parametrize("status", [{}, [], 3], ids=["object", "list", "number"])
def test_a_call_status_that_is_not_a_string_is_refused_at_its_place(status: object) -> None:
    turn = gemini_message("", toolCalls=[call("c1", status=status, result="x")])

    assert problems_of(log(HEADER, turn)) == [
        f"line 2: toolCalls[0].status: must be a string, not {describe(status)}"
    ]


def test_text_beside_an_echoed_result_is_a_user_turn_of_its_own() -> None:
    turn = gemini_message("", toolCalls=[call("c1", status="success", result="x")])
    echo = user_message([*answered("c1", {"output": "x"}), {"text": "now fix it"}], "u2")
    messages = healing.parse_messages(read(log(HEADER, turn, echo)).conversations[0].messages)

    assert shape(messages) == "a1 t u"
    assert messages[2].content == "now fix it"
    assert kept(messages[1])["echoed_by"] == "u2"
    assert kept(messages[2])["id"] == "u2"


def test_an_echo_that_differs_from_the_result_read_is_kept_on_its_tool_row() -> None:
    turn = gemini_message("", toolCalls=[call("c1", status="success", result="x")])
    part = answered("c1", {"output": "something else"})[0]
    messages = healing.parse_messages(
        read(log(HEADER, turn, user_message([part], "u2"))).conversations[0].messages
    )

    assert shape(messages) == "a1 t"
    assert messages[1].content == "x"
    assert kept(messages[1])["echoes"] == [{"message_id": "u2", "part": part}]
    assert all("echoes" not in kept(m) for m in messages_of("clean.jsonl"))


@pytest.mark.rule("MEM-11")
def test_calls_of_one_name_without_ids_take_the_next_messages_ids_in_order() -> None:
    glob = {"functionCall": {"name": "glob", "args": {}}}
    turn = gemini_message([glob, glob])
    echo = user_message([*answered("r1", {"output": "a"}, "glob"), *answered("r2", {}, "glob")])
    messages = healing.parse_messages(read(log(HEADER, turn, echo)).conversations[0].messages)

    assert declared_call_ids(messages[0]) == ["r1", "r2"]
    assert shape(messages) == "a2 t t"
    assert unanswered(messages) == []


@pytest.mark.rule("MEM-11")
def test_made_up_ids_never_repeat_so_no_call_is_lost() -> None:
    glob = [{"functionCall": {"name": "glob", "args": {}}}]
    document = {
        **HEADER,
        "messages": [
            {"type": "gemini", "content": glob},
            {"type": "user", "content": "go on"},
            {"type": "gemini", "content": glob},
            {"id": "g1", "type": "gemini", "content": glob},
            {"id": "g1", "type": "gemini", "content": glob},
        ],
    }
    messages = healing.parse_messages(read(Source(document=document)).conversations[0].messages)

    assert [declared_call_ids(m) for m in messages if m.role == "assistant"] == [
        ["gemini_synth__0"],
        ["gemini_synth__0_2"],
        ["gemini_synth_g1_0"],
        ["gemini_synth_g1_0_2"],
    ]


def test_thousands_of_calls_answered_by_the_next_message_each_take_their_own_response() -> None:
    """(Their pairing is indexed by name once per turn: benchmarks measure the speed.)"""
    count = 10_000
    turn = gemini_message([{"functionCall": {"name": f"f{i}", "args": {}}} for i in range(count)])
    echo = user_message(
        [answered(f"c{i}", {"output": "ok"}, f"f{i}")[0] for i in range(count)], "u2"
    )
    source = log(HEADER, turn, echo)

    rows = read(source).conversations[0].messages

    assert len(rows[0]["metadata"]["tool_calls"]) == count
    assert [r["metadata"]["tool_call_id"] for r in rows[1 : count + 1]] == [
        f"c{i}" for i in range(count)
    ]


@pytest.mark.parametrize(
    "messages",
    [[], [{"id": "u", "type": "user", "role": "user", "content": "hi"}]],
    ids=["empty", "with role"],
)
def test_an_empty_session_or_one_whose_messages_also_carry_a_role_fits(
    messages: list[Any],
) -> None:
    assert fits(Source(document={**HEADER, "messages": messages}))
    assert fits(log({**HEADER, "messages": messages}))


def test_header_messages_without_a_string_id_are_skipped_and_said() -> None:
    found = read(log({**HEADER, "messages": [user_message("hi"), {"type": "user"}, 7]}))

    assert [row["content"] for row in found.conversations[0].messages] == ["hi"]
    assert [(s.where, s.why) for s in found.skipped] == [
        ("line 1: messages[1]", "has no string id: the CLI leaves it out of the chat"),
        ("line 1: messages[2]", "has no string id: the CLI leaves it out of the chat"),
    ]


@pytest.mark.parametrize("messages", [{}, "x", 7], ids=["object", "string", "number"])
def test_messages_that_are_not_a_list_are_refused_at_their_place(messages: object) -> None:
    wrong = f"must be a list of messages, not {describe(messages)}"

    assert problems_of(log(HEADER, user_message("hi"), {"$set": {"messages": messages}})) == [
        f"line 3: $set.messages: {wrong}"
    ]
    assert problems_of(log({**HEADER, "messages": messages}, user_message("hi"))) == [
        f"line 1: messages: {wrong}"
    ]


# Any fixture with values swapped or dropped: read or refused with InvalidInput, never a crash.

DROP = "<drop the key or item>"
SWAPS: list[object] = [{}, [], "x", "", 7, 0, None, True, [{}], {"id": "x"}, DROP]


def json_values(name: str) -> tuple[list[str], dict[int, Any]]:
    """A fixture's lines and the JSON value of each line that is JSON (the whole file's,
    as value 0, for a .json file)."""
    text = (OURS / name).read_text()
    if name.endswith(".json"):
        return [], {0: json.loads(text)}
    lines = text.split("\n")
    values: dict[int, Any] = {}
    for index, line in enumerate(lines):
        try:
            values[index] = json.loads(line)
        except json.JSONDecodeError:
            continue
    return lines, values


def paths_in(value: object, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict | list):
        for key, inner in value.items() if isinstance(value, dict) else enumerate(value):
            found.extend(paths_in(inner, (*path, key)))
    return found


def swapped(value: Any, path: tuple[Any, ...], new: object) -> Any:
    if not path:
        return None if new == DROP else copy.deepcopy(new)
    holder = value
    for step in path[:-1]:
        holder = holder[step]
    if new == DROP:
        del holder[path[-1]]
    else:
        holder[path[-1]] = copy.deepcopy(new)
    return value


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(p.name for p in OURS.iterdir())), data=st.data())
def test_any_value_of_a_fixture_swapped_or_dropped_is_read_or_refused(
    name: str, data: st.DataObject
) -> None:
    lines, values = json_values(name)
    for _ in range(data.draw(st.integers(1, 3), label="swaps")):
        unit = data.draw(st.sampled_from(sorted(values)), label="value")
        path = data.draw(st.sampled_from(paths_in(values[unit])), label="path")
        values[unit] = swapped(values[unit], path, data.draw(st.sampled_from(SWAPS), label="to"))
    source = (
        parse_lines(
            "\n".join(
                json.dumps(values.get(i, line)) if i in values else line
                for i, line in enumerate(lines)
            )
        )
        if lines
        else Source(document=values[0])
    )

    fits(source)
    try:
        found = read(source)
    except InvalidInput:
        return
    for converted in found.conversations:
        healing.parse_messages(converted.messages)
