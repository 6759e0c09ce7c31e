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

from buffers import selectors
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
    place = f"messages[{index}].toolCalls[0].result[0].functionResponse.response.output"
    assert f"<code>session.json: {place}</code>: held U+0000" in page
    assert "held U+D800, which no database stores: replaced by U+FFFD" in page
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
