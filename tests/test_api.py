"""The storage API's contract, through Django's test client and the real database."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from buffers.models import Conversation, Message
from tests.buffers import (
    acting_user,
    assistant,
    keyed_api_append,
    placeholder,
    result,
    store,
    user,
)

pytestmark = pytest.mark.django_db


def post(client: Client, url: str, body: Any) -> Any:
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(url, data, content_type="application/json")


def messages_of(client: Client, conversation_id: int) -> list[dict[str, Any]]:
    page = client.get(f"/api/conversations/{conversation_id}/messages").json()
    result: list[dict[str, Any]] = page["messages"]
    return result


CRASHED = [
    {"role": "user", "content": "weather in Paris and Rome?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"},
                                                           {"id": "c2", "type": "function"}]},
    {"role": "tool", "tool_call_id": "c1", "content": "14C"},
    {"role": "user", "content": "hello?"},
]  # fmt: skip


# Creating a conversation.


def test_a_transcript_is_stored_verbatim_and_answered_with_its_place(client: Client) -> None:
    created = post(client, "/api/conversations", {"title": "crash", "messages": CRASHED})

    assert created.status_code == 201
    body = created.json()
    assert body == {"id": body["id"], "count": 4}
    assert created["Location"] == f"/api/conversations/{body['id']}"
    stored = messages_of(client, body["id"])
    assert stored[1] == {
        "role": "assistant",
        "content": None,
        "metadata": {"tool_calls": [{"id": "c1", "type": "function"},
                                    {"id": "c2", "type": "function"}]},
    }  # fmt: skip
    assert len(stored) == 4, "a crashed transcript is kept as it is: nothing healed"


def test_every_field_of_a_new_conversation_is_optional(client: Client) -> None:
    created = post(client, "/api/conversations", {})

    assert created.status_code == 201
    assert created.json()["count"] == 0


def test_nothing_a_client_sent_is_lost_and_structured_content_is_kept(client: Client) -> None:
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]
    sent = {"role": "user", "content": parts, "name": "ada", "metadata": {"trace": "t1"}}

    created = post(client, "/api/conversations", {"messages": [sent]})

    assert messages_of(client, created.json()["id"]) == [
        {"role": "user", "content": parts, "metadata": {"trace": "t1", "name": "ada"}}
    ]


# Reading conversations.


def test_conversations_are_listed_newest_first_with_their_counts(client: Client) -> None:
    older = store([user(), assistant("c1")], title="older")
    newer = store([user()], title="newer")

    listing = client.get("/api/conversations").json()

    assert listing["total"] == 2
    assert [c["id"] for c in listing["conversations"]] == [newer.pk, older.pk]
    first = listing["conversations"][1]
    assert {k: first[k] for k in ("title", "count", "unanswered", "healed")} == {
        "title": "older",
        "count": 2,
        "unanswered": 1,
        "healed": 0,
    }
    assert set(first) == {"id", "title", "source", "created", "updated", "count", "unanswered",
                          "healed", "sendable", "rejected_by", "rejections", "problems",
                          "match"}  # fmt: skip
    assert first["match"] is None  # no search asked


def test_conversations_filter_on_unanswered_calls_and_page(client: Client) -> None:
    crashed = store([assistant("c1")], title="crashed")
    healthy = [store([user()], title=f"healthy {n}") for n in range(3)]

    only_crashed = client.get("/api/conversations", {"unanswered": "true"}).json()
    only_healthy = client.get("/api/conversations", {"unanswered": "false"}).json()
    second_page = client.get("/api/conversations", {"offset": 1, "limit": 2}).json()

    assert [c["id"] for c in only_crashed["conversations"]] == [crashed.pk]
    assert {c["id"] for c in only_healthy["conversations"]} == {c.pk for c in healthy}
    assert [c["id"] for c in second_page["conversations"]] == [healthy[1].pk, healthy[0].pk]
    assert (second_page["offset"], second_page["limit"], second_page["total"]) == (1, 2, 4)


def test_a_page_size_beyond_the_cap_is_capped(client: Client) -> None:
    page = client.get("/api/conversations", {"limit": 10_000}).json()

    assert page["limit"] == 500


def test_one_conversation_answers_the_same_fields(client: Client) -> None:
    conversation = store([assistant("c1"), placeholder("c1")], title="one", source="tests")

    body = client.get(f"/api/conversations/{conversation.pk}").json()

    assert (body["id"], body["title"], body["source"]) == (conversation.pk, "one", "tests")
    assert (body["count"], body["unanswered"], body["healed"]) == (2, 0, 1)


# Appending.


@pytest.mark.rule("MEM-3")
@pytest.mark.rule("MEM-14")
def test_an_append_reports_what_the_rules_did_with_indexes_in_the_result(client: Client) -> None:
    conversation = store([user(), assistant("c1", "c2"), result("c2"), user("?")])

    answer = post(
        client,
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [{"role": "tool", "tool_call_id": "c2", "content": "again"},
                      {"role": "user", "content": "still there?"}]},
    )  # fmt: skip

    assert answer.status_code == 200
    assert answer.json() == {
        "scope": "global",
        "resolved_scope_id": "",
        "refused": None,
        "count": 6,
        "appended": 1,
        "appended_any": True,
        "healed": [{"index": 2, "tool_call_id": "c1", "declared_at": 1, "declared_before": 1}],
        "replaced": [],
        "dropped": [
            {
                "batch_index": 0,
                "reason": "duplicate_result",
                "tool_call_id": "c2",
                "answered_at": 3,
                "explanation": "this call is already answered at message 3 (MEM-1)",
            }
        ],
        "outcomes": [
            {"batch_index": 0, "action": "dropped", "index": None, "reason": "duplicate_result"},
            {"batch_index": 1, "action": "appended", "index": 5, "reason": None},
        ],
        "orphans": [],
    }


@pytest.mark.rule("MEM-10")
def test_a_replacement_is_reported_at_its_index(client: Client) -> None:
    conversation = store([assistant("c1"), placeholder("c1"), user()])

    answer = post(
        client,
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [{"role": "tool", "tool_call_id": "c1", "content": "Found 3 cats"}]},
    ).json()

    assert answer["replaced"] == [{"index": 1, "tool_call_id": "c1"}]
    assert (answer["count"], answer["appended"]) == (3, 0)


def test_an_appended_result_no_call_declares_is_listed_as_an_orphan(client: Client) -> None:
    conversation = store([user(), assistant("c1"), result("c1")])

    answer = post(
        client,
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [{"role": "tool", "tool_call_id": "c9", "content": "lost"}]},
    ).json()

    assert answer["orphans"] == [{"index": 3, "tool_call_id": "c9"}]
    assert answer["appended"] == 1


# Reading messages.


def test_messages_are_paged_in_buffer_order(client: Client) -> None:
    conversation = store([user(f"m{n}") for n in range(12)])

    page = client.get(f"/api/conversations/{conversation.pk}/messages", {"offset": 10}).json()

    assert (page["count"], page["offset"]) == (12, 10)
    assert [m["content"] for m in page["messages"]] == ["m10", "m11"]


def test_a_page_past_the_end_of_any_buffer_is_empty(client: Client) -> None:
    conversation = store([user("only")])
    url = f"/api/conversations/{conversation.pk}/messages"

    for offset in (2**63 - 100, 2**63 - 1):
        response = client.get(url, {"offset": offset})

        assert response.status_code == 200, response.text
        assert (response.json()["count"], response.json()["messages"]) == (1, [])


def test_a_page_deep_in_a_long_buffer_costs_what_the_first_page_does(
    client: Client, settings: Any
) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 32
    conversation = store([user(f"m{n}") for n in range(2_000)])
    url = f"/api/conversations/{conversation.pk}/messages"

    counts = []
    for offset in (0, 1_950):
        with CaptureQueriesContext(connection) as queries:
            page = client.get(url, {"offset": offset, "limit": 50}).json()
        counts.append(len(queries.captured_queries))
        expected = [f"m{n}" for n in range(offset, offset + 50)]
        assert [m["content"] for m in page["messages"]] == expected

    assert counts[0] == counts[1]


def test_an_append_with_a_token_and_a_key_looks_the_token_up_once() -> None:
    """The idempotency middleware finds the token's user; the API's auth reuses it."""
    owner = acting_user()
    conversation = store([user("go"), assistant("c1")], owner=owner)
    answer, statements = keyed_api_append(conversation, owner, "once")

    assert answer.status_code == 200
    lookups = [
        sql for sql in statements if re.search(r"^\s*SELECT\b.*\bbuffers_apitoken\b", sql, re.S)
    ]
    assert len(lookups) == 1
    assert [healed["tool_call_id"] for healed in answer.json()["healed"]] == ["c1"]


def test_the_analysis_names_each_unanswered_call_and_each_finding(client: Client) -> None:
    conversation = store([assistant("c1", "c2"), result("c2"), result("c2"), result("c9")])

    analysis = client.get(f"/api/conversations/{conversation.pk}/analysis").json()

    assert analysis["count"] == 4
    assert analysis["unanswered"] == [{"tool_call_id": "c1", "declared_at": 0}]
    assert [(f["index"], f["kind"]) for f in analysis["findings"]] == [
        (0, "unanswered_call"),
        (2, "duplicate_result"),
        (3, "orphan_result"),
    ]


# Refusals: each problem with its place, and nothing of the batch written.

BAD_BATCHES = [
    pytest.param("{not json", 400, ["body, line 1, column 2"], id="malformed JSON"),
    pytest.param("[1, 2]", 422, ["body"], id="a body that is not an object"),
    pytest.param({"messages": "hi"}, 422, ["messages"], id="messages not a list"),
    pytest.param(
        {"messages": [{"role": "user", "content": "fine"}, 3]},
        422,
        ["messages[1]"],
        id="a message that is not an object",
    ),
    pytest.param(
        {"messages": [{"role": "user"}, {"role": "bot"}]},
        422,
        ["messages[1].role"],
        id="unknown role",
    ),
    pytest.param(
        {"messages": [user(), {"role": "tool", "content": "x"}]},
        422,
        ["messages[1].metadata.tool_call_id"],
        id="a tool message without an id",
    ),
    pytest.param(
        {"messages": [user(), {"role": "tool", "content": "x", "metadata": {"tool_call_id": "0"}}]},
        422,
        ["messages[1].metadata.tool_call_id"],
        id="a tool message whose id is unusable",
    ),
    pytest.param(
        {"messages": [user(), {"role": "assistant", "tool_calls": {"id": "c1"}}]},
        422,
        ["messages[1].tool_calls"],
        id="tool_calls not a list",
    ),
    pytest.param(
        {"messages": [user(), {"role": "assistant", "tool_calls": [{"name": "search"}]}]},
        422,
        ["messages[1].tool_calls[0]"],
        id="a declared call without an id",
    ),
    pytest.param(
        {"messages": [user(), {"role": "user", "content": "a\u0000b"}]},
        422,
        ["messages[1].content"],
        id="a NUL character",
    ),
    pytest.param({}, 422, ["messages"], id="no messages at all"),
]


@pytest.mark.rule("MEM-1")
@pytest.mark.rule("MEM-11")
@pytest.mark.parametrize(("body", "status", "paths"), BAD_BATCHES)
def test_a_refused_batch_says_where_and_writes_nothing(
    client: Client, body: Any, status: int, paths: list[str]
) -> None:
    """Where a batch has a list of messages, it starts with a good user turn, which would
    heal c1 if anything of the batch were written."""
    conversation = store([assistant("c1")])
    before = messages_of(client, conversation.pk)

    answer = post(client, f"/api/conversations/{conversation.pk}/messages", body)

    assert answer.status_code == status
    assert [p["path"] for p in answer.json()["problems"]] == paths
    assert all(p["message"] for p in answer.json()["problems"])
    assert messages_of(client, conversation.pk) == before
    conversation.refresh_from_db()
    assert (conversation.message_count, conversation.version) == (1, 0)


def test_a_refused_transcript_creates_no_conversation(client: Client) -> None:
    answer = post(client, "/api/conversations", {"messages": [{"role": "user"}, {"role": "x"}]})

    assert answer.status_code == 422
    assert [p["path"] for p in answer.json()["problems"]] == ["messages[1].role"]
    assert Conversation.objects.count() == 0


def test_an_oversized_body_is_refused_with_the_limit_named(client: Client, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    conversation = store([])

    answer = post(
        client,
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [{"role": "user", "content": "x" * 2_000}]},
    )

    assert answer.status_code == 400
    assert answer.json()["problems"] == [
        {"path": "body", "message": "is larger than the limit of 1,000 bytes"}
    ]
    assert Message.objects.count() == 0


@pytest.mark.parametrize(
    "url",
    [
        "/api/conversations/404",
        "/api/conversations/404/messages",
        "/api/conversations/404/analysis",
        "/api/conversations/99999999999999999999999",
        "/api/conversations/abc",
        "/api/nothing-here",
    ],
)
def test_an_unknown_conversation_or_endpoint_is_a_json_404(client: Client, url: str) -> None:
    answer = client.get(url)

    assert answer.status_code == 404
    assert answer["Content-Type"].startswith("application/json")
    assert answer.json()["detail"]


def test_appending_to_an_unknown_conversation_is_a_404(client: Client) -> None:
    answer = post(client, "/api/conversations/404/messages", {"messages": [user()]})

    assert answer.status_code == 404


@pytest.mark.rule("MEM-15")
@pytest.mark.parametrize("method", ["put", "patch", "delete"])
@pytest.mark.parametrize(
    "url", ["/api/conversations/{id}", "/api/conversations/{id}/messages", "/api/conversations"]
)
def test_no_endpoint_updates_or_deletes_messages(client: Client, method: str, url: str) -> None:
    """MEM-15: a message is not editable outside the administrative tier."""
    conversation = store([user("keep me")])

    answer = getattr(client, method)(url.format(id=conversation.pk))

    assert answer.status_code == 405
    assert answer.json()["detail"].startswith("Method not allowed")
    assert messages_of(client, conversation.pk) == [user("keep me")]


def test_the_openapi_document_describes_the_contract_and_the_docs_render(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    docs = client.get("/api/docs")

    assert set(document["paths"]) == {
        "/api/conversations",
        "/api/conversations/{conversation_id}",
        "/api/conversations/{conversation_id}/messages",
        "/api/conversations/{conversation_id}/analysis",
        "/api/conversations/{conversation_id}/export",
        "/api/conversations/{conversation_id}/search",
        "/api/imports",
    }
    assert docs.status_code == 200
    assert b"swagger-ui-bundle.js" in docs.content


# From the review: what once answered a 500, HTML, or only part of the problems.


def test_a_character_the_database_cannot_store_in_a_title_is_refused(client: Client) -> None:
    answer = post(client, "/api/conversations", {"title": "a\u0000b", "source": "x\ud800"})

    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {"path": "title", "message": "holds the character U+0000, which cannot be stored"},
        {
            "path": "source",
            "message": "holds a lone surrogate (U+D800 to U+DFFF), which cannot be stored",
        },
    ]
    assert Conversation.objects.count() == 0


def test_every_problem_of_every_message_is_listed_at_once(client: Client) -> None:
    conversation = store([])

    answer = post(
        client,
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [{"role": "bot"}, {"role": "tool", "content": "x"}, {"role": "user"}]},
    )

    assert answer.status_code == 422
    assert [p["path"] for p in answer.json()["problems"]] == [
        "messages[0].role",
        "messages[1].metadata.tool_call_id",
    ]


def test_an_unknown_field_in_a_body_is_refused_not_ignored(client: Client) -> None:
    answer = post(client, "/api/conversations", {"title": "t", "mesages": []})

    assert answer.status_code == 422
    assert [p["path"] for p in answer.json()["problems"]] == ["mesages"]


def test_conversations_are_newest_created_first_so_paging_stays_put(client: Client) -> None:
    first = store([assistant("c1")], title="first")
    second = store([], title="second")
    post(client, f"/api/conversations/{first.pk}/messages", {"messages": [user()]})

    listing = client.get("/api/conversations").json()

    assert [c["id"] for c in listing["conversations"]] == [second.pk, first.pk]


@pytest.mark.parametrize("path", ["", "/{id}", "/{id}/messages", "/{id}/analysis"])
def test_every_read_answers_head_like_get_without_a_body(client: Client, path: str) -> None:
    conversation = store([user()])
    url = f"/api/conversations{path.format(id=conversation.pk)}"

    head, get = client.head(url), client.get(url)

    assert (head.status_code, get.status_code) == (200, 200)
    assert head.content == b""


def test_the_document_and_the_docs_refuse_writes_in_json_even_with_csrf_enforced() -> None:
    client = Client(enforce_csrf_checks=True)

    for url in ("/api/openapi.json", "/api/docs"):
        answer = client.post(url)
        assert answer.status_code == 405
        assert answer.json()["detail"].startswith("Method not allowed")
    root = client.get("/api/")
    assert (root.status_code, root["Content-Type"]) == (404, "application/json; charset=utf-8")


def test_too_many_query_fields_is_a_json_400(client: Client) -> None:
    query = "&".join(f"f{n}=1" for n in range(1_100))

    answer = client.get(f"/api/conversations?{query}")

    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("Bad request")


def test_the_document_declares_the_location_and_retry_after_headers(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    create = document["paths"]["/api/conversations"]["post"]["responses"]
    append = document["paths"]["/api/conversations/{conversation_id}/messages"]["post"]

    assert "Location" in create["201"]["headers"]
    assert "Retry-After" in append["responses"]["503"]["headers"]
    assert "404" not in create


def test_a_401_says_how_to_authenticate() -> None:
    answer = Client().get("/api/conversations")

    assert answer.status_code == 401
    assert answer["WWW-Authenticate"] == 'Bearer realm="FlowDrop Web"'


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/imports", {"format": "cohere", "document": []}, "format"),
        ("/api/conversations/{pk}/export?format=cohere", None, "format"),
    ],
)
def test_a_wrong_format_is_told_the_formats_there_are(
    client: Client, url: str, body: dict[str, Any] | None, field: str
) -> None:
    url = url.format(pk=store([user("hi")]).pk)
    if body is None:
        answer = client.get(url)
    else:
        answer = client.post(url, body, content_type="application/json")

    assert answer.status_code == 422
    [problem] = answer.json()["problems"]
    assert problem["path"] == field
    assert "openai-chat" in problem["message"]
    assert "user, assistant" not in problem["message"]
    assert "'cohere'" in problem["message"]


def test_the_document_declares_replayed_answers_the_challenge_and_the_export_types(
    client: Client,
) -> None:
    document = client.get("/api/openapi.json").json()
    operations = [operation for path in document["paths"].values() for operation in path.values()]
    writes = [
        o
        for o in operations
        if any(p["name"] == "Idempotency-Key" for p in o.get("parameters", []))
    ]
    export = document["paths"]["/api/conversations/{conversation_id}/export"]["get"]

    assert len(writes) == 3
    for write in writes:
        [success] = [s for s in write["responses"] if s.startswith("2")]
        assert "Idempotent-Replayed" in write["responses"][success]["headers"]
    for operation in operations:
        assert "WWW-Authenticate" in operation["responses"]["401"]["headers"]
    assert set(export["responses"]["200"]["content"]) == {"application/json", "application/jsonl"}
