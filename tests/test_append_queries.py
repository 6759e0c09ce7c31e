"""What a heal-append costs in statements, one by one (issue 16): the conversation read once,
the open calls and the rows around the change read once each (the ids' positions come with
the facts, not read again for the stored verdicts), and on PostgreSQL the counters, the
journal and the answered calls written by one statement. And that a keyed write claims its
key in one statement."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from buffers import healing, search, services
from buffers.models import BufferChange, Conversation, IdempotentRequest
from tests.buffers import acting_user, assistant, keyed_api_append, parse, result, store, user
from tests.integrity import assert_consistent

pytestmark = pytest.mark.django_db


def healthy(count: int) -> list[dict[str, Any]]:
    cycle = []
    for n in range(count // 4 + 1):
        cycle += [user(f"question {n}"), assistant(f"f{n}"), result(f"f{n}"), user(f"more {n}")]
    return cycle[:count]


def heal_append(conversation: Conversation, text: str) -> tuple[healing.AppendReport, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        report = services.append_messages(
            conversation_id=conversation.pk, messages=parse([user(text)]), via="tests"
        )
    return report, [" ".join(q["sql"].split()) for q in captured.captured_queries]


# What each statement does, by how it begins (or, for a few, what it holds), first match.
_KINDS: list[tuple[Callable[[str], bool], str]] = [
    # A savepoint in the test's transaction stands for BEGIN, its release for COMMIT.
    (lambda sql: sql.startswith(("BEGIN", "SAVEPOINT")), "BEGIN"),
    (lambda sql: sql == "COMMIT" or sql.startswith("RELEASE SAVEPOINT"), "COMMIT"),
    (lambda sql: "pg_advisory_xact_lock" in sql, "lock"),
    (lambda sql: sql.startswith('SELECT "buffers_conversation"'), "conversation"),
    (lambda sql: "FROM buffers_declaredcall d" in sql, "open calls"),
    (lambda sql: sql.startswith("SELECT b.start + m.slot"), "rows around the change"),
    (lambda sql: sql.startswith("WITH changed AS"), "counters, journal, answered"),
    (lambda sql: sql.startswith('UPDATE "buffers_conversation"'), "counters"),
    (lambda sql: sql.startswith('INSERT INTO "buffers_bufferchange"'), "journal"),
    (lambda sql: sql.startswith('UPDATE "buffers_declaredcall"'), "answered"),
    (lambda sql: sql.startswith("UPDATE buffers_block"), "last block"),
    (lambda sql: sql.startswith('INSERT INTO "buffers_message"'), "messages"),
    (lambda sql: "buffers_messagesearch" in sql, "search index"),
]


def kinds(statements: list[str]) -> list[str]:
    """Each statement by what it does, in order (its first 60 characters if unknown)."""
    return [next((name for test, name in _KINDS if test(sql)), sql[:60]) for sql in statements]


def test_a_heal_append_runs_these_statements_and_keeps_every_guarantee(settings: Any) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    conversation = store([*healthy(100), assistant("late")])
    before = BufferChange.objects.filter(conversation=conversation).count()

    report, statements = heal_append(conversation, "still there?")

    if connection.vendor == "postgresql":
        expected = [
            "conversation",
            "BEGIN",
            "lock",
            "open calls",
            "rows around the change",
            "counters, journal, answered",
            "last block",
            "messages",
            "search index",
            "COMMIT",
        ]
    else:
        expected = [
            "conversation",
            "BEGIN",
            "open calls",
            "rows around the change",
            "counters",
            "journal",
            "answered",
            "last block",
            "messages",
            "search index",
            "COMMIT",
        ]
    assert kinds(statements) == expected
    assert [healed.tool_call_id for healed in report.healed] == ["late"]
    conversation.refresh_from_db()
    change = BufferChange.objects.filter(conversation=conversation).latest("id")
    assert BufferChange.objects.filter(conversation=conversation).count() == before + 1
    assert (change.version, change.message_count, change.via) == (
        conversation.version,
        103,
        "tests",
    )
    assert change.rows == [
        {"change": "inserted", "index": 101, "role": "tool", "call_id": "late", "healed": True},
        {"change": "inserted", "index": 102, "role": "user"},
    ]
    assert search.hit_indexes(conversation, ["still"]) == [102]
    assert_consistent(conversation)  # counters, stored verdicts, answered calls


def test_a_heal_append_costs_the_same_statements_at_any_length(settings: Any) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    short = store([*healthy(100), assistant("late")])
    long = store([*healthy(3_000), assistant("late")])

    assert kinds(heal_append(short, "again")[1]) == kinds(heal_append(long, "again")[1])
    assert_consistent(long)


def test_an_append_answering_a_call_by_its_result_reads_no_position_twice(settings: Any) -> None:
    """The result's id was read with the facts (owner and holders): the stored verdicts
    take it from there, and the tally is still the one a whole scan gives."""
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 16
    conversation = store([*healthy(40), assistant("c1", "c2"), user("meanwhile")])

    with CaptureQueriesContext(connection) as captured:
        services.append_messages(
            conversation_id=conversation.pk,
            messages=parse([result("c2"), result("c1"), user("and?")]),
            via="tests",
        )

    reads = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("(SELECT")]
    assert reads == []  # no UNION of owners and holders after planning
    assert_consistent(conversation)


def test_a_keyed_write_claims_its_key_in_one_statement() -> None:
    owner = acting_user()
    conversation = store([user("go"), assistant("c1")], owner=owner)
    answer, statements = keyed_api_append(conversation, owner, "one-statement")

    assert answer.status_code == 200
    # The test's transaction holds the request's, which holds the append's: no savepoint
    # around the claim itself.
    assert sum(s.startswith("SAVEPOINT") for s in statements) == 2
    claims = [s for s in statements if "INSERT INTO buffers_idempotentrequest" in s]
    assert len(claims) == 1
    if connection.vendor == "postgresql":  # its short wait put back by the same statement
        assert not [s for s in statements if s.startswith("SELECT set_config")]
    kept = IdempotentRequest.objects.get(user=owner, key="one-statement")
    assert (kept.status, bytes(kept.body)) == (200, answer.content)


def test_the_open_calls_are_read_through_their_partial_index(settings: Any) -> None:
    """SQLite uses the partial index of open calls (``answered = 0``) only for a query that
    says the same: ``NOT answered`` would scan every call of the conversation (the time of
    an append then grows with the buffer)."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL reads ``answered = false`` as ``NOT answered`` by itself")
    from buffers.services.appends import _OPEN_CALLS

    conversation = store([assistant("late")])
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + _OPEN_CALLS, [conversation.pk, False])
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert "declared_call_open" in plan
