"""Exactly-once writes: a retry with the same Idempotency-Key and the same request gets the
first answer and writes nothing; the same key with another request is a 422; keys are per
user and kept a day; requests with one key at once write once; the inspector's form sends
a key, so a double submit appends once."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections, transaction
from django.test import Client
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from buffers.models import ApiToken, BufferChange, Conversation, IdempotentRequest
from tests.buffers import acting_user, assistant, store, user
from tests.integrity import assert_consistent

TURN = {"messages": [{"role": "user", "content": "still there?"}]}


def bearer(who: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {ApiToken.issue(who, 'tests')[1]}"}


def append(client: Client, pk: int, body: dict[str, Any], key: str | None, **headers: str) -> Any:
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.post(
        f"/api/conversations/{pk}/messages", body, content_type="application/json", headers=headers
    )


@pytest.mark.django_db
def test_a_retry_with_the_same_key_gets_the_first_answer_and_writes_nothing() -> None:
    conversation = store([user("go"), assistant("c1")])
    client = Client()
    auth = bearer(acting_user())

    first = append(client, conversation.pk, TURN, "key-1", **auth)
    again = append(client, conversation.pk, TURN, "key-1", **auth)

    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again["Idempotent-Replayed"] == "true"
    conversation.refresh_from_db()
    assert conversation.message_count == 4  # the turn and one healed placeholder, once
    assert BufferChange.objects.filter(conversation=conversation, action="append").count() == 1
    assert_consistent(conversation)


@pytest.mark.django_db
def test_without_a_key_a_retry_is_a_second_write() -> None:
    conversation = store([user("go")])
    client = Client()
    auth = bearer(acting_user())

    append(client, conversation.pk, TURN, None, **auth)
    append(client, conversation.pk, TURN, None, **auth)

    conversation.refresh_from_db()
    assert conversation.message_count == 3


@pytest.mark.django_db
def test_the_same_key_with_another_body_is_a_422_that_says_so() -> None:
    conversation = store([user("go")])
    client = Client()
    auth = bearer(acting_user())
    append(client, conversation.pk, TURN, "key-1", **auth)

    other = append(
        client, conversation.pk, {"messages": [{"role": "user", "content": "x"}]}, "key-1", **auth
    )

    assert other.status_code == 422
    [problem] = other.json()["problems"]
    assert problem["path"] == "header Idempotency-Key"
    assert "another request" in problem["message"]
    conversation.refresh_from_db()
    assert conversation.message_count == 2


@pytest.mark.django_db
def test_a_create_replays_its_201_and_location() -> None:
    client = Client()
    auth = {**bearer(acting_user()), "Idempotency-Key": "create-1"}
    body = {"title": "t", "messages": [{"role": "user", "content": "hi"}]}

    first = client.post("/api/conversations", body, content_type="application/json", headers=auth)
    again = client.post("/api/conversations", body, content_type="application/json", headers=auth)

    assert first.status_code == again.status_code == 201
    assert again["Location"] == first["Location"]
    assert again.json() == first.json()
    assert Conversation.objects.count() == 1


@pytest.mark.django_db
def test_an_api_write_labelled_multipart_is_keyed_by_the_body_the_api_reads() -> None:
    """The API reads a JSON body whatever its Content-Type says; so does the key's
    fingerprint (it read the form, which took the body from the API: a 500, bug hunt)."""
    client = Client()
    auth = {**bearer(acting_user()), "Idempotency-Key": "multipart-1"}
    body = json.dumps({"title": "t", "messages": [{"role": "user", "content": "hi"}]})
    labelled = "multipart/form-data; boundary=x"

    first = client.post("/api/conversations", body, content_type=labelled, headers=auth)
    again = client.post("/api/conversations", body, content_type=labelled, headers=auth)
    other = client.post(
        "/api/conversations", body.replace("hi", "ho"), content_type=labelled, headers=auth
    )

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert other.status_code == 422, "the same key with another body"
    assert Conversation.objects.count() == 1


@pytest.mark.django_db
def test_an_import_with_a_key_is_stored_once() -> None:
    client = Client()
    auth = {**bearer(acting_user()), "Idempotency-Key": "import-1"}
    body = {"document": {"messages": [{"role": "user", "content": "hi"}]}}

    for _ in range(3):
        answer = client.post("/api/imports", body, content_type="application/json", headers=auth)
        assert answer.status_code == 201

    assert Conversation.objects.count() == 1


@pytest.mark.django_db
def test_keys_are_per_user() -> None:
    mine = store([user("go")])
    other = User.objects.create_user("other")
    theirs = store([user("go")], owner=other)
    client = Client()

    append(client, mine.pk, TURN, "shared-key", **bearer(acting_user()))
    answer = append(client, theirs.pk, TURN, "shared-key", **bearer(other))

    assert answer.status_code == 200
    assert "Idempotent-Replayed" not in answer
    theirs.refresh_from_db()
    assert theirs.message_count == 2


@pytest.mark.django_db
def test_a_key_is_the_callers_whom_the_api_takes_even_beside_a_token_it_does_not() -> None:
    conversation = store([user("go"), assistant("c1")])
    session = Client()
    session.force_login(acting_user())
    stale = {"Authorization": "Bearer fdw_revoked-long-ago"}

    first = append(session, conversation.pk, TURN, "key-1", **stale)
    again = append(session, conversation.pk, TURN, "key-1", **stale)

    assert first.status_code == again.status_code == 200  # the API took the session
    assert again["Idempotent-Replayed"] == "true"
    conversation.refresh_from_db()
    assert conversation.message_count == 4
    assert IdempotentRequest.objects.get(key="key-1").user == acting_user()


@pytest.mark.django_db
def test_a_key_is_kept_a_day_and_then_forgotten() -> None:
    conversation = store([user("go")])
    client = Client()
    auth = bearer(acting_user())
    append(client, conversation.pk, TURN, "old-key", **auth)

    IdempotentRequest.objects.update(created_at=timezone.now() - timedelta(hours=23))
    append(client, conversation.pk, TURN, "old-key", **auth)
    conversation.refresh_from_db()
    assert conversation.message_count == 2

    IdempotentRequest.objects.update(created_at=timezone.now() - timedelta(hours=25))
    append(client, conversation.pk, TURN, "old-key", **auth)
    conversation.refresh_from_db()
    assert conversation.message_count == 3


@pytest.mark.django_db
def test_a_key_that_is_no_key_is_a_400() -> None:
    conversation = store([user("go")])

    answer = append(Client(), conversation.pk, TURN, "x" * 201, **bearer(acting_user()))

    assert answer.status_code == 400
    assert answer.json()["problems"][0]["path"] == "header Idempotency-Key"


@pytest.mark.django_db
def test_a_refused_request_keeps_no_claim_so_the_retry_goes_through() -> None:
    conversation = store([user("go")])
    client = Client()

    assert append(client, conversation.pk, TURN, "k").status_code == 401  # no token
    assert append(client, conversation.pk, TURN, "k", **bearer(acting_user())).status_code == 200
    conversation.refresh_from_db()
    assert conversation.message_count == 2


@pytest.mark.django_db
def test_an_append_its_scope_refused_leaves_its_key_free_for_the_retry_once_put_right(
    django_user_model: Any,
) -> None:
    owner = acting_user()
    someone = django_user_model.objects.create_user("someone")
    conversation = store([user("go"), assistant("c1")], scope="user", scope_id=str(owner.pk))
    filed = Conversation.objects.filter(pk=conversation.pk)
    filed.update(scope_id=str(someone.pk))  # filed under another user's id: refused
    client = Client()
    auth = bearer(owner)

    refused = append(client, conversation.pk, TURN, "scoped", **auth)
    assert refused.status_code == 200
    assert refused.json()["refused"]
    filed.update(scope_id=str(owner.pk))  # put right (as staff would, in the admin)
    retried = append(client, conversation.pk, TURN, "scoped", **auth)

    assert "Idempotent-Replayed" not in retried
    assert retried.json()["refused"] is None
    assert retried.json()["count"] == 4
    again = append(client, conversation.pk, TURN, "scoped", **auth)
    assert again["Idempotent-Replayed"] == "true"
    assert again.content == retried.content


@pytest.mark.django_db
def test_the_inspectors_form_sends_a_key_so_a_double_submit_appends_once(
    client: Client,
) -> None:
    conversation = store([user("go"), assistant("c1")])
    page = client.get(f"/c/{conversation.pk}/").text
    assert 'name="idempotency_key"' in page
    form = {"kind": "user", "at": "0", "user-content": "again?", "idempotency_key": "form-1"}

    for _ in range(2):
        assert client.post(f"/c/{conversation.pk}/append", form).status_code == 302

    conversation.refresh_from_db()
    assert conversation.message_count == 4


@pytest.mark.django_db
def test_a_form_refused_for_its_errors_leaves_its_key_free_for_the_form_put_right(
    client: Client,
) -> None:
    conversation = store([user("go"), assistant("c1")])
    url = f"/c/{conversation.pk}/append"
    wrong = {"kind": "user", "at": "0", "user-content": "", "idempotency_key": "form-2"}
    htmx = {"HX-Request": "true"}

    for _ in range(2):  # both answers put the errors in the form, neither is a replay
        answer = client.post(url, wrong, headers=htmx)
        assert answer.status_code == 200
        assert answer["HX-Retarget"] == "#user-form"
        assert "Idempotent-Replayed" not in answer
    right = client.post(url, {**wrong, "user-content": "now?"}, headers=htmx)

    assert "Idempotent-Replayed" not in right
    conversation.refresh_from_db()
    assert conversation.message_count == 4


@pytest.mark.django_db(transaction=True)
def test_requests_with_one_key_at_once_write_once(live_server: LiveServer) -> None:
    conversation = store([user("go"), assistant("c1")])
    headers = {
        "Content-Type": "application/json",
        "Idempotency-Key": "race-1",
        **bearer(acting_user()),
    }
    url = f"{live_server.url}/api/conversations/{conversation.pk}/messages"
    answers: list[tuple[int, bytes]] = []
    start = threading.Barrier(4)

    def send() -> None:
        request = urllib.request.Request(url, json.dumps(TURN).encode(), headers, method="POST")
        start.wait()
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                answers.append((answer.status, answer.read()))
        except urllib.error.HTTPError as error:
            answers.append((error.code, error.read()))

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    statuses = sorted(status for status, _ in answers)
    assert set(statuses) <= {200, 409, 503}
    assert 200 in statuses
    assert len({body for status, body in answers if status == 200}) == 1
    conversation.refresh_from_db()
    assert conversation.message_count == 4
    assert_consistent(conversation)


@pytest.mark.django_db
def test_the_api_documents_the_key_and_the_409_on_every_write_and_only_there() -> None:
    document = Client().get("/api/openapi.json").json()

    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            headers = [p["name"] for p in operation.get("parameters", []) if p["in"] == "header"]
            if method == "post" and path != "/api/otel/v1/traces":
                assert headers == ["Idempotency-Key"], (method, path)
                assert "Retry-After" in operation["responses"]["409"]["headers"]
            else:
                assert headers == [], (method, path)
                assert "409" not in operation["responses"], (method, path)


@pytest.mark.django_db(transaction=True)
def test_the_keys_short_wait_bounds_the_claim_only_not_the_write_it_guards(
    live_server: LiveServer, settings: Any
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the claim's wait is PostgreSQL's lock_timeout")
    settings.FLOWDROP_IDEMPOTENCY_WAIT = 0.3
    conversation = store([user("go"), assistant("c1")])
    held = threading.Event()

    def hold_the_row() -> None:  # a long write holding the conversation's row a while
        with transaction.atomic():
            Conversation.objects.select_for_update().get(pk=conversation.pk)
            held.set()
            time.sleep(1.5)
        connections.close_all()

    holder = threading.Thread(target=hold_the_row)
    holder.start()
    held.wait(5)
    headers = {"Content-Type": "application/json", "Idempotency-Key": "slow-1"}
    request = urllib.request.Request(
        f"{live_server.url}/api/conversations/{conversation.pk}/messages",
        json.dumps(TURN).encode(),
        {**headers, **bearer(acting_user())},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200
    holder.join()
    conversation.refresh_from_db()
    assert conversation.message_count == 4
