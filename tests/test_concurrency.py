"""MEM-12: concurrent appends to one buffer queue; none is lost, none is fatal."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from django.db import connection, transaction

from buffers import selectors, services
from buffers.models import Conversation
from tests.buffers import assistant, parse, store, user
from tests.integrity import assert_consistent

pytestmark = [pytest.mark.rule("MEM-12"), pytest.mark.django_db(transaction=True)]


def in_thread(work: Callable[[], Any]) -> threading.Thread:
    """Run ``work`` on its own database connection, closed when it is done."""

    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def append(conversation_id: int, *messages: dict[str, Any]) -> int:
    report = services.append_messages(
        conversation_id=conversation_id, messages=parse(list(messages)), via="tests"
    )
    return report.appended


def test_concurrent_appends_of_turns_and_calls_all_land_and_heal_each_call_once() -> None:
    conversation = store([user("start")])
    writers, rounds = 4, 6
    appended: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def writer(number: int) -> None:
        start.wait()
        try:
            for round_ in range(rounds):
                appended.append(append(conversation.pk, assistant(f"w{number}r{round_}")))
                appended.append(append(conversation.pk, user(f"from {number}, round {round_}")))
        except BaseException as error:
            errors.append(error)

    for thread in [in_thread(partial(writer, n)) for n in range(writers)]:
        thread.join()

    assert errors == []
    assert sum(appended) == writers * rounds * 2
    messages = [m.as_stored() for m in selectors.buffer_messages(conversation)]
    answers = Counter(m["metadata"]["tool_call_id"] for m in messages if m["role"] == "tool")
    declared = {c["tool_call_id"] for m in messages for c in m["metadata"].get("tool_calls", [])}
    assert set(answers) == declared
    assert set(answers.values()) == {1}, "no call may be healed (or answered) twice"
    assert sum(1 for m in messages if m["role"] == "user") == 1 + writers * rounds
    assert_consistent(conversation)


def test_an_append_waits_its_turn_and_warns_when_the_wait_runs_out(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The wait for the buffer lock is bounded. Past it the append is not dropped: on
    PostgreSQL it proceeds unserialized, on SQLite (which cannot write without its lock)
    it waits again. Either way it warns and the turn lands."""
    settings.FLOWDROP_BUFFER_LOCK_WAIT = 0.2
    conversation = store([assistant("c1")])
    holding = threading.Event()

    def hold_the_lock() -> None:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                Conversation.objects.select_for_update().get(pk=conversation.pk)
            else:
                Conversation.objects.filter(pk=conversation.pk).update(title="busy")
            holding.set()
            time.sleep(1.0)

    holder = in_thread(hold_the_lock)
    holding.wait(5)
    with caplog.at_level(logging.WARNING, logger="buffers"):
        report = services.append_messages(
            conversation_id=conversation.pk, messages=parse([user("still there?")]), via="tests"
        )
    holder.join()

    assert (report.appended, [h.tool_call_id for h in report.healed]) == (1, ["c1"])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings, "running out of the wait must be logged"
    assert all(f"conversation {conversation.pk} via tests" in w for w in warnings)
    if connection.vendor == "postgresql":
        assert len(warnings) == 1
        assert "proceeding unserialized" in warnings[0]
    else:
        assert "waiting again" in warnings[0]
    assert_consistent(conversation)
