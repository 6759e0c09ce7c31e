"""The search inside a conversation counts its hits block by block (``buffers/search/hits.py``,
``_weighed_hits``): on PostgreSQL each index row holds its message's block (migration
0010), and only the few blocks next to the current hit have their messages read. Every
step and count must be what the buffer itself says, over buffers of many small blocks,
after each write that moves messages (a heal inserting before a hit, a delete, a late
result, an edit); the stored block must be each message's after every write path; and
migration 0010 fills it in for rows already stored, and goes back. Run on SQLite and
PostgreSQL."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

import pytest
from django.db import connection
from pytest_django import DjangoAssertNumQueries

from buffers import healing, search, selectors, services
from buffers.models import Conversation, Message
from tests.buffers import acting_user, assistant, parse, result, signed_in, store, user
from tests.migrating import migrated_back_to

WORD = "needle"


def expected_hits(conversation: Conversation, word: str = WORD) -> list[int]:
    """The indexes of the messages whose text holds a word beginning with ``word``, read
    from the buffer itself (not from the index)."""
    return [
        index
        for index, message in enumerate(selectors.buffer_messages(conversation))
        if any(w.startswith(word) for w in search.words_of(search.message_text(message)).split())
    ]


def assert_blocks_are_the_messages(conversation: Conversation | None = None) -> None:
    """PostgreSQL: every index row names its message's block, and every message with words
    has its row."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(m.id), "
            "count(*) FILTER (WHERE s.block_id IS DISTINCT FROM m.block_id) "
            "FROM buffers_messagesearch s LEFT JOIN buffers_message m ON m.id = s.message_id"
        )
        rows, with_message, wrong = cursor.fetchone()
    assert (rows, with_message, wrong) == (rows, rows, 0)
    if conversation is not None:
        worded = [
            m
            for m in Message.objects.filter(conversation=conversation)
            if search.words_of(search.text_of(m.role, m.content, m.metadata))
        ]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM buffers_messagesearch WHERE conversation_id = %s",
                [conversation.pk],
            )
            assert cursor.fetchone()[0] == len(worded)


def assert_every_step_is_right(conversation: Conversation, word: str = WORD) -> None:
    """Each step forward and back from every index (and from none), and what the page says
    at every index, against the buffer's own hits."""
    every = expected_hits(conversation, word)
    words = search.terms(word)
    assert search.hit_indexes(conversation, words) == every
    length = conversation.messages.count()
    for current in [None, -1, *range(length + 2), 10**6]:
        if not every:
            assert search.step(conversation, words, current, backwards=False) == search.Found(0)
            continue
        after = bisect_right(every, -1 if current is None else current)
        index = every[after % len(every)]
        assert search.step(conversation, words, current, backwards=False) == search.Found(
            len(every), index, every.index(index) + 1
        ), ("next", current)
        before = bisect_left(every, 10**9 if current is None else current)
        index = every[before - 1]
        assert search.step(conversation, words, current, backwards=True) == search.Found(
            len(every), index, every.index(index) + 1
        ), ("previous", current)
        at = -1 if current is None else current
        assert search.found_at(conversation, words, current) == (
            search.Found(len(every), at, every.index(at) + 1)
            if at in every
            else search.Found(len(every))
        ), ("at", current)
    assert_blocks_are_the_messages(conversation)


def crashed_buffer() -> list[dict[str, Any]]:
    """40 messages: hay, with the word in a few (two in one block of 4), and turns whose
    calls never got a result before several of them, so a heal inserts before hits."""
    messages: list[dict[str, Any]] = [user(f"hay {n}") for n in range(40)]
    for n in (1, 9, 10, 22, 35, 39):
        messages[n] = user(f"a {WORD} at {n}")
    for n, call in ((0, "c0"), (8, "c8"), (21, "c21"), (30, "c30")):
        messages[n] = assistant(call, content=f"calling {n}")
    return messages


@pytest.fixture
def small_blocks(settings: Any) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 4


@pytest.mark.django_db
@pytest.mark.usefixtures("small_blocks")
def test_steps_over_many_blocks_are_the_buffer_s_hits() -> None:
    conversation = store(crashed_buffer())
    assert conversation.blocks.count() == 10

    assert_every_step_is_right(conversation)
    assert_every_step_is_right(conversation, "hay")  # a word in most messages
    assert_every_step_is_right(conversation, "absent")


@pytest.mark.django_db
@pytest.mark.usefixtures("small_blocks")
def test_steps_stay_right_after_a_heal_inserts_messages_before_the_hits() -> None:
    conversation = store(crashed_buffer())

    report = services.heal_conversation(conversation_id=conversation.pk, via="tests")

    assert len(report.healed) == 4
    assert expected_hits(conversation)[:2] == [2, 11]  # each moved by the placeholders
    assert_every_step_is_right(conversation)
    assert_every_step_is_right(conversation, "interrupted")  # the placeholders themselves


@pytest.mark.django_db
@pytest.mark.usefixtures("small_blocks")
def test_steps_stay_right_after_appends_late_results_deletes_and_edits() -> None:
    conversation = store(crashed_buffer())
    append = services.append_messages

    append(conversation_id=conversation.pk, messages=parse([user(f"{WORD} heals")]), via="t")
    assert_every_step_is_right(conversation)

    late = parse([result("c8", f"the late {WORD}")])
    assert append(conversation_id=conversation.pk, messages=late, via="t").replaced
    assert_every_step_is_right(conversation)

    batch = [user(f"tail {n} {WORD if n % 7 == 0 else ''}") for n in range(30)]
    append(conversation_id=conversation.pk, messages=parse(batch), via="t")  # new blocks
    assert_every_step_is_right(conversation)

    by = acting_user()
    for index in (0, 3, 3):  # the first hit's block shrinks to nothing
        services.delete_message(conversation_id=conversation.pk, index=index, via="t", by=by)
        assert_every_step_is_right(conversation)

    edited = healing.parse_messages([user(f"now a {WORD} too")])[0]
    services.edit_message(conversation_id=conversation.pk, index=5, message=edited, via="t", by=by)
    assert_every_step_is_right(conversation)


@pytest.mark.django_db
@pytest.mark.usefixtures("small_blocks")
def test_a_step_is_one_query_whatever_the_blocks(
    django_assert_num_queries: DjangoAssertNumQueries,
) -> None:
    conversation = store(crashed_buffer() * 5)
    words = search.terms(WORD)

    for current in (None, 0, 100, 199):
        for backwards in (False, True):
            with django_assert_num_queries(1):
                search.step(conversation, words, current, backwards=backwards)
        with django_assert_num_queries(1):
            search.found_at(conversation, words, current)


@pytest.mark.django_db
@pytest.mark.usefixtures("small_blocks")
def test_reindexed_and_rebuilt_rows_keep_their_message_s_block() -> None:
    conversation = store([user(f"{WORD} {n}") for n in range(330)])
    stored = list(Message.objects.filter(conversation=conversation).order_by("pk"))

    # Ids far apart (every third: looked up one by one) and close (a range), over the
    # 100 rows from which they are copied in.
    for rows in (stored[::3], stored[:150]):
        search.reindex_messages(conversation.pk, {row.pk: row.as_core() for row in rows})
        assert_every_step_is_right(conversation)

    assert search.rebuild() == 330
    assert_every_step_is_right(conversation)


@pytest.mark.django_db(transaction=True)
def test_migration_0010_gives_stored_rows_their_blocks_and_goes_back(settings: Any) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 4
    conversation = store(crashed_buffer(), owner=acting_user())
    services.heal_conversation(conversation_id=conversation.pk, via="tests")
    with migrated_back_to("0009_stored_verdicts"):
        with connection.cursor() as cursor:
            table = connection.introspection.get_table_description(cursor, "buffers_messagesearch")
        assert "block_id" not in [column.name for column in table]

    assert_every_step_is_right(conversation)
    assert_every_step_is_right(conversation, "interrupted")
    answer = signed_in().get(f"/c/{conversation.pk}/search", {"q": WORD})
    assert answer["Location"].endswith("#m-2")

    # From before the index: 0006 indexes the stored messages (without blocks), 0010 adds them.
    with migrated_back_to("0005_traced_messages"):
        pass

    assert_every_step_is_right(conversation)


@pytest.mark.django_db
@pytest.mark.usefixtures("small_blocks")
def test_a_message_moved_to_another_block_takes_its_index_row_along() -> None:
    """No write moves a message to another block today; one that did (an UPDATE setting
    block_id) would leave PostgreSQL's index row behind, but for the trigger of 0010."""
    conversation = store([user(f"hay {n}") for n in range(7)] + [user(WORD)])
    first = conversation.blocks.order_by("start").first()
    moved = Message.objects.get(conversation=conversation, content=WORD)
    Message.objects.filter(block=first, slot=3).delete()

    Message.objects.filter(pk=moved.pk).update(block=first, slot=3)

    assert_blocks_are_the_messages(conversation)
    assert search.hit_indexes(conversation, [WORD]) == [3]
    assert search.step(conversation, [WORD], None, backwards=False) == search.Found(1, 3, 1)


@pytest.mark.django_db
@pytest.mark.usefixtures("small_blocks")
def test_the_api_s_pages_of_hits_over_many_blocks_are_the_buffer_s_hits() -> None:
    messages = crashed_buffer() * 3
    messages[1] = user("the call before was interrupted")  # its placeholder goes before it
    conversation = store(messages)
    services.heal_conversation(conversation_id=conversation.pk, via="tests")
    assert expected_hits(conversation, "interrupted")[:2] == [1, 2]
    for word in (WORD, "hay", "interrupted"):
        every = expected_hits(conversation, word)
        words = search.terms(word)
        for offset in (0, 1, 3, 4, 5, 17, len(every) - 1, len(every), len(every) + 10):
            for limit in (1, 4, 7, 100):
                count, page = search.hits_page(conversation, words, offset=offset, limit=limit)
                assert count == len(every), (word, offset, limit)
                assert [hit.index for hit in page] == every[offset : offset + limit], (
                    word,
                    offset,
                    limit,
                )
    assert search.hits_page(conversation, search.terms("absent"), offset=0, limit=5) == (0, [])
