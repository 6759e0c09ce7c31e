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
from django.db import connection

from buffers import healing, selectors, services
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


def warnings_in(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_an_append_waits_its_turn_and_warns_when_the_wait_runs_out(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The wait for the buffer lock is bounded. Past it the append is not dropped: on
    PostgreSQL it proceeds unserialized, on SQLite (which cannot write without its lock)
    it waits again. Either way it warns, and the turn lands."""
    settings.FLOWDROP_BUFFER_LOCK_WAIT = 0.2
    conversation = store([assistant("c1")])
    holding = threading.Event()

    def hold(_: Conversation) -> None:
        holding.set()
        time.sleep(1.0)

    holder = in_thread(partial(services.with_buffer_lock, conversation.pk, "holder", hold))
    holding.wait(5)
    with caplog.at_level(logging.WARNING, logger="buffers"):
        appended = append(conversation.pk, user("still there?"))
    holder.join()

    assert appended == 1
    warnings = warnings_in(caplog)
    assert warnings, "running out of the wait must be logged"
    assert all(f"conversation {conversation.pk} via tests" in w for w in warnings)
    if connection.vendor == "postgresql":
        assert len(warnings) == 1
        assert "proceeding unserialized" in warnings[0]
    else:
        assert "waited 0.2s for the SQLite write lock (attempt 1 of 6)" in warnings[0]
    assert_consistent(conversation)


@pytest.mark.parametrize("block_size", [3, 64], ids=["row by row", "one statement"])
def test_an_unserialized_append_that_meets_another_plans_again(
    postgresql: None, settings: Any, caplog: pytest.LogCaptureFixture, block_size: int
) -> None:
    """An append that proceeded unserialized writes only if no other append wrote since it
    read the buffer; the one that finds the buffer changed plans again. Nothing is lost
    and the order stays whole (PostgreSQL: SQLite cannot proceed without its lock). With
    blocks of 3 the rows go into a new block, written one statement at a time after the
    compare-and-set; with 64 they fit in the last one, and the compare-and-set and the
    rows are one statement, which writes nothing when it fails."""
    settings.FLOWDROP_BUFFER_LOCK_WAIT = 0.2
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = block_size
    conversation = store([assistant("c1"), user(), user()])
    holding = threading.Event()

    def append_and_hold(_: Conversation) -> None:
        append(conversation.pk, user("from the holder"))  # written, not yet committed
        holding.set()
        time.sleep(0.6)  # past the other append's bound: it reads the buffer unserialized

    with caplog.at_level(logging.WARNING, logger="buffers"):
        holder = in_thread(
            partial(services.with_buffer_lock, conversation.pk, "holder", append_and_hold)
        )
        holding.wait(5)
        append(conversation.pk, {"role": "system", "content": "from the impatient one"})
        holder.join()

    contents = [m.content for m in selectors.buffer_messages(conversation)]
    assert "from the holder" in contents
    assert "from the impatient one" in contents
    assert contents.count(healing.INTERRUPTED_TEXT) == 1
    warnings = warnings_in(caplog)
    assert any("proceeding unserialized" in w for w in warnings)
    assert any("the buffer changed under this unserialized append; planning again" in w
               for w in warnings)  # fmt: skip
    assert_consistent(conversation)


@pytest.mark.parametrize("change", ["edit", "delete"])
def test_an_unserialized_admin_edit_or_delete_that_meets_an_append_plans_again(
    postgresql: None, settings: Any, change: str
) -> None:
    """From the bug hunt: an admin edit or delete past the lock's bound wrote on a buffer it
    read before another append's rows, recounting it without them (every later append then
    failed on a slot taken) or colliding with them. It now claims the buffer's version
    first, as an append does, and plans again when another write got in."""
    settings.FLOWDROP_BUFFER_LOCK_WAIT = 0.2
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    conversation = store([user("a"), assistant("c1"), user("b")])
    holding = threading.Event()

    def append_and_hold(_: Conversation) -> None:
        append(conversation.pk, user("from the holder"))  # written, not yet committed
        holding.set()
        time.sleep(0.6)

    holder = in_thread(
        partial(services.with_buffer_lock, conversation.pk, "holder", append_and_hold)
    )
    holding.wait(5)
    if change == "edit":
        services.edit_message(
            conversation_id=conversation.pk,
            index=0,
            message=healing.parse_message(user("edited"), "message"),
            via="admin",
            by=None,
        )
    else:
        services.delete_message(conversation_id=conversation.pk, index=0, via="admin", by=None)
    holder.join()

    contents = [m.content for m in selectors.buffer_messages(conversation)]
    assert "from the holder" in contents
    assert ("edited" in contents) == (change == "edit")
    assert_consistent(conversation)
    append(conversation.pk, user("next"))
    assert_consistent(conversation)
