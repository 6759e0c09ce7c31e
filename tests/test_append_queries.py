"""What a heal-append costs in statements, one by one (issue 16): the conversation read once;
the facts read in one statement, with the rows around a change at the end (the ids'
positions and those rows are not read again for the stored verdicts); and, for rows at the
end that fit in the last block, the whole write in one statement: the counters, the
journal, the answered calls, the block, the messages, their search index and the calls they
declare (PostgreSQL: data-modifying CTEs; SQLite: an insert into a view whose trigger does
the writes). And that a keyed write claims its key in one statement."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from buffers import healing, search, selectors, services
from buffers.models import Block, BufferChange, Conversation, DeclaredCall, IdempotentRequest
from tests.buffers import acting_user, assistant, keyed_api_append, parse, result, store, user
from tests.integrity import assert_consistent
from tests.plans import assert_message_rows_found_by_slot

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
    (
        lambda sql: sql.startswith("SELECT") and " FROM buffers_conversation WHERE" in sql,
        "conversation",
    ),
    (lambda sql: sql.startswith(("SELECT 'held'", "SELECT 'open'", "SELECT 'last'")), "facts"),
    (lambda sql: sql.startswith("SELECT b.start + m.slot"), "rows around the change"),
    (lambda sql: sql.startswith("WITH changed AS") and "added AS" in sql, "the whole write"),
    # SQLite's, the same statement whether it carries the rows or they follow it.
    (lambda sql: sql.startswith("INSERT INTO buffers_append"), "the whole write"),
    (lambda sql: sql.startswith("WITH changed AS"), "counters, journal, answered"),
    (lambda sql: sql.startswith("UPDATE buffers_conversation"), "counters"),
    (lambda sql: sql.startswith("INSERT INTO buffers_bufferchange"), "journal"),
    (lambda sql: sql.startswith("UPDATE buffers_declaredcall"), "answered"),
    (lambda sql: sql.startswith("UPDATE buffers_block"), "last block"),
    (lambda sql: sql.startswith("INSERT INTO buffers_message"), "messages"),
    (lambda sql: "buffers_messagesearch" in sql, "search index"),
]


def kinds(statements: list[str]) -> list[str]:
    """Each statement by what it does, in order (its first 60 characters if unknown); names
    are matched with or without the ORM's quotes."""
    plain = [sql.replace('"', "") for sql in statements]
    return [next((name for test, name in _KINDS if test(sql)), sql[:60]) for sql in plain]


def test_a_heal_append_runs_these_statements_and_keeps_every_guarantee(settings: Any) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    conversation = store([*healthy(100), assistant("late")])
    before = BufferChange.objects.filter(conversation=conversation).count()

    report, statements = heal_append(conversation, "still there?")

    # SQLite: BEGIN IMMEDIATE is the lock.
    lock = ["lock"] if connection.vendor == "postgresql" else []
    assert kinds(statements) == [
        "conversation",
        "BEGIN",
        *lock,
        "facts",
        "the whole write",
        "COMMIT",
    ]
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
    from buffers.services.appends import _facts_statement

    conversation = store([assistant("late")])
    sql, params = _facts_statement(conversation, set(), open_calls=True)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert "declared_call_open" in plan


def test_the_open_calls_are_read_through_their_partial_index_under_a_kept_plan() -> None:
    """On PostgreSQL a write's statements run on the plan kept for a prepared statement,
    which knows no parameter's value: a bound ``false`` would not prove the partial index's
    ``NOT answered``, and the open calls of a 200,000-call conversation were found by
    reading all its calls (18 ms against 0.2 ms, in the review's psql session)."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's kept plans")
    from buffers.services.appends import _facts_statement

    conversation = store([assistant("late")])
    sql, params = _facts_statement(conversation, set(), open_calls=True)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute("SET LOCAL enable_seqscan = off")
        for _ in range(6):  # prepared after five runs, then planned once
            cursor.execute(sql, params)
        cursor.execute(
            "SELECT name FROM pg_prepared_statements WHERE statement = %s AND generic_plans > 0",
            [sql.replace("%s", "${}").format(*range(1, len(params) + 1))],
        )
        [(name,)] = cursor.fetchall()
        values = ", ".join(str(value).lower() for value in params)  # integers, false
        cursor.execute(f"EXPLAIN EXECUTE {name}({values})")
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert "declared_call_open" in plan


@pytest.mark.parametrize("batch", [1, 3])
def test_rows_at_the_end_fill_the_last_block_then_open_the_next(settings: Any, batch: int) -> None:
    """The rows go into the last block while it has room, then into a new one: a batch
    that fits is written by one statement, one that does not by several;
    either way each row is where a page by position reads it."""
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 8
    conversation = store(healthy(5))  # one block, room for 3
    sent: list[str] = []
    whole_writes = []
    for turn in range(4):
        texts = [f"turn {turn}.{n}" for n in range(batch)]
        with CaptureQueriesContext(connection) as captured:
            services.append_messages(
                conversation_id=conversation.pk, messages=parse([user(t) for t in texts]), via="t"
            )
        sent += texts
        statements = [" ".join(q["sql"].split()) for q in captured.captured_queries]
        done = kinds(statements)
        whole_writes.append("the whole write" in done and "messages" not in done)

    length = 5 + 4 * batch
    page = selectors.messages_page(conversation, offset=5, limit=length)
    assert [row.content for row in page] == sent
    blocks = Block.objects.filter(conversation=conversation).order_by("start")
    expected = {1: [(0, 8), (8, 1)], 3: [(0, 8), (8, 8), (16, 1)]}[batch]
    assert list(blocks.values_list("start", "size")) == expected
    # A batch that spills over is written row by row.
    assert whole_writes == {1: [True, True, True, False], 3: [True, False, True, False]}[batch]
    assert_consistent(conversation)


def test_rows_written_by_the_one_statement_read_back_as_sent(settings: Any) -> None:
    """What the one-statement write stores is what was sent: content that is null, a list
    of parts or text beyond ASCII, metadata, the result's id, and the search index row
    (on PostgreSQL, in its message's block); and a stale conversation row writes nothing
    and plans again."""
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    conversation = store([user("first")])
    sent = [
        assistant("c1", "c2"),
        {"role": "tool", "content": None, "tool_call_id": "c1"},
        {"role": "tool", "content": [{"type": "text", "text": "Zürich wetter"}],
         "tool_call_id": "c2"},
        {"role": "assistant", "content": "naïve résumé", "metadata": {"model": "m", "n": 1.5}},
    ]  # fmt: skip
    stale = Conversation.objects.get(pk=conversation.pk)
    services.append_messages(conversation_id=conversation.pk, messages=parse([user("x")]), via="t")

    with CaptureQueriesContext(connection) as captured:
        services.append_messages(conversation=stale, messages=parse(sent), via="t")

    statements = kinds([" ".join(q["sql"].split()) for q in captured.captured_queries])
    assert statements.count("the whole write") == 2  # the first fails its compare-and-set
    rows = list(selectors.messages_page(conversation, offset=2, limit=10))
    assert [row.as_core() for row in rows] == parse(sent)
    assert [row.answers_call_id for row in rows] == [None, "c1", "c2", None]
    assert not any(row.is_placeholder for row in rows)
    assert search.hit_indexes(conversation, ["zürich"]) == [4]
    assert search.hit_indexes(conversation, ["résumé"]) == [5]
    if connection.vendor == "postgresql":  # a row per message with words, in its block
        with_words = [
            m for m in selectors.buffer_messages(conversation)
            if search.words_of(search.text_of(m.role, m.content, m.metadata))
        ]  # fmt: skip
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*), count(*) FILTER (WHERE s.block_id = m.block_id) "
                "FROM buffers_messagesearch s JOIN buffers_message m ON m.id = s.message_id "
                "WHERE m.conversation_id = %s",
                [conversation.pk],
            )
            assert cursor.fetchone() == (len(with_words), len(with_words))
    assert_consistent(conversation)


def _write_steps(conversation: Conversation, batch: list[dict[str, Any]]) -> int:
    """The append of ``batch`` to ``conversation``; and SQLite's work (its virtual
    machine's steps, in tens) for the one statement that writes it, the view's trigger
    included."""
    raw = connection.connection
    steps = 0

    def step() -> int:
        nonlocal steps
        steps += 1
        return 0  # go on

    def counting(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not sql.lstrip().startswith("INSERT INTO buffers_append"):
            return execute(sql, params, many, context)
        raw.set_progress_handler(step, 10)
        try:
            return execute(sql, params, many, context)
        finally:
            raw.set_progress_handler(None, 10)

    with connection.execute_wrapper(counting):
        services.append_messages(conversation=conversation, messages=parse(batch), via="tests")
    return steps


def test_the_one_statement_finds_its_new_rows_without_reading_the_block(settings: Any) -> None:
    """SQLite's trigger joins the new rows' words and declared calls to the rows it has
    just inserted by their slot: a lookup each, whatever the block holds already. Its
    work stays that of the batch, in a block that holds 2 rows as in one that holds 500
    (read row by row, each against every item of the batch, it grew with both)."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL joins the rows its statement returns, not the block's")
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 512
    short = store([user(f"question {n}") for n in range(2)])
    long = store([user(f"question {n}") for n in range(500)])
    batch = [assistant("c1", "c2", content=" ".join(f"word{n}" for n in range(50)))]

    steps = {"short": _write_steps(short, batch), "long": _write_steps(long, batch)}

    assert steps["long"] < 1.5 * steps["short"], steps
    for conversation, at in ((short, 2), (long, 500)):
        assert search.hit_indexes(conversation, ["word49"]) == [at]
        assert list(
            DeclaredCall.objects.filter(conversation=conversation).values_list("call_id", flat=True)
        ) == ["c1", "c2"]
        assert_consistent(conversation)


def test_a_blocks_rows_are_found_by_their_slots_not_read_whole_and_filtered() -> None:
    """The last rows an append reads, and a page of rows as the stored verdicts read it,
    are bounded on the slot, which the index of slots serves: bounded on the index (start
    plus slot), every row of the block was read, and on PostgreSQL before any ANALYZE the
    plan read the whole table (215 ms among 1,400,000 messages, against 0.3)."""
    from buffers.services.appends import _facts_statement

    conversation = store(healthy(40))
    last_rows, params = _facts_statement(conversation, set(), open_calls=False)
    page = selectors._CORE_MESSAGES_PAGE
    page_params = [conversation.pk, conversation.pk, 10, 20, 10, 20]

    assert_message_rows_found_by_slot(last_rows, params)
    assert_message_rows_found_by_slot(page, page_params)
