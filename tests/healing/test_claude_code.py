"""Claude Code sessions read into the stored shape (one row per response, results after
their turn, bookkeeping kept in place, abandoned branches and subagents kept out of the
conversation) and written back as the session file the CLI resumes, healed calls
answered in its own events."""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buffers import healing, services
from buffers.healing import InvalidInput, Message, sendability
from buffers.healing.formats import Converted, Reading, Source, detect_source, parse_lines
from buffers.healing.formats.claude_code import FORMAT, fits, native_name, read, write_native
from tests.buffers import store
from tests.healing.test_formats import SAMPLES
from tests.integrity import assert_consistent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE = FIXTURES / "claude-code"
PROJECT = CLAUDE / "projects" / "-home-dev-projects-tinycalc"
SESSION = PROJECT / "9d1f3b5d-7a9c-4e1a-b3c5-8f0a2c4e6a8c.jsonl"
SUBAGENT = PROJECT / "9d1f3b5d-7a9c-4e1a-b3c5-8f0a2c4e6a8c" / "subagents" / "agent-a6c6709.jsonl"
ALL = sorted(CLAUDE.rglob("*.jsonl"))
OTHERS = sorted(
    path
    for path in FIXTURES.rglob("*")
    if path.is_file() and path.relative_to(FIXTURES).parts[0] != "claude-code"
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


def path_of(name: str | Path) -> Path:
    return name if isinstance(name, Path) else CLAUDE / name


def reading(name: str | Path) -> Reading:
    return read(parse_lines(path_of(name).read_text()))


def conversation(name: str | Path) -> Converted:
    [converted] = reading(name).conversations
    return converted


def messages_of(converted: Converted) -> list[Message]:
    return healing.parse_messages(converted.messages, json_checked=True)


def messages(name: str | Path) -> list[Message]:
    return messages_of(conversation(name))


def read_text(text: str) -> list[Message]:
    [converted, *_] = read(parse_lines(text)).conversations
    return messages_of(converted)


def unanswered(found: list[Message]) -> list[str]:
    return [call.tool_call_id for call in healing.analyze(found).unanswered]


def calls(found: list[Message]) -> list[str]:
    return [cid for m in found for cid in healing.declared_call_ids(m)]


def results(found: list[Message]) -> list[str | None]:
    return [healing.result_call_id(m) for m in found if m.role == "tool"]


def meta(message: Message) -> dict[str, Any]:
    return cast(dict[str, Any], message.metadata)


def kept(message: Message) -> dict[str, Any]:
    return cast(dict[str, Any], message.metadata["claude_code"])


def heal(found: list[Message]) -> list[Message]:
    return healing.apply_plan(found, healing.plan_heal(healing.facts_from_messages(found)))


def identity(session: str, name: str) -> str:
    """The uuid of an event the writer makes: uuid5 of the session and the call."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}:{name}"))


def lines_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n") if line]


def accepted(found: list[Message]) -> bool:
    """Every call answered directly after its turn, as Anthropic (the CLI's API) needs."""
    return sendability.check(found, "anthropic").accepted


ENVELOPE = {
    "isSidechain": False,
    "userType": "external",
    "cwd": "/home/dev/projects/tinycalc",
    "sessionId": "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
    "version": "2.0.50",
    "gitBranch": "main",
}


def event(kind: str, identity: str, parent: str | None, body: dict[str, Any]) -> str:
    line = {
        "parentUuid": parent,
        **ENVELOPE,
        "type": kind,
        **body,
        "uuid": identity,
        "timestamp": "2025-11-18T15:02:41.530Z",
    }
    return json.dumps(line, separators=(",", ":"))


def prompt(identity: str, parent: str | None, text: str) -> str:
    return event("user", identity, parent, {"message": {"role": "user", "content": text}})


def response(identity: str, parent: str | None, message_id: str, *blocks: Any) -> str:
    message = {"id": message_id, "role": "assistant", "content": list(blocks)}
    return event("assistant", identity, parent, {"message": message})


def tool_use(call: str, name: str = "Bash", **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": arguments}


def answer(identity: str, parent: str | None, *blocks: Any) -> str:
    return event("user", identity, parent, {"message": {"role": "user", "content": list(blocks)}})


def result(call: str, text: str = "ok") -> dict[str, Any]:
    return {"tool_use_id": call, "type": "tool_result", "content": text}


# Reading: turns, results, facts.


def test_a_clean_session_reads_as_its_turns_with_every_call_answered_after_its_turn() -> None:
    read_as = reading("clean.jsonl")
    found = messages("clean.jsonl")

    assert (read_as.entries, read_as.unit, read_as.skipped) == (21, "line", [])
    assert [m.role for m in found] == [
        *["user", "assistant", "tool", "tool", "assistant", "tool"],
        *["assistant", "tool", "assistant", "user", "user", "user"],
    ]
    assert calls(found) == [
        "toolu_01ce33fR9C75L3oxGCYQALN6",
        "toolu_01MHWI4OsypMbPT5pWMTSV3d",
        "toolu_01PMGmjivxjcfYijHQ09Po6T",
        "toolu_01SVMI97Ju2ZABCT3xsZUIlE",
    ]
    assert results(found) == calls(found)
    assert unanswered(found) == []
    assert healing.analyze(found).findings == ()
    assert accepted(found)


def test_the_lines_of_one_response_are_one_assistant_turn_in_block_order() -> None:
    turn = messages("clean.jsonl")[1]

    assert kept(turn)["lines_at"] == [4, 5, 6, 7]
    assert turn.content == [{"type": "text", "text": "Let me read the code and the tests."}]
    [thinking, *order] = meta(turn)["anthropic"]["layout"]
    assert thinking["type"] == "thinking"
    assert thinking["signature"].startswith("EqxPWxDn")
    assert order == ["content", "call", "call"]
    assert [call["function"] for call in meta(turn)["tool_calls"]] == [
        {"name": "Read", "arguments": '{"file_path":"/home/dev/projects/tinycalc/calc.py"}'},
        {"name": "Read", "arguments": '{"file_path":"/home/dev/projects/tinycalc/test_calc.py"}'},
    ]
    assert {call["type"] for call in meta(turn)["tool_calls"]} == {"function"}


def test_the_anthropic_export_sends_a_turn_back_with_its_thinking_in_order() -> None:
    found = messages("clean.jsonl")

    body = healing.formats.write(found, "anthropic", {})

    first = body["messages"][1]
    assert [block["type"] for block in first["content"]] == [
        "thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    assert [block["type"] for block in body["messages"][2]["content"]] == [
        "tool_result",
        "tool_result",
    ]


def test_usage_and_finish_reason_come_from_the_last_line_of_a_response_once() -> None:
    found = messages("modern.jsonl")
    first, edit = found[1], found[4]

    assert meta(first)["facts"] == {
        "time": "2026-04-20T08:14:10.218Z",
        "model": "claude-opus-4-6",
        "usage": {"input": 3 + 1843 + 12050, "output": 171, "cached": 12050},
        "finish_reason": "tool_use",
    }
    assert kept(edit)["lines_at"] == [10, 12]
    assert meta(edit)["facts"]["usage"] == {
        "input": 3 + 2210 + 13893,
        "output": 236,
        "cached": 13893,
    }
    assert meta(edit)["facts"]["time"] == "2026-04-20T08:14:14.515Z"
    assert meta(found[2])["facts"] == {"time": "2026-04-20T08:14:11.403Z"}


def test_a_response_whose_lines_all_say_nothing_of_how_it_stopped_has_no_finish_reason() -> None:
    first = messages("clean.jsonl")[1]

    assert "finish_reason" not in meta(first)["facts"]
    assert meta(first)["facts"]["model"] == "claude-sonnet-4-5-20250929"


@pytest.mark.rule("MEM-11")
def test_parallel_results_chained_to_their_own_tool_use_line_answer_their_calls() -> None:
    found = messages("modern.jsonl")

    assert calls(found) == results(found)
    assert len(calls(found)) == 5
    assert [m.role for m in found[1:4]] == ["assistant", "tool", "tool"]
    assert unanswered(found) == []
    assert accepted(found)


@pytest.mark.rule("MEM-11")
def test_results_written_between_the_lines_of_their_response_follow_the_whole_turn() -> None:
    found = messages(SUBAGENT)

    assert [m.role for m in found] == ["user", "assistant", "tool", "tool", "assistant"]
    assert kept(found[1])["lines_at"] == [2, 3, 5]
    assert calls(found) == ["toolu_01rOIJREelW39Hlc0bPa2cvI", "toolu_01GIk2EoBpuS1ekvJSkaDwXl"]
    assert results(found) == calls(found)
    assert [kept(m)["lines_at"] for m in found[2:4]] == [[4], [6]]
    assert accepted(found)


def test_interrupted_and_rejected_tools_are_answered_as_errors() -> None:
    found = messages("interrupted.jsonl")
    tools = [m for m in found if m.role == "tool"]

    assert unanswered(found) == []
    assert [meta(m)["is_error"] for m in tools] == [True, True]
    assert tools[0].content == "[Request interrupted by user for tool use]"
    assert str(tools[1].content).startswith("The user doesn't want to proceed with this tool use.")
    assert found[3].role == "user"
    assert found[3].content == [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}
    ]
    assert accepted(found)


def test_a_tool_results_structured_output_and_envelope_are_kept_with_its_line() -> None:
    bash = messages("clean.jsonl")[7]
    [line] = kept(bash)["lines"]

    assert meta(bash)["tool_call_id"] == "toolu_01SVMI97Ju2ZABCT3xsZUIlE"
    assert meta(bash)["is_error"] is False
    assert line["toolUseResult"]["stdout"] == "error: cannot divide by zero\nexit=1"
    assert line["uuid"] == "ad89a620-f4c9-4a52-9ddf-8c187364016c"
    assert (line["cwd"], line["version"], line["gitBranch"]) == (
        "/home/dev/projects/tinycalc",
        "2.0.50",
        "main",
    )


def test_a_user_event_with_results_and_text_gives_the_results_first_then_the_user_row() -> None:
    text = "\n".join(
        [
            prompt("u1", None, "Run it."),
            response("a1", "u1", "msg_1", tool_use("t1", command="ls")),
            answer("r1", "a1", {"type": "text", "text": "Also this."}, result("t1", "calc.py")),
        ]
    )

    found = read_text(text)

    assert [(m.role, m.content) for m in found[2:]] == [
        ("tool", "calc.py"),
        ("user", [{"type": "text", "text": "Also this."}]),
    ]
    assert kept(found[2])["lines_at"] == [3]
    assert kept(found[3]) == {"same_event": True}
    assert write_native(found, read(parse_lines(text)).conversations[0].metadata) == text + "\n"


def test_what_the_cli_sends_as_user_text_is_a_user_row_and_meta_text_is_flagged() -> None:
    found = messages("clean.jsonl")

    caveat, command, output = found[9:12]
    assert kept(caveat)["meta"] is True
    assert str(caveat.content).startswith("Caveat: The messages below were generated")
    assert "meta" not in kept(command)
    assert str(command.content).startswith("<command-name>/rename</command-name>")
    assert str(output.content).startswith("<local-command-stdout>Session renamed")


# Reading: bookkeeping, junk, branches, compaction, titles.


def test_bookkeeping_is_never_a_message_and_is_kept_in_place_with_its_line_numbers() -> None:
    found = messages("modern.jsonl")
    first, edit_result = found[0], found[5]

    assert [line["type"] for line in kept(first)["before"]] == [
        "attachment",
        "file-history-snapshot",
    ]
    assert kept(first)["before_at"] == [1, 2]
    assert kept(edit_result)["before_at"] == [11]
    assert kept(edit_result)["before"][0]["isSnapshotUpdate"] is True
    assert [line["type"] for line in kept(found[11])["before"]] == ["system", "ai-title"]
    assert kept(found[-1])["after"][0]["type"] == "last-prompt"
    assert kept(found[-1])["after_at"] == [24]
    assert reading("modern.jsonl").entries == 24


def test_junk_lines_repeats_and_unknown_types_are_skipped_with_their_reasons() -> None:
    read_as = reading("junk.jsonl")
    found = messages("junk.jsonl")

    assert [s.where for s in read_as.skipped] == ["line 6", "line 7", "line 8", "line 9"]
    reasons = {s.where: s.why for s in read_as.skipped}
    assert reasons["line 6"] == (
        "a repeat of line 5 (the same uuid), which Claude Code reads as one event"
    )
    assert reasons["line 7"].startswith("is not JSON")
    assert reasons["line 8"] == (
        "an event of type 'x-ide-selection-note', which Claude Code does not read"
    )
    assert "cut off" in reasons["line 9"]
    assert read_as.entries == 7
    assert [m.role for m in found] == ["user", "assistant", "tool", "assistant", "user"]
    assert calls(found) == results(found) == ["toolu_01y2hxRuvDYTyS03T7PXLjEY"]


def test_an_api_error_turn_is_not_sent_back_so_it_is_bookkeeping() -> None:
    found = messages("junk.jsonl")

    assert not any("API Error" in json.dumps(m.content) for m in found)
    [error] = kept(found[-1])["after"]
    assert error["isApiErrorMessage"] is True
    assert kept(found[3])["before_at"] == [6, 8]


def test_objects_that_are_no_event_are_skipped_and_what_is_not_an_object_is_dropped() -> None:
    text = "\n".join([prompt("u1", None, "Hi."), "[1, 2]", '{"note": "no type"}', "7"])

    read_as = read(parse_lines(text))

    assert [(s.where, s.why) for s in read_as.skipped] == [
        ("line 2", "a list, not a Claude Code event (an object)"),
        ("line 3", "an object without a type, which Claude Code does not read"),
        ("line 4", "a number, not a Claude Code event (an object)"),
    ]
    [converted] = read_as.conversations
    assert kept(messages_of(converted)[0])["after"] == [{"note": "no type"}]


def test_a_rewound_prompt_leaves_the_old_branch_out_of_the_conversation_and_says_so() -> None:
    read_as = reading("branched.jsonl")
    found = messages("branched.jsonl")

    assert [(s.where, s.why) for s in read_as.skipped] == [
        ("line 5", "on a branch the session left when the user re-asked at line 7"),
        ("line 6", "on a branch the session left when the user re-asked at line 7"),
    ]
    assert [m.content for m in found if m.role == "user"] == [
        "What does calc.py print for `add 2 3`?",
        "Actually, just tell me what `divide 1 3` prints.",
    ]
    assert kept(found[4])["before_at"] == [5, 6]
    assert len(calls(found)) == 2
    assert unanswered(found) == []
    assert read_as.entries == 8
    assert conversation("branched.jsonl").metadata["claude_code"]["slug"] == (
        "gentle-hopping-lantern"
    )


def test_a_rewind_after_a_tool_turn_abandons_the_old_turn_and_its_unanswered_call() -> None:
    text = "\n".join(
        [
            prompt("u1", None, "Delete the logs."),
            response("a1", "u1", "msg_1", tool_use("t1", command="rm -r logs")),
            prompt("u3", "u1", "No, keep them. Just list them."),
            response("a3", "u3", "msg_3", {"type": "text", "text": "Listing."}),
        ]
    )

    read_as = read(parse_lines(text))
    [converted] = read_as.conversations
    found = messages_of(converted)

    assert [(s.where, s.why) for s in read_as.skipped] == [
        ("line 2", "on a branch the session left when the user re-asked at line 3"),
    ]
    assert [m.role for m in found] == ["user", "user", "assistant"]
    assert unanswered(found) == []
    assert write_native(heal(found), converted.metadata) == text + "\n"


def test_a_compacted_session_keeps_its_history_before_the_summary_flagged_as_compacted() -> None:
    converted = conversation("compacted.jsonl")
    found = messages_of(converted)

    assert [kept(m).get("compacted", False) for m in found] == [True] * 4 + [False] * 8
    summary = found[4]
    assert kept(summary)["compact_summary"] is True
    assert str(summary.content).startswith("This session is being continued")
    [boundary] = kept(summary)["before"]
    assert (boundary["subtype"], boundary["logicalParentUuid"]) == (
        "compact_boundary",
        "39da33ba-d69f-4191-95de-ce5d998a71a2",
    )
    assert converted.metadata["claude_code"]["compactions"] == 1
    assert len(calls(found)) == 2
    assert unanswered(found) == []
    assert reading("compacted.jsonl").skipped == []


def test_the_title_is_the_custom_title_then_the_generated_one_never_another_sessions() -> None:
    assert conversation("clean.jsonl").title == "divide-by-zero fix"
    assert conversation("modern.jsonl").title == "Handle divide-by-zero in tinycalc CLI"
    assert conversation("crashed.jsonl").title == ""


def test_a_summary_of_an_event_of_this_file_titles_it() -> None:
    summary = json.dumps({"type": "summary", "summary": "Listing files", "leafUuid": "a1"})
    foreign = json.dumps({"type": "summary", "summary": "Elsewhere", "leafUuid": "zz"})
    text = "\n".join(
        [
            foreign,
            summary,
            prompt("u1", None, "List."),
            response("a1", "u1", "msg_1", {"type": "text", "text": "Done."}),
        ]
    )

    [converted] = read(parse_lines(text)).conversations

    assert converted.title == "Listing files"


def test_the_session_is_described_in_the_conversations_metadata() -> None:
    assert conversation("clean.jsonl").metadata == {
        "claude_code": {
            "sessionId": "e3a71c58-2f94-4d0b-b6c1-7a9e04d2f816",
            "cwd": "/home/dev/projects/tinycalc",
            "gitBranch": "main",
            "versions": ["2.0.50"],
            "subagents": 0,
        }
    }
    assert "gitBranch" not in conversation("interrupted.jsonl").metadata["claude_code"]


# Reading: subagents and the on-disk layout.


def test_a_1x_sidechain_is_a_conversation_of_its_own_linked_to_its_task_call() -> None:
    read_as = reading("sidechain.jsonl")
    main, subagent = read_as.conversations
    ours, theirs = messages_of(main), messages_of(subagent)

    assert calls(ours) == results(ours) == ["toolu_015ilNEDRGbcwbmKj32YHgxN"]
    assert calls(theirs) == results(theirs) == ["toolu_01MdBtrLkFnjFQbGQHa0IOKa"]
    assert [m.role for m in ours] == ["user", "assistant", "tool", "assistant"]
    assert str(theirs[0].content).startswith("Search the repository for every call of divide()")
    assert main.metadata["claude_code"]["subagents"] == 1
    assert subagent.metadata["claude_code"]["subagent_of"] == {
        "sessionId": "1f5e9a3c-7b2d-4e6f-a8c0-2d4f6b8a0c3e",
        "tool_use_id": "toolu_015ilNEDRGbcwbmKj32YHgxN",
    }
    assert (main.title, subagent.title) == ("", "")
    assert kept(ours[2])["before_at"] == [4, 5, 6, 7, 8]
    assert (read_as.entries, read_as.skipped) == (10, [])


def test_a_subagent_is_titled_after_its_session() -> None:
    title = json.dumps({"type": "custom-title", "customTitle": "divide audit"})
    text = (CLAUDE / "sidechain.jsonl").read_text() + title + "\n"

    main, subagent = read(parse_lines(text)).conversations

    assert (main.title, subagent.title) == ("divide audit", "divide audit (subagent)")


def test_parallel_subagents_of_a_1x_session_are_one_conversation_each() -> None:
    lines = (CLAUDE / "sidechain.jsonl").read_text().split("\n")
    second = [
        line.replace('"uuid":"', '"uuid":"b-').replace('"parentUuid":"', '"parentUuid":"b-')
        for line in lines[3:8]
    ]

    main, first, other = read(parse_lines("\n".join(lines[:8] + second + lines[8:]))).conversations

    assert len(messages_of(first)) == len(messages_of(other)) == 4
    assert main.metadata["claude_code"]["subagents"] == 2
    assert "tool_use_id" in first.metadata["claude_code"]["subagent_of"]
    assert "tool_use_id" not in other.metadata["claude_code"]["subagent_of"]


def test_the_on_disk_session_reads_its_task_call_and_never_the_progress_copies() -> None:
    read_as = reading(SESSION)
    found = messages(SESSION)

    assert [m.role for m in found] == ["user", "assistant", "tool", "assistant"]
    assert calls(found) == results(found) == ["toolu_01CSey2QYBOhlqMJzntIIAAV"]
    assert [line["data"]["type"] for line in kept(found[2])["before"]] == ["agent_progress"] * 3
    assert kept(found[3])["before"][0]["data"]["type"] == "hook_progress"
    assert not any("Checking the tests." in json.dumps(m.content) for m in found)
    assert (read_as.entries, read_as.skipped) == (11, [])
    assert native_name(conversation(SESSION).metadata) == SESSION.name


def test_a_subagents_own_file_is_one_subagent_conversation_of_its_session() -> None:
    converted = conversation(SUBAGENT)
    space = converted.metadata["claude_code"]

    assert space["agentId"] == "a6c6709"
    assert space["subagent_of"] == {"sessionId": "9d1f3b5d-7a9c-4e1a-b3c5-8f0a2c4e6a8c"}
    assert "subagents" not in space
    assert native_name(converted.metadata) == SUBAGENT.name
    assert unanswered(messages_of(converted)) == []


# Reading: what is refused.


@pytest.mark.parametrize(
    ("line", "problems"),
    [
        (
            answer("r1", "a1", {"type": "tool_result", "content": "x"}),
            ["line 3: message.content[0].tool_use_id: is missing"],
        ),
        (
            response("a2", "a1", "msg_2", {"type": "tool_use", "input": {}}),
            [
                "line 3: message.content[0].id: is missing",
                "line 3: message.content[0].name: is missing",
            ],
        ),
        (
            response(
                "a2", "a1", "msg_2", {"type": "tool_use", "id": "t2", "name": "X", "input": 3}
            ),
            ["line 3: message.content[0].input: must be an object, not a number"],
        ),
        (
            response("a2", "a1", "msg_2", {"type": "tool_result", "tool_use_id": "t1"}),
            ["line 3: message.content[0]: is a tool_result block, which belongs in a user message"],
        ),
        (event("user", "u2", "a1", {}), ["line 3: message: is missing"]),
        (
            event("user", "u2", "a1", {"message": "hi"}),
            ["line 3: message: must be an object, not a string"],
        ),
        (
            event("user", "u2", "a1", {"message": {"role": "user"}}),
            ["line 3: message.content: is missing"],
        ),
        (
            event("user", "u2", "a1", {"message": {"role": "user", "content": 5}}),
            ["line 3: message.content: must be a string or a list of content blocks, not a number"],
        ),
        (
            prompt("u2", "a1", "x").replace('"uuid":"u2",', ""),
            ["line 3: uuid: is missing"],
        ),
    ],
)
def test_what_is_wrong_inside_a_user_or_assistant_event_is_refused_at_its_place(
    line: str, problems: list[str]
) -> None:
    text = "\n".join(
        [prompt("u1", None, "Go."), response("a1", "u1", "msg_1", tool_use("t1")), line]
    )

    with pytest.raises(InvalidInput) as caught:
        read(parse_lines(text))

    assert [str(problem) for problem in caught.value.problems] == problems


def test_bookkeeping_that_cannot_be_stored_is_skipped_not_refused() -> None:
    """(A U+0000 is replaced, not refused: tests/healing/test_storable_copy.py.)"""
    deep = json.loads("[" * 70 + "]" * 70)
    odd = json.dumps({"type": "last-prompt", "lastPrompt": deep, "sessionId": "s"})

    read_as = read(parse_lines("\n".join([prompt("u1", None, "Hi."), odd])))

    [skipped] = read_as.skipped
    assert skipped.where == "line 2"
    assert "more than 64 levels deep" in skipped.why
    assert read_as.entries == 1


def test_a_session_with_only_titles_and_snapshots_fits_and_holds_no_conversation() -> None:
    text = "\n".join((CLAUDE / "clean.jsonl").read_text().split("\n")[:2])
    source = parse_lines(text)

    assert fits(source)
    with pytest.raises(InvalidInput) as caught:
        read(source)

    [problem] = caught.value.problems
    assert (problem.path, problem.message) == (
        "file",
        "holds no conversation: 2 of 2 lines read, none a user or assistant message",
    )


# Reading what recent versions (2.1.3xx) write: server tool turns, thinking cut short,
# queued prompts, new records, rewind checkpoints.


def test_a_turn_of_server_tool_blocks_only_is_sent_to_anthropic_and_refused_by_gemini() -> None:
    found = messages("server-tools.jsonl")
    search = found[1]

    assert search.content is None
    assert [block["type"] for block in meta(search)["anthropic"]["layout"]] == [
        "server_tool_use",
        "web_search_tool_result",
    ]
    sent = healing.formats.write(found, "anthropic", {})["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["server_tool_use", "web_search_tool_result"]
    assert healing.formats.write(found, "gemini", {})["contents"][1]["parts"] == []
    verdicts = sendability.check_all(found)
    assert verdicts["anthropic"].accepted
    assert verdicts["openai-chat"].accepted
    assert [(r.index, r.reason) for r in verdicts["gemini"].rejections] == [(1, "empty_turn")]


THINKING = {"type": "thinking", "thinking": "Two tables: orders and items.", "signature": "c2ln"}


@pytest.mark.parametrize("final", [False, True], ids=["then-re-asked", "last"])
def test_a_turn_cut_short_after_its_thinking_is_refused_by_anthropic_wherever_it_stands(
    final: bool,
) -> None:
    text = "\n".join(
        [
            prompt("u1", None, "Design a schema for orders."),
            response("a1", "u1", "msg_1", THINKING),
            *([] if final else [prompt("u2", "a1", "Keep it to two tables.")]),
        ]
    )

    found = read_text(text)

    assert found[1].content is None
    assert [r.sentence for r in sendability.check(found, "anthropic").rejections] == [
        "the assistant message at message 1 holds only thinking, and Anthropic refuses an "
        "assistant message whose last block is thinking"
    ]


@pytest.mark.django_db
def test_the_stored_verdicts_of_server_tool_and_thinking_turns_follow_appends() -> None:
    thinking = read_text(
        "\n".join([prompt("u1", None, "Design it."), response("a1", "u1", "msg_1", THINKING)])
    )
    for found in (messages("server-tools.jsonl"), thinking):
        stored = store([message.as_stored() for message in found])
        assert_consistent(stored)
        for typed in ("Go on.", "And now?"):
            services.append_messages(
                conversation_id=stored.pk,
                messages=[Message(role="user", content=typed)],
                via="tests",
            )
            assert_consistent(stored)


RECORDS = [
    "bridge-session",
    "file-history-delta",
    "tools-used",
    "cost-state",
    "ended-by-model",
    "continued-in",
    "relocated",
    "frame-link",
    "memory-mode",
    "session-owner",
    "history-suppression",
    "derived-from",
    "fork-context-ref",
    "api-request",
    "api-request-start",
    "api-request-end",
    "resume-head-vouch",
]


def test_the_records_recent_versions_write_are_bookkeeping_kept_in_place() -> None:
    read_as = reading("records.jsonl")
    found = messages("records.jsonl")

    assert read_as.skipped == []
    assert read_as.entries == 18
    assert [m.role for m in found] == ["user", "assistant", "tool", "assistant"]
    assert kept(found[0])["before"][0]["type"] == "bridge-session"
    assert {line["type"] for line in kept(found[3])["before"]} == {"file-history-delta"}
    assert kept(found[3])["before_at"] == list(range(5, 15))
    assert [line["type"] for line in kept(found[3])["after"]] == [
        "tools-used",
        "cost-state",
        "bridge-session",
    ]


@pytest.mark.parametrize("kind", RECORDS)
def test_each_record_of_recent_versions_is_counted_and_not_reported(kind: str) -> None:
    record = json.dumps({"type": kind, "sessionId": ENVELOPE["sessionId"]})

    read_as = read(parse_lines("\n".join([prompt("u1", None, "Hi."), record])))

    assert (read_as.skipped, read_as.entries) == ([], 2)
    [converted] = read_as.conversations
    assert kept(messages_of(converted)[0])["after"] == [json.loads(record)]


def test_a_session_with_more_file_history_deltas_than_events_fits() -> None:
    source = source_of(CLAUDE / "records.jsonl")
    kinds = [line["type"] for line in lines_of((CLAUDE / "records.jsonl").read_text())]

    assert kinds.count("file-history-delta") > len(kinds) / 2
    assert fits(source)


QUEUED = "and run ruff on calc.py too"


def test_a_prompt_queued_while_claude_worked_is_a_user_row_after_the_results_it_came_with() -> None:
    read_as = reading("queued.jsonl")
    found = messages("queued.jsonl")

    assert read_as.skipped == []
    assert read_as.entries == 13
    assert [m.role for m in found] == [
        *["user", "assistant", "tool", "user", "assistant", "tool", "assistant"]
    ]
    queued = found[3]
    assert queued.content == QUEUED
    assert kept(queued)["queued"] is True
    assert kept(queued)["lines_at"] == [8]
    assert kept(queued)["lines"][0]["attachment"]["type"] == "queued_command"
    assert kept(queued)["before_at"] == [7]
    assert meta(queued)["facts"] == {"time": kept(queued)["lines"][0]["timestamp"]}
    sent = healing.formats.write(found, "anthropic", {})["messages"]
    assert [block["type"] for block in sent[2]["content"]] == ["tool_result", "text"]
    assert sent[2]["content"][1]["text"] == QUEUED
    assert all(verdict.accepted for verdict in sendability.check_all(found).values())


def queued_line(identity: str, parent: str | None, prompt: object, mode: str = "prompt") -> str:
    attachment = {"type": "queued_command", "prompt": prompt, "commandMode": mode}
    return event("attachment", identity, parent, {"attachment": attachment})


def test_a_prompt_queued_between_a_call_and_its_result_follows_the_result() -> None:
    text = "\n".join(
        [
            prompt("u1", None, "Run the tests."),
            response("a1", "u1", "msg_1", tool_use("t1", command="pytest")),
            queued_line("q1", "a1", QUEUED),
            answer("r1", "a1", result("t1", "4 passed")),
            response("a2", "q1", "msg_2", {"type": "text", "text": "Both done."}),
        ]
    )

    found = read_text(text)

    assert [(m.role, kept(m)["lines_at"]) for m in found] == [
        ("user", [1]),
        ("assistant", [2]),
        ("tool", [4]),
        ("user", [3]),
        ("assistant", [5]),
    ]
    assert accepted(found)
    assert write_native(found, read(parse_lines(text)).conversations[0].metadata) == text + "\n"


def test_a_prompt_queued_after_a_call_that_never_got_its_result_is_healed_before_it() -> None:
    text = "\n".join(
        [
            prompt("u1", None, "Run the tests."),
            response("a1", "u1", "msg_1", tool_use("t1", command="pytest")),
            queued_line("q1", "a1", QUEUED),
        ]
    )
    converted = read(parse_lines(text)).conversations[0]
    found = messages_of(converted)

    assert [m.role for m in found] == ["user", "assistant", "user"]
    assert unanswered(found) == ["t1"]
    healed = heal(found)
    assert [m.role for m in healed] == ["user", "assistant", "tool", "user"]
    again = read_text(write_native(healed, converted.metadata))
    assert [(m.role, m.content) for m in again[2:]] == [("tool", INTERRUPTED), ("user", QUEUED)]
    assert accepted(again)


@pytest.mark.parametrize(
    "line",
    [
        queued_line("q1", "a1", "ls -la", mode="bash"),
        queued_line("q1", "a1", ""),
        queued_line("q1", "a1", 7),
        queued_line("q1", "a1", [{"type": "tool_result", "tool_use_id": "t1"}]),
        event("attachment", "q1", "a1", {"attachment": {"type": "todo_reminder"}}),
    ],
    ids=["bash-mode", "empty", "not-text", "a-result", "another-attachment"],
)
def test_an_attachment_that_is_no_queued_prompt_stays_bookkeeping(line: str) -> None:
    text = "\n".join(
        [
            prompt("u1", None, "Hi."),
            response("a1", "u1", "msg_1", {"type": "text", "text": "Hello."}),
            line,
        ]
    )

    found = read_text(text)

    assert [m.role for m in found] == ["user", "assistant"]
    assert kept(found[-1])["after"] == [json.loads(line)]


def test_a_queued_prompt_of_text_and_an_image_is_a_user_row_of_those_blocks() -> None:
    blocks = [
        {"type": "text", "text": "like this one"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
    ]
    text = "\n".join(
        [
            prompt("u1", None, "Draw a box."),
            response("a1", "u1", "msg_1", {"type": "text", "text": "Drawing."}),
            queued_line("q1", "a1", blocks),
        ]
    )

    found = read_text(text)

    assert (found[-1].role, found[-1].content, kept(found[-1])["queued"]) == ("user", blocks, True)


def test_a_prompt_queued_on_an_abandoned_branch_is_left_out_with_it() -> None:
    text = "\n".join(
        [
            prompt("u1", None, "Run the tests."),
            response("a1", "u1", "msg_1", {"type": "text", "text": "Running."}),
            prompt("u2", "a1", "Delete the logs."),
            queued_line("q2", "u2", QUEUED),
            prompt("u3", "a1", "No, keep them."),
        ]
    )

    read_as = read(parse_lines(text))

    assert [(s.where, s.why) for s in read_as.skipped] == [
        ("line 3", "on a branch the session left when the user re-asked at line 5"),
        ("line 4", "on a branch the session left when the user re-asked at line 5"),
    ]
    assert [m.content for m in messages_of(read_as.conversations[0]) if m.role == "user"] == [
        "Run the tests.",
        "No, keep them.",
    ]


def test_a_rewind_checkpoint_after_the_last_prompt_leaves_the_rewound_tail_out() -> None:
    read_as = reading("rewind-checkpoint.jsonl")
    found = messages("rewind-checkpoint.jsonl")

    assert [(s.where, s.why) for s in read_as.skipped] == [
        ("line 3", "on a branch the session left when the user rewound it to line 2"),
        ("line 4", "on a branch the session left when the user rewound it to line 2"),
    ]
    assert [m.role for m in found] == ["user", "assistant"]
    assert kept(found[1])["after_at"] == [3, 4, 5]
    assert unanswered(found) == []
    assert all(verdict.accepted for verdict in sendability.check_all(found).values())


def test_a_user_turn_appended_after_a_rewind_continues_from_the_checkpoints_leaf() -> None:
    converted = conversation("rewind-checkpoint.jsonl")
    found = messages_of(converted)
    plan = healing.plan_append(
        healing.facts_from_messages(found), [Message(role="user", content="Keep the tests.")]
    )

    written = write_native(healing.apply_plan(found, plan), converted.metadata)

    *_, checkpoint, typed = lines_of(written)
    assert checkpoint["rewound"] is True
    assert typed["parentUuid"] == checkpoint["leafUuid"] == kept(found[1])["lines"][0]["uuid"]
    again = read(parse_lines(written))
    assert [m.content for m in messages_of(again.conversations[0]) if m.role == "user"] == [
        "Make divide print an error on zero.",
        "Keep the tests.",
    ]


def test_a_rewind_checkpoint_that_later_events_follow_no_longer_says_where_it_resumes() -> None:
    checkpoint = {"type": "last-prompt", "leafUuid": "a1", "rewound": True, "cutUuid": "u2"}
    text = "\n".join(
        [
            prompt("u1", None, "Fix divide."),
            response("a1", "u1", "msg_1", {"type": "text", "text": "Fixed."}),
            prompt("u2", "a1", "Delete the tests."),
            json.dumps(checkpoint),
            prompt("u3", "a1", "Add a test instead."),
            response("a3", "u3", "msg_3", {"type": "text", "text": "Added."}),
            prompt("u4", "a3", "Thanks."),
        ]
    )

    read_as = read(parse_lines(text))

    assert [(s.where, s.why) for s in read_as.skipped] == [
        ("line 3", "on a branch the session left when the user re-asked at line 5"),
    ]
    assert [m.content for m in messages_of(read_as.conversations[0]) if m.role == "user"] == [
        "Fix divide.",
        "Add a test instead.",
        "Thanks.",
    ]


# Detection.


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(CLAUDE)))
def test_every_claude_code_fixture_is_detected_as_a_claude_code_session(path: Path) -> None:
    found = detect_source(source_of(path))

    assert found is FORMAT
    assert found.named == "a Claude Code session"
    assert (found.provider, found.lines, found.name) == ("anthropic", True, "claude-code")


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: str(p.relative_to(FIXTURES)))
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


def test_openai_chat_bodies_with_one_stray_claude_event_do_not_fit() -> None:
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    stray = prompt("u1", None, "Hi.")

    assert not fits(parse_lines("\n".join([body, body, stray, body])))
    assert not fits(parse_lines("\n".join([stray, body, body])))


def test_a_codex_rollout_with_one_stray_claude_event_does_not_fit() -> None:
    rollout = (FIXTURES / "codex" / "clean.jsonl").read_text().rstrip("\n").split("\n")

    assert not fits(parse_lines("\n".join([*rollout[:3], prompt("u1", None, "Hi."), *rollout[3:]])))


def test_the_clis_stream_json_output_with_one_stray_event_does_not_fit() -> None:
    stream = [
        {"type": "system", "subtype": "init", "session_id": "s", "tools": []},
        {"type": "assistant", "message": {"role": "assistant", "content": []}, "session_id": "s"},
        {"type": "result", "subtype": "success", "session_id": "s"},
    ]
    lines = [json.dumps(line) for line in stream]

    assert not fits(parse_lines("\n".join([*lines, prompt("u1", None, "Hi.")])))


def test_a_session_with_a_few_odd_object_lines_still_fits() -> None:
    lines = (CLAUDE / "clean.jsonl").read_text().rstrip("\n").split("\n")
    odd = ['{"note": "no type"}', '{"type": "x-new-record", "data": 1}', "[1, 2]", "not json"]

    assert fits(parse_lines("\n".join([*odd, *lines, *odd])))


def test_the_clis_stream_json_output_is_another_format() -> None:
    stream = [
        {"type": "system", "subtype": "init", "session_id": "s", "tools": []},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            "session_id": "s",
        },
    ]

    assert not fits(parse_lines("\n".join(json.dumps(line) for line in stream)))


def test_a_session_sent_as_a_json_array_is_read_event_by_event() -> None:
    events = lines_of((CLAUDE / "clean.jsonl").read_text())

    source = Source(document=events)
    read_as = read(source)

    assert detect_source(source) is FORMAT
    assert (read_as.entries, read_as.unit) == (21, "event")
    assert len(messages_of(read_as.conversations[0])) == 12


# Writing the session back.


ROUND_TRIPS = [
    "clean.jsonl",
    "modern.jsonl",
    "branched.jsonl",
    "compacted.jsonl",
    "interrupted.jsonl",
    "sidechain.jsonl",
    "server-tools.jsonl",
    "queued.jsonl",
    "records.jsonl",
    "rewind-checkpoint.jsonl",
    SESSION,
    SUBAGENT,
]


@pytest.mark.parametrize("name", ROUND_TRIPS, ids=str)
def test_a_clean_session_is_written_back_line_for_line(name: str | Path) -> None:
    [converted, *_] = reading(name).conversations

    written = write_native(messages_of(converted), converted.metadata)

    assert written == path_of(name).read_text()


def test_a_session_at_the_calendars_end_is_healed_without_going_past_it() -> None:
    """The result written 1 ms after its turn cannot be after 9999-12-31T23:59:59.999Z: it
    takes the turn's own time (it raised, a 500 on the page's download: review)."""
    last = "9999-12-31T23:59:59.999Z"
    text = "\n".join(
        [
            prompt("u1", None, "Run it."),
            response("a1", "u1", "msg_1", tool_use("t1", command="ls")),
        ]
    ).replace("2025-11-18T15:02:41.530Z", last)
    [converted] = read(parse_lines(text)).conversations

    written = write_native(heal(messages_of(converted)), converted.metadata)

    *_, answer = lines_of(written)
    assert answer["message"]["content"][0]["tool_use_id"] == "t1"
    assert answer["timestamp"] == last


def test_writing_keeps_every_object_line_in_place_and_drops_what_is_not_one() -> None:
    converted = conversation("junk.jsonl")
    objects = [
        line for line in (CLAUDE / "junk.jsonl").read_text().split("\n") if line.startswith("{")
    ]
    whole = [line for line in objects if line.endswith("}")]

    assert write_native(messages_of(converted), converted.metadata) == "\n".join(whole) + "\n"


def test_a_subagent_split_from_its_session_is_written_as_its_own_lines() -> None:
    _, subagent = reading("sidechain.jsonl").conversations
    own = (CLAUDE / "sidechain.jsonl").read_text().split("\n")[3:8]

    written = write_native(messages_of(subagent), subagent.metadata)

    assert written == "\n".join(own) + "\n"
    [again] = read(parse_lines(written)).conversations
    assert again.metadata["claude_code"]["subagent_of"] == {
        "sessionId": "1f5e9a3c-7b2d-4e6f-a8c0-2d4f6b8a0c3e"
    }
    assert native_name(subagent.metadata) == "agent-af909e5d-4071-4897-b0c2-590ca9bd2fba.jsonl"


HEALED_LINE = (
    '{"parentUuid":"dc3b62a3-31fc-46ea-b935-1e20cbca8157","isSidechain":false,'
    '"userType":"external","cwd":"/home/dev/projects/weatherbot",'
    '"sessionId":"8c2d4e6f-1a3b-4c5d-9e7f-0a2b4c6d8e1f","version":"2.0.50","gitBranch":"main",'
    '"type":"user","message":{"role":"user","content":[{"tool_use_id":'
    '"toolu_01EtbAGUIKQMprBn2goAQitB","type":"tool_result",'
    '"content":"Tool call was interrupted; no result.","is_error":true}]},'
    '"uuid":"b024c385-9a9d-5ca4-9456-b3265165927e","timestamp":"2025-11-07T19:41:16.543Z",'
    '"toolUseResult":"Error: Tool call was interrupted; no result."}'
)
"""The CLI's own result event for crashed.jsonl's call, as the notes verified it resumes."""


@pytest.mark.rule("MEM-3")
def test_a_healed_crashed_session_answers_its_call_in_the_clis_own_event_after_its_turn() -> None:
    converted = conversation("crashed.jsonl")
    healed = heal(messages_of(converted))

    written = write_native(healed, converted.metadata).split("\n")

    original = (CLAUDE / "crashed.jsonl").read_text().split("\n")
    assert written[:9] == original[:9]
    assert written[9:] == [HEALED_LINE, ""]
    assert json.loads(HEALED_LINE)["uuid"] == identity(
        "8c2d4e6f-1a3b-4c5d-9e7f-0a2b4c6d8e1f", "toolu_01EtbAGUIKQMprBn2goAQitB"
    )


def test_a_healed_session_read_again_has_every_call_answered_directly_after_its_turn() -> None:
    converted = conversation("crashed.jsonl")

    again = read_text(write_native(heal(messages_of(converted)), converted.metadata))

    assert unanswered(again) == []
    assert healing.analyze(again).findings == ()
    assert accepted(again)
    assert again[-1].role == "tool"
    assert (again[-1].content, meta(again[-1])["is_error"]) == (INTERRUPTED, True)


@pytest.mark.rule("MEM-3")
def test_a_user_turn_appended_in_the_app_is_a_plain_user_event_after_the_placeholder() -> None:
    converted = conversation("crashed.jsonl")
    found = messages_of(converted)
    turn = Message(role="user", content="Try again with a fresh cache.")
    plan = healing.plan_append(healing.facts_from_messages(found), [turn])

    written = write_native(healing.apply_plan(found, plan), converted.metadata)

    *_, placeholder, typed = lines_of(written)
    assert placeholder["message"]["content"][0]["tool_use_id"] == "toolu_01EtbAGUIKQMprBn2goAQitB"
    assert typed == {
        "parentUuid": placeholder["uuid"],
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/projects/weatherbot",
        "sessionId": "8c2d4e6f-1a3b-4c5d-9e7f-0a2b4c6d8e1f",
        "version": "2.0.50",
        "gitBranch": "main",
        "type": "user",
        "message": {"role": "user", "content": "Try again with a fresh cache."},
        "uuid": identity("8c2d4e6f-1a3b-4c5d-9e7f-0a2b4c6d8e1f", "message 5"),
        "timestamp": "2025-11-07T19:41:16.544Z",
    }
    again = read_text(written)
    assert accepted(again)
    assert again[-1].content == "Try again with a fresh cache."


def test_a_user_turn_after_the_last_bookkeeping_points_to_the_last_event() -> None:
    converted = conversation("modern.jsonl")
    found = messages_of(converted)
    plan = healing.plan_append(
        healing.facts_from_messages(found), [Message(role="user", content="Thanks.")]
    )

    *_, last_prompt, typed = lines_of(
        write_native(healing.apply_plan(found, plan), converted.metadata)
    )

    assert last_prompt["type"] == "last-prompt"
    assert typed["parentUuid"] == "5f0e2e59-0563-4cdf-a948-a9582d2b6732"
    assert list(typed)[:3] == ["parentUuid", "isSidechain", "type"]
    assert list(typed)[-5:] == ["entrypoint", "cwd", "sessionId", "version", "gitBranch"]
    assert "promptId" not in typed


def without_line(name: str | Path, number: int) -> str:
    """The fixture with one result line lost, its next event pointing where the CLI would
    have pointed it (the line before it)."""
    lines = path_of(name).read_text().split("\n")
    lost = json.loads(lines[number - 1])
    rest = lines[: number - 1] + lines[number:]
    return "\n".join(rest).replace(
        f'"parentUuid":"{lost["uuid"]}"', f'"parentUuid":"{lost["parentUuid"]}"'
    )


def parents(text: str) -> dict[str, str | None]:
    return {line["uuid"]: line.get("parentUuid") for line in lines_of(text) if "uuid" in line}


@pytest.mark.rule("MEM-3")
def test_a_healed_fork_of_parallel_results_is_straightened_as_every_cli_version_resumes() -> None:
    text = without_line("modern.jsonl", 9)
    [converted] = read(parse_lines(text)).conversations
    found = messages_of(converted)
    assert unanswered(found) == ["toolu_01XtXAQk0JCbLREwJZru0X5p"]

    written = write_native(heal(found), converted.metadata)

    chain = parents(written)
    line = {u.split("-")[0]: u for u in chain}
    healed = identity("5b0f3c2e-8d41-4a7b-9e62-1c3d5f7a9b04", "toolu_01XtXAQk0JCbLREwJZru0X5p")
    # Lines 4-7 (the response), 8 (the answered Read's result), then the new result.
    assert [chain[line[u]] for u in ("653e6f8a", "a7ebb023", "56234718")] == [
        line["2d11479c"],
        line["653e6f8a"],
        line["a7ebb023"],
    ]
    assert chain[line["78a43c16"]] == line["56234718"]
    assert chain[healed] == line["78a43c16"]
    assert chain[line["7042b33a"]] == healed
    new = next(event for event in lines_of(written) if event.get("uuid") == healed)
    assert new["promptId"] == "5bd21b6a-ec89-47a6-8a0a-c984f71ab247"
    assert new["sourceToolAssistantUUID"] == line["56234718"]
    assert list(new)[:4] == ["parentUuid", "isSidechain", "promptId", "type"]
    assert new["timestamp"] == "2026-04-20T08:14:11.404Z"
    again = read_text(written)
    assert unanswered(again) == []
    assert accepted(again)


def test_a_healed_turn_answered_mid_file_points_the_next_event_at_its_new_result() -> None:
    text = without_line("clean.jsonl", 13)
    [converted] = read(parse_lines(text)).conversations

    written = write_native(heal(messages_of(converted)), converted.metadata)

    lines = lines_of(written)
    healed = identity("e3a71c58-2f94-4d0b-b6c1-7a9e04d2f816", "toolu_01PMGmjivxjcfYijHQ09Po6T")
    at = next(i for i, line in enumerate(lines) if line.get("uuid") == healed)
    assert lines[at - 1]["uuid"] == "b32b86ba-9d2c-4cb4-b36d-d2f01ebdc8e4"
    assert lines[at]["parentUuid"] == "b32b86ba-9d2c-4cb4-b36d-d2f01ebdc8e4"
    assert lines[at + 1]["type"] == "file-history-snapshot"
    assert lines[at + 2]["parentUuid"] == healed
    assert lines[at]["timestamp"] == "2025-11-18T15:02:49.605Z"
    assert accepted(read_text(written))


def test_an_event_whose_parent_was_lost_with_the_result_points_at_the_new_result() -> None:
    lines = (CLAUDE / "clean.jsonl").read_text().split("\n")
    [converted] = read(parse_lines("\n".join(lines[:12] + lines[13:]))).conversations

    written = write_native(heal(messages_of(converted)), converted.metadata)

    healed = identity("e3a71c58-2f94-4d0b-b6c1-7a9e04d2f816", "toolu_01PMGmjivxjcfYijHQ09Po6T")
    assert parents(written)["6af651b8-9b00-4db9-9e09-eee03875ccc7"] == healed
    assert accepted(read_text(written))


MIXED = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def mixed_turn(*more: str) -> str:
    """A turn of two calls whose only result event answers the first and also carries text
    (the user's interruption), then whatever follows."""
    return "\n".join(
        [
            prompt("u1", None, "Do two things."),
            response("a1", "u1", "msg_1", tool_use("A")),
            response("a2", "a1", "msg_1", tool_use("B")),
            answer("r1", "a2", result("A"), {"type": "text", "text": "[Request interrupted]"}),
            *more,
        ]
    )


def test_a_healed_call_whose_turns_last_result_event_holds_text_is_answered_before_it() -> None:
    text = mixed_turn(prompt("u2", "r1", "Go on."))
    [converted] = read(parse_lines(text)).conversations
    healed = heal(messages_of(converted))
    assert accepted(healed)

    written = write_native(healed, converted.metadata)

    again = read_text(written)
    assert [(m.role, healing.result_call_id(m)) for m in again] == [
        ("user", None),
        ("assistant", None),
        ("tool", "B"),
        ("tool", "A"),
        ("user", None),
        ("user", None),
    ]
    assert unanswered(again) == []
    assert accepted(again)
    new = identity(MIXED, "B")
    assert [line["uuid"] for line in lines_of(written)] == ["u1", "a1", "a2", new, "r1", "u2"]
    chain = parents(written)
    assert (chain[new], chain["r1"], chain["u2"]) == ("a2", new, "r1")
    [r1] = [line for line in lines_of(written) if line["uuid"] == "r1"]
    assert r1 == {**json.loads(text.split("\n")[3]), "parentUuid": new}


def test_a_user_turn_after_a_healed_turn_ending_in_text_points_to_that_texts_event() -> None:
    [converted] = read(parse_lines(mixed_turn())).conversations
    found = messages_of(converted)
    plan = healing.plan_append(
        healing.facts_from_messages(found), [Message(role="user", content="Still there?")]
    )

    written = write_native(healing.apply_plan(found, plan), converted.metadata)

    *_, placeholder, r1, typed = lines_of(written)
    assert placeholder["message"]["content"][0]["tool_use_id"] == "B"
    assert (r1["uuid"], r1["parentUuid"], typed["parentUuid"]) == ("r1", placeholder["uuid"], "r1")
    again = read_text(written)
    assert unanswered(again) == []
    assert accepted(again)
    assert again[-1].content == "Still there?"


def test_an_event_after_a_healed_turn_ending_in_text_whose_parent_was_lost_points_to_it() -> None:
    text = mixed_turn(prompt("u2", "lost", "Go on."))
    [converted] = read(parse_lines(text)).conversations

    written = write_native(heal(messages_of(converted)), converted.metadata)

    assert parents(written)["u2"] == "r1"
    assert accepted(read_text(written))


def test_a_healed_streaming_turn_is_straightened_and_its_continuation_re_pointed() -> None:
    text = without_line(SUBAGENT, 4)
    [converted] = read(parse_lines(text)).conversations

    written = write_native(heal(messages_of(converted)), converted.metadata)

    chain = parents(written)
    by_prefix = {u.split("-")[0]: u for u in chain}
    healed = identity("9d1f3b5d-7a9c-4e1a-b3c5-8f0a2c4e6a8c", "toolu_01rOIJREelW39Hlc0bPa2cvI")
    assert chain[by_prefix["15c61d04"]] == by_prefix["1d588e6a"]
    assert chain[by_prefix["45bb9136"]] == by_prefix["15c61d04"]
    assert chain[healed] == by_prefix["45bb9136"]
    assert chain[by_prefix["07438a36"]] == healed
    new = next(line for line in lines_of(written) if line.get("uuid") == healed)
    assert (new["isSidechain"], new["agentId"]) == (True, "a6c6709")
    again = read_text(written)
    assert unanswered(again) == []
    assert accepted(again)


def test_a_conversation_not_read_from_a_session_is_not_written_as_one() -> None:
    with pytest.raises(InvalidInput) as caught:
        write_native([Message(role="user", content="hi")], {"model": "claude-sonnet-4-5"})

    [problem] = caught.value.problems
    assert "was not read from a Claude Code session" in problem.message


def test_the_file_name_is_the_session_id() -> None:
    assert native_name(conversation("clean.jsonl").metadata) == (
        "e3a71c58-2f94-4d0b-b6c1-7a9e04d2f816.jsonl"
    )
    assert native_name({}) == ""


@pytest.mark.parametrize(
    "metadata",
    [
        {"claude_code": {"sessionId": 'a\nb"c\u00e9\u0661/../x'}},
        {"claude_code": {"subagent_of": {}, "agentId": "\u00e9a\r\nContent-Type: x\u2028"}},
    ],
    ids=["session", "subagent"],
)
def test_a_file_name_from_the_files_own_data_is_ascii_letters_digits_dots_and_dashes(
    metadata: dict[str, Any],
) -> None:
    name = native_name(metadata)

    assert re.fullmatch(r"[A-Za-z0-9._-]+\.jsonl", name)
    assert name.endswith(".jsonl")
    assert "/" not in name


# Any lines: read or refused with InvalidInput, never an exception; what is read writes back.

VALUES = (
    st.none()
    | st.booleans()
    | st.integers(-1, 2)
    | st.sampled_from(
        [
            "",
            "u1",
            "u2",
            "a1",
            "t1",
            "msg_1",
            "user",
            "assistant",
            "\u0000",
            "2025-11-18T15:02:41.530Z",
        ]
    )
)
KEYS = [
    "type", "role", "content", "id", "name", "input", "tool_use_id", "is_error", "text",
    "thinking", "usage", "stop_reason", "model",
]  # fmt: skip
TYPES = ["text", "tool_use", "tool_result", "thinking", "image"]
blocks = st.recursive(
    VALUES | st.sampled_from(TYPES),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=12,
)
events = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["user", "assistant", "system", "progress", "summary", "x-note", "user"]
        ),
        "uuid": st.sampled_from(["u1", "u2", "u3", "a1", "a2"]) | VALUES,
        "parentUuid": st.sampled_from(["u1", "u2", "a1", None]),
        "isSidechain": st.booleans(),
        "sessionId": st.just("s1"),
        "timestamp": st.just("2025-11-18T15:02:41.530Z"),
    },
    optional={
        "message": st.fixed_dictionaries(
            {"role": VALUES, "content": blocks}, optional={"id": VALUES, "usage": blocks}
        ),
        "isMeta": st.booleans(),
        "isCompactSummary": st.booleans(),
        "agentId": VALUES,
        "subtype": st.sampled_from(["compact_boundary", "informational"]),
        "logicalParentUuid": st.sampled_from(["u1", "a1"]),
    },
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(events | blocks, max_size=8))
def test_any_lines_are_read_or_refused_never_an_exception(values: list[Any]) -> None:
    source = parse_lines("\n".join(json.dumps(v) for v in values))

    fits(source)
    try:
        read_as = read(source)
    except InvalidInput:
        return
    for converted in read_as.conversations:
        found = messages_of(converted)
        written = write_native(found, converted.metadata)
        [again, *_] = read(parse_lines(written)).conversations
        assert len(again.messages) >= 1
        healed = heal(found)
        write_native(healed, converted.metadata)


FIXTURE_LINES = [path.read_text().rstrip("\n").split("\n") for path in ALL]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_lines_of_a_session_healed_and_written_back_read_again_with_every_call_answered(
    data: st.DataObject,
) -> None:
    lines = data.draw(st.sampled_from(FIXTURE_LINES))
    kept_lines = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    text = "\n".join(line for line, keep in zip(lines, kept_lines, strict=True) if keep)
    try:
        read_as = read(parse_lines(text))
    except InvalidInput:
        return
    for converted in read_as.conversations:
        healed = heal(messages_of(converted))
        written = write_native(healed, converted.metadata)
        [again, *_] = read(parse_lines(written)).conversations
        assert unanswered(messages_of(again)) == []


def test_a_kept_line_whose_uuid_is_no_string_is_written_back_in_a_healed_session() -> None:
    odd = '{"type":"x-ide-selection-note","uuid":{"not":"a string"},"sessionId":"s"}'
    text = (CLAUDE / "crashed.jsonl").read_text().replace("\n", f"\n{odd}\n", 1)
    [converted] = read(parse_lines(text)).conversations

    written = write_native(heal(messages_of(converted)), converted.metadata)

    assert odd in written.split("\n")
    assert unanswered(read_text(written)) == []


# The fixtures' lines with values of other types, or keys dropped: read or refused with
# InvalidInput, and what is read heals and writes back.

SWAPS: list[Any] = [
    None, 0, -1, 1.5, True, "", "x", "\u0000", [], [None], ["x"], {}, {"type": "text"},
    {"type": None}, {"type": "tool_result"},
]  # fmt: skip
DROP = "(the key dropped)"


def places(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place inside ``value``: the keys and indexes that lead to it."""
    yield at
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from places(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from places(inner, (*at, index))


def mutated(values: list[Any], data: st.DataObject) -> list[Any]:
    """``values`` (a log's lines) with one to four places, in lines drawn at random, given
    a value of another type or dropped."""
    values = list(values)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        index = data.draw(st.integers(0, len(values) - 1), label="line")
        line = values[index] = copy.deepcopy(values[index])
        place = data.draw(st.sampled_from(list(places(line))), label="place")
        new = copy.deepcopy(data.draw(st.sampled_from([DROP, *SWAPS]), label="value"))
        if not place:
            values[index] = None if new == DROP else new
            continue
        *path, last = place
        inside = line
        for step in path:
            inside = inside[step]
        if new == DROP:
            del inside[last]
        else:
            inside[last] = new
    return values


def parsed_lines(path: Path) -> list[Any]:
    found: list[Any] = []
    for text in path.read_text().split("\n"):
        try:
            found.append(json.loads(text))
        except json.JSONDecodeError:
            continue
    return found


FIXTURE_VALUES = [parsed_lines(path) for path in ALL]
NATIVE_NAME = re.compile(r"([A-Za-z0-9._-]+\.jsonl)?")


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
    for converted in read_as.conversations:
        assert NATIVE_NAME.fullmatch(native_name(converted.metadata))
        found = messages_of(converted)
        healed = heal(found)
        try:
            written = write_native(healed, converted.metadata)
        except InvalidInput:
            continue
        again = read_text(written)
        assert unanswered(again) == []
        assert accepted(again) or not accepted(healed)


# From the bug hunt: the API has answered several requests in a row with one message id
# (anthropics/claude-code#64880); each line of one response carries that response's requestId.


def separate_response(identity: str, parent: str, request: str, call: str) -> str:
    message = {"id": "msg_018fjz", "role": "assistant", "content": [tool_use(call)]}
    return event("assistant", identity, parent, {"message": message, "requestId": request})


SAME_MESSAGE_ID = [
    prompt("u1", None, "Run three commands."),
    separate_response("a1", "u1", "req_011A", "T1"),
    answer("r1", "a1", result("T1")),
    separate_response("a2", "r1", "req_011B", "T2"),
    answer("r2", "a2", result("T2")),
    separate_response("a3", "r2", "req_011C", "T3"),  # the crash: no result
]


def test_responses_of_separate_requests_sharing_a_message_id_are_separate_turns() -> None:
    found = read_text("\n".join(SAME_MESSAGE_ID) + "\n")

    assert [m.role for m in found] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert unanswered(found) == ["T3"]


def test_healing_such_a_session_keeps_its_parent_chain() -> None:
    [converted] = read(parse_lines("\n".join(SAME_MESSAGE_ID) + "\n")).conversations

    written = write_native(heal(messages_of(converted)), converted.metadata)

    parents = {line["uuid"]: line["parentUuid"] for line in lines_of(written)}
    assert (parents["a2"], parents["r1"], parents["a3"]) == ("r1", "a1", "r2")
