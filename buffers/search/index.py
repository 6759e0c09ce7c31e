"""Writing the index: the service calls these in the transaction of each write."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import connection

from buffers import healing
from buffers.selectors import json_column

from .words import message_text, text_of, words_of

_INSERT_CHUNK = 5_000


_COPY_FROM = 100


def index_messages(
    rows: Iterable[tuple[int, int, str]], *, blocks: Mapping[int, int] | None = None
) -> None:
    """Add (message id, conversation id, text) rows to the index; a text without words
    gets no row. An import, which knows each message's block (``blocks``, by message id),
    gives all its rows at once: PostgreSQL takes them in one COPY as they are made, filing
    each while the next one's words are found."""
    index_words(((pk, c, words_of(text) if text else "") for pk, c, text in rows), blocks=blocks)


def messages_words(messages: Iterable[healing.Message]) -> list[str]:
    """Each message's words as the index holds them ("": none), for ``index_words``."""
    return [words_of(text) if (text := message_text(m)) else "" for m in messages]


def index_words(
    rows: Iterable[tuple[int, int, str]], *, blocks: Mapping[int, int] | None = None
) -> None:
    """``index_messages`` for rows whose words are found (``words_of``) already."""
    indexed = ((pk, c, words) for pk, c, words in rows if words)
    if blocks is not None and connection.vendor == "postgresql":
        _copy(indexed, blocks)
        return
    for batch in itertools.batched(indexed, _INSERT_CHUNK):
        _insert(list(batch), blocks)


def _insert(rows: list[tuple[int, int, str]], blocks: Mapping[int, int] | None = None) -> None:
    """Index rows (message id, conversation id, words). On PostgreSQL each row also holds
    its message's block (``hits._weighed_hits``): from ``blocks`` (message id to block id), else
    read from the messages, which are written before their index."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.executemany(
                "INSERT INTO buffers_messagesearch (rowid, conversation_id, body) "
                "VALUES (%s, %s, %s)",
                rows,
            )
        elif blocks is None and len(rows) < _COPY_FROM:
            # A message's block never changes (a heal shifts slots and starts only).
            marks = ", ".join(["(%s::bigint, %s::bigint, %s::tsvector)"] * len(rows))
            cursor.execute(
                "INSERT INTO buffers_messagesearch (message_id, conversation_id, block_id, "
                "document) SELECT v.id, v.c, (SELECT m.block_id FROM buffers_message m "
                f"WHERE m.id = v.id), v.d FROM (VALUES {marks}) v (id, c, d)",
                [value for row in rows for value in row],
            )
        else:  # a tsvector's text is the words, space-separated: COPY reads it as it is
            if blocks is None:
                blocks = _blocks_of(cursor, [pk for pk, _, _ in rows])
            _copy(rows, blocks)


def _copy(rows: Iterable[tuple[int, int, str]], blocks: Mapping[int, int]) -> None:
    """PostgreSQL: index rows in one COPY, taken as they come."""
    copy = "COPY buffers_messagesearch (message_id, conversation_id, block_id, document) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(copy) as target:
        for pk, conversation_id, words in rows:
            target.write_row((pk, conversation_id, blocks[pk], words))


def _blocks_of(cursor: Any, message_ids: Sequence[int]) -> dict[int, int]:
    """PostgreSQL: the block of each of these (stored) messages, by id. An import's ids are
    consecutive: a range scan of them is a quarter of the cost of looking up each."""
    low, high = min(message_ids), max(message_ids)
    if high - low < 2 * len(message_ids):
        cursor.execute(
            "SELECT id, block_id FROM buffers_message WHERE id BETWEEN %s AND %s", [low, high]
        )
    else:
        cursor.execute(
            "SELECT id, block_id FROM buffers_message WHERE id = ANY(%s)", [list(message_ids)]
        )
    return dict(cursor.fetchall())


def forget_messages(message_ids: Sequence[int]) -> None:
    """Take these messages out of the index (before they are written again)."""
    if not message_ids:
        return
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "DELETE FROM buffers_messagesearch WHERE message_id = ANY(%s)", [list(message_ids)]
            )
        else:
            marks = ", ".join(["%s"] * len(message_ids))
            cursor.execute(
                f"DELETE FROM buffers_messagesearch WHERE rowid IN ({marks})", list(message_ids)
            )


def reindex_messages(conversation_id: int, messages: Mapping[int, healing.Message]) -> None:
    """The index rows of messages whose text was rewritten (a replaced placeholder, an
    admin edit), by message id."""
    forget_messages(list(messages))
    index_messages((pk, conversation_id, message_text(message)) for pk, message in messages.items())


def rebuild() -> int:
    """Index every stored message again, from the rows as they are (raw SQL, so that a
    migration can run it whatever the models say later). Returns how many are indexed
    (a message without words has no row)."""
    done = 0
    last = 0
    with connection.cursor() as cursor:
        # Migration 0006 runs this before 0010 gives PostgreSQL's rows their block.
        with_blocks = connection.vendor == "postgresql" and _has_block_column(cursor)
        cursor.execute("DELETE FROM buffers_messagesearch")
        while True:
            cursor.execute(
                f"SELECT {_STORED} FROM buffers_message WHERE id > %s ORDER BY id LIMIT %s",
                [last, _INSERT_CHUNK],
            )
            rows = cursor.fetchall()
            if not rows:
                return done
            last = rows[-1][0]
            done += _index_stored_rows(cursor, rows, with_blocks=with_blocks)


def index_stored(message_ids: Sequence[int]) -> int:
    """Index these stored messages again, from their rows as they are (what ``loaddata``
    wrote, bypassing the service). Returns how many are indexed (a message without words
    has no row)."""
    done = 0
    with connection.cursor() as cursor:
        for batch in itertools.batched(sorted(set(message_ids)), _INSERT_CHUNK):
            forget_messages(batch)
            marks = ", ".join(["%s"] * len(batch))
            cursor.execute(f"SELECT {_STORED} FROM buffers_message WHERE id IN ({marks})", batch)
            rows = cursor.fetchall()
            done += _index_stored_rows(cursor, rows, with_blocks=connection.vendor == "postgresql")
    return done


_STORED = "id, conversation_id, role, content, metadata, block_id"
"""The columns of a stored message that its index row is made from."""


def _index_stored_rows(cursor: Any, rows: Sequence[Any], *, with_blocks: bool) -> int:
    """Index these stored rows (``_STORED``'s columns); how many have words."""
    batch = [
        (pk, conversation_id, words)
        for pk, conversation_id, role, content, metadata, _ in rows
        if (text := text_of(role, json_column(content), json_column(metadata) or {}))
        and (words := words_of(text))
    ]
    if batch and with_blocks:
        _insert(batch, {row[0]: row[5] for row in rows})
    elif batch and connection.vendor == "postgresql":
        with cursor.cursor.copy(
            "COPY buffers_messagesearch (message_id, conversation_id, document) FROM STDIN"
        ) as target:
            for row in batch:
                target.write_row(row)
    elif batch:
        _insert(batch)
    return len(batch)


def _has_block_column(cursor: Any) -> bool:
    cursor.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'buffers_messagesearch' AND column_name = 'block_id'"
    )
    return bool(cursor.fetchone()[0])
