"""Storing transcripts verbatim: conversations checked (text limits, storage identity),
then rows, blocks and the declared-call index written in bulk."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, models

from buffers import healing, search
from buffers.bulk import Aside, cyclic_gc_paused
from buffers.healing import jsontext
from buffers.models import Action, Block, Conversation, DeclaredCall, Message, Scope

from .checkpoints import checkpointed_after_commit
from .journal import Actor, Writer
from .layout import _INSERT_BATCH
from .locking import _in_bounded_transaction
from .verdicts import store_tally


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


# Storing transcripts verbatim.

ASIDE_FROM = 20_000
"""The length from which an import finds its words and tally in a copy of its process
(``bulk.Aside``): forking one costs some milliseconds, and the copy the memory it
touches."""


LOG_APART_FROM = ASIDE_FROM
"""The length from which an import's commit on SQLite leaves copying the write-ahead log
into the database file to a thread (``checkpoints.checkpointed_after_commit``): the same,
so that an import that copies its process has first waited for the thread of the one
before."""


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
                if Conversation.objects.filter(owner=owner, **identity).exists():
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

    long = sum(len(incoming.messages) for incoming in conversations) >= LOG_APART_FROM
    # A hundred thousand rows at once: see buffers.bulk and .checkpoints.
    with cyclic_gc_paused(), checkpointed_after_commit() if long else nullcontext():
        return _in_bounded_transaction(store_all, "import")


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
        if session is not None and session != incoming.scope_id:
            # A write resolves the session to its id as written here, and refuses a buffer
            # stored under another spelling of it: every append to it would be refused.
            return [
                healing.Problem(
                    where,
                    f"must be the session's id as digits alone, {session!r}, "
                    f"not {incoming.scope_id!r}",
                )
            ]
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
    ids = _new_ids(Message, len(messages))
    message_columns = [
        "id", "conversation_id", "block_id", "slot", "role", "content", "metadata",
        "answers_call_id", "is_placeholder",
    ]  # fmt: skip

    def message_rows() -> Iterator[tuple[Any, ...]]:
        for first, chunk in _chunks(messages, _INSERT_BATCH):
            for position, message in enumerate(chunk, start=first):
                yield (
                    ids[position],
                    conversation.pk,
                    blocks[position // block_size].pk,
                    position % block_size,
                    message.role,
                    None if message.content is None else jsontext.dumps(message.content),
                    jsontext.dumps(message.metadata),
                    healing.result_call_id(message),
                    healing.is_placeholder(message),
                )
            if progress:
                progress(len(chunk))

    # Two cores at work: each COPY takes its rows as they are made, so PostgreSQL files one
    # while the next is made; and a copy of this process finds the words to index and
    # counts the tally meanwhile (pure Python: see bulk.Aside), for a long transcript.
    with Aside(
        [
            functools.partial(search.messages_words, messages),
            functools.partial(healing.verdicts.tally, messages, index),
        ],
        fork=len(messages) >= ASIDE_FROM,
    ) as aside:
        _insert_rows(Message, message_columns, message_rows())
        _index_calls(conversation, index, ids, len(messages))
        words = aside.next_result()
        search.index_words(
            ((pk, conversation.pk, found) for pk, found in zip(ids, words, strict=True)),
            blocks={pk: blocks[position // block_size].pk for position, pk in enumerate(ids)},
        )
        store_tally(conversation, aside.next_result())
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


def _new_ids(model: type[models.Model], count: int) -> list[int]:
    """``count`` primary keys for new rows of ``model``, taken now, so that the rows and
    what refers to them (the declared-call and search indexes) go in without reading the
    rows back. PostgreSQL draws them from the table's sequence; on SQLite the import holds
    the database's write lock (BEGIN IMMEDIATE), so the keys after the highest in use (or
    recorded as used) are free."""
    if not count:
        return []
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The sequence found once (an InitPlan): called per row, the lookup took 190
            # of the 220 ms that 100,000 keys cost.
            cursor.execute(
                "SELECT nextval((SELECT pg_get_serial_sequence(%s, 'id')::regclass)) "
                "FROM generate_series(1, %s)",
                [table, count],
            )
            return [pk for (pk,) in cursor.fetchall()]
        cursor.execute(
            "SELECT MAX(n) FROM (SELECT MAX(id) AS n FROM " + table + " UNION ALL "
            "SELECT seq FROM sqlite_sequence WHERE name = %s)",
            [table],
        )
        (highest,) = cursor.fetchone()
        first = (highest or 0) + 1
        return list(range(first, first + count))


def _insert_rows(
    model: type[models.Model], columns: list[str], rows: Iterable[tuple[Any, ...]]
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
            for batch in itertools.batched(rows, _INSERT_BATCH):
                cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", batch)


def _chunks[T](items: Sequence[T], size: int) -> Iterable[tuple[int, Sequence[T]]]:
    """``items`` in slices of ``size``, each with the index of its first item."""
    return ((first, items[first : first + size]) for first in range(0, len(items), size))
