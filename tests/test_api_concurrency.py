"""MEM-12 over HTTP: clients posting to one conversation at once, through a real server."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from buffers import selectors, services
from buffers.models import ApiToken, Conversation
from tests.buffers import acting_user, assistant, store, user
from tests.integrity import assert_consistent

pytestmark = [pytest.mark.rule("MEM-12"), pytest.mark.django_db(transaction=True)]


def authorization() -> dict[str, str]:
    """A token for the tester, already marked as used: its use marks nothing again for a
    minute, so that signing in writes nothing while another write holds the database."""
    row, token = ApiToken.issue(acting_user(), "concurrency")
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return {"Authorization": f"Bearer {token}"}


def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        json.dumps(body).encode(),
        {"Content-Type": "application/json", **headers},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, Any] = json.load(response)
        return answer


def test_clients_appending_at_once_over_http_lose_nothing_and_heal_each_call_once(
    live_server: LiveServer,
) -> None:
    conversation = store([user("start")])
    url = f"{live_server.url}/api/conversations/{conversation.pk}/messages"
    headers = authorization()
    clients, rounds = 4, 5
    appended: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(clients)

    def client(number: int) -> None:
        start.wait()
        try:
            for round_ in range(rounds):
                for message in (assistant(f"k{number}r{round_}"), user(f"{number}/{round_}")):
                    answer = post(url, {"messages": [message]}, headers)
                    appended.append(answer["appended"])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sum(appended) == clients * rounds * 2
    messages = [m.as_stored() for m in selectors.buffer_messages(conversation)]
    answers = Counter(m["metadata"]["tool_call_id"] for m in messages if m["role"] == "tool")
    assert len(answers) == clients * rounds
    assert set(answers.values()) == {1}
    assert_consistent(conversation)


def test_a_create_while_the_database_is_busy_answers_503_or_lands(
    live_server: LiveServer, settings: Any
) -> None:
    """A create waits, bounded, like an append. SQLite has one write lock for the whole
    database: past the bound the answer is a 503 with Retry-After, and nothing is written.
    PostgreSQL locks per conversation, so a create is not held up at all."""
    settings.FLOWDROP_BUFFER_LOCK_WAIT = 0.05
    busy = store([user()])
    holding = threading.Event()

    def hold(_: Conversation) -> None:
        holding.set()
        time.sleep(1.5)

    def hold_the_lock() -> None:
        try:
            services.with_buffer_lock(busy.pk, "holder", hold)
        finally:
            connection.close()  # this thread's own connection

    headers = authorization()
    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    holding.wait(5)
    request = urllib.request.Request(
        f"{live_server.url}/api/conversations", b'{"title": "new"}', headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, retry_after = response.status, None
    except urllib.error.HTTPError as error:
        status, retry_after = error.code, error.headers["Retry-After"]
    holder.join()

    if connection.vendor == "sqlite":
        assert (status, retry_after) == (503, "5")
        assert not Conversation.objects.filter(title="new").exists()
    else:
        assert status == 201
