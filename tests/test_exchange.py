"""Transcripts in the providers' own formats, in and out: a crashed transcript from each
format imports verbatim, shows its unanswered call, heals, exports in its format, and the
export is one that provider accepts; hostile files are refused with their place and write
nothing. Through every entry point: the command, the API, the upload page, the export links.
"""

from __future__ import annotations

import gc
import json
import re
from io import StringIO
from pathlib import Path
from typing import Any, get_args

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils.html import escape

from buffers import api, bulk, exports, forms, healing, selectors, services, transcripts
from buffers.healing import formats, sendability
from buffers.models import BufferChange, Conversation, Message
from tests.buffers import acting_user, assistant, result, store, user
from tests.integrity import assert_consistent

pytestmark = pytest.mark.django_db

CALL = {"type": "function", "function": {"name": "weather", "arguments": '{"city": "Rome"}'}}

# One crashed run per format: the agent declared calls c1 and c2, c1's result came back,
# then the loop died. c2 is unanswered.
CRASHED: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "model": "gpt-4o",
        "temperature": 0.2,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Rome and Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", **CALL}, {"id": "c2", **CALL}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
        ],
    },
    "openai-responses": {
        "model": "gpt-4o",
        "instructions": "You are terse.",
        "input": [
            {"role": "user", "content": "Weather in Rome and Paris?"},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "18 C"},
        ],
    },
    "anthropic": {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "Weather in Rome and Paris?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking both."},
                    {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Rome"}},
                    {"type": "tool_use", "id": "c2", "name": "weather", "input": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "18 C"}],
            },
        ],
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Rome and Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"id": "c1", "name": "weather", "args": {"city": "Rome"}}},
                    {"functionCall": {"id": "c2", "name": "weather", "args": {"city": "Paris"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "c1",
                            "name": "weather",
                            "response": {"output": "18 C"},
                        }
                    }
                ],
            },
        ],
    },
}
PROVIDER_FORMATS = list(CRASHED)


def as_file(document: Any) -> bytes:
    return json.dumps(document).encode()


def import_document(document: Any, name: str = "crash.json", **options: Any) -> Conversation:
    [conversation] = services.import_conversations(
        transcripts.read_transcript(as_file(document), name=name, **options).conversations,
        via="tests",
        owner=acting_user(),
    )
    return conversation


def exported(conversation: Conversation, format: str) -> Any:
    return json.loads(exports.export(conversation, format).body)


def verdict_on(document: Any, format: str) -> sendability.Verdict:
    """What ``format``'s provider says of a document in its format, read back as a buffer."""
    [conversation] = formats.read(document, format)
    return sendability.check(healing.parse_messages(conversation.messages), format)


def stored_counts() -> tuple[int, int]:
    return Conversation.objects.count(), Message.objects.count()


# Done when: each format imports, shows its unanswered call, heals, exports, and is accepted.


@pytest.mark.rule("MEM-3")
@pytest.mark.parametrize("format", PROVIDER_FORMATS)
def test_a_crashed_transcript_in_each_format_imports_heals_and_exports_as_accepted_history(
    client: Client, format: str
) -> None:
    conversation = import_document(CRASHED[format])

    assert conversation.source_format == format
    assert conversation.unanswered_count == 1
    page = client.get(f"/c/{conversation.pk}/")
    assert "unanswered call c2" in page.text
    assert not verdict_on(exported(conversation, format), format).accepted

    report = services.heal_conversation(
        conversation_id=conversation.pk, via="tests", reason="crashed run"
    )

    conversation.refresh_from_db()
    assert [h.tool_call_id for h in report.healed] == ["c2"]
    assert conversation.unanswered_count == 0
    assert_consistent(conversation)
    after = verdict_on(exported(conversation, format), format)
    assert after.accepted, after.summary


@pytest.mark.parametrize("format", PROVIDER_FORMATS)
def test_a_provider_document_is_stored_verbatim_and_exports_back_to_itself(format: str) -> None:
    conversation = import_document(CRASHED[format])

    assert exported(conversation, format) == CRASHED[format]


@pytest.mark.parametrize("format", PROVIDER_FORMATS)
def test_the_stored_export_imports_again_as_the_same_buffer(format: str) -> None:
    original = import_document(CRASHED[format])
    stored = exported(original, "stored")
    stored["key"] = "a copy"

    copy = import_document(stored)

    assert copy.source_format == "stored"
    assert copy.metadata == original.metadata
    assert selectors.buffer_messages(copy) == selectors.buffer_messages(original)


def test_anthropic_export_groups_tool_results_into_the_next_user_message_results_first() -> None:
    conversation = store(
        [
            user("go"),
            assistant("t1", "t2"),
            result("t1"),
            result("t2"),
            user("and then?"),
        ]
    )

    messages = exported(conversation, "anthropic")["messages"]

    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    blocks = messages[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in blocks[:2]] == ["t1", "t2"]


def test_a_provider_documents_fields_go_back_only_into_its_own_format() -> None:
    conversation = import_document(CRASHED["anthropic"])

    assert conversation.metadata["model"] == "claude-sonnet-4-5"
    assert exported(conversation, "anthropic")["model"] == "claude-sonnet-4-5"
    assert "model" not in exported(conversation, "openai-chat")
    assert set(exported(conversation, "gemini")) == {"contents", "systemInstruction"}


@pytest.mark.rule("MEM-5")
def test_the_normalized_export_is_sendable_and_says_what_it_dropped() -> None:
    conversation = store([user("go"), result("nobody declared this"), assistant("c1")])

    document = exported(conversation, "normalized")

    assert document["dropped"] == 1
    assert document["drops"] == [
        {
            "index": 1,
            "reason": "orphan_result",
            "call_id": "nobody declared this",
            "explanation": "no turn declares the call this result answers",
        }
    ]
    assert [m["role"] for m in document["messages"]] == ["user", "assistant", "tool"]
    normalized = healing.parse_messages(document["messages"])
    assert sendability.check(normalized, "openai-chat").accepted


def test_a_stored_jsonl_export_is_one_line_that_imports_again(tmp_path: Path) -> None:
    conversation = store([user("a"), assistant("c1")], title="one line", key="k1")
    body = exports.export(conversation, "stored-jsonl").body

    assert body.count(b"\n") == 1
    assert body.endswith(b"\n")
    path = tmp_path / "again.jsonl"
    path.write_bytes(body.replace(b'"k1"', b'"k2"'))
    [again] = services.import_conversations(
        transcripts.read_transcript_file(path).conversations, via="tests", owner=acting_user()
    )
    assert selectors.buffer_messages(again) == selectors.buffer_messages(conversation)


# Detection, and forcing a format.


def test_a_jsonl_file_of_chat_completion_bodies_imports_one_conversation_per_line() -> None:
    lines = [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
        CRASHED["openai-chat"],
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()

    created = services.import_conversations(
        transcripts.read_transcript(data, name="finetune.jsonl").conversations,
        via="tests",
        owner=acting_user(),
    )

    assert [c.title for c in created] == ["", "finetune line 2"]  # the stored shape's own
    assert [c.source_format for c in created] == ["stored", "openai-chat"]
    assert [c.unanswered_count for c in created] == [0, 1]


def test_a_list_of_bodies_is_several_conversations_named_after_the_file() -> None:
    data = as_file([CRASHED["anthropic"], CRASHED["anthropic"]])

    incoming = transcripts.read_transcript(data, name="two runs.json").conversations

    assert [c.title for c in incoming] == ["two runs #1", "two runs #2"]


def test_a_forced_format_that_does_not_fit_says_what_it_expected_where() -> None:
    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript(as_file(CRASHED["gemini"]), name="g.json", format="anthropic")

    assert str(refused.value) == "g.json: messages: is missing"


def test_an_unknown_format_is_refused_by_name() -> None:
    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript(b"{}", name="x.json", format="cohere")

    assert str(refused.value) == (
        "format: must be one of auto, stored, openai-chat, openai-responses, anthropic, "
        "gemini, claude-code, codex, gemini-cli, otel-genai, swe-agent, openhands, not 'cohere'"
    )


# Hostile and malformed files: a clear error with its place, and nothing written.

MALFORMED = [
    pytest.param(
        "openai-chat",
        {"model": "m", "messages": [{"role": "assistant", "tool_calls": {"id": "c1"}}]},
        ["messages[0].tool_calls: must be a list of calls, not an object"],
        id="openai-chat: calls that are not a list",
    ),
    pytest.param(
        "openai-chat",
        {"model": "m", "messages": [{"role": "tool", "content": "x"}]},
        ["messages[0].tool_call_id: is missing"],
        id="openai-chat: a result without its call id",
    ),
    pytest.param(
        "openai-responses",
        {"input": [{"type": "function_call_output", "output": "x"}]},
        ["input[0].call_id: is missing"],
        id="openai-responses: an output without its call id",
    ),
    pytest.param(
        "anthropic",
        {"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
        ["messages[0].content[0].tool_use_id: is missing"],
        id="anthropic: a tool_result without its tool_use_id",
    ),
    pytest.param(
        "anthropic",
        {
            "system": "s",
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": "x"}],
                }
            ],
        },
        ["messages[0].content[0].input: must be an object, not a string"],
        id="anthropic: tool input that is not an object",
    ),
    pytest.param(
        "gemini",
        {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": "x"}}]}]},
        ["contents[0].parts[0].functionCall.args: must be an object, not a string"],
        id="gemini: call arguments that are not an object",
    ),
    pytest.param(
        "gemini",
        {"contents": [{"role": "user", "parts": [{"functionResponse": {"response": {}}}]}]},
        ["contents[0].parts[0].functionResponse.name: is missing"],
        id="gemini: a response without the name it answers",
    ),
]


@pytest.mark.parametrize(("format", "document", "problems"), MALFORMED)
def test_a_malformed_document_writes_nothing_and_names_the_file_message_and_field(
    tmp_path: Path, format: str, document: Any, problems: list[str]
) -> None:
    store([user("already here")])
    before = stored_counts()
    path = tmp_path / f"{format}.json"
    path.write_bytes(as_file(document))

    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_transcripts", str(path), stdout=StringIO(), stderr=err)

    assert err.getvalue().splitlines() == [
        *(f"{path}: {problem}" for problem in problems),
        f"{path}: nothing was imported from this file",
    ]
    assert stored_counts() == before


@pytest.mark.parametrize("format", PROVIDER_FORMATS)
def test_invalid_utf8_in_any_format_is_refused_at_its_byte(format: str) -> None:
    data = as_file(CRASHED[format]).replace(b"Rome", b"R\xffme", 1)

    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript(data, name="bad.json")

    assert str(refused.value) == f"bad.json: is not UTF-8 text (byte {data.index(b'\xff')})"


@pytest.mark.parametrize("format", PROVIDER_FORMATS)
def test_deep_nesting_is_refused_whether_json_can_read_it_or_not(format: str) -> None:
    shallow_enough_to_parse = as_file(CRASHED[format]).replace(
        b'"Weather in Rome and Paris?"', b"[" * 500 + b"]" * 500, 1
    )
    too_deep_to_parse = as_file(CRASHED[format]).replace(
        b'"Weather in Rome and Paris?"', b"[" * 100_000 + b"]" * 100_000, 1
    )

    with pytest.raises(healing.InvalidInput) as deep:
        transcripts.read_transcript(shallow_enough_to_parse, name="deep.json")
    with pytest.raises(healing.InvalidInput) as deeper:
        transcripts.read_transcript(too_deep_to_parse, name="deeper.json")

    assert str(deep.value).endswith("nests arrays or objects more than 64 levels deep")
    assert str(deeper.value) == "deeper.json: file: nests arrays or objects too deeply to read"


def test_a_50_mb_file_is_refused_before_it_is_read_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as huge:
        huge.truncate(50 * 1024 * 1024)
    before = stored_counts()

    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_transcripts", str(path), max_mb=32, stdout=StringIO(), stderr=err)

    assert err.getvalue().splitlines()[0] == (
        f"{path}: is 50.0 MB; the largest transcript this reads is 32 MB "
        "(--max-mb raises the limit, or split it into several files)"
    )
    assert stored_counts() == before


def test_a_result_for_a_call_nobody_declared_is_kept_verbatim_and_reported() -> None:
    """Decision (docs/decisions.md, Provider formats): a stray result is stored as the
    crashed transcript holds it, as the stored importer does; the analysis shows it, the
    normalized export drops it, and the provider check says Anthropic would refuse it."""
    document = {
        "system": "s",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "?"}],
            },
        ],
    }

    conversation = import_document(document)

    messages = selectors.buffer_messages(conversation)
    kinds = [f.kind for f in healing.analyze(messages).findings]
    assert "orphan_result" in kinds
    assert exported(conversation, "normalized")["dropped"] == 1
    assert not sendability.check(messages, "anthropic").accepted


# The command.


def test_the_command_detects_each_format_and_can_be_forced(tmp_path: Path) -> None:
    for format in PROVIDER_FORMATS:
        (tmp_path / f"{format}.json").write_bytes(as_file(CRASHED[format]))
    out = StringIO()

    call_command("import_transcripts", *sorted(map(str, tmp_path.glob("*.json"))), stdout=out)
    call_command(
        "import_transcripts",
        str(tmp_path / "anthropic.json"),
        format="anthropic",
        stdout=out,
    )

    assert sorted(Conversation.objects.values_list("source_format", flat=True)) == sorted(
        [*PROVIDER_FORMATS, "anthropic"]
    )


def test_the_export_command_writes_a_format_to_stdout_or_a_file(tmp_path: Path) -> None:
    conversation = import_document(CRASHED["openai-chat"])
    out = StringIO()

    call_command("export_transcript", str(conversation.pk), format="openai-chat", stdout=out)
    call_command(
        "export_transcript",
        str(conversation.pk),
        format="anthropic",
        output=tmp_path / "a.json",
        stderr=StringIO(),
    )

    assert json.loads(out.getvalue()) == CRASHED["openai-chat"]
    written = json.loads((tmp_path / "a.json").read_text())
    assert written["messages"][1]["content"][0] == {
        "type": "tool_use",
        "id": "c1",
        "name": "weather",
        "input": {"city": "Rome"},
    }


def test_the_export_command_names_a_conversation_that_does_not_exist() -> None:
    with pytest.raises(CommandError, match=r"There is no conversation 999\."):
        call_command("export_transcript", "999", stdout=StringIO())


# The API.


def test_the_api_imports_a_provider_document_and_says_what_it_stored(client: Client) -> None:
    answer = client.post(
        "/api/imports",
        {"document": CRASHED["gemini"], "title": "gemini crash"},
        content_type="application/json",
    )

    assert answer.status_code == 201
    [created] = answer.json()["conversations"]
    conversation = Conversation.objects.get(pk=created["id"])
    assert created == {
        "id": conversation.pk,
        "count": 4,
        "source_format": "gemini",
        "unanswered": 1,
    }
    assert conversation.title == "gemini crash"
    change = BufferChange.objects.get(conversation=conversation)
    assert (change.action, change.via) == ("import", "api")


def test_the_api_refuses_a_malformed_document_with_paths_inside_it(client: Client) -> None:
    answer = client.post(
        "/api/imports",
        {"format": "anthropic", "document": {"messages": [{"role": "robot", "content": "x"}]}},
        content_type="application/json",
    )

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {
            "path": "document.messages[0].role",
            "message": "must be one of user, assistant, not 'robot'",
        }
    ]
    assert Conversation.objects.count() == 0


def test_the_api_refuses_an_import_body_over_the_upload_limit(client: Client) -> None:
    body = (
        b'{"document": {"messages": [{"role": "user", "content": "'
        + b"x" * (33 * 1024 * 1024)
        + b'"}]}}'
    )

    answer = client.post("/api/imports", body, content_type="application/json")

    assert answer.status_code == 400
    assert answer.json()["problems"] == [
        {"path": "body", "message": "is larger than the limit of 33,554,432 bytes"}
    ]
    assert Conversation.objects.count() == 0


@pytest.mark.parametrize("format", list(exports.DOCUMENT_FORMATS))
def test_the_api_exports_in_every_format_what_the_page_downloads(
    client: Client, format: str
) -> None:
    conversation = import_document(CRASHED["openai-chat"])

    api = client.get(f"/api/conversations/{conversation.pk}/export", {"format": format})
    page = client.get(f"/c/{conversation.pk}/export/{format}")

    assert api.status_code == page.status_code == 200
    assert api.content == page.content == exports.export(conversation, format).body
    assert page["Content-Disposition"] == (
        f'attachment; filename="crash-{conversation.pk}-{format}'
        f'{exports.EXPORT_FORMATS[format].suffix}"'
    )


@pytest.mark.parametrize("format", list(exports.NATIVE_FORMATS))
def test_a_runtime_file_is_offered_only_for_a_conversation_read_from_that_runtime(
    client: Client, format: str
) -> None:
    conversation = import_document(CRASHED["openai-chat"])

    api = client.get(f"/api/conversations/{conversation.pk}/export", {"format": format})
    page = client.get(f"/c/{conversation.pk}/export/{format}")

    assert api.status_code == 422
    assert "can be written back as one" in api.json()["problems"][0]["message"]
    assert page.status_code == 404
    assert f"/export/{format}" not in client.get(f"/c/{conversation.pk}/").text


def test_the_api_analysis_says_which_providers_would_refuse_and_why(client: Client) -> None:
    conversation = import_document(CRASHED["openai-chat"])

    verdicts = client.get(f"/api/conversations/{conversation.pk}/analysis").json()["sendability"]

    assert [v["provider"] for v in verdicts] == list(sendability.PROVIDERS)
    assert not any(v["accepted"] for v in verdicts)
    openai = verdicts[0]
    assert openai["summary"].startswith("OpenAI would reject this: call c2 at message 2")
    assert openai["rejections"][0]["index"] == 2
    assert openai["rejections"][0]["tool_call_id"] == "c2"


@pytest.mark.parametrize("format", ["openai-chat", "openai-responses", "gemini"])
def test_a_healed_call_and_its_placeholder_carry_one_string_id_in_every_providers_export(
    client: Client, format: str
) -> None:
    """Healing reads ``"abc "`` as ``abc`` and ``7`` as ``"7"`` (A9), and so heals them: the
    export writes the call's id as its placeholder's, where OpenAI had been sent
    ``"abc "`` beside ``"abc"`` (no result for its call) and an integer id, under the
    verdict "OpenAI would accept this history" (bug hunt)."""

    def call(call_id: object) -> dict[str, Any]:
        return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}

    created = client.post(
        "/api/conversations",
        {
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call("abc "), call(7)]},
            ]
        },
        content_type="application/json",
    ).json()
    url = f"/api/conversations/{created['id']}"
    client.post(
        f"{url}/messages",
        {"messages": [{"role": "user", "content": "still there?"}]},
        content_type="application/json",
    )
    verdicts = client.get(f"{url}/analysis").json()["sendability"]
    assert all(verdict["accepted"] for verdict in verdicts)

    body = client.get(f"{url}/export", {"format": format}).json()

    if format == "openai-chat":
        [_, turn, *results, _] = body["messages"]
        calls = [c["id"] for c in turn["tool_calls"]]
        answers = [r["tool_call_id"] for r in results]
    elif format == "openai-responses":
        calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
        answers = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    else:
        parts = [p for content in body["contents"] for p in content["parts"]]
        calls = [p["functionCall"]["id"] for p in parts if "functionCall" in p]
        answers = [p["functionResponse"]["id"] for p in parts if "functionResponse" in p]
    assert calls == answers == ["abc", "7"]


def test_a_gemini_turn_without_call_ids_healed_exports_each_response_in_its_calls_place(
    client: Client,
) -> None:
    """Gemini pairs a response with a call that has no id by its place among the turn's
    responses. The heal puts the second call's placeholder right after the turn, before
    the first call's result: the export had written them in that order (the placeholder
    with an id its call never had), so Gemini read Paris as interrupted and Rome as
    14C (bug hunt)."""
    weather = [
        {"functionCall": {"name": "weather", "args": {"city": c}}} for c in ("Paris", "Rome")
    ]
    document = {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
            {"role": "model", "parts": weather},
            {"role": "user", "parts": [{"functionResponse": {"name": "weather",
                                                             "response": {"output": "14C"}}}]},
        ]
    }  # fmt: skip
    imported = client.post(
        "/api/imports", {"document": document}, content_type="application/json"
    ).json()
    url = f"/api/conversations/{imported['conversations'][0]['id']}"
    client.post(
        f"{url}/messages",
        {"messages": [{"role": "user", "content": "and?"}]},
        content_type="application/json",
    )

    body = client.get(f"{url}/export", {"format": "gemini"}).json()

    responses = [p["functionResponse"] for p in body["contents"][2]["parts"][:2]]
    assert responses == [
        {"name": "weather", "response": {"output": "14C"}},
        {"name": "weather", "response": {"output": healing.INTERRUPTED_TEXT}},
    ]
    again = client.post(
        "/api/imports", {"document": body, "format": "gemini"}, content_type="application/json"
    ).json()["conversations"][0]
    assert again["unanswered"] == 0
    stored = client.get(f"/api/conversations/{again['id']}/messages").json()["messages"]
    calls = [c["id"] for c in stored[1]["metadata"]["tool_calls"]]
    answers = {m["metadata"]["tool_call_id"]: m["content"] for m in stored if m["role"] == "tool"}
    assert answers == {calls[0]: "14C", calls[1]: healing.INTERRUPTED_TEXT}


def test_an_unknown_export_format_is_a_422_from_the_api_and_a_404_on_the_page(
    client: Client,
) -> None:
    conversation = store([user("hi")])

    refused = client.get(f"/api/conversations/{conversation.pk}/export?format=pdf")
    assert refused.status_code == 422
    assert refused.json()["detail"] == "The request is not valid.", "a read writes nothing"
    assert client.get(f"/c/{conversation.pk}/export/pdf").status_code == 404


def test_a_runtime_file_that_cannot_be_written_back_says_why_on_the_page_and_the_api(
    client: Client,
) -> None:
    """A 2025 Codex rollout is read, but not written back in that layout: the page's
    download answers 422 with the reason, as the API does, never a 500 (bug hunt)."""
    legacy = Path(__file__).resolve().parent / "fixtures" / "codex" / "legacy.jsonl"
    call_command("import_transcripts", str(legacy), owner=acting_user().username, verbosity=0)
    conversation = Conversation.objects.get()
    assert "codex" in exports.formats_for(conversation)

    page = client.get(f"/c/{conversation.pk}/export/codex")
    api_answer = client.get(f"/api/conversations/{conversation.pk}/export?format=codex")

    assert (page.status_code, api_answer.status_code) == (422, 422)
    [problem] = api_answer.json()["problems"]
    reason = problem["message"]
    assert "not written back in that layout" in reason
    assert reason in page.content.decode()
    shown = client.get(f"/c/{conversation.pk}/").text
    assert "Not written back as a Codex CLI rollout: was read from a 2025 Codex rollout" in shown
    assert f"/c/{conversation.pk}/export/codex" not in shown, "no download that cannot work"


def test_the_export_command_says_why_a_runtime_file_cannot_be_written_back() -> None:
    legacy = Path(__file__).resolve().parent / "fixtures" / "codex" / "legacy.jsonl"
    call_command("import_transcripts", str(legacy), verbosity=0)
    conversation = Conversation.objects.get()

    for format, why in (
        ("codex", "was read from a 2025 Codex rollout"),
        ("claude-code", "only a conversation read from a Claude Code session"),
    ):
        with pytest.raises(CommandError, match=why):
            call_command(
                "export_transcript", str(conversation.pk), format=format, stdout=StringIO()
            )


@pytest.mark.parametrize("format", ["claude-code", "codex"])
@pytest.mark.parametrize("repair", ["edit", "delete"])
def test_a_runtime_file_repaired_in_the_admin_is_not_written_back(
    client: Client, format: str, repair: str
) -> None:
    """The runtime's writers write each message's lines as they were read: an admin edit or
    delete would be lost, or break the session's chain of events, with the download
    saying it was healed. Refused, saying why, on the page and the API; its link says so."""
    crashed = Path(__file__).resolve().parent / "fixtures" / format / "crashed.jsonl"
    call_command("import_transcripts", str(crashed), owner=acting_user().username, verbosity=0)
    conversation = Conversation.objects.get()
    assert client.get(f"/c/{conversation.pk}/export/{format}").status_code == 200
    if repair == "edit":
        first = selectors.buffer_messages(conversation)[0]
        edited = healing.Message(role="user", content="edited", metadata=first.metadata)
        services.edit_message(
            conversation_id=conversation.pk, index=0, message=edited, via="admin", by=None
        )
    else:
        services.delete_message(conversation_id=conversation.pk, index=0, via="admin", by=None)

    page = client.get(f"/c/{conversation.pk}/export/{format}")
    api_answer = client.get(f"/api/conversations/{conversation.pk}/export?format={format}")

    assert (page.status_code, api_answer.status_code) == (422, 422)
    [problem] = api_answer.json()["problems"]
    done = {"edit": "edited", "delete": "deleted"}[repair]
    assert problem["message"].startswith(
        f"this conversation was repaired in the admin (a message {done}"
    )
    assert escape(problem["message"]) in page.content.decode()
    detail = client.get(f"/c/{conversation.pk}/").text
    assert f"/export/{format}" not in detail
    assert "repaired in the admin" in detail


# The upload page.


def upload(client: Client, *files: tuple[str, bytes], **data: Any) -> Any:
    return client.post(
        "/import",
        {"transcripts": [SimpleUploadedFile(name, body) for name, body in files], **data},
    )


def test_the_upload_page_imports_several_files_in_different_formats(client: Client) -> None:
    answer = upload(
        client,
        ("anthropic run.json", as_file(CRASHED["anthropic"])),
        ("gemini run.json", as_file(CRASHED["gemini"])),
    )

    assert answer.status_code == 201
    assert sorted(Conversation.objects.values_list("title", "source_format")) == [
        ("anthropic run", "anthropic"),
        ("gemini run", "gemini"),
    ]
    assert "Imported 2 conversations" in answer.text
    assert BufferChange.objects.filter(via="inspector", action="import").count() == 2


def test_files_that_add_up_to_more_than_an_upload_takes_are_refused_before_any_is_read_as_json(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the security hunt: 20 files of 32 MB each were read together, about 4.5 GB in
    memory for one request. What one upload takes in all is bounded; the command takes more."""
    body = as_file(CRASHED["anthropic"])
    monkeypatch.setattr(forms, "MAX_UPLOAD_BYTES", 2 * len(body))

    answer = upload(client, ("a.json", body), ("b.json", body), ("c.json", body))

    assert answer.status_code == 422
    assert "These files add up to" in answer.text
    assert "manage.py import_transcripts" in answer.text
    assert not Conversation.objects.exists()


def test_one_bad_file_in_an_upload_imports_none_and_says_where(client: Client) -> None:
    answer = upload(
        client,
        ("good.json", as_file(CRASHED["anthropic"])),
        ("bad.jsonl", b'{"messages": []}\n{"messages": [\n'),
    )

    assert answer.status_code == 422
    assert "Nothing was imported." in answer.text
    assert "bad.jsonl: line 2, column 15" in answer.text
    assert Conversation.objects.count() == 0


def test_an_htmx_upload_answers_only_the_result_to_swap(client: Client) -> None:
    answer = client.post(
        "/import",
        {"transcripts": [SimpleUploadedFile("a.json", as_file(CRASHED["openai-chat"]))]},
        headers={"HX-Request": "true"},
    )

    assert answer.status_code == 200
    assert answer.text.lstrip().startswith('<section id="upload-result"')
    assert "read as OpenAI Chat Completions" in answer.text


def test_an_upload_over_the_size_limit_is_refused_by_name(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcripts, "MAX_TRANSCRIPT_BYTES", 1024 * 1024)

    answer = upload(client, ("big.json", b" " * (2 * 1024 * 1024)))

    assert answer.status_code == 422
    assert "big.json</code>: is 2.0 MB; the largest transcript this reads is 1 MB" in answer.text
    assert Conversation.objects.count() == 0


def test_an_upload_with_no_file_says_so(client: Client) -> None:
    answer = client.post("/import", {"format": "auto"})

    assert answer.status_code == 422
    assert "This field is required." in answer.text


# The conversation page.


def test_the_summary_loads_what_each_provider_would_say(client: Client) -> None:
    conversation = import_document(CRASHED["anthropic"])

    page = client.get(f"/c/{conversation.pk}/")
    section = client.get(f"/c/{conversation.pk}/sendability", headers={"HX-Request": "true"})

    assert f'hx-get="/c/{conversation.pk}/sendability"' in page.text
    assert "Anthropic would reject this: call c2 at message 2" in section.text
    assert f'href="/c/{conversation.pk}/?at=2#m-2"' in section.text


def test_after_a_user_turn_the_sendability_section_is_asked_for_again(client: Client) -> None:
    conversation = import_document(CRASHED["openai-chat"])

    answer = client.post(
        f"/c/{conversation.pk}/append",
        {"kind": "user", "user-content": "still there?"},
        headers={"HX-Request": "true"},
    )

    [tag] = re.findall(r'<section id="sendability"[^>]*>', answer.text)
    assert 'hx-swap-oob="true"' in tag  # with the stored verdicts, as the write left them
    assert '<li class="accepted">OpenAI would accept this history.</li>' in answer.text
    section = client.get(f"/c/{conversation.pk}/sendability", headers={"HX-Request": "true"})
    assert "OpenAI would accept this history." in section.text


def test_the_apis_format_names_are_the_readers_and_the_exporters() -> None:
    """The API spells its formats out for its OpenAPI document; they must not drift."""
    assert get_args(api.ImportFormat) == ("auto", *transcripts.FORMATS)
    assert get_args(api.ExportFormat) == tuple(exports.EXPORT_FORMATS)


def test_reading_a_transcript_leaves_the_garbage_collector_as_it_found_it() -> None:
    """buffers.bulk pauses it while a whole transcript is read; it must come back on."""
    assert gc.isenabled()
    transcripts.read_transcript(as_file(CRASHED["gemini"]), name="g.json")
    assert gc.isenabled()
    with pytest.raises(healing.InvalidInput):
        transcripts.read_transcript(b"{", name="broken.json")
    assert gc.isenabled()
    gc.disable()
    try:
        transcripts.read_transcript(as_file(CRASHED["gemini"]), name="g.json")
        assert not gc.isenabled()  # paused by someone else: still paused
    finally:
        gc.enable()


def test_an_openai_chat_body_with_its_own_metadata_field_reads_as_openai_chat() -> None:
    """``metadata`` is a Chat Completions request field too; only the stored shape's own
    fields (title, key, scope...) make a document the stored shape."""
    body = {**CRASHED["openai-chat"], "metadata": {"run": "7"}}

    [incoming] = transcripts.read_transcript(as_file(body), name="run.json").conversations

    assert incoming.source_format == "openai-chat"
    assert incoming.metadata["metadata"] == {"run": "7"}


def test_what_a_paused_read_kept_is_not_left_for_the_collectors_next_walk() -> None:
    """What survives a paused read goes to the oldest generation, not the youngest: left
    young, the first allocation after the pause walks all of it (0.46 s after reading a
    100,000-message Claude Code session). Python 3.12 freezes a few hundred of its own
    objects as it starts, which must not stop this."""
    assert gc.isenabled()
    with bulk.cyclic_gc_paused():
        kept = [[index] for index in range(200_000)]

    young = [*gc.get_objects(generation=0), *gc.get_objects(generation=1)]
    assert not any(value is kept[7] for value in young)
    assert any(value is kept[7] for value in gc.get_objects(generation=2))
