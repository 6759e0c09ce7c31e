"""An object that names a key twice is refused wherever JSON comes in, naming the object
and the key, and nothing is written; a line of an agent-runtime log that does is skipped
and reported, as a line that is not JSON is (docs/decisions.md, "Duplicate keys").
Through the real entry points: the API, the OTLP receiver, the upload page, the command."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from buffers import selectors
from buffers.models import ApiToken, Conversation, Message
from tests.buffers import store, user

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REFUSED = "The request is not valid; nothing was written."

# The stored shape, the third message's one block naming "text" twice.
TWICE = (
    '{"title": "doubled",\n'
    ' "messages": [\n'
    '  {"role": "user", "content": "hi"},\n'
    '  {"role": "user", "content": "still there?"},\n'
    '  {"role": "assistant", "content": [{"type": "text", "text": "a", "text": "b"}]}]}'
)
TWICE_PROBLEM = {"path": "messages[2].content[0]", "message": 'the key "text" appears twice'}


def post(client: Client, url: str, body: str | bytes) -> Any:
    return client.post(url, body, content_type="application/json")


def stored() -> tuple[int, int]:
    return Conversation.objects.count(), Message.objects.count()


def claude_code_log(twice_on_last_line: bool) -> str:
    """A Claude Code session from the fixtures, its last line naming "role" twice."""
    lines = (FIXTURES / "claude-code" / "clean.jsonl").read_text().splitlines()
    if twice_on_last_line:
        lines[-1] = lines[-1].replace(
            '"message":{"role":"user",', '"message":{"role":"user","role":"user",'
        )
    return "\n".join(lines) + "\n"


# The API.


def test_a_new_conversation_naming_a_key_twice_is_refused_with_its_path(client: Client) -> None:
    answer = post(client, "/api/conversations", TWICE)

    assert answer.status_code == 422
    assert answer.json() == {"detail": REFUSED, "problems": [TWICE_PROBLEM]}
    assert stored() == (0, 0)


def test_a_key_named_twice_at_the_top_of_a_body_is_the_bodys(client: Client) -> None:
    answer = post(client, "/api/conversations", '{"title": "a", "messages": [], "title": "b"}')

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {"path": "body", "message": 'the key "title" appears twice'}
    ]
    assert stored() == (0, 0)


def test_an_append_naming_a_key_twice_writes_nothing(client: Client) -> None:
    conversation = store([user("hello")])
    body = '{"messages": [{"role": "user", "content": "x", "metadata": {"k": 1, "k": 2}}]}'

    answer = post(client, f"/api/conversations/{conversation.pk}/messages", body)

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {"path": "messages[0].metadata", "message": 'the key "k" appears twice'}
    ]
    assert Message.objects.filter(conversation=conversation).count() == 1


def test_an_imported_document_naming_a_key_twice_is_refused_under_document(
    client: Client,
) -> None:
    answer = post(client, "/api/imports", '{"document": ' + TWICE + "}")

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {"path": "document.messages[2].content[0]", "message": 'the key "text" appears twice'}
    ]
    assert stored() == (0, 0)


def test_an_imported_files_text_naming_a_key_twice_is_refused_with_its_line(
    client: Client,
) -> None:
    answer = post(client, "/api/imports", json.dumps({"text": TWICE, "name": "run.json"}))

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {
            "path": "text.line 5, column 67",
            "message": 'messages[2].content[0]: the key "text" appears twice',
        }
    ]
    assert stored() == (0, 0)


def test_a_log_sent_as_text_skips_the_line_naming_a_key_twice_and_says_so(
    client: Client,
) -> None:
    whole = post(
        client, "/api/imports", json.dumps({"text": claude_code_log(False), "name": "s.jsonl"})
    )
    doubled = post(
        client, "/api/imports", json.dumps({"text": claude_code_log(True), "name": "s.jsonl"})
    )

    assert whole.status_code == doubled.status_code == 201
    assert whole.json()["skipped"] == []
    [skip] = doubled.json()["skipped"]
    assert skip["where"].startswith("line 21, column ")
    assert skip["why"] == 'message: the key "role" appears twice'
    [first, second] = whole.json()["conversations"] + doubled.json()["conversations"]
    assert second["count"] == first["count"] - 1


def test_keys_repeated_in_different_objects_are_not_twice_and_read_as_sent(
    client: Client,
) -> None:
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "a: b"}, {"type": "text", "text": "c"}],
        },
        {"role": "assistant", "content": "colons: here", "metadata": {"type": {"type": 1}}},
    ]
    body = json.dumps({"messages": messages}).replace(": here", "\\u003a here")

    answer = post(client, "/api/conversations", body)

    assert answer.status_code == 201
    page = client.get(f"/api/conversations/{answer.json()['id']}/messages").json()
    assert [m["content"] for m in page["messages"]] == [m["content"] for m in messages]
    assert page["messages"][1]["metadata"] == {"type": {"type": 1}}


# The OTLP receiver.


@pytest.fixture
def token() -> str:
    owner, _ = User.objects.get_or_create(username="agent-owner")
    return ApiToken.issue(owner, "agent")[1]


def otlp(client: Client, token: str, body: str) -> Any:
    return client.generic(
        "POST",
        "/api/otel/v1/traces",
        body.encode(),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


def export(span: str) -> str:
    return (
        '{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, '
        '"spans": [' + span + "]}]}]}"
    )


def chat_span(inputs: str) -> str:
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.conversation.id", "value": {"stringValue": "conv-1"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": inputs}},
    ]
    return json.dumps(
        {
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": "eee19b7ec3c1b174",
            "name": "chat gpt-4o-mini",
            "kind": 3,
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": attributes,
        }
    )


def test_an_otlp_json_request_naming_a_key_twice_is_a_400_naming_the_span(
    client: Client, token: str
) -> None:
    span = chat_span("[]").replace('"kind": 3', '"kind": 3, "name": "again"')

    answer = otlp(client, token, export(span))

    assert answer.status_code == 400
    assert answer.json()["code"] == 3
    assert answer.json()["message"] == (
        "The body is not an OTLP/JSON trace export: resourceSpans[0].scopeSpans[0].spans[0] "
        'names the key "name" twice.'
    )
    assert stored() == (0, 0)


def test_messages_naming_a_key_twice_in_an_attribute_refuse_that_span(
    client: Client, token: str
) -> None:
    inputs = '[{"role": "user", "parts": [{"type": "text", "content": "a", "content": "b"}]}]'

    answer = otlp(client, token, export(chat_span(inputs)))

    assert answer.status_code == 200
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert (
        'gen_ai.input.messages[0].parts[0]: the key "content" appears twice'
        in (partial["errorMessage"])
    )
    assert stored() == (0, 0)


# The upload page.


def test_an_uploaded_file_naming_a_key_twice_imports_nothing_and_says_where(
    client: Client,
) -> None:
    answer = client.post(
        "/import",
        {
            "transcripts": [
                SimpleUploadedFile(
                    "fine.json", b'{"messages": [{"role": "user", "content": "x"}]}'
                ),
                SimpleUploadedFile("run.json", TWICE.encode()),
            ]
        },
    )

    assert answer.status_code == 422
    assert (
        "<code>run.json: line 5, column 67</code>: messages[2].content[0]: the key "
        "&quot;text&quot; appears twice"
    ) in answer.text
    assert stored() == (0, 0)


# The command.


def import_failing(*files: Path) -> str:
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_transcripts", *map(str, files), stdout=StringIO(), stderr=err)
    return err.getvalue()


def test_the_command_refuses_a_json_file_naming_a_key_twice_with_line_and_path(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.json"
    path.write_text(TWICE)

    err = import_failing(path)

    assert f'{path}: line 5, column 67: messages[2].content[0]: the key "text" appears twice' in err
    assert stored() == (0, 0)


def test_the_command_refuses_a_document_per_line_naming_a_key_twice_with_its_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.jsonl"
    fine = '{"messages": [{"role": "user", "content": "x"}]}'
    deep = (
        '{"messages": [{"role": "user", "content": "y", '
        '"metadata": {"a": [{"b": {"c": 1, "c": 2}}]}}]}'
    )
    path.write_text(f"{fine}\n{deep}\n")

    err = import_failing(path)

    assert (
        f'{path}: line 2, column 82: messages[0].metadata.a[0].b: the key "c" appears twice' in err
    )
    assert stored() == (0, 0)


def test_the_command_reads_a_log_on_past_a_line_naming_a_key_twice(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text(claude_code_log(True))
    out = StringIO()

    call_command("import_transcripts", str(path), stdout=out, stderr=StringIO())

    assert f"skipped {path}: line 21, column " in out.getvalue()
    assert 'message: the key "role" appears twice' in out.getvalue()
    [conversation] = Conversation.objects.all()
    contents = [m.content for m in selectors.buffer_messages(conversation)]
    assert not any("Session renamed" in str(content) for content in contents)


def test_a_file_without_keys_named_twice_reads_as_the_standard_library_reads_it(
    tmp_path: Path,
) -> None:
    document = json.loads(TWICE.replace('"text": "a", ', ""))
    document["messages"][0]["metadata"] = {"url": "http://x:8000/a", "n": {"n": {"n": [1.5, None]}}}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document, indent=2))

    call_command("import_transcripts", str(path), stdout=StringIO(), stderr=StringIO())

    [conversation] = Conversation.objects.all()
    assert [m.as_stored() for m in selectors.buffer_messages(conversation)] == [
        {"role": m["role"], "content": m["content"], "metadata": m.get("metadata", {})}
        for m in document["messages"]
    ]
