"""Repairs through the one service, and the journal every write leaves behind.

The admin's explicit heal runs the planner's own healing; edits and deletes are the
admin tier's (MEM-15) and keep the buffer's order, index and counters right. Every write
records who, through which entry point, and what changed, keeping each message it
replaced, edited or deleted.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.test import override_settings

from buffers import healing, selectors, services
from buffers.models import BufferChange, Conversation, Message
from tests.buffers import assistant, parse, placeholder, result, store, user
from tests.integrity import assert_consistent

pytestmark = pytest.mark.django_db


def stored(conversation: Conversation) -> list[dict[str, Any]]:
    return [m.as_stored() for m in selectors.buffer_messages(conversation)]


def history(conversation: Conversation) -> list[BufferChange]:
    return list(conversation.changes.order_by("at", "id"))


@pytest.fixture
def operator() -> User:
    return User.objects.create_user("operator", is_staff=True)


def test_an_import_is_journalled_with_its_entry_point_and_message_count() -> None:
    conversation = store([user(), assistant("c1")])

    [change] = history(conversation)

    assert (change.action, change.via, change.message_count, change.rows) == (
        "import",
        "tests",
        2,
        [],
    )


def test_an_append_records_who_and_each_row_it_inserted_healed_ones_marked(
    operator: User,
) -> None:
    conversation = store([user("q"), assistant("c1")])

    services.append_messages(
        conversation_id=conversation.pk, messages=parse([user("go on")]), via="api", by=operator
    )

    change = history(conversation)[-1]
    assert (change.action, change.via, change.actor, change.actor_name) == (
        "append",
        "api",
        operator,
        "operator",
    )
    assert change.rows == [
        {"change": "inserted", "index": 2, "role": "tool", "call_id": "c1", "healed": True},
        {"change": "inserted", "index": 3, "role": "user"},
    ]
    assert (change.version, change.message_count) == (1, 4)


def test_a_replaced_placeholder_can_be_read_back_from_the_journal() -> None:
    conversation = store([assistant("c1"), placeholder("c1"), user()])

    services.append_messages(
        conversation_id=conversation.pk, messages=parse([result("c1", "late")]), via="tests"
    )

    [replaced] = history(conversation)[-1].rows
    assert replaced == {
        "change": "replaced",
        "index": 1,
        "old": placeholder("c1"),
        "new": result("c1", "late"),
    }


def test_an_append_that_changes_nothing_records_nothing() -> None:
    conversation = store([assistant("c1"), result("c1")])

    services.append_messages(
        conversation_id=conversation.pk, messages=parse([result("c1", "again")]), via="tests"
    )

    assert [c.action for c in history(conversation)] == ["import"]


def test_an_anonymous_writer_is_recorded_as_nobody() -> None:
    conversation = store([])

    services.append_messages(
        conversation_id=conversation.pk, messages=parse([user()]), via="api", by=AnonymousUser()
    )

    change = history(conversation)[-1]
    assert (change.actor, change.actor_name) == (None, "")


@pytest.mark.rule("MEM-3")
def test_an_explicit_heal_places_what_a_user_turn_would_and_appends_nothing() -> None:
    buffer = [user("q"), assistant("c1", "c2"), result("c2"), user("?"), assistant("c3")]
    healed_by_hand = store(buffer)
    healed_by_turn = store(buffer)

    preview = services.preview_heal(conversation_id=healed_by_hand.pk)
    report = services.heal_conversation(
        conversation_id=healed_by_hand.pk, via="admin", reason="crashed run"
    )
    services.append_messages(
        conversation_id=healed_by_turn.pk, messages=parse([user("next")]), via="tests"
    )

    assert report == preview
    assert [(h.tool_call_id, h.index, h.declared_at) for h in report.healed] == [
        ("c1", 2, 1),
        ("c3", 6, 5),
    ]
    assert stored(healed_by_hand) == stored(healed_by_turn)[:-1]
    healed_by_hand.refresh_from_db()
    assert (healed_by_hand.unanswered_count, healed_by_hand.healed_count) == (0, 2)
    assert_consistent(healed_by_hand)
    change = history(healed_by_hand)[-1]
    assert (change.action, change.via, change.reason) == ("heal", "admin", "crashed run")
    assert [(r["index"], r["call_id"]) for r in change.rows] == [(2, "c1"), (6, "c3")]


def test_healing_a_buffer_with_nothing_open_writes_nothing() -> None:
    conversation = store([assistant("c1"), result("c1")])

    report = services.heal_conversation(conversation_id=conversation.pk, via="admin")

    assert report.healed == ()
    assert [c.action for c in history(conversation)] == ["import"]


@pytest.mark.rule("MEM-15")
def test_an_admin_edit_rewrites_one_message_and_keeps_the_old_one(operator: User) -> None:
    conversation = store([user("q"), assistant("c1"), result("c1", "wrong")])
    fixed = healing.parse_message(result("c9", "right"), "message")

    old = services.edit_message(
        conversation_id=conversation.pk,
        index=2,
        message=fixed,
        via="admin",
        by=operator,
        reason="typo",
    )

    assert old.as_stored() == result("c1", "wrong")
    assert stored(conversation)[2] == result("c9", "right")
    conversation.refresh_from_db()
    assert conversation.unanswered_count == 1  # c1 lost its result; c9 answers nothing
    assert_consistent(conversation)
    change = history(conversation)[-1]
    assert (change.action, change.actor, change.reason) == ("edit", operator, "typo")
    assert change.rows == [
        {"change": "edited", "index": 2, "old": result("c1", "wrong"), "new": result("c9", "right")}
    ]


@pytest.mark.rule("MEM-15")
@pytest.mark.parametrize("index", [0, 1, 2, 3, 4, 6])
@override_settings(FLOWDROP_BUFFER_BLOCK_SIZE=3)
def test_an_admin_delete_closes_the_gap_in_any_block(index: int, operator: User) -> None:
    buffer = [user("a"), assistant("c1"), result("c1"), user("b"), assistant("c2"), user("c")]
    buffer.append(result("c2"))
    conversation = store(buffer)

    deleted = services.delete_message(
        conversation_id=conversation.pk, index=index, via="admin", by=operator
    )

    assert deleted.as_stored() == buffer[index]
    assert stored(conversation) == buffer[:index] + buffer[index + 1 :]
    assert_consistent(conversation)
    change = history(conversation)[-1]
    assert change.rows == [{"change": "deleted", "index": index, "old": buffer[index]}]
    assert change.message_count == len(buffer) - 1


@override_settings(FLOWDROP_BUFFER_BLOCK_SIZE=2)
def test_deleting_the_only_message_of_a_block_removes_the_block() -> None:
    conversation = store([user("a"), user("b"), user("c")])

    services.delete_message(conversation_id=conversation.pk, index=2, via="admin", by=None)
    services.delete_message(conversation_id=conversation.pk, index=0, via="admin", by=None)

    assert stored(conversation) == [user("b")]
    assert_consistent(conversation)


def test_appends_after_a_delete_land_where_they_should() -> None:
    conversation = store([user("a"), assistant("c1"), user("b")])
    services.delete_message(conversation_id=conversation.pk, index=0, via="admin", by=None)

    services.append_messages(
        conversation_id=conversation.pk, messages=parse([user("c")]), via="tests"
    )

    assert stored(conversation) == [assistant("c1"), placeholder("c1"), user("b"), user("c")]
    assert_consistent(conversation)


@pytest.mark.parametrize("index", [-1, 3])
def test_editing_or_deleting_past_the_end_is_refused_and_writes_nothing(index: int) -> None:
    conversation = store([user("a"), user("b"), user("c")])

    with pytest.raises(healing.InvalidInput) as refused:
        services.delete_message(conversation_id=conversation.pk, index=index, via="admin", by=None)

    assert str(refused.value.problems[0]) == (
        f"index: conversation {conversation.pk} holds 3 messages; there is no message {index}"
    )
    assert [c.action for c in history(conversation)] == ["import"]
    assert len(stored(conversation)) == 3


def test_the_history_page_reads_back_a_replaced_message_escaped(client: Any) -> None:
    conversation = store([assistant("c1"), placeholder("c1"), user()])
    services.append_messages(
        conversation_id=conversation.pk,
        messages=parse([result("c1", "<script>late</script>")]),
        via="api",
    )

    response = client.get(f"/c/{conversation.pk}/history")

    assert response.status_code == 200
    text = response.content.decode()
    assert "replaced message 1" in text
    assert "Tool call was interrupted; no result." in text  # the old placeholder, kept
    assert "&lt;script&gt;late&lt;/script&gt;" in text
    assert "<script>late" not in text
    assert "imported 3 messages" in text


@pytest.mark.parametrize("change", ["edit", "delete"])
def test_an_edit_or_delete_of_a_message_another_write_moved_is_refused_and_writes_nothing(
    change: str,
) -> None:
    """The admin names the message it showed by its index and its row: when a heal or an
    append moved it in between (a placeholder now stands before it), the index names
    another message, which is left alone."""
    conversation = store([user("q"), assistant("c1"), user("keep me"), assistant("and me")])
    seen = Message.objects.filter(conversation=conversation).in_buffer_order()[3]
    services.heal_conversation(conversation_id=conversation.pk, via="tests")  # before it
    before = stored(conversation)

    named = {"conversation_id": conversation.pk, "index": 3, "message_id": seen.pk}
    write: Any = (
        partial(services.edit_message, message=healing.parse_message(user("edited"), "m"))
        if change == "edit"
        else services.delete_message
    )

    with pytest.raises(healing.InvalidInput) as refused:
        write(**named, via="admin", by=None)

    assert str(refused.value.problems[0]) == (
        "index: message 3 is no longer the one opened (another write moved it to 4); "
        "nothing was written"
    )
    assert stored(conversation) == before
    assert [c.action for c in history(conversation)] == ["import", "heal"]
