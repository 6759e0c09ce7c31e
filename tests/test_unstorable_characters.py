"""A runtime's log whose tool output holds U+0000 (``cat`` of a binary file) or a lone
surrogate, which no database stores: imported with the character replaced by U+FFFD, the
place named in the import's report (the command, the upload page, the API), and every
call still paired with its result. A document in the stored shape or a provider's format
is refused at the place, as before (tests/test_import_transcripts.py)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from buffers import selectors, transcripts
from buffers.models import Conversation
from tests.test_api import post

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BINARY = "\u007fELF\u0002\u0001\u0001\u0000\u0000"


def codex_with_a_binary_output() -> tuple[str, int]:
    """The clean Codex rollout with its first tool output a binary file's bytes; and that
    line's number."""
    lines = (FIXTURES / "codex" / "clean.jsonl").read_text().rstrip("\n").split("\n")
    for number, line in enumerate(lines, start=1):
        value = json.loads(line)
        if value["payload"].get("type") == "function_call_output":
            value["payload"]["output"] = BINARY
            lines[number - 1] = json.dumps(value)
            return "\n".join(lines) + "\n", number
    raise AssertionError("the fixture has a tool output")


def tool_texts(conversation: Conversation) -> list[str]:
    rows = selectors.core_messages_page(conversation, offset=0, limit=conversation.message_count)
    return [str(m.content) for _, m in rows if m.role == "tool"]


def test_the_command_imports_the_log_and_names_what_it_replaced(tmp_path: Path) -> None:
    text, number = codex_with_a_binary_output()
    path = tmp_path / "rollout.jsonl"
    path.write_text(text)
    out = StringIO()

    call_command("import_transcripts", str(path), stdout=out)

    report = out.getvalue()
    assert ", 1 changed)" in report
    assert (
        f"  changed {path}: line {number}: payload.output: held U+0000, which no database "
        "stores: replaced by U+FFFD (the rest was read as written)"
    ) in report
    conversation = Conversation.objects.get()
    assert conversation.unanswered_count == 0  # the output still answers its call
    assert "\u007fELF\u0002\u0001\u0001\ufffd\ufffd" in tool_texts(conversation)


def test_a_runtime_document_is_read_the_same_with_each_place_named(client: Client) -> None:
    chat = json.loads((FIXTURES / "gemini-cli" / "clean.json").read_text())
    index, call = next(
        (i, m["toolCalls"][0]) for i, m in enumerate(chat["messages"]) if m.get("toolCalls")
    )
    call["result"][0]["functionResponse"]["response"]["output"] = BINARY
    chat["messages"][0]["content"] = "a lone \ud800 surrogate"
    upload = SimpleUploadedFile("session.json", json.dumps(chat).encode())

    page = client.post("/import", {"transcripts": [upload], "format": "auto"}).text

    assert "<summary>Changed</summary>" in page
    place = "toolCalls[0].result[0].functionResponse.response.output"
    assert f"<code>session.json: messages[{index}]</code>: {place}: held U+0000" in page
    assert (
        "<code>session.json: messages[0]</code>: content: held U+D800, which no database "
        "stores: replaced by U+FFFD"
    ) in page
    conversation = Conversation.objects.get()
    assert any("\ufffd" in text for text in tool_texts(conversation))


def test_the_api_says_what_it_changed(client: Client) -> None:
    text, number = codex_with_a_binary_output()

    answer = post(client, "/api/imports", {"text": text, "name": "rollout.jsonl"})

    assert answer.status_code == 201, answer.content
    body: dict[str, Any] = answer.json()
    assert body["read_as"].endswith(", 1 changed)")
    assert body["changed"] == [
        {
            "where": f"line {number}",
            "why": "payload.output: held U+0000, which no database stores: replaced by U+FFFD "
            "(the rest was read as written)",
        }
    ]
    assert body["skipped"] == []


def test_a_line_of_a_document_per_line_file_is_still_refused(client: Client) -> None:
    line = json.dumps({"messages": [{"role": "user", "content": "a\u0000"}]})

    answer = post(client, "/api/imports", {"text": line + "\n", "name": "stored.jsonl"})

    assert answer.status_code == 422
    assert "holds the character U+0000, which cannot be stored" in answer.text
    assert Conversation.objects.count() == 0


def test_a_file_of_runtime_documents_one_per_line_says_what_it_changed_in_each() -> None:
    """Each line a SWE-agent trajectory (as a .json file holds one): read leniently as
    that file would be, with what was changed named under its line."""
    trajectory = json.loads((FIXTURES / "swe-agent" / "clean.traj").read_text())
    changed = json.loads(json.dumps(trajectory))
    changed["history"][2]["content"] = BINARY
    text = json.dumps(trajectory) + "\n" + json.dumps(changed) + "\n"

    reading = transcripts.read_transcript(text.encode(), name="runs.jsonl")

    assert reading.read_as == ["swe-agent", "swe-agent"]
    assert [str(p) for p in reading.changed] == [
        "runs.jsonl: line 2: history[2]: content: held U+0000, which no database stores: "
        "replaced by U+FFFD"
    ]


def test_many_strings_of_one_entry_are_said_once_with_how_many(client: Client) -> None:
    chat = json.loads((FIXTURES / "gemini-cli" / "clean.json").read_text())
    chat["messages"][0]["content"] = [{"text": f"part {n} \u0000"} for n in range(5)]
    upload = SimpleUploadedFile("session.json", json.dumps(chat).encode())

    page = client.post("/import", {"transcripts": [upload], "format": "auto"}).text

    assert (
        "<code>session.json: messages[0]</code>: content[0].text, content[1].text, "
        "content[2].text and 2 more: held U+0000"
    ) in page
    assert "1 changed" in page


def test_a_lone_surrogate_a_text_carries_as_it_is_is_replaced_too(client: Client) -> None:
    """An API ``text`` whose JSON string spelled an escape holds the character itself."""
    text, number = codex_with_a_binary_output()
    text = text.replace("\\u0000", "\ud800")

    answer = client.post(
        "/api/imports",
        json.dumps({"text": text, "name": "rollout.jsonl"}, ensure_ascii=True),
        content_type="application/json",
    )

    assert answer.status_code == 201, answer.content
    assert answer.json()["changed"][0]["where"] == f"line {number}"
    assert "held U+D800" in answer.json()["changed"][0]["why"]
