"""Search inside one conversation: how many messages hold the words, the next and previous
hit from a place, a page of hits, and the snippet around a match."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from buffers.models import BUFFER_INDEX, Conversation, Message

from .words import fts_body, is_prefix, nfc, pg_query, text_of, unhyphenated, word_character

SNIPPET_CHARS = 160
"""About how long a snippet is."""


_SPACES = re.compile(r"\s+")


_LAST_ROW = 2**63 - 1
"""The highest row number a database integer holds."""


@dataclass(frozen=True)
class Hit:
    """A message that holds the words: its index in the buffer, its role, and a snippet
    of its text around the first match."""

    conversation_id: int
    index: int
    role: str
    snippet: Snippet


@dataclass(frozen=True)
class Snippet:
    """A stretch of text around a match, as pieces, each marked when it is a match."""

    pieces: tuple[tuple[str, bool], ...]

    @property
    def text(self) -> str:
        return "".join(piece for piece, _ in self.pieces)

    @property
    def html(self) -> SafeString:
        """Escaped, with each match in a ``<mark>``."""
        # Every piece of transcript text is escaped here.
        return mark_safe(
            "".join(
                f"<mark>{escape(piece)}</mark>" if marked else str(escape(piece))
                for piece, marked in self.pieces
            )
        )


@dataclass(frozen=True)
class Found:
    """Where a search inside a conversation stands: how many messages hold the words, the
    hit chosen (its index in the buffer, or None) and its place among them, from 1."""

    count: int
    index: int | None = None
    number: int | None = None


def step(
    conversation: Conversation, words: Sequence[str], current: int | None, *, backwards: bool
) -> Found:
    """The hit after index ``current`` (before it, ``backwards``), round the end of the
    buffer as a browser's find goes round the page; the first (last) when there is no
    current. One query: the database counts and takes the MIN (MAX) past the bound, so no
    index comes back to Python but the one chosen."""
    if not words:
        return Found(0)
    if backwards:
        bound = 2**62 if current is None else current
        sql = (
            "SELECT SUM(w), MAX(CASE WHEN x = 1 AND i < %s THEN i END), "
            "MAX(CASE WHEN x = 1 THEN i END), SUM(CASE WHEN i < %s THEN w ELSE 0 END) FROM ({}) h"
        )
    else:
        bound = -1 if current is None else current
        sql = (
            "SELECT SUM(w), MIN(CASE WHEN x = 1 AND i > %s THEN i END), "
            "MIN(CASE WHEN x = 1 THEN i END), SUM(CASE WHEN i <= %s THEN w ELSE 0 END) FROM ({}) h"
        )
    count, past, wrapped, passed = _aggregate(
        conversation, words, sql, bound, "previous" if backwards else "next"
    )
    if not count:
        return Found(0)
    if past is not None:  # the one after ``passed`` hits (backwards: the ``passed``-th)
        return Found(count, past, passed if backwards else passed + 1)
    return Found(count, wrapped, count if backwards else 1)


def found_at(conversation: Conversation, words: Sequence[str], index: int | None) -> Found:
    """How many messages hold the words and, when the message at ``index`` is one of
    them, its place among them. One query."""
    if not words:
        return Found(0)
    at = -1 if index is None else index
    sql = (
        "SELECT SUM(w), MAX(CASE WHEN x = 1 AND i = %s THEN i END), NULL, "
        "SUM(CASE WHEN i <= %s THEN w ELSE 0 END) FROM ({}) h"
    )
    count, hit, _, passed = _aggregate(conversation, words, sql, at, "at")
    if hit is None:
        return Found(count or 0)
    return Found(count, hit, passed)


def hit_indexes(conversation: Conversation, words: Sequence[str]) -> list[int]:
    """The index of every message of the conversation holding the words, in buffer order
    (for tests and tools: the pages ask ``step`` and ``found_at``, which return none)."""
    if not words:
        return []
    hits, params = _hits(conversation, words)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT i FROM ({hits}) h ORDER BY i", params)
        return [index for (index,) in cursor.fetchall()]


def hits_page(
    conversation: Conversation, words: Sequence[str], *, offset: int, limit: int
) -> tuple[int, list[Hit]]:
    """How many messages of the conversation hold the words, and those from the
    ``offset``-th hit on (at most ``limit``), in buffer order, with snippets. Two queries:
    the database numbers the hits and gives the page's, with the count on each row (and on
    the first hit's, so that a page past the end still has it)."""
    if not words:
        return 0, []
    # A buffer holds far fewer hits than this: past it, a page is empty on every database
    # (SQLite's integers end at 2**63 - 1, and would refuse the sum).
    limit = min(limit, _LAST_ROW - offset)
    if connection.vendor == "postgresql":
        sql, params = _pg_numbered_hits(conversation, words, offset, limit)
    else:
        hits, params = _hits(conversation, words)
        sql = (
            "SELECT n, pk, r FROM (SELECT id AS pk, COUNT(*) OVER () AS n, "
            f"ROW_NUMBER() OVER (ORDER BY i) AS r FROM ({hits}) h) numbered "
            "WHERE r = 1 OR (r > %s AND r <= %s) ORDER BY r"
        )
        params = [*params, offset, offset + limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return 0, []
    page = [pk for _, pk, number in rows if offset < number <= offset + limit]
    by_pk = {row.pk: row for row in messages_of(page)}
    return rows[0][0], [hit_of(by_pk[pk], words) for pk in page if pk in by_pk]


def _pg_numbered_hits(
    conversation: Conversation, words: Sequence[str], offset: int, limit: int
) -> tuple[str, list[Any]]:
    """PostgreSQL: ``hits_page``'s rows (the count, a hit's message id, its number) for the
    first hit and the page's, as ``_weighed_hits`` finds hits: counted per block, and the
    messages read only of the blocks that hold the first hit or one of the page's."""
    query = pg_query(words)
    end = offset + limit
    return (
        "WITH per AS MATERIALIZED (SELECT b.id, c.n, SUM(c.n) OVER (ORDER BY b.start) - c.n "
        "AS done, SUM(c.n) OVER () AS total FROM (SELECT s.block_id, COUNT(*) AS n "
        "FROM buffers_messagesearch s WHERE s.conversation_id = %s "
        "AND s.document @@ %s::tsquery GROUP BY s.block_id) c "
        "JOIN buffers_block b ON b.id = c.block_id), "
        # An array, not rows: the planner guesses a few blocks, not a tenth of all (and
        # then a plan costly enough to compile, 30 ms, for three hits).
        "near AS MATERIALIZED (SELECT array_agg(id) AS ids FROM per "
        "WHERE done = 0 OR (done < %s AND done + n > %s)) "
        "SELECT total, pk, r FROM (SELECT p.total, m.id AS pk, "
        "p.done + ROW_NUMBER() OVER (PARTITION BY p.id ORDER BY m.slot) AS r "
        "FROM buffers_message m JOIN per p ON p.id = m.block_id "
        "WHERE m.block_id = ANY((SELECT ids FROM near)::bigint[]) AND EXISTS (SELECT 1 "
        "FROM buffers_messagesearch s WHERE s.message_id = m.id AND s.document @@ %s::tsquery "
        "OFFSET 0)) numbered WHERE r = 1 OR (r > %s AND r <= %s) ORDER BY r",
        [conversation.pk, query, end, offset, query, offset, end],
    )


def _aggregate(
    conversation: Conversation, words: Sequence[str], sql: str, bound: int, towards: str
) -> tuple[Any, ...]:
    """``sql``'s one row, over (i, w, x) rows around ``bound`` (``_weighed_hits``); its two
    parameters are ``bound``. Counts come back as ints."""
    hits, params = _weighed_hits(conversation, words, bound, towards)
    with connection.cursor() as cursor:
        cursor.execute(sql.format(hits), [bound, bound, *params])
        count, chosen, ends, passed = cursor.fetchone()
    return (None if count is None else int(count), chosen, ends, int(passed or 0))


def _weighed_hits(
    conversation: Conversation, words: Sequence[str], bound: int, towards: str
) -> tuple[str, list[Any]]:
    """A query of (i, w, x) rows that stand for the conversation's hits, for counting them
    and finding those next to ``bound``: each row is either one hit (x = 1, w = 1, i its
    index in the buffer) or, on PostgreSQL, a whole block's hits (x = 0, w how many, i
    the block's start), never both.

    A hit's index is its block's start plus its slot, and only the message row knows the
    slot; reading it for 50,000 hits was most of a search's time. The index row knows
    the block (migration 0010), so PostgreSQL counts hits per block and reads the messages
    of the few blocks where the answer can be: the block holding ``bound`` and, going
    ``towards`` "next" ("previous"), the nearest block with hits after (before) it and the
    first (last) block with hits, for going round; "at", only the block holding ``bound``.
    Every other block lies wholly before or after ``bound`` (the block holding it is the
    last to start at or before it), so its count says all there is."""
    if connection.vendor != "postgresql":
        hits, params = _hits(conversation, words)
        return f"SELECT i, 1 AS w, 1 AS x FROM ({hits}) e", params
    query = pg_query(words)
    beyond = {
        "next": " UNION SELECT * FROM (SELECT id FROM per WHERE start > "
        "COALESCE((SELECT start FROM here), -1) ORDER BY start LIMIT 1) after "
        "UNION SELECT * FROM (SELECT id FROM per ORDER BY start LIMIT 1) first",
        "previous": " UNION SELECT * FROM (SELECT id FROM per WHERE start < "
        "(SELECT start FROM here) ORDER BY start DESC LIMIT 1) before "
        "UNION SELECT * FROM (SELECT id FROM per ORDER BY start DESC LIMIT 1) last",
        "at": "",
    }[towards]
    return (
        "WITH per AS MATERIALIZED (SELECT b.id, b.start, c.n FROM (SELECT s.block_id, "
        "COUNT(*) AS n FROM buffers_messagesearch s WHERE s.conversation_id = %s "
        "AND s.document @@ %s::tsquery GROUP BY s.block_id) c "
        "JOIN buffers_block b ON b.id = c.block_id), "
        "here AS MATERIALIZED (SELECT MAX(start) AS start FROM buffers_block "
        "WHERE conversation_id = %s AND start <= %s), "
        f"near AS MATERIALIZED (SELECT id FROM per WHERE start = (SELECT start FROM here){beyond}) "
        # The near blocks' messages, each checked by its index row (OFFSET 0: one lookup
        # per message, never a second pass over every match of the words).
        "SELECT p.start + m.slot AS i, 1 AS w, 1 AS x FROM near JOIN per p ON p.id = near.id "
        "JOIN buffers_message m ON m.block_id = near.id WHERE EXISTS (SELECT 1 "
        "FROM buffers_messagesearch s WHERE s.message_id = m.id AND s.document @@ %s::tsquery "
        "OFFSET 0) "
        "UNION ALL SELECT p.start, p.n, 0 FROM per p WHERE p.id NOT IN (SELECT id FROM near)",
        [conversation.pk, query, conversation.pk, bound, query],
    )


def _hits(conversation: Conversation, words: Sequence[str]) -> tuple[str, list[Any]]:
    """A query of (i: index in the buffer, id: message id) of each hit in the
    conversation, and its parameters."""
    if connection.vendor == "postgresql":
        return (  # the slot by a subquery per hit, as in ``_weighed_hits``
            "SELECT b.start + (SELECT m.slot FROM buffers_message m WHERE m.id = s.message_id) "
            "AS i, s.message_id AS id FROM buffers_messagesearch s "
            "JOIN buffers_block b ON b.id = s.block_id "
            "WHERE s.conversation_id = %s AND s.document @@ %s::tsquery",
            [conversation.pk, pg_query(words)],
        )
    return (
        "SELECT b.start + m.slot AS i, m.id AS id FROM buffers_messagesearch "
        "JOIN buffers_message m ON m.id = buffers_messagesearch.rowid "
        "JOIN buffers_block b ON b.id = m.block_id WHERE buffers_messagesearch MATCH %s",
        [f'conversation_id : "{conversation.pk}" AND body : ({fts_body(words)})'],
    )


def messages_of(message_ids: Sequence[int]) -> Iterable[Any]:
    if not message_ids:
        return []
    return (
        Message.objects.filter(pk__in=message_ids)
        .annotate(index=BUFFER_INDEX)
        .only("conversation_id", "role", "content", "metadata")
    )


def hit_of(row: Any, words: Sequence[str]) -> Hit:
    # Without soft hyphens, as its words were made: "Zwei\u00adtausend" is marked whole.
    text = nfc(unhyphenated(text_of(row.role, row.content, row.metadata)))
    return Hit(row.conversation_id, row.index, row.role, snippet(text, words))


def snippet(text: str, words: Sequence[str], width: int = SNIPPET_CHARS) -> Snippet:
    """About ``width`` characters of ``text`` around the first match of the words, each
    match marked; the start of the text when none is found (the database's tokenizer and
    this one may disagree on rare characters)."""
    pattern = _pattern(words)
    first = pattern.search(text) if pattern else None
    start = 0
    if first:
        start = max(0, first.start() - width // 3)
        if start:  # begin at a word: the one cut at ``start``, or else the next
            space = text.rfind(" ", max(0, start - 20), start)
            if space < 0:
                space = text.find(" ", start, first.start())
            start = space + 1 if space >= 0 else start
    end = min(len(text), start + width)
    if end < len(text):
        space = text.find(" ", end, end + 20)
        end = space if space >= 0 else end
    pieces: list[tuple[str, bool]] = []
    at = start
    # Matched in the whole text from ``start``, not in a slice of it: the letters around
    # a word cut at ``start`` or at ``end`` say that its piece is no match.
    for match in pattern.finditer(text, start) if pattern else ():
        if match.end() > end:
            break
        pieces.append((text[at : match.start()], False))
        pieces.append((match.group(), True))
        at = match.end()
    pieces.append((text[at:end], False))
    if start:
        pieces.insert(0, ("…", False))
    if end < len(text):
        pieces.append(("…", False))
    return Snippet(tuple((_SPACES.sub(" ", p), m) for p, m in pieces if p))


def _pattern(words: Sequence[str]) -> re.Pattern[str] | None:
    if not words:
        return None
    letter = word_character()
    alternatives = [
        _spelled(w) + (f"{letter}*" if is_prefix(w) else f"(?!{letter})")
        for w in sorted(words, key=len, reverse=True)
    ]
    return re.compile(f"(?<!{letter})(?:" + "|".join(alternatives) + ")", re.IGNORECASE)


def _spelled(word: str) -> str:
    """A pattern of ``word`` as text may spell it, case aside: a word typed with 'i' and a
    combining dot above matches a dotted capital 'İ' too (which words hold as a plain 'i',
    and a case-blind 'i' matches)."""
    return re.escape(word).replace("i\u0307", "(?:i\u0307|\u0130)")
