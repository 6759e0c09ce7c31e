"""The service on the real database: verbatim import, appends that cost the same at any
length, pages by position, and all-or-nothing writes."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from buffers import healing, selectors, services
from buffers.models import Block, Conversation, DeclaredCall, Message
from tests.buffers import acting_user, assistant, parse, placeholder, result, store, user
from tests.integrity import assert_consistent

pytestmark = pytest.mark.django_db


def filler(count: int) -> list[dict[str, Any]]:
    """A healthy transcript of ``count`` messages: user, call, result, answer, repeated."""
    cycle = []
    for n in range(count // 4 + 1):
        cycle += [
            user(f"question {n}"),
            assistant(f"f{n}"),
            result(f"f{n}"),
            {"role": "assistant", "content": f"answer {n}", "metadata": {}},
        ]
    return cycle[:count]


def append(conversation: Conversation, *messages: dict[str, Any]) -> healing.AppendReport:
    return services.append_messages(
        conversation_id=conversation.pk, messages=parse(list(messages)), via="tests"
    )


def queries_to_append(conversation: Conversation, *messages: dict[str, Any]) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        append(conversation, *messages)
    return [q["sql"] for q in captured.captured_queries]


def test_an_import_stores_a_crashed_transcript_verbatim_and_counts_what_is_broken() -> None:
    messages = [assistant("c1", "c2"), result("c2"), user("?"), result("c2"), placeholder("c9")]

    conversation = store(messages, title="crash", source="tests")

    assert [m.as_stored() for m in selectors.buffer_messages(conversation)] == messages
    assert (conversation.message_count, conversation.unanswered_count) == (5, 1)
    assert conversation.healed_count == 1
    assert_consistent(conversation)


def test_an_import_of_several_conversations_is_all_or_nothing() -> None:
    store([user()], key="taken")
    batch = [
        services.ConversationIn(messages=parse([user("a")]), key="new"),
        services.ConversationIn(messages=parse([user("b")]), key="taken"),
    ]

    with pytest.raises(healing.InvalidInput) as refused:
        services.import_conversations(batch, via="tests", owner=acting_user())

    assert str(refused.value.problems[0]) == (
        "conversations[1].key: a conversation with key 'taken' in scope 'global' is already stored"
    )
    assert Conversation.objects.count() == 1
    assert Message.objects.count() == 1


def test_a_deleted_conversation_takes_its_blocks_messages_and_calls_with_it() -> None:
    """The database's cascade deletes a conversation's rows (through its blocks, and their
    messages' declared calls: migration 0012), and no one else's."""
    kept = store(filler(8), title="kept")
    gone = store(filler(1200), title="gone")
    rows = (Block, Message, DeclaredCall)
    before = {model: model.objects.filter(conversation=kept).count() for model in rows}

    Conversation.objects.filter(pk=gone.pk).delete()

    for model in rows:
        assert not model.objects.filter(conversation_id=gone.pk).exists(), model
    with connection.cursor() as cursor:  # and the search index's rows, by a trigger
        cursor.execute(
            "SELECT count(*) FROM buffers_messagesearch WHERE conversation_id = %s", [gone.pk]
        )
        assert cursor.fetchone()[0] == 0
        assert model.objects.filter(conversation=kept).count() == before[model] > 0, model
    assert_consistent(kept)


def test_an_append_to_an_unknown_conversation_is_refused() -> None:
    with pytest.raises(services.ConversationNotFound):
        services.append_messages(conversation_id=404, messages=parse([user()]), via="tests")


def test_an_oversized_batch_is_refused_before_anything_is_read() -> None:
    conversation = store([])
    batch = parse([user()] * (services.MAX_BATCH + 1))

    with CaptureQueriesContext(connection) as captured, pytest.raises(healing.InvalidInput):
        services.append_messages(conversation_id=conversation.pk, messages=batch, via="tests")

    assert captured.captured_queries == []


def test_an_append_keeps_the_counters_and_the_update_time() -> None:
    conversation = store([user(), assistant("c1", "c2")])
    before = conversation.updated_at

    append(conversation, result("c1"), user("next"))

    conversation.refresh_from_db()
    assert (conversation.message_count, conversation.unanswered_count) == (5, 0)
    assert conversation.healed_count == 1
    assert conversation.updated_at > before


@pytest.mark.parametrize("length", [100, 3_000])
def test_healing_a_user_turn_costs_the_same_statements_at_any_length(
    length: int, settings: Any
) -> None:
    """Appending to 3,000 messages runs the same statements as to 100: nothing is loaded
    or scanned in proportion to the buffer (blocks of 64 here, so both span several)."""
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    short, long = store(filler(100)), store(filler(length))
    for conversation in (short, long):
        append(conversation, assistant("late"))

    short_queries = queries_to_append(short, user("again"))
    long_queries = queries_to_append(long, user("again"))

    assert len(long_queries) == len(short_queries)
    assert_consistent(long)


def test_healing_mid_buffer_costs_the_same_statements_as_healing_at_the_end(settings: Any) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    crashed_early = store([*filler(40), assistant("early"), *filler(2_000)])
    crashed_late = store([*filler(2_000), assistant("late"), *filler(40)])

    early = queries_to_append(crashed_early, user("again"))
    late = queries_to_append(crashed_late, user("again"))

    assert len(early) == len(late)
    for conversation, index in ((crashed_early, 41), (crashed_late, 2_001)):
        page = list(selectors.messages_page(conversation, offset=index, limit=1))
        assert page[0].is_placeholder
        assert_consistent(conversation)


def test_a_page_by_position_is_the_same_slice_as_the_whole_buffer(settings: Any) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 16
    conversation = store(filler(200))
    append(conversation, assistant("late"), user("and?"))
    whole = selectors.buffer_messages(conversation)

    for offset, limit in [(0, 50), (10, 20), (150, 50), (190, 50), (202, 5), (203, 5), (500, 5)]:
        page = list(selectors.messages_page(conversation, offset=offset, limit=limit))
        assert [row.index for row in page] == list(range(offset, min(offset + limit, len(whole))))
        assert [row.as_core() for row in page] == whole[offset : offset + limit]


def test_a_page_by_position_is_one_query_wherever_it_starts(settings: Any) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 16
    conversation = store(filler(500))

    for offset in (0, 450):
        with CaptureQueriesContext(connection) as captured:
            list(selectors.messages_page(conversation, offset=offset, limit=50))
        assert len(captured.captured_queries) == 1


def test_healing_many_calls_takes_statements_per_block_not_per_call(settings: Any) -> None:
    """400 turns each left a call dangling; one user turn heals them all in a handful of
    statements per block touched, never one per call."""
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    conversation = store([assistant(f"c{n}") for n in range(400)])

    statements = queries_to_append(conversation, user("anyone?"))

    assert len(statements) < 40
    assert conversation.messages.filter(is_placeholder=True).count() == 400
    assert_consistent(conversation)


def test_a_tail_append_reads_the_conversation_once_and_grows_its_last_block_in_place(
    settings: Any,
) -> None:
    """The common append, rows at the end: the conversation row is read once (not again
    under the lock: the counters' compare-and-set checks it), and the last block is found
    by the statement that grows it (no read of it first)."""
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    conversation = store([*filler(100), assistant("late")])

    statements = queries_to_append(conversation, user("again"))

    reads = [s for s in statements if s.startswith("SELECT")]
    assert sum('FROM "buffers_conversation"' in s for s in reads) == 1
    assert not [s for s in reads if s.startswith('SELECT "buffers_block"')]
    assert len(statements) <= 13  # BEGIN and COMMIT (and the advisory lock) included
    assert_consistent(conversation)


@pytest.mark.parametrize("meanwhile", ["append", "delete"])
def test_an_append_given_a_row_read_before_another_write_plans_on_the_buffer_as_it_is(
    meanwhile: str,
) -> None:
    """An entry point's row serves under the lock only while it is the stored one: when
    another write got in between (longer, or shorter after an admin delete), the append
    reads it again and plans on the buffer as it now is."""
    conversation = store([user("go"), assistant("c1"), user("more"), assistant("c2")])
    checked = Conversation.objects.get(pk=conversation.pk)
    if meanwhile == "append":
        append(conversation, result("c1"), result("c2"), user("between"))
    else:
        services.delete_message(conversation_id=conversation.pk, index=2, via="tests", by=None)

    report = services.append_messages(
        conversation=checked, messages=parse([user("late")]), via="tests"
    )

    assert report.refusal == ""
    stored = selectors.buffer_messages(conversation)
    assert stored[-1].content == "late"
    assert report.count == len(stored)
    assert_consistent(conversation)


@pytest.mark.parametrize("deleted", ["block", "message"])
def test_a_deleted_block_or_message_takes_what_hangs_on_it_with_it(deleted: str) -> None:
    """No foreign key cascades these (migration 0016): the database's triggers delete a
    block's messages and a message's declared calls, and leave every other row."""
    kept = store([user(), assistant("k1"), result("k1")], title="kept")
    gone = store([user(), assistant("g1", "g2"), result("g1")], title="gone")
    declaring = Message.objects.get(conversation=gone, declared_calls__call_id="g1")
    rows_kept = {model: model.objects.filter(conversation=kept).count() for model in _ROWS}

    if deleted == "block":
        Block.objects.filter(conversation=gone).delete()
        assert not Message.objects.filter(conversation=gone).exists()
    else:
        Message.objects.filter(pk=declaring.pk).delete()
        assert Message.objects.filter(conversation=gone).count() == 2
    assert not DeclaredCall.objects.filter(conversation=gone).exists()
    assert not DeclaredCall.objects.filter(message_id=declaring.pk).exists()
    assert {model: model.objects.filter(conversation=kept).count() for model in _ROWS} == (
        rows_kept
    )


_ROWS = (Block, Message, DeclaredCall)


def test_a_conversation_read_by_its_key_is_the_one_the_orm_reads() -> None:
    """``selectors.conversation_by_pk`` (every API request and every append by id reads
    the conversation with it) converts each column as the ORM's ``get`` does: the times
    with their zone, the JSON columns, an owner or none, the scope and the counters."""
    owned = store([user("go"), assistant("late")], title="ΟΔΟΣ", owner=acting_user())
    services.append_messages(conversation=owned, messages=parse([user("still?")]), via="t")
    ownerless = store([user("hello")], title="")
    for conversation in (owned, ownerless):
        read = selectors.conversation_by_pk(conversation.pk)
        expected = Conversation.objects.get(pk=conversation.pk)
        for field in Conversation._meta.concrete_fields:
            assert getattr(read, field.attname) == getattr(expected, field.attname), field.name
        assert read.created_at.tzinfo is not None
        assert read.rejections == expected.rejections != {}
        assert (read._state.adding, read._state.db) == (False, "default")
    with pytest.raises(Conversation.DoesNotExist):
        selectors.conversation_by_pk(ownerless.pk + 1000)
