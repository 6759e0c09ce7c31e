"""The one place that writes a buffer.

Views, the admin, the API and the management commands call these functions; the
rules themselves live in the pure core (``buffers.healing``). Every write is one
transaction. Appends are serialized per conversation (MEM-12).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import batched
from typing import Any, Literal, cast

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User
from django.db import OperationalError, connection, models, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from . import healing
from .bulk import cyclic_gc_paused
from .models import Action, Block, BufferChange, Conversation, DeclaredCall, Message, Scope

log = logging.getLogger("buffers")

MAX_BATCH = 10_000
"""The most messages one append may carry."""

_ID_CHUNK = 5_000
_INSERT_BATCH = 2_000
_ATTEMPTS = 6


class ConversationNotFound(LookupError):
    pass


class BufferBusy(RuntimeError):
    """An append could not take its turn in six rounds; nothing was written (MEM-12 in
    docs/decisions.md)."""


type Actor = AbstractBaseUser | AnonymousUser | str | None
"""Who writes, for the repair journal: a user (anonymous counts as nobody), or a name for a
writer with no account (``"alice (shell)"`` for a management command)."""


@dataclass(frozen=True)
class ConversationIn:
    """A conversation to store verbatim: what an import file or the API hands over."""

    messages: Sequence[healing.Message]
    title: str = ""
    source: str = ""
    key: str | None = None
    scope: str = Scope.GLOBAL
    scope_id: str = ""
    origin: str | None = None
    """Where it came from, for errors (``line 3: conversation``); else its place in the batch."""
    source_format: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    """What a provider document held beside its messages (model, tools...)."""


@dataclass(frozen=True)
class Writer:
    """A write as the journal records it: through which entry point, by whom, and why."""

    via: str
    by: Actor
    action: Action
    reason: str = ""

    def record(
        self, conversation: Conversation, *, version: int, message_count: int, rows: list[Any]
    ) -> BufferChange:
        user = cast(User | None, self.by if isinstance(self.by, AbstractBaseUser) else None)
        if user is not None:
            name = user.get_username()
        else:
            name = self.by if isinstance(self.by, str) else ""
        return BufferChange.objects.create(
            conversation=conversation,
            actor=user,
            actor_name=name,
            via=self.via,
            action=self.action,
            reason=self.reason,
            version=version,
            message_count=message_count,
            rows=rows,
        )


# Appending under the rules.


def append_messages(
    *,
    conversation_id: int | None = None,
    conversation: Conversation | None = None,
    messages: Sequence[healing.Message],
    via: str,
    by: Actor = None,
) -> healing.AppendReport:
    """Append a batch under MEM-1, 2, 3, 10, 11 and 14; return what happened (MEM-14).

    The buffer's scope is resolved first (``resolve_scope``): when it refuses, nothing is
    read or written and the report is the neutral one. Given the ``conversation`` an
    entry point has loaded, a refusal makes no query at all (MEM-7).

    Raises ``InvalidInput`` (nothing written) when a message cannot be appended under
    the rules, and ``ConversationNotFound``.
    """
    if len(messages) > MAX_BATCH:
        raise healing.InvalidInput(
            [
                healing.Problem(
                    "messages", f"holds {len(messages)} messages; the most is {MAX_BATCH}"
                )
            ]
        )
    problems = healing.appendable_problems(messages)
    if problems:
        raise healing.InvalidInput(problems)
    target = conversation if conversation is not None else _conversation(conversation_id)
    if refused := _refused(target, via):
        return refused

    def append(locked: Conversation) -> healing.AppendReport:
        if changed := _changed_since_checked(target, locked, via):
            return healing.AppendReport.refused(changed)
        facts, stored = _load_facts(locked, messages)
        plan = healing.plan_append(facts, messages)
        _apply(locked, plan, stored, Writer(via, by, Action.APPEND))
        return plan.report

    return with_buffer_lock(target.pk, via, append)


def resolve_scope(conversation: Conversation, via: str) -> healing.scopes.Resolution:
    """MEM-6, 7, 8 and 13 for a write to ``conversation``: the one place a scope is
    resolved for a buffer, by every consumer (API and inspector appends, admin heals).

    The execution context is built from the conversation, never from the caller: its
    owner is the ``user`` (MEM-8), and the session a ``session`` buffer belongs to is
    the conversation its scope id names (a session's transcript is a conversation). The
    resolved id must be the one the buffer is stored under; a buffer stored under
    another user's or an unknown session's id refuses too. A refusal logs exactly one
    warning naming the entry point, the conversation and the scope.
    """
    scope = str(conversation.scope)
    context = healing.scopes.ExecutionContext(
        user_id=conversation.owner_id,
        session_id=(
            _known_session(conversation.scope_id, conversation.owner_id)
            if scope == Scope.SESSION
            else None
        ),
    )
    resolution = healing.scopes.resolve(scope, context)
    if not resolution.refused and resolution.scope_id != conversation.scope_id:
        resolution = healing.scopes.Resolution(
            scope,
            "",
            refused=True,
            reason=(
                f"the buffer is stored under {scope} id {conversation.scope_id!r}, "
                f"but its context resolves to {resolution.scope_id!r}"
            ),
        )
    if resolution.refused:
        log.warning(
            "Refused the %s scope of conversation %s via %s: %s; nothing was read or written.",
            scope,
            conversation.pk,
            via,
            resolution.reason,
        )
    return resolution


def _refused(conversation: Conversation, via: str) -> healing.AppendReport | None:
    """The neutral report when the buffer's scope refuses a write (``resolve_scope``)."""
    resolution = resolve_scope(conversation, via)
    return healing.AppendReport.refused(resolution.reason) if resolution.refused else None


def _known_session(scope_id: str, owner_id: int | None) -> str | None:
    """The session id when it is usable and names a conversation the buffer's owner owns
    (a session's principal is its owner, MEM-8; and so that the answer says nothing of
    anyone else's conversations). A usable id is looked up (one query on the
    conversations, none on any buffer); an unusable one, or an ownerless buffer, is not."""
    session = healing.scopes.real_identity(scope_id)
    if session is None:
        return scope_id or None
    if owner_id is None:
        return None
    owned = Conversation.objects.filter(pk=int(session), owner_id=owner_id).exists()
    return session if owned else None


def _changed_since_checked(checked: Conversation, locked: Conversation, via: str) -> str:
    """Why a write must not go ahead when who may drive the conversation, or its scope,
    changed between the entry point's check and the lock; "" when nothing did."""
    if (checked.owner_id, checked.scope, checked.scope_id) == (
        locked.owner_id,
        locked.scope,
        locked.scope_id,
    ):
        return ""
    log.warning(
        "Refused a write to conversation %s via %s: its owner or scope changed while it "
        "waited; nothing was written.",
        locked.pk,
        via,
    )
    return "the conversation's owner or scope changed while this write waited; send it again"


def _conversation(conversation_id: int | None) -> Conversation:
    if conversation_id is None:
        raise TypeError("append_messages needs a conversation or a conversation_id")
    return _get(Conversation.objects.filter(pk=conversation_id), conversation_id)


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
    conversation = _get(Conversation.objects.filter(pk=conversation_id), conversation_id)
    if refused := _refused(conversation, "heal preview"):
        return refused
    facts, _ = _load_facts(conversation, (), open_calls=True)
    return healing.plan_heal(facts).report


def preview_append(
    *, conversation_id: int, messages: Sequence[healing.Message]
) -> healing.AppendReport:
    """What appending ``messages`` would do now, planned by the same planner from the same
    facts, with nothing written; the neutral report when the buffer's scope refuses."""
    conversation = _get(Conversation.objects.filter(pk=conversation_id), conversation_id)
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
) -> healing.Message:
    """Overwrite the message at ``index`` verbatim (no rule applies: this is the admin tier,
    MEM-15) and bring the buffer's index and counters along. The journal keeps the old
    message; it is also returned."""

    def edit(conversation: Conversation) -> healing.Message:
        row = _message_at(conversation, index)
        old = row.as_core()
        Message.objects.filter(pk=row.pk).update(
            role=message.role,
            content=message.content,
            metadata=message.metadata,
            answers_call_id=healing.result_call_id(message),
            is_placeholder=healing.is_placeholder(message),
        )
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
    *, conversation_id: int, index: int, via: str, by: Actor, reason: str = ""
) -> healing.Message:
    """Remove the message at ``index``; the later ones move up by one. The journal keeps
    the deleted message; it is also returned."""

    def delete(conversation: Conversation) -> healing.Message:
        row = _message_at(conversation, index)
        old = row.as_core()
        block = row.block
        row.delete()
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


def _message_at(conversation: Conversation, index: int) -> Message:
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
    return (
        Message.objects.select_related("block")
        .filter(conversation=conversation, block__start__lte=index)
        .order_by("-block__start")
        .filter(slot=index - F("block__start"))
        .get()
    )


def _reindex(conversation: Conversation) -> None:
    """After an admin edit or delete: the declared-call index and the counters from the
    whole buffer, as an import computes them, and a new version. Linear in the buffer: the
    admin tier is rare, and this keeps one way of deriving them."""
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
    _index_calls(conversation, healing.index_buffer(messages), [pk for pk, *_ in rows], len(rows))
    Conversation.objects.filter(pk=conversation.pk).update(
        version=F("version") + 1, updated_at=timezone.now()
    )


class _StaleBuffer(Exception):
    """The buffer changed between reading its facts and writing the plan: an append that
    proceeded unserialized met another one. Planning again on the buffer as it now is
    puts the turn in (MEM-12)."""


# pg_advisory_xact_lock(class, object): the class names FlowDrop buffers ("Flow").
_LOCK_CLASS = 0x466C6F77


def with_buffer_lock[T](conversation_id: int, via: str, work: Callable[[Conversation], T]) -> T:
    """Run ``work`` on the conversation in one transaction that holds its buffer lock;
    every write to a buffer goes through here. ``via`` names the entry point in warnings.

    The lock is per conversation (whose scope, scope id and key are unique together),
    and waiting for it is bounded by FLOWDROP_BUFFER_LOCK_WAIT:

    - PostgreSQL: a transaction-scoped advisory lock. Past the bound the append proceeds
      unserialized and logs a warning. Its first write is a compare-and-set on the
      conversation's version, so if another append got in first, this one plans again.
    - SQLite: BEGIN IMMEDIATE takes the database write lock. SQLite cannot write without
      it, so past the bound the append logs a warning and waits again.

    Either way a turn is never dropped. After ``_ATTEMPTS`` rounds the append gives up
    with ``BufferBusy`` and nothing written (docs/decisions.md, MEM-12).
    """

    def locked_work() -> T:
        return work(_lock(conversation_id, via, _wait_ms()))

    return _in_bounded_transaction(
        locked_work, f"append to conversation {conversation_id} via {via}"
    )


def _wait_ms() -> int:
    return max(1, round(settings.FLOWDROP_BUFFER_LOCK_WAIT * 1000))


def _in_bounded_transaction[T](work: Callable[[], T], what: str) -> T:
    """Run ``work`` in one transaction, trying again (with a warning) while the database
    is busy or another write got in first, at most ``_ATTEMPTS`` times in all; then
    ``BufferBusy`` with nothing written. On SQLite each try waits FLOWDROP_BUFFER_LOCK_WAIT
    for the write lock that BEGIN IMMEDIATE takes."""
    for attempt in range(1, _ATTEMPTS + 1):
        if connection.vendor == "sqlite" and not connection.in_atomic_block:
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA busy_timeout = {_wait_ms()}")
        try:
            with transaction.atomic():
                return work()
        except _StaleBuffer:
            why: str | None = "the buffer changed under this unserialized append; planning again"
        except OperationalError as error:
            why = _retryable(error)
            if why is None:
                raise
        log.warning(
            "MEM-12: %s: %s (attempt %s of %s)",
            what,
            why if attempt < _ATTEMPTS else f"{why}; giving up, nothing written",
            attempt,
            _ATTEMPTS,
        )
    raise BufferBusy(f"{what} could not take its turn; nothing was written.")


def _retryable(error: OperationalError) -> str | None:
    """Why an append should be tried again after this error, or None when it should not."""
    if connection.vendor == "sqlite" and "locked" in str(error):
        return f"waited {settings.FLOWDROP_BUFFER_LOCK_WAIT}s for the SQLite write lock"
    sqlstate = getattr(error.__cause__, "sqlstate", None)
    if sqlstate in ("40P01", "40001"):  # deadlock detected, serialization failure
        return "the database cancelled it to break a deadlock; trying again"
    return None


def _lock(conversation_id: int, via: str, wait_ms: int) -> Conversation:
    conversations = Conversation.objects.filter(pk=conversation_id)
    if connection.vendor == "postgresql":
        _take_advisory_lock(conversation_id, via, wait_ms)
    # SQLite: BEGIN IMMEDIATE already holds the database write lock.
    return _get(conversations, conversation_id)


def _take_advisory_lock(conversation_id: int, via: str, wait_ms: int) -> None:
    key = [_LOCK_CLASS, conversation_id & 0x7FFFFFFF]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, true)",
            [f"{wait_ms}ms"],
        )
        previous = cursor.fetchone()[0]
        try:
            with transaction.atomic():
                cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", key)
        except OperationalError as error:
            if getattr(error.__cause__, "sqlstate", None) != "55P03":  # lock_not_available
                raise
            log.warning(
                "MEM-12: append to conversation %s via %s could not take the buffer lock "
                "within %sms; proceeding unserialized",
                conversation_id,
                via,
                wait_ms,
            )
        finally:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])


def _get(conversations: Any, conversation_id: int) -> Conversation:
    try:
        conversation: Conversation = conversations.get()
    except Conversation.DoesNotExist:
        raise ConversationNotFound(f"no conversation {conversation_id}") from None
    return conversation


@dataclass(frozen=True)
class _Stored:
    """Where a stored message lives: for the rows a plan touches (owners of open calls,
    holders of results), found while loading the facts."""

    pk: int
    block_id: int
    block_start: int
    slot: int

    @property
    def position(self) -> int:
        return self.block_start + self.slot


def _load_facts(
    conversation: Conversation, batch: Sequence[healing.Message], *, open_calls: bool = False
) -> tuple[healing.BufferFacts, dict[int, _Stored]]:
    """The facts the planner needs, read from the index columns for this batch's ids only;
    the open calls too when the batch holds a user turn (or ``open_calls``)."""
    ids = healing.ids_in_batch(batch)
    rows: dict[int, _Stored] = {}
    holders: dict[str, list[tuple[int, bool]]] = {}
    declared: set[str] = set()
    for chunk in batched(sorted(ids), _ID_CHUNK):
        for call_id, placeholder, *where in Message.objects.filter(
            conversation=conversation, answers_call_id__in=chunk
        ).values_list(
            "answers_call_id", "is_placeholder", "pk", "block_id", "block__start", "slot"
        ):
            row = _Stored(*where)
            rows[row.position] = row
            holders.setdefault(str(call_id), []).append((row.position, placeholder))
        declared.update(
            DeclaredCall.objects.filter(conversation=conversation, call_id__in=chunk).values_list(
                "call_id", flat=True
            )
        )
    results = {}
    for call_id, held in holders.items():
        held.sort()
        real = [position for position, placeholder in held if not placeholder]
        results[call_id] = healing.ResultSlot(real[0] if real else held[0][0], placeholder=not real)

    open_call_list = None
    if open_calls or any(message.role == "user" for message in batch):
        open_call_list = []
        for call_id, ordinal, *where in DeclaredCall.objects.filter(
            conversation=conversation, answered=False
        ).values_list(
            "call_id",
            "ordinal",
            "message_id",
            "message__block_id",
            "message__block__start",
            "message__slot",
        ):
            row = _Stored(*where)
            rows[row.position] = row
            open_call_list.append(healing.OpenCall(call_id, row.position, ordinal))

    facts = healing.BufferFacts(
        length=conversation.message_count,
        results=results,
        declared=declared,
        open_calls=open_call_list,
        covers=ids,
    )
    return facts, rows


def _apply(
    conversation: Conversation,
    plan: healing.AppendPlan,
    stored: dict[int, _Stored],
    writer: Writer,
) -> None:
    """Write a plan: overwrite replaced placeholders, make room mid-buffer, insert the new
    rows, and bring the declared-call index, the counters and the journal along."""
    if not plan.inserts and not plan.replacements:
        return
    # First, and only if no other append wrote since the facts were read (MEM-12).
    changed = Conversation.objects.filter(pk=conversation.pk, version=conversation.version).update(
        version=F("version") + 1,
        message_count=F("message_count") + len(plan.inserts),
        unanswered_count=F("unanswered_count") + plan.unanswered_delta,
        healed_count=F("healed_count") + plan.placeholders_delta,
        updated_at=timezone.now(),
    )
    if not changed:
        raise _StaleBuffer
    _journal_plan(conversation, plan, stored, writer)
    for replacement in plan.replacements:
        message = replacement.message
        Message.objects.filter(pk=stored[replacement.original_position].pk).update(
            content=message.content,
            metadata=message.metadata,
            answers_call_id=healing.result_call_id(message),
            is_placeholder=healing.is_placeholder(message),
        )
    grown = _make_room(conversation, plan, stored)
    mid = [
        Message.from_core(
            insert.message,
            conversation=conversation,
            block_id=stored[insert.gap - 1].block_id,
            slot=insert.position - plan.shifted(stored[insert.gap - 1].block_start),
        )
        for insert in plan.mid_buffer_inserts()
    ]
    tail = _place_tail(conversation, plan.tail_inserts(), grown)
    Message.objects.bulk_create(mid + tail, batch_size=_INSERT_BATCH)
    _resize_blocks(grown)

    new_at = dict(
        zip(
            [i.position for i in plan.mid_buffer_inserts()]
            + [i.position for i in plan.tail_inserts()],
            mid + tail,
            strict=True,
        )
    )
    DeclaredCall.objects.bulk_create(
        [
            DeclaredCall(
                conversation=conversation,
                message=new_at[declaration.position],
                call_id=declaration.call_id,
                ordinal=declaration.ordinal,
                answered=declaration.answered,
            )
            for declaration in plan.declarations
        ],
        batch_size=_INSERT_BATCH,
    )
    for chunk in batched(plan.answered, _ID_CHUNK):
        DeclaredCall.objects.filter(conversation=conversation, call_id__in=chunk).update(
            answered=True
        )


def _journal_plan(
    conversation: Conversation,
    plan: healing.AppendPlan,
    stored: dict[int, _Stored],
    writer: Writer,
) -> None:
    """The journal entry for a plan: each new row by its index, and each replaced
    placeholder with its old and new message."""
    old_by_pk = {
        pk: {"role": role, "content": content, "metadata": metadata}
        for pk, role, content, metadata in Message.objects.filter(
            pk__in=[stored[r.original_position].pk for r in plan.replacements]
        ).values_list("pk", "role", "content", "metadata")
    }
    rows: list[dict[str, Any]] = [
        {
            "change": "replaced",
            "index": replacement.position,
            "old": old_by_pk[stored[replacement.original_position].pk],
            "new": replacement.message.as_stored(),
        }
        for replacement in plan.replacements
    ]
    for insert in plan.inserts:
        row: dict[str, Any] = {"change": "inserted", "index": insert.position}
        row["role"] = insert.message.role
        if call_id := healing.result_call_id(insert.message):
            row["call_id"] = call_id
        if healing.is_placeholder(insert.message):
            row["healed"] = True
        rows.append(row)
    rows.sort(key=lambda row: row["index"])
    writer.record(
        conversation,
        version=conversation.version + 1,
        message_count=conversation.message_count + len(plan.inserts),
        rows=rows,
    )


def _make_room(
    conversation: Conversation, plan: healing.AppendPlan, stored: dict[int, _Stored]
) -> dict[int, int]:
    """Shift the rows after each mid-buffer insert point (placeholders go into the block of
    the turn they follow) and the blocks after them. Returns how many rows each block gets."""
    per_gap = Counter(insert.gap for insert in plan.mid_buffer_inserts())
    grown: Counter[int] = Counter()
    shifts_in: dict[int, list[tuple[int, int]]] = {}
    for gap, count in sorted(per_gap.items()):
        owner = stored[gap - 1]
        grown[owner.block_id] += count
        shifts_in.setdefault(owner.block_id, []).append((owner.slot, count))
    _shift_slots(shifts_in)
    if per_gap:
        _shift_block_starts(conversation, plan, min(per_gap))
    return dict(grown)


def _shift_slots(shifts_in: dict[int, list[tuple[int, int]]]) -> None:
    """Make room in each block after the slots that receive rows. A row after several
    insert points moves by all of them. Slots are unique per block, so rows go through
    negative values (``-slot - 1``) and back, never clashing on the way."""
    for block_id, shifts in shifts_in.items():
        whens = []
        moved = 0
        for after_slot, count in sorted(shifts):
            moved += count
            whens.append(When(slot__gt=after_slot, then=Value(moved)))
        lowest = min(slot for slot, _ in shifts)
        Message.objects.filter(block_id=block_id, slot__gt=lowest).update(
            slot=-(F("slot") + Case(*reversed(whens), default=Value(0))) - 1
        )
        Message.objects.filter(block_id=block_id, slot__lt=0).update(slot=-F("slot") - 1)


def _shift_block_starts(
    conversation: Conversation, plan: healing.AppendPlan, first_gap: int
) -> None:
    """Move the blocks after the first insert point by the rows inserted before them: one
    CASE branch per run of blocks that move alike, so at most one per block. Starts are
    unique per conversation: through negative values and back, as for slots."""
    later = Block.objects.filter(conversation=conversation, start__gte=first_gap)
    starts = sorted(later.values_list("start", flat=True))
    runs: list[tuple[int, int]] = []  # (first start of a run, how far it moves)
    for start in starts:
        moved = plan.shifted(start) - start
        if not runs or runs[-1][1] != moved:
            runs.append((start, moved))
    whens = [When(start__gte=first, then=Value(moved)) for first, moved in reversed(runs)]
    later.update(start=-(F("start") + Case(*whens, default=Value(0))) - 1)
    Block.objects.filter(conversation=conversation, start__lt=0).update(start=-F("start") - 1)


def _place_tail(
    conversation: Conversation, tail: Sequence[healing.Insert], grown: dict[int, int]
) -> list[Message]:
    """Rows appended at the end: into the last block while it has room, then new blocks."""
    if not tail:
        return []
    block_size = settings.FLOWDROP_BUFFER_BLOCK_SIZE
    placed: list[Message] = []
    remaining = list(tail)
    last = Block.objects.filter(conversation=conversation).order_by("-start").first()
    if last is not None:
        room = max(0, block_size - last.size - grown.get(last.pk, 0))
        for insert in remaining[:room]:
            placed.append(
                Message.from_core(
                    insert.message,
                    conversation=conversation,
                    block_id=last.pk,
                    slot=insert.position - last.start,
                )
            )
        grown[last.pk] = grown.get(last.pk, 0) + len(remaining[:room])
        remaining = remaining[room:]
    chunks = [list(chunk) for chunk in batched(remaining, block_size)]
    blocks = Block.objects.bulk_create(
        [
            Block(conversation=conversation, start=chunk[0].position, size=len(chunk))
            for chunk in chunks
        ]
    )
    for block, chunk in zip(blocks, chunks, strict=True):
        placed += [
            Message.from_core(
                insert.message,
                conversation=conversation,
                block=block,
                slot=insert.position - block.start,
            )
            for insert in chunk
        ]
    return placed


def _resize_blocks(grown: dict[int, int]) -> None:
    if not grown:
        return
    Block.objects.filter(pk__in=grown).update(
        size=F("size")
        + Case(*(When(pk=pk, then=Value(n)) for pk, n in grown.items()), default=Value(0))
    )


# Storing transcripts verbatim.


def import_conversations(
    conversations: Sequence[ConversationIn],
    *,
    via: str,
    by: Actor = None,
    owner: User | None = None,
    on_existing: Literal["error", "skip"] = "error",
    progress: Callable[[int], object] | None = None,
) -> list[Conversation]:
    """Store each conversation exactly as given: no healing, no dedup (a crashed transcript
    is kept as it is). All of them in one transaction: all are stored, or none.

    ``owner`` owns every conversation stored (nobody, when ``None``). Returns the
    conversations created; with ``on_existing="skip"`` one whose storage
    identity (scope, scope id, key) is already taken is left alone. Raises InvalidInput
    (nothing written) for what cannot be stored, and BufferBusy as appends do.
    """
    problems = [
        problem
        for index, incoming in enumerate(conversations)
        for problem in (
            *_text_problems(incoming, index),
            *_identity_problems(incoming, index, owner),
        )
    ]
    if problems:
        raise healing.InvalidInput(problems)

    def store_all() -> list[Conversation]:
        created: list[Conversation] = []
        identities_here: set[tuple[str, str, str]] = set()
        for index, incoming in enumerate(conversations):
            identity = {"scope": str(incoming.scope), "scope_id": incoming.scope_id}
            if incoming.key is not None:
                identity["key"] = incoming.key
                where = _place(incoming, index, "key")
                triple = (identity["scope"], incoming.scope_id, incoming.key)
                if triple in identities_here:
                    raise healing.InvalidInput(
                        [healing.Problem(where, f"{incoming.key!r} is used twice in this import")]
                    )
                identities_here.add(triple)
                if Conversation.objects.filter(**identity).exists():
                    if on_existing == "skip":
                        continue
                    raise healing.InvalidInput(
                        [
                            healing.Problem(
                                where,
                                f"a conversation with key {incoming.key!r} in scope "
                                f"{identity['scope']!r} is already stored",
                            )
                        ]
                    )
            conversation = Conversation.objects.create(
                title=incoming.title,
                source=incoming.source,
                source_format=incoming.source_format,
                metadata=incoming.metadata,
                owner=owner,
                **identity,
            )
            _write_verbatim(conversation, incoming.messages, progress)
            Writer(via, by, Action.IMPORT).record(
                conversation,
                version=conversation.version,
                message_count=conversation.message_count,
                rows=[],
            )
            created.append(conversation)
        return created

    with cyclic_gc_paused():  # a hundred thousand rows at once: see buffers.bulk
        return _in_bounded_transaction(store_all, "import")


def give_ownerless(
    conversations: models.QuerySet[Conversation], *, owner: User, via: str, by: Actor, reason: str
) -> list[Conversation]:
    """Make ``owner`` the owner of each conversation of ``conversations`` that has none,
    with an entry in its journal; one that has an owner keeps it. Returns those given."""
    given: list[Conversation] = []
    with transaction.atomic():
        for conversation in conversations.filter(owner__isnull=True).select_for_update():
            conversation.owner = owner
            conversation.save(update_fields=["owner"])
            Writer(via, by, Action.OWNER, reason).record(
                conversation,
                version=conversation.version,
                message_count=conversation.message_count,
                rows=[{"change": "owner", "old": None, "new": owner.get_username()}],
            )
            given.append(conversation)
    return given


_TEXT_LIMITS = {"title": 300, "source": 300, "key": 200, "scope_id": 100}


def _text_problems(incoming: ConversationIn, index: int) -> list[healing.Problem]:
    """What the database could not store of a conversation's own fields: each entry point
    checks too, so that its errors name its own places, but none may be skipped."""
    problems = []
    for name, limit in _TEXT_LIMITS.items():
        value = getattr(incoming, name) or ""
        where = _place(incoming, index, name)
        if problem := healing.json_problem(value):
            problems.append(healing.Problem(where, problem))
        elif len(value) > limit:
            problems.append(healing.Problem(where, f"is longer than {limit} characters"))
    return problems


def _identity_problems(
    incoming: ConversationIn, index: int, owner: User | None
) -> list[healing.Problem]:
    """A conversation may be stored only in its owner's own bucket: a ``user`` buffer
    under the owner's id, a ``session`` buffer under a session (a conversation) the owner
    owns. Anything else would file it under someone else's identity."""
    where = _place(incoming, index, "scope_id")
    if incoming.scope == Scope.USER:
        if owner is None or incoming.scope_id != str(owner.pk):
            whose = "nobody" if owner is None else f"user {owner.pk}"
            return [
                healing.Problem(
                    where,
                    f'must be the owner\'s id in the "user" scope (the owner is {whose})',
                )
            ]
    elif incoming.scope == Scope.SESSION:
        session = healing.scopes.real_identity(incoming.scope_id)
        if (
            owner is None
            or session is None
            or not Conversation.objects.filter(pk=int(session), owner=owner).exists()
        ):
            return [
                healing.Problem(
                    where,
                    'must name a conversation the owner owns in the "session" scope '
                    "(a session's transcript)",
                )
            ]
    return []


def _place(incoming: ConversationIn, index: int, field: str) -> str:
    """Where a field of an incoming conversation is, for errors: under its origin (``""``
    for a request body that holds one conversation), else under its place in the batch."""
    origin = incoming.origin if incoming.origin is not None else f"conversations[{index}]"
    return f"{origin}.{field}" if origin else field


def _write_verbatim(
    conversation: Conversation,
    messages: Sequence[healing.Message],
    progress: Callable[[int], object] | None,
) -> None:
    """Rows, blocks and the declared-call index for a whole transcript.

    Message and declared-call rows go in without the ORM (COPY on PostgreSQL,
    ``executemany`` on SQLite):
    building 100,000 model instances and compiling their INSERTs costs the ORM several
    seconds, and this is the one bulk path (docs/decisions.md, "Import speed"). The values
    are what the fields would write: JSON text for content and metadata, and the core's id
    reader for the index columns.
    """
    index = healing.index_buffer(messages)
    block_size = settings.FLOWDROP_BUFFER_BLOCK_SIZE
    blocks = Block.objects.bulk_create(
        [
            Block(
                conversation=conversation, start=start, size=min(block_size, len(messages) - start)
            )
            for start in range(0, len(messages), block_size)
        ]
    )
    message_columns = [
        "conversation_id", "block_id", "slot", "role", "content", "metadata", "answers_call_id",
        "is_placeholder",
    ]  # fmt: skip
    for first, chunk in _chunks(messages, _INSERT_BATCH):
        _insert_rows(
            Message,
            message_columns,
            [
                (
                    conversation.pk,
                    blocks[position // block_size].pk,
                    position % block_size,
                    message.role,
                    None if message.content is None else json.dumps(message.content),
                    json.dumps(message.metadata),
                    healing.result_call_id(message),
                    healing.is_placeholder(message),
                )
                for position, message in enumerate(chunk, start=first)
            ],
        )
        if progress:
            progress(len(chunk))

    block_start = {block.pk: block.start for block in blocks}
    owner_positions = {position for position, _ in index.owners.values()}
    pk_at = {
        block_start[block_id] + slot: pk
        for pk, block_id, slot in Message.objects.filter(
            conversation=conversation, role="assistant"
        ).values_list("pk", "block_id", "slot")
        if block_start[block_id] + slot in owner_positions
    }
    _index_calls(conversation, index, pk_at, len(messages))
    conversation.refresh_from_db()


def _index_calls(
    conversation: Conversation,
    index: healing.BufferIndex,
    pk_at: Mapping[int, int] | list[int],
    length: int,
) -> None:
    """The declared-call rows and the counters of a whole buffer. ``pk_at`` gives the
    primary key of the message at each position that declares a call."""
    declared = [
        (conversation.pk, pk_at[position], call_id, ordinal, call_id in index.holders)
        for call_id, (position, ordinal) in index.owners.items()
    ]
    for _, rows in _chunks(declared, _INSERT_BATCH):
        _insert_rows(
            DeclaredCall,
            ["conversation_id", "message_id", "call_id", "ordinal", "answered"],
            list(rows),
        )
    Conversation.objects.filter(pk=conversation.pk).update(
        message_count=length,
        unanswered_count=len(index.open_calls()),
        healed_count=len(index.placeholders),
    )


def _insert_rows(
    model: type[models.Model], columns: list[str], rows: list[tuple[Any, ...]]
) -> None:
    """Plain INSERT of many rows (COPY on PostgreSQL): JSON columns take JSON text."""
    table, names = model._meta.db_table, ", ".join(columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as target:
                for row in rows:
                    target.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)


def _chunks[T](items: Sequence[T], size: int) -> Iterable[tuple[int, Sequence[T]]]:
    """``items`` in slices of ``size``, each with the index of its first item."""
    return ((first, items[first : first + size]) for first in range(0, len(items), size))
