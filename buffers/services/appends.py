"""Appending under the rules: a batch checked, the facts the planner needs loaded from the
index columns, and its plan written with the journal."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection
from django.db.models import F
from django.utils import timezone

from buffers import healing, search, triggers
from buffers.models import Action, BufferChange, Conversation, DeclaredCall, Message
from buffers.selectors import json_column

from .journal import Actor, Writer
from .layout import _INSERT_BATCH, _Loaded, _make_room, _place_tail, _resize_blocks, _Stored
from .locking import _get, _StaleBuffer, with_buffer_lock
from .scopes import _changed_since_checked, _refused
from .verdicts import _NEAR, IdPositions, tally_after, tally_fields

MAX_BATCH = 10_000
"""The most messages one append may carry."""


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

    def write(locked: Conversation) -> healing.AppendReport:
        if changed := _changed_since_checked(target, locked, via):
            return healing.AppendReport.refused(changed)
        facts, stored = _load_facts(locked, messages)
        plan = healing.plan_append(facts, messages)
        if not (plan.inserts or plan.replacements) and locked is target:
            _check_unchanged(locked)  # no write below to compare and set
        _apply(locked, plan, stored, Writer(via, by, Action.APPEND))
        return plan.report

    def append(locked: Conversation) -> healing.AppendReport:
        if locked is not target:
            return write(locked)
        try:
            return write(locked)
        except _StaleBuffer:
            pass
        except DatabaseError:
            raise
        except Exception:
            # Planned on a row that may be stale (a length, a tally that no longer hold):
            # nothing is written before the compare-and-set, so only a row still stored
            # makes the error real.
            if _unchanged(locked).exists():
                raise
        # The row read before the lock is not the stored one any more (another write got in
        # first): nothing is written yet, so plan again on the row read under the lock.
        return write(_conversation(target.pk))

    # The row checked above serves under the lock: its first write is a compare-and-set on
    # it (``_apply``), so a changed buffer is read again and planned again.
    return with_buffer_lock(target.pk, via, append, loaded=target)


def _unchanged(conversation: Conversation) -> Any:
    """The conversation's row, if it is still as ``conversation`` was read: the same version
    (no write since), owner and scope (who may write, MEM-6..9). The appends state these
    conditions again in SQL (``_COUNTERS_JOURNAL_ANSWERED``, ``triggers.APPEND_TRIGGER``): change
    all three together."""
    return Conversation.objects.filter(
        pk=conversation.pk,
        version=conversation.version,
        owner_id=conversation.owner_id,
        scope=conversation.scope,
        scope_id=conversation.scope_id,
    )


def _check_unchanged(conversation: Conversation) -> None:
    if not _unchanged(conversation).exists():
        raise _StaleBuffer


def _claim_version(conversation: Conversation) -> None:
    """A new version for the buffer, if it is still as ``conversation`` was read; else
    ``_StaleBuffer``, and the write plans again on the buffer as it is then. The first
    statement of a write that is not an append (the admin tier, the facts of a late span):
    past the lock's bound a write proceeds unserialized (``with_buffer_lock``), and this
    compare-and-set waits for a write in progress on the row, as an append's does."""
    if not _unchanged(conversation).update(version=F("version") + 1, updated_at=timezone.now()):
        raise _StaleBuffer


def _conversation(conversation_id: int | None) -> Conversation:
    if conversation_id is None:
        raise TypeError("append_messages needs a conversation or a conversation_id")
    return _get(conversation_id)


# Everything the planner and the stored verdicts need, in one statement whatever the batch:
# raw SQL, as it runs on every append and building it through the ORM cost more than running
# it. Each row says what it is (``kind``), then where its message is; ``{ids}`` is the
# vendor's test of an id against the batch's ids (one bound list, however many). Every NULL
# is typed: PostgreSQL resolves a UNION's column types two branches at a time, and takes
# two untyped NULLs for text.
_HELD = """
SELECT 'held', m.answers_call_id, m.is_placeholder, CAST(NULL AS integer), m.id, m.block_id,
    b.start, m.slot, CAST(NULL AS text), CAST(NULL AS jsonb), CAST(NULL AS jsonb)
FROM buffers_message m JOIN buffers_block b ON b.id = m.block_id
WHERE m.conversation_id = %s AND {ids}
"""
_DECLARED = """
SELECT 'declared', d.call_id, CAST(NULL AS boolean), d.ordinal, m.id, m.block_id, b.start,
    m.slot, CAST(NULL AS text), CAST(NULL AS jsonb), CAST(NULL AS jsonb)
FROM buffers_declaredcall d
JOIN buffers_message m ON m.id = d.message_id JOIN buffers_block b ON b.id = m.block_id
WHERE d.conversation_id = %s AND {ids}
"""
# The open calls, read through the partial index of open calls, whose condition each
# database's statement must prove as it is written: SQLite's index says ``answered = 0``,
# which a bound false matches and ``NOT answered`` does not; PostgreSQL's says ``NOT
# answered``, which a bound false proves only in a plan made for that value (a write's
# statements run on the plan kept for a prepared statement, made for no value).
_OPEN = """
SELECT 'open', d.call_id, CAST(NULL AS boolean), d.ordinal, m.id, m.block_id, b.start,
    m.slot, CAST(NULL AS text), CAST(NULL AS jsonb), CAST(NULL AS jsonb)
FROM buffers_declaredcall d
JOIN buffers_message m ON m.id = d.message_id JOIN buffers_block b ON b.id = m.block_id
WHERE d.conversation_id = %s AND {open}
"""
# The last rows, which the stored verdicts read around a change at the end (``_NEAR``).
# Their bounds are on the slot (``m.slot >= first - b.start``), not on the index
# (``b.start + m.slot >= first``): so the index of slots finds them in their block, and
# no plan reads the whole table to filter it (on PostgreSQL before any ANALYZE, a
# conversation's last rows among 1,400,000 messages: 215 ms, against 0.3 ms).
_LAST_ROWS = """
SELECT 'last', CAST(NULL AS text), CAST(NULL AS boolean), CAST(NULL AS integer), m.id,
    m.block_id, b.start, m.slot, m.role, m.content, m.metadata
FROM buffers_block b JOIN buffers_message m ON m.block_id = b.id
WHERE b.conversation_id = %s
  AND b.start >= (
    SELECT MAX(start) FROM buffers_block WHERE conversation_id = %s AND start <= %s
  )
  AND m.slot >= %s - b.start AND m.slot < %s - b.start
"""


def _facts_statement(
    conversation: Conversation, ids: set[str], open_calls: bool
) -> tuple[str, list[Any]]:
    """``_load_facts``'s one statement and its parameters: the rows that hold a result for
    ``ids``, those that declare them, the open calls (if asked for), and the buffer's last
    rows."""
    parts: list[str] = []
    params: list[Any] = []
    if ids:
        bound: Any
        if connection.vendor == "postgresql":
            test, bound = "{column} = ANY(%s::text[])", list(ids)
        else:
            test, bound = "{column} IN (SELECT value FROM json_each(%s))", json.dumps(list(ids))
        parts += [
            _HELD.format(ids=test.format(column="m.answers_call_id")),
            _DECLARED.format(ids=test.format(column="d.call_id")),
        ]
        params += [conversation.pk, bound, conversation.pk, bound]
    if open_calls:
        if connection.vendor == "postgresql":
            parts.append(_OPEN.format(open="NOT d.answered"))
            params.append(conversation.pk)
        else:
            parts.append(_OPEN.format(open="d.answered = %s"))
            params += [conversation.pk, False]
    length = conversation.message_count
    first = max(0, length - 1 - _NEAR)
    parts.append(_LAST_ROWS)
    params += [conversation.pk, conversation.pk, first, first, length]
    return " UNION ALL ".join(parts), params


def _load_facts(
    conversation: Conversation, batch: Sequence[healing.Message], *, open_calls: bool = False
) -> tuple[healing.BufferFacts, _Loaded]:
    """The facts the planner needs, read from the index columns for this batch's ids only;
    the open calls too when the batch holds a user turn (or ``open_calls``). The rows come
    with where each id they cover is declared and held, and the buffer's last rows, for the
    stored verdicts."""
    ids = healing.ids_in_batch(batch)
    with_open_calls = open_calls or any(message.role == "user" for message in batch)
    known = IdPositions(covers=set(ids))
    rows = _Loaded(known)
    holders: dict[str, list[tuple[int, bool]]] = {}
    found_open: list[tuple[str, int, _Stored]] = []
    with connection.cursor() as cursor:
        cursor.execute(*_facts_statement(conversation, ids, with_open_calls))
        found = cursor.fetchall()
    for kind, call_id, placeholder, ordinal, *where, role, content, metadata in found:
        row = _Stored(*where)
        if kind == "last":
            rows.last[row.position] = healing.Message.model_construct(
                role=role, content=json_column(content), metadata=json_column(metadata)
            )
            if row.position == conversation.message_count - 1:
                rows.end_block = (row.block_id, row.block_start)
        elif kind == "declared":
            known.owners[call_id] = row.position
        elif kind == "held":
            rows[row.position] = row
            holders.setdefault(str(call_id), []).append((row.position, bool(placeholder)))
        else:
            found_open.append((call_id, ordinal, row))
    declared = set(known.owners)
    results = {}
    for call_id, held in holders.items():
        held.sort()
        known.holders[call_id] = [position for position, _ in held]
        real = [position for position, placeholder in held if not placeholder]
        results[call_id] = healing.ResultSlot(real[0] if real else held[0][0], placeholder=not real)

    open_call_list = None
    if with_open_calls:
        open_call_list = []
        for call_id, ordinal, row in found_open:
            rows[row.position] = row
            open_call_list.append(healing.OpenCall(call_id, row.position, ordinal))
            if call_id not in known.covers:  # declared, and no result anywhere
                known.covers.add(call_id)
                known.owners[call_id] = row.position

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
    rows, and bring the declared-call and search indexes, the counters and the journal
    along."""
    if not plan.inserts and not plan.replacements:
        return
    # Reads the rows around the change, as they are; the ids' positions and the buffer's
    # last rows came with ``stored``.
    loaded = stored if isinstance(stored, _Loaded) else _Loaded()
    tally = tally_after(conversation, plan, loaded.ids, loaded.last)
    journal = writer.entry(
        conversation,
        version=conversation.version + 1,
        message_count=conversation.message_count + len(plan.inserts),
        rows=_journal_rows(plan, stored),
    )
    now, tally_columns = timezone.now(), tally_fields(tally)
    # First, and only if no other append wrote since the facts were read (MEM-12).
    at_end = _tail_in_last_block(conversation, plan, loaded)
    if connection.vendor == "postgresql":
        changed = _counters_journal_answered(
            conversation, plan, now, tally_columns, journal, at_end
        )
    else:
        changed = _sqlite_append(conversation, plan, now, tally_columns, journal, at_end)
    if not changed:
        raise _StaleBuffer
    if at_end is not None:  # the new rows, their index and their calls were written too
        return
    rewritten: dict[int, healing.Message] = {}
    for replacement in plan.replacements:
        message = replacement.message
        pk = stored[replacement.original_position].pk
        Message.objects.filter(pk=pk).update(
            content=message.content,
            metadata=message.metadata,
            answers_call_id=healing.result_call_id(message),
            is_placeholder=healing.is_placeholder(message),
        )
        rewritten[pk] = message
    search.reindex_messages(conversation.pk, rewritten)
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
    search.index_messages(
        (row.pk, conversation.pk, search.text_of(row.role, row.content, row.metadata))
        for row in mid + tail
    )

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


# PostgreSQL, in one statement: the compare-and-set of the counters (``_unchanged``), and
# only if it changed the row, the journal entry and the open calls the plan answered
# (data-modifying CTEs all run, on one snapshot; each depends on the row ``changed``).
_COUNTERS_JOURNAL_ANSWERED = """
WITH changed AS (
    UPDATE buffers_conversation SET version = version + 1, message_count = message_count + %s,
        unanswered_count = unanswered_count + %s, healed_count = healed_count + %s,
        updated_at = %s, rejections = %s::jsonb, problem_counts = %s::jsonb, sendable = %s
    WHERE id = %s AND version = %s AND owner_id IS NOT DISTINCT FROM %s::bigint
        AND scope = %s AND scope_id = %s
    RETURNING id
), journal AS (
    INSERT INTO buffers_bufferchange (conversation_id, at, actor_id, actor_name, via, action,
        reason, version, message_count, rows)
    SELECT id, %s, %s::bigint, %s, %s, %s, %s, %s, %s, %s::jsonb FROM changed
), answered AS (
    UPDATE buffers_declaredcall SET answered = true
    WHERE conversation_id IN (SELECT id FROM changed) AND call_id = ANY(%s::text[])
)"""

# ... and, for the common append (new rows at the end, all in the last block), the rows
# too: the block grows, the messages are inserted (their ids in the rows' order, as the
# ORM gives them), then their search index and the calls they declare, joined to them by
# slot (unique in the block). Each reads ``changed`` or rows that do, so nothing is
# written when the compare-and-set fails.
_TAIL_IN_LAST_BLOCK = """, grown AS (
    UPDATE buffers_block SET size = size + %s FROM changed WHERE buffers_block.id = %s
), added AS (
    INSERT INTO buffers_message (conversation_id, block_id, slot, role, content, metadata,
        answers_call_id, is_placeholder)
    SELECT changed.id, %s, r.slot, r.role, r.content::jsonb, r.metadata::jsonb, r.answers,
        r.placeholder
    FROM changed, unnest(%s::int[], %s::text[], %s::text[], %s::text[], %s::text[],
        %s::boolean[]) WITH ORDINALITY AS r (slot, role, content, metadata, answers,
        placeholder, n)
    ORDER BY r.n
    RETURNING id, slot
), indexed AS (
    INSERT INTO buffers_messagesearch (message_id, conversation_id, block_id, document)
    SELECT added.id, %s, %s, w.words::tsvector
    FROM added JOIN unnest(%s::int[], %s::text[]) AS w (slot, words) USING (slot)
), declared AS (
    INSERT INTO buffers_declaredcall (conversation_id, message_id, call_id, ordinal, answered)
    SELECT %s, added.id, c.call_id, c.ordinal, c.answered
    FROM added JOIN unnest(%s::int[], %s::text[], %s::int[], %s::boolean[])
        AS c (slot, call_id, ordinal, answered) USING (slot)
)"""


@dataclass(frozen=True)
class _Tail:
    """A plan's new rows when they all go at the end, into the last block: its id and
    start, and the rows."""

    block_id: int
    block_start: int
    inserts: Sequence[healing.Insert]


def _tail_in_last_block(
    conversation: Conversation, plan: healing.AppendPlan, loaded: _Loaded
) -> _Tail | None:
    """The plan's rows as a ``_Tail`` when it only appends at the end, and the last block
    has room for them all; else None (the writes go one by one)."""
    inserts = plan.tail_inserts()
    if plan.replacements or plan.mid_buffer_inserts() or not inserts or not loaded.end_block:
        return None
    block_id, start = loaded.end_block
    used = conversation.message_count - start
    if used + len(inserts) > settings.FLOWDROP_BUFFER_BLOCK_SIZE:
        return None
    return _Tail(block_id, start, inserts)


@dataclass(frozen=True)
class _TailRows:
    """A ``_Tail``'s rows as both vendors' one statement writes them, each list by slot:
    the messages (slot, role, content and metadata as JSON text, the result's id, whether
    a placeholder), their words for the search index (those with any), and the calls they
    declare (slot, call id, ordinal, answered)."""

    messages: Sequence[tuple[int, str, str | None, str, str | None, bool]]
    words: Sequence[tuple[int, str]]
    declared: Sequence[tuple[int, str, int, bool]]

    @classmethod
    def of(cls, plan: healing.AppendPlan, tail: _Tail) -> _TailRows:
        messages, words = [], []
        for insert in tail.inserts:
            message, slot = insert.message, insert.position - tail.block_start
            content = None if message.content is None else json.dumps(message.content)
            answers = healing.result_call_id(message)
            placeholder = healing.is_placeholder(message)
            messages.append(
                (slot, message.role, content, json.dumps(message.metadata), answers, placeholder)
            )
            text = search.message_text(message)
            if text and (found := search.words_of(text)):
                words.append((slot, found))
        declared = [
            (d.position - tail.block_start, d.call_id, d.ordinal, d.answered)
            for d in plan.declarations
        ]
        return cls(messages, words, declared)


def _tail_params(conversation: Conversation, plan: healing.AppendPlan, tail: _Tail) -> list[Any]:
    """``_TAIL_IN_LAST_BLOCK``'s parameters: each new row's columns as arrays, by slot."""
    rows = _TailRows.of(plan, tail)

    def columns(items: Sequence[Any], width: int) -> list[list[Any]]:
        return [list(column) for column in zip(*items, strict=True)] if items else [[]] * width

    return [
        *[len(tail.inserts), tail.block_id],
        *[tail.block_id, *columns(rows.messages, 6)],
        *[conversation.pk, tail.block_id, *columns(rows.words, 2)],
        conversation.pk,
        *columns(rows.declared, 4),
    ]


def _counters_journal_answered(
    conversation: Conversation,
    plan: healing.AppendPlan,
    now: datetime,
    tally_columns: dict[str, Any],
    journal: BufferChange,
    tail: _Tail | None = None,
) -> bool:
    """``_COUNTERS_JOURNAL_ANSWERED`` (and ``_TAIL_IN_LAST_BLOCK`` for a ``tail``) with the
    values SQLite's statement writes (``_sqlite_append``); whether the
    conversation's row was still as read (else nothing was written)."""
    statement = _COUNTERS_JOURNAL_ANSWERED
    params = [
        *_counters_params(conversation, plan, now, tally_columns),
        *_journal_params(journal),
        list(plan.answered),
    ]
    if tail is not None:
        statement += _TAIL_IN_LAST_BLOCK
        params += _tail_params(conversation, plan, tail)
    with connection.cursor() as cursor:
        cursor.execute(statement + "\nSELECT count(*) FROM changed", params)
        (changed,) = cursor.fetchone()
    return bool(changed)


# SQLite's one statement: a row into the view whose trigger writes it
# (``buffers.triggers.APPEND_TRIGGER``), with the rows when they go at the end of the last
# block, else with none (they are written after it, one statement at a time).
_SQLITE_APPEND = f"""
INSERT INTO buffers_append VALUES ({", ".join(["%s"] * 26)})
"""


def _sqlite_append(
    conversation: Conversation,
    plan: healing.AppendPlan,
    now: datetime,
    tally_columns: dict[str, Any],
    journal: BufferChange,
    tail: _Tail | None,
) -> bool:
    """``_counters_journal_answered`` on SQLite, the same values written by
    ``_SQLITE_APPEND``; whether the conversation's row was still as read (else nothing
    was written)."""
    rows = _TailRows.of(plan, tail) if tail is not None else _TailRows([], [], [])
    params = [
        *_counters_params(conversation, plan, now, tally_columns),
        *_journal_params(journal),
        json.dumps(list(plan.answered)),
        None if tail is None else tail.block_id,
        json.dumps(rows.messages),
        json.dumps(rows.words),
        json.dumps(rows.declared),
    ]
    try:
        with connection.cursor() as cursor:
            cursor.execute(_SQLITE_APPEND, params)
    except IntegrityError as error:
        if str(error) == triggers.STALE:
            return False
        raise
    return True


def _counters_params(
    conversation: Conversation,
    plan: healing.AppendPlan,
    now: datetime,
    tally_columns: dict[str, Any],
) -> list[Any]:
    """The counters' compare-and-set parameters, in both vendors' statements' order: the
    new values, then the conversation as read."""
    return [
        len(plan.inserts),
        plan.unanswered_delta,
        plan.placeholders_delta,
        connection.ops.adapt_datetimefield_value(now),
        json.dumps(tally_columns["rejections"]),
        json.dumps(tally_columns["problem_counts"]),
        tally_columns["sendable"],
        conversation.pk,
        conversation.version,
        conversation.owner_id,
        str(conversation.scope),
        conversation.scope_id,
    ]


def _journal_params(journal: BufferChange) -> list[Any]:
    """The journal entry's columns after its conversation, in both vendors' order."""
    return [
        connection.ops.adapt_datetimefield_value(journal.at),
        journal.actor_id,
        journal.actor_name,
        journal.via,
        str(journal.action),
        journal.reason,
        journal.version,
        journal.message_count,
        json.dumps(journal.rows),
    ]


def _journal_rows(plan: healing.AppendPlan, stored: dict[int, _Stored]) -> list[dict[str, Any]]:
    """The journal's rows for a plan: each new row by its index, and each replaced
    placeholder with its old and new message."""
    old_by_pk = (
        {
            pk: {"role": role, "content": content, "metadata": metadata}
            for pk, role, content, metadata in Message.objects.filter(
                pk__in=[stored[r.original_position].pk for r in plan.replacements]
            ).values_list("pk", "role", "content", "metadata")
        }
        if plan.replacements
        else {}
    )
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
    return rows
