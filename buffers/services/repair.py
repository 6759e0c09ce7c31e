"""Admin repair: an explicit heal, previews of a heal or an append with nothing written,
and the admin tier (MEM-15) that edits or deletes one message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from django.db.models import F

from buffers import healing, search
from buffers.models import BUFFER_INDEX, Action, Block, Conversation, DeclaredCall, Message

from .appends import _apply, _claim_version, _conversation, _load_facts
from .imports import _index_calls
from .journal import Actor, Writer
from .locking import _get, with_buffer_lock
from .scopes import _changed_since_checked, _refused
from .verdicts import store_tally


def heal_conversation(
    *, conversation_id: int, via: str, by: Actor = None, reason: str = ""
) -> healing.AppendReport:
    """An explicit repair: a placeholder for every unanswered call, placed as a user turn's
    healing places them (MEM-3), with no turn appended. MEM-3 heals only when a user turn
    arrives; this runs the same procedure on an operator's request (docs/decisions.md,
    "Admin repair"). Returns the report: ``healed`` says what went where; when the
    buffer's scope refuses (``resolve_scope``), the neutral one."""
    target = _conversation(conversation_id)
    if refused := _refused(target, via):
        return refused

    def heal(conversation: Conversation) -> healing.AppendReport:
        if changed := _changed_since_checked(target, conversation, via):
            return healing.AppendReport.refused(changed)
        facts, stored = _load_facts(conversation, (), open_calls=True)
        plan = healing.plan_heal(facts)
        _apply(conversation, plan, stored, Writer(via, by, Action.HEAL, reason))
        return plan.report

    return with_buffer_lock(conversation_id, via, heal)


def preview_heal(*, conversation_id: int) -> healing.AppendReport:
    """What ``heal_conversation`` would do now, with nothing written; the neutral report
    when the buffer's scope refuses, as the heal itself would."""
    conversation = _get(conversation_id)
    if refused := _refused(conversation, "heal preview"):
        return refused
    facts, _ = _load_facts(conversation, (), open_calls=True)
    return healing.plan_heal(facts).report


def preview_append(
    *, conversation_id: int, messages: Sequence[healing.Message]
) -> healing.AppendReport:
    """What appending ``messages`` would do now, planned by the same planner from the same
    facts, with nothing written; the neutral report when the buffer's scope refuses."""
    conversation = _get(conversation_id)
    if refused := _refused(conversation, "append preview"):
        return refused
    facts, _ = _load_facts(conversation, messages)
    return healing.plan_append(facts, messages).report


# The admin tier (MEM-15): editing and deleting one message.


def edit_message(
    *,
    conversation_id: int,
    index: int,
    message: healing.Message,
    via: str,
    by: Actor,
    reason: str = "",
    message_id: int | None = None,
) -> healing.Message:
    """Overwrite the message at ``index`` verbatim (no rule applies: this is the admin tier,
    MEM-15) and bring the buffer's index and counters along. The journal keeps the old
    message; it is also returned. ``message_id``: the row the caller showed at ``index``
    (see ``_message_at``)."""

    def edit(conversation: Conversation) -> healing.Message:
        _claim_version(conversation)
        row = _message_at(conversation, index, message_id)
        old = row.as_core()
        Message.objects.filter(pk=row.pk).update(
            role=message.role,
            content=message.content,
            metadata=message.metadata,
            answers_call_id=healing.result_call_id(message),
            is_placeholder=healing.is_placeholder(message),
        )
        search.reindex_messages(conversation.pk, {row.pk: message})
        _reindex(conversation)
        Writer(via, by, Action.EDIT, reason).record(
            conversation,
            version=conversation.version + 1,
            message_count=conversation.message_count,
            rows=[
                {
                    "change": "edited",
                    "index": index,
                    "old": old.as_stored(),
                    "new": message.as_stored(),
                }
            ],
        )
        return old

    return with_buffer_lock(conversation_id, via, edit)


def delete_message(
    *,
    conversation_id: int,
    index: int,
    via: str,
    by: Actor,
    reason: str = "",
    message_id: int | None = None,
) -> healing.Message:
    """Remove the message at ``index``; the later ones move up by one. The journal keeps
    the deleted message; it is also returned. ``message_id``: the row the caller showed at
    ``index`` (see ``_message_at``)."""

    def delete(conversation: Conversation) -> healing.Message:
        _claim_version(conversation)
        row = _message_at(conversation, index, message_id)
        old = row.as_core()
        block = row.block
        row.delete()  # its search index row and declared calls go with it (triggers)
        # Slots and starts are unique: through negative values and back, as in _make_room.
        Message.objects.filter(block=block, slot__gt=row.slot).update(slot=-F("slot"))
        Message.objects.filter(block=block, slot__lt=0).update(slot=-F("slot") - 1)
        if block.size == 1:
            block.delete()
        else:
            Block.objects.filter(pk=block.pk).update(size=F("size") - 1)
        later = Block.objects.filter(conversation=conversation, start__gt=block.start)
        later.update(start=-F("start"))
        Block.objects.filter(conversation=conversation, start__lt=0).update(start=-F("start") - 1)
        _reindex(conversation)
        Writer(via, by, Action.DELETE, reason).record(
            conversation,
            version=conversation.version + 1,
            message_count=conversation.message_count - 1,
            rows=[{"change": "deleted", "index": index, "old": old.as_stored()}],
        )
        return old

    return with_buffer_lock(conversation_id, via, delete)


def _message_at(conversation: Conversation, index: int, message_id: int | None = None) -> Message:
    """The message at ``index``, read under the buffer's lock. When the caller names the
    row it showed there (``message_id``) and another write has moved it since (a heal put a
    placeholder before it), nothing is written: the index now names another message."""
    if not 0 <= index < conversation.message_count:
        raise healing.InvalidInput(
            [
                healing.Problem(
                    "index",
                    f"conversation {conversation.pk} holds {conversation.message_count} "
                    f"messages; there is no message {index}",
                )
            ]
        )
    row = (
        Message.objects.select_related("block")
        .filter(conversation=conversation, block__start__lte=index)
        .order_by("-block__start")
        .filter(slot=index - F("block__start"))
        .get()
    )
    if message_id is not None and row.pk != message_id:
        moved = (
            Message.objects.filter(pk=message_id, conversation=conversation)
            .annotate(index=BUFFER_INDEX)
            .values_list("index", flat=True)
            .first()
        )
        where = "it was deleted" if moved is None else f"another write moved it to {moved}"
        raise healing.InvalidInput(
            [
                healing.Problem(
                    "index",
                    f"message {index} is no longer the one opened ({where}); nothing was written",
                )
            ]
        )
    return row


def _reindex(conversation: Conversation) -> None:
    """After an admin edit or delete (which claimed a new version first): the declared-call
    index and the counters from the whole buffer, as an import computes them. Linear in the
    buffer: the admin tier is rare, and this keeps one way of deriving them."""
    rows = list(
        Message.objects.filter(conversation=conversation)
        .in_buffer_order()
        .values_list("pk", "role", "content", "metadata")
    )
    messages = [
        healing.Message.model_construct(
            role=cast(healing.Role, role), content=content, metadata=metadata
        )
        for _, role, content, metadata in rows
    ]
    DeclaredCall.objects.filter(conversation=conversation).delete()
    index = healing.index_buffer(messages)
    _index_calls(conversation, index, [pk for pk, *_ in rows], len(rows))
    store_tally(conversation, healing.verdicts.tally(messages, index))
