"""Reads: what the pages, the API and the commands show of stored buffers."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, cast

from django.db import connection
from django.db.models import F, Min, Model, QuerySet, Subquery

from . import healing
from .healing import jsontext
from .models import (
    BUFFER_INDEX,
    Block,
    Conversation,
    ConversationQuerySet,
    DeclaredCall,
    Message,
)


def columns_of(model: type[Model], table: str | None = None) -> str:
    """Every column of ``model``'s rows, in the order ``instance_from_row`` reads them, for
    a plain statement's SELECT (each named under ``table`` when given)."""
    prefix = f'"{table}".' if table else ""
    return ", ".join(f'{prefix}"{field.column}"' for field in model._meta.concrete_fields)


def instance_from_row[M: Model](model: type[M], row: Sequence[Any]) -> M:
    """An instance of ``model`` from a row that starts with its columns (``columns_of``),
    as the ORM makes one: each value converted by the converters its compiler applies to
    that column on this database, found once."""
    values = list(row[: len(model._meta.concrete_fields)])
    for position, converters, column in _converters(model, connection.vendor):
        value = values[position]
        for convert in converters:
            value = convert(value, column, connection)
        values[position] = value
    names = [field.attname for field in model._meta.concrete_fields]
    return model.from_db(connection.alias, names, values)


@functools.cache
def _converters(model: type[Model], vendor: str) -> list[tuple[int, list[Any], Any]]:
    """What the ORM's compiler converts in a row of ``model`` on this database: each
    column's position, its converters and the column they are given."""
    compiler = model._default_manager.none().query.get_compiler(connection=connection)
    table = model._meta.db_table
    columns = [field.get_col(table) for field in model._meta.concrete_fields]
    found = compiler.get_converters(columns)
    return [(position, converters, column) for position, (converters, column) in found.items()]


# Every column of the conversation's row, by its key: one plain statement, as reading it
# by the ORM's ``get`` cost three times as much to build as to run, and a raw query set
# (``Model.objects.raw``) still twice (issue 16).
_CONVERSATION_BY_PK = (
    f'SELECT {columns_of(Conversation)} FROM "{Conversation._meta.db_table}" WHERE id = %s'
)


def conversation_by_pk(pk: int) -> Conversation:
    """The conversation ``pk``, else ``Conversation.DoesNotExist``."""
    with connection.cursor() as cursor:
        cursor.execute(_CONVERSATION_BY_PK, [pk])
        row = cursor.fetchone()
    if row is None:
        raise Conversation.DoesNotExist(f"No conversation {pk}.")
    return instance_from_row(Conversation, row)


def conversations_newest() -> ConversationQuerySet:
    """Most recently created first: a stable order to page through while others append."""
    return Conversation.objects.order_by("-created_at", "-id")


def conversations_recent() -> ConversationQuerySet:
    """Most recently updated first: what an inspector wants to see on top."""
    return Conversation.objects.order_by("-updated_at", "-id")


_LARGEST_INDEX = 2**63 - 1


def messages_page(conversation: Conversation, *, offset: int, limit: int) -> QuerySet[Any]:
    """``limit`` messages from buffer index ``offset``, each annotated with its ``index``
    (typed ``Any``: django-stubs cannot carry the annotation through the custom queryset).

    A page at offset 99,950 costs what a page at offset 0 does: the blocks that hold the
    page are found by their indexed start, and their rows by slot. A page reaching past
    the largest index a database stores (2**63 - 1) ends there.
    """
    end = min(offset + limit, _LARGEST_INDEX)
    first_start = (
        Block.objects.filter(conversation=conversation, start__lte=offset)
        .order_by("-start")
        .values("start")[:1]
    )
    covering = Block.objects.filter(
        conversation=conversation, start__gte=Subquery(first_start), start__lt=end
    )
    # Bounded on the slot, not on the index (start plus slot): the index of slots finds
    # the rows in their block, as in ``_CORE_MESSAGES_PAGE``.
    page = (
        Message.objects.filter(block__in=covering.values("pk"))
        .in_buffer_order()
        .annotate(index=BUFFER_INDEX)
        .filter(slot__gte=offset - F("block__start"), slot__lt=end - F("block__start"))
    )
    return page


def message_at(conversation: Conversation, index: int) -> Message | None:
    """The row of message ``index`` of the buffer; None past its end."""
    if not 0 <= index < conversation.message_count:
        return None
    rows = list(messages_page(conversation, offset=index, limit=1))
    return rows[0] if rows else None


def index_of(conversation: Conversation, row_id: int) -> int | None:
    """Where the message stored as row ``row_id`` is in the buffer now (a write may have
    moved it since a page showed it); None when the conversation holds no such row."""
    found = (
        Message.objects.filter(conversation=conversation, pk=row_id)
        .annotate(index=BUFFER_INDEX)
        .values_list("index", flat=True)
        .first()
    )
    return None if found is None else int(found)


# ``messages_page``'s rows as the pure core's messages, in plain SQL: the stored verdicts
# read them on every append, where building the ORM query cost more than running it. The
# bounds are on the slot, so that the index of slots finds the rows in their block (as
# ``_LAST_ROWS`` in services/appends.py).
_CORE_MESSAGES_PAGE = """
SELECT b.start + m.slot, m.role, m.content, m.metadata
FROM buffers_block b JOIN buffers_message m ON m.block_id = b.id
WHERE b.conversation_id = %s
  AND b.start >= (
    SELECT MAX(start) FROM buffers_block WHERE conversation_id = %s AND start <= %s
  )
  AND b.start < %s AND m.slot >= %s - b.start AND m.slot < %s - b.start
"""


def core_messages_page(
    conversation: Conversation, *, offset: int, limit: int
) -> list[tuple[int, healing.Message]]:
    """``messages_page`` as (index, the pure core's message) pairs, in no set order."""
    end = offset + limit
    with connection.cursor() as cursor:
        cursor.execute(
            _CORE_MESSAGES_PAGE, [conversation.pk, conversation.pk, offset, end, offset, end]
        )
        rows = cursor.fetchall()
    return [(index, _core_message(*columns)) for index, *columns in rows]


def _core_message(role: str, content: Any, metadata: Any) -> healing.Message:
    """A message row's columns, as a cursor gives them, as the pure core's message: what
    ``Message.as_core`` makes, without a model instance."""
    return healing.Message.model_construct(
        role=cast(healing.Role, role), content=json_column(content), metadata=json_column(metadata)
    )


def json_column(value: Any) -> Any:
    """A JSON column's value as a cursor gives it (its text), as ``JSONField`` reads it."""
    return jsontext.loads_stored(value) if isinstance(value, str) else value


_BUFFER = """
SELECT m.role, m.content, m.metadata
FROM buffers_block b JOIN buffers_message m ON m.block_id = b.id
WHERE b.conversation_id = %s
ORDER BY b.start, m.slot
"""


def buffer_messages(conversation: Conversation) -> list[healing.Message]:
    """The whole buffer, in order, as the pure core's messages. In plain SQL, its JSON read
    as ``core_messages_page`` reads it: through the ORM (a model instance a row, the JSON
    read by the standard library's parser) a 100,000-message Claude Code session, whose
    rows keep their event lines, took 4.6 s to read for its export."""
    with connection.cursor() as cursor:
        cursor.execute(_BUFFER, [conversation.pk])
        return [_core_message(*columns) for columns in cursor]


def window_facts(
    conversation: Conversation, window: Sequence[healing.Message]
) -> dict[str, healing.CallFacts]:
    """What the whole buffer says about each id a window of it names, read from the index
    in three queries whatever the buffer's length: who owns each id, where its first result
    is, and where the run of results after the owner ends."""
    ids = healing.ids_in_batch(window)
    if not ids:
        return {}
    owners = {
        call_id: (message_id, index)
        for call_id, message_id, index in DeclaredCall.objects.filter(
            conversation=conversation, call_id__in=ids
        ).values_list("call_id", "message_id", F("message__block__start") + F("message__slot"))
    }
    first_results = {
        str(call_id): first
        for call_id, first in Message.objects.filter(
            conversation=conversation, answers_call_id__in=ids
        )
        .values("answers_call_id")
        .annotate(first=Min(BUFFER_INDEX))
        .values_list("answers_call_id", "first")
    }
    block_ends = _tool_runs_end(conversation, [message_id for message_id, _ in owners.values()])
    return {
        call_id: healing.CallFacts(
            owner=owners[call_id][1] if call_id in owners else None,
            first_result=first_results.get(call_id),
            owner_block_end=block_ends[owners[call_id][0]] if call_id in owners else None,
        )
        for call_id in ids
    }


def _tool_runs_end(conversation: Conversation, message_ids: list[int]) -> dict[int, int]:
    """For each message, the index just past the run of tool messages right after it: the
    first later message that is not a tool result, looked for in its own block and then
    block by block (each found by its indexed start), or the buffer's length."""
    if not message_ids:
        return {}
    marks = ", ".join(["%s"] * len(message_ids))
    sql = f"""
        SELECT m.id, COALESCE(
            (SELECT b.start + MIN(n.slot) FROM buffers_message n
              WHERE n.block_id = m.block_id AND n.slot > m.slot AND n.role <> 'tool'),
            (SELECT later.start + (SELECT MIN(n.slot) FROM buffers_message n
                                    WHERE n.block_id = later.id AND n.role <> 'tool')
               FROM buffers_block later
              WHERE later.conversation_id = b.conversation_id AND later.start > b.start
                AND EXISTS (SELECT 1 FROM buffers_message n
                             WHERE n.block_id = later.id AND n.role <> 'tool')
              ORDER BY later.start LIMIT 1),
            %s)
        FROM buffers_message m JOIN buffers_block b ON b.id = m.block_id
        WHERE m.id IN ({marks})
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [conversation.message_count, *message_ids])
        return dict(cursor.fetchall())


def shared_with(conversation: Conversation) -> dict[str, list[str]]:
    """Who else may view ``conversation``: the usernames of the users and the names of the
    groups it is shared with, each sorted."""
    return {
        "users": sorted(conversation.viewers.values_list("username", flat=True)),
        "groups": sorted(conversation.viewer_groups.values_list("name", flat=True)),
    }


_SCAN = 500
"""Messages read at a time looking for the next problem of a kind the index does not hold."""
_CONTEXT = 64
"""Messages read before each stretch, so that its first turns are checked in context."""


def next_problem(
    conversation: Conversation, kind: str, after: int, *, round_the_end: bool = True
) -> int | None:
    """The index of the first message after ``after`` with a problem of ``kind`` (a kind of
    ``healing.verdicts.PROBLEM_LABELS``), going round to the buffer's start when there is
    none after it (unless not ``round_the_end``); None when the buffer holds none (its
    stored counts say so, unread).

    Unanswered calls and placeholders are found by the index; other kinds by reading the
    buffer a stretch at a time from ``after``: the cost is the distance to the next one."""
    if not conversation.tally.problems.get(kind):
        return None
    after = max(-1, min(after, conversation.message_count - 1))
    indexed = _indexed_problems(conversation, kind)
    if indexed is not None:
        later = indexed.filter(index__gt=after).first()
        return later if later is not None or not round_the_end else indexed.first()
    stretches = [(after + 1, conversation.message_count)]
    if round_the_end:
        stretches.append((0, after + 1))
    for start, end in stretches:
        for first in range(start, end, _SCAN):
            found_at = _first_of_kind(conversation, kind, first, min(end, first + _SCAN))
            if found_at is not None:
                return found_at
    return None


def _indexed_problems(conversation: Conversation, kind: str) -> QuerySet[Any] | None:
    """The indexes, in order, of the problems of ``kind`` that the index columns hold
    (unanswered calls, placeholders); None for the other kinds."""
    if kind == "unanswered_call":
        rows: QuerySet[Any] = DeclaredCall.objects.filter(conversation=conversation, answered=False)
        position = F("message__block__start") + F("message__slot")
    elif kind == "healed_placeholder":
        rows = Message.objects.filter(conversation=conversation, is_placeholder=True)
        position = BUFFER_INDEX
    else:
        return None
    indexes: QuerySet[Any] = (
        rows.annotate(index=position).order_by("index").values_list("index", flat=True)
    )
    return indexes


def _first_of_kind(conversation: Conversation, kind: str, start: int, end: int) -> int | None:
    if kind in healing.verdicts.REJECTION_PROBLEMS:
        indexes: Iterable[int] = rejected_for(conversation, start, end, kinds=(kind,))
    else:
        window = [
            row.as_core() for row in messages_page(conversation, offset=start, limit=end - start)
        ]
        indexes = [
            f.index
            for f in healing.analyze_window(window, start, window_facts(conversation, window))
            if f.kind == kind
        ]
    return min((i for i in indexes if start <= i < end), default=None)


def rejected_for(
    conversation: Conversation, start: int, end: int, *, kinds: Iterable[str] | None = None
) -> dict[int, dict[str, str]]:
    """The messages ``start``..``end`` that a provider refuses for a reason that is a problem
    of the message (``healing.verdicts.REJECTION_PROBLEMS``: an empty turn, a part some
    provider does not take), each with its kinds and the first provider's sentence for
    each. Only ``kinds`` (by default, those the stored tally counts: none read when it
    counts none). The messages are checked in context: from ``_CONTEXT`` before, to one
    after."""
    if kinds is None:
        kinds = [
            k for k in healing.verdicts.REJECTION_PROBLEMS if conversation.tally.problems.get(k)
        ]
    kinds = list(kinds)
    if not kinds or end <= start:
        return {}
    context = max(0, start - _CONTEXT)
    stop = min(conversation.message_count, end + 1)
    messages = [
        row.as_core() for row in messages_page(conversation, offset=context, limit=stop - context)
    ]
    verdicts: dict[str, healing.sendability.Verdict] = {}
    found: dict[int, dict[str, str]] = {}
    for kind in kinds:
        for provider in healing.verdicts.REJECTION_PROBLEMS[kind]:
            if provider not in verdicts:
                verdicts[provider] = healing.sendability.check(messages, provider, context)
            for rejection in verdicts[provider].rejections:
                if rejection.reason == kind and start <= rejection.index < end:
                    found.setdefault(rejection.index, {}).setdefault(kind, rejection.sentence)
    return found
