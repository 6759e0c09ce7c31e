"""Full-text search of message text, titles and sources (docs/decisions.md, "Search").

What is searchable of a message is its **text** (``text_of``): string content, text
parts and the text inside structured parts (a tool result's blocks, say), and for an
assistant turn the name and arguments of each tool call. Ids, types, images and
signatures are not text. A message's first ``INDEXED_CHARS`` characters are indexed.

The index, one row per message that has text, keyed by the message's id:

- **PostgreSQL**: ``buffers_messagesearch`` (``MessageSearch``), a stripped ``tsvector``
  with a GIN index, the conversation's id (btree) so a search inside one conversation
  reads only its rows, and the message's block (migration 0010), so that such a search
  counts its hits per block and reads message rows of a few blocks only
  (``_weighed_hits``). Titles and sources: an expression GIN index on the conversation.
- **SQLite**: an FTS5 table of the same name (rowid = message id, with the conversation's
  id as an indexed column), and ``buffers_conversationsearch`` for titles and sources,
  kept by triggers.

Text becomes words here, the same way for both backends: runs of letters and digits,
lowercased, each once (``words_of``); the index holds those words, not the text, so that
no database tokenizer (PostgreSQL's reads ``/usr/bin/python`` as one path, and costs
more than the rest of an import) decides what matches. The service writes the index in
the same transaction as every write to a buffer (``index_messages``,
``reindex_messages``); a message's row goes with it when it is deleted (a trigger).
Titles and sources are indexed by the database itself, from the conversation's columns.

A query is words: each must be in the message (or in the title and source); a word of
two characters or more matches the words it begins ("weath" finds "weather"). Anything
that is not a letter or a digit only separates words, so no query can be malformed.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from . import healing
from .healing import jsontext
from .models import BUFFER_INDEX, Conversation, Message
from .selectors import json_column

MAX_QUERY = 200
"""The most characters of a query read; the rest is ignored."""
MAX_TERMS = 8
"""The most words of a query used."""
INDEXED_CHARS = 200_000
"""A message's text is indexed up to this many characters (a tsvector holds 1 MB)."""
SNIPPET_CHARS = 160
"""About how long a snippet is."""
_INSERT_CHUNK = 5_000
_COPY_FROM = 100

_WORD = re.compile(r"[^\W_]+")
MAX_WORD = 200
"""Longer words (base64, minified code) are not indexed: PostgreSQL takes 2,047 bytes."""
# ASCII text, the common case, in one pass: letters lowercased, all else a space.
_ASCII_WORDS = bytes(
    byte + 32 if 65 <= byte <= 90 else byte if chr(byte).isalnum() and byte < 128 else 32
    for byte in range(256)
)
_PG_MAX_DOCUMENT = 900_000
_SPACES = re.compile(r"\s+")
# Keys of structured content whose values are not text a reader would look for.
_NOT_TEXT = frozenset(
    {
        "type",
        "id",
        "tool_use_id",
        "tool_call_id",
        "call_id",
        "data",
        "image_url",
        "source",
        "signature",
        "cache_control",
        "mime_type",
        "media_type",
    }
)

PG_CONVERSATION_DOCUMENT = (
    "strip(to_tsvector('simple'::regconfig, "
    "regexp_replace(title || ' ' || source, '[[:punct:]]+', ' ', 'g')))"
)
"""PostgreSQL: the expression the titles-and-sources GIN index is on (migration 0006),
which a query must repeat verbatim for the planner to use the index. Punctuation becomes
a space first, as ``words_of`` reads it, so that ``export.jsonl`` is two words."""


# What is searchable.


def text_of(role: str, content: Any, metadata: Mapping[str, Any]) -> str:
    """The searchable text of a message (see the module docstring)."""
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif content is not None:
        _collect(content, parts)
    if role == "assistant":
        calls = metadata.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict):
                    _call_text(call, parts)
    text = parts[0] if len(parts) == 1 else "\n".join(parts)
    return text[:INDEXED_CHARS]


def message_text(message: healing.Message) -> str:
    return text_of(message.role, message.content, message.metadata)


def words_of(text: str) -> str:
    """The words of a text as the index holds them: each once, space-separated, in no
    particular order; "" when there are none."""
    if text.isascii():
        found = set(text.encode().translate(_ASCII_WORDS).split())
        if len(text) > MAX_WORD:
            found = {w for w in found if len(w) <= MAX_WORD}
        return b" ".join(found).decode()
    words = set(_WORD.findall(text.lower()))
    if len(text) > MAX_WORD:
        words = {w for w in words if len(w) <= MAX_WORD}
    joined = " ".join(words)
    if len(joined) > _PG_MAX_DOCUMENT // 4 and len(joined.encode()) > _PG_MAX_DOCUMENT:
        joined = joined.encode()[:_PG_MAX_DOCUMENT].decode(errors="ignore").rpartition(" ")[0]
    return joined


def _collect(value: Any, parts: list[str]) -> None:
    """The text inside structured content: strings, except under keys that hold none."""
    if isinstance(value, str):
        if value and not value.startswith("data:"):
            parts.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect(item, parts)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in _NOT_TEXT:
                _collect(item, parts)


def _call_text(call: dict[str, Any], parts: list[str]) -> None:
    """A tool call's name and arguments, in the spellings ``presenters`` reads."""
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    name = call.get("name") or function.get("name")
    if isinstance(name, str):
        parts.append(name)
    arguments = next(
        (call[key] for key in ("args", "arguments", "input") if key in call),
        function.get("arguments"),
    )
    if isinstance(arguments, str):
        parts.append(arguments)
    elif arguments is not None:
        parts.append(jsontext.dumps(arguments))


# Queries.


def clean(query: str | None) -> str:
    """A query as it is searched for: at most ``MAX_QUERY`` characters, without control
    characters (U+0000 among them, which PostgreSQL cannot take), trimmed."""
    if not query:
        return ""
    query = query[:MAX_QUERY]
    if not query.isprintable():
        query = "".join(c if c.isprintable() else " " for c in query)
    return query.strip()


def terms(query: str) -> list[str]:
    """The words of a query, as ``words_of`` reads text, in their order, at most
    ``MAX_TERMS``; a word too long to be indexed is kept (it then finds nothing)."""
    return list(dict.fromkeys(_WORD.findall(clean(query).lower())))[:MAX_TERMS]


def _prefix(term: str) -> bool:
    return len(term) >= 2


def _pg_query(words: Sequence[str]) -> str:
    """A tsquery literal (read as is: no parser, no dictionary): words are letters and
    digits only, so nothing in them is tsquery syntax."""
    return " & ".join(f"'{w}':*" if _prefix(w) else f"'{w}'" for w in words)


def _fts_body(words: Sequence[str]) -> str:
    """An FTS5 query of the words, each (of two characters or more) as a prefix."""
    # Quoted: a word such as "and" or "near" is a word, not an operator.
    return " AND ".join(f'"{w}"*' if _prefix(w) else f'"{w}"' for w in words)


def _vendor() -> str:
    return connection.vendor


_LAST_ROW = 2**63 - 1
"""The highest row number a database integer holds."""
MATCH_CAP = 10_000
"""The list's search collects up to this many matching conversations' ids; a query that
matches more is common, and is checked conversation by conversation instead."""
DENSE_SAMPLE = 200
SAMPLE_LONGEST = 1_000
SAMPLE_ROWS = 5_000
SAMPLE_FEWEST = 10
COMMON_SHARE = 0.1
"""A query that matches at least this share of the sample is common, and no ids are
collected (see ``matching_conversations``). The sample: of the ``DENSE_SAMPLE`` most
recently updated conversations, those of ``SAMPLE_LONGEST`` messages or fewer, in that
order, while they hold ``SAMPLE_ROWS`` messages in all (a conversation without the words
is read to its end); a sample of fewer than ``SAMPLE_FEWEST`` conversations says nothing
common (one hit among five long ones is no share to walk a long list by)."""
SCAN_FROM = 100
"""SQLite: the collected ids are found by walking the list in its order (its index) rather
than one by one by key, when their number times the share of the sample that holds the
words reaches this (and no filter but visibility narrows the list, whose matches would then
be rarer along the walk than the sample says: with no unanswered conversation, the walk
read the whole list; and a sample of fewer than ``SAMPLE_FEWEST`` gives no share). The
walk reads about 50 / share conversations for a first page and 300 / share for its count,
a quarter the cost of a lookup each; the lookups read every id, then sort them (5,050
ids: 6 ms, the walk 1 ms; 1,010 ids at 1%: 0.6 against 1.4 ms)."""


@dataclass(frozen=True)
class Matching:
    """The list's conversations that hold the words: ``condition`` filters the list, and
    ``per_conversation`` says it checks each conversation as the list reaches it (the words
    are common; then ``first_hits`` finds their hits the same way: pass it on)."""

    condition: Q
    per_conversation: bool = False


def matching_conversations(
    words: Sequence[str],
    *,
    narrowed: bool = False,
    cap: int | None = None,
    common_share: float | None = None,
) -> Matching:
    """Conversations whose title and source, or one of whose messages, hold every word.

    One query first, whatever the numbers. It samples the most recently updated
    conversations, one by one (``COMMON_SHARE``): when one in ten holds the words they
    are common, and it goes no further. Else it reads the ids of up to ``MATCH_CAP``
    conversations with a matching message, and under the cap the list filters on those
    ids. A common word (by the sample, or past the cap) is not collected: that would read
    every matching message (a million for "report"), twice, for the count and for the
    page; instead each conversation is checked as the ordered list reaches it
    (``EXISTS``), so the page and the bounded count stop after a few hundred. The sample
    keeps that walk for words it finds often (a few conversations read per listed one),
    and the cap lets a word held by a few percent of a long list be collected rather
    than walked (at 5%, the walk read 6,000 conversations for a page and its count).

    ``narrowed``: the list is filtered by more than its visibility (unanswered, healed,
    rejected...), so the sample's share says nothing of how soon a walk of it meets the
    words (``SCAN_FROM``). ``cap`` and ``common_share`` stand in for ``MATCH_CAP`` and
    ``COMMON_SHARE`` (tests take each path with a few rows).
    """
    if not words:
        return Matching(Q(pk__in=[]))
    cap = MATCH_CAP if cap is None else cap
    share = COMMON_SHARE if common_share is None else common_share
    ids, common, sampled_share = _matching_ids(words, cap, share)
    if common or len(ids) > cap:
        return Matching(Q(_each_conversation_holds(words)), per_conversation=True)
    # PostgreSQL's ids include the conversations whose title and source match: ORed with
    # their index's condition, the planner walked the list's whole order instead.
    titles = Q() if _vendor() == "postgresql" else _titles_match(words)
    if not ids:
        return Matching(titles if titles else Q(pk__in=[]))
    # The ids written into the statement (integers from the database): as parameters,
    # Django would prepare and the driver quote thousands of them, twice, for the count and
    # the page (20 ms), where the database takes 2 ms.
    listed = ", ".join(str(int(pk)) for pk in ids)
    column = "buffers_conversation.id"
    if _vendor() == "sqlite" and not narrowed and len(ids) * sampled_share >= SCAN_FROM:
        column = f"+{column}"  # not usable by an index: the list's order is walked instead
    among = RawSQL(f"{column} IN ({listed})", (), output_field=BooleanField())
    return Matching(Q(among) | titles)


def _matching_ids(words: Sequence[str], cap: int, share: float) -> tuple[list[int], bool, float]:
    """Up to ``cap`` + 1 ids of conversations with a matching message (on PostgreSQL, or
    whose title and source match), whether the sample found the word common (then no ids
    are read), and, on SQLite, the share of the sample that holds the words (else 0)."""
    with connection.cursor() as cursor:
        if _vendor() == "postgresql":
            query = _pg_query(words)
            # The sample is an InitPlan, run once; when it finds the word common the
            # one-time filter skips the index scan. OFFSET 0 keeps the ids read through
            # the GIN index (never the btree walked in order, all of it for a rare word).
            cursor.execute(
                _sample_sql(_pg_conversation_holds("c.id"))
                + "SELECT NULL FROM sample WHERE common UNION ALL ("
                "SELECT DISTINCT m.id FROM ((SELECT s.conversation_id AS id "
                "FROM buffers_messagesearch s WHERE s.document @@ %s::tsquery OFFSET 0) "
                "UNION ALL (SELECT c.id FROM buffers_conversation c "
                f"WHERE {PG_CONVERSATION_DOCUMENT} @@ %s::tsquery OFFSET 0)) m "
                "WHERE NOT (SELECT common FROM sample) LIMIT %s)",
                [*_sample_parameters([query], share), query, query, max(cap + 1, 0)],
            )
        else:
            # FTS5 gives a word's rows as it finds them, so DISTINCT ... LIMIT stops early,
            # but it gathers every match of a prefix before the first (18 ms for "report"
            # over a million messages): the sample keeps such words from asking.
            holds, needles = _sqlite_words_held(words)
            cursor.execute(
                _sample_sql(
                    "EXISTS (SELECT 1 FROM buffers_message m JOIN buffers_messagesearch s "
                    f"ON s.rowid = m.id WHERE m.conversation_id = c.id AND {holds})"
                )
                + "SELECT NULL, 0.0 FROM sample WHERE common UNION ALL SELECT "
                "p.conversation_id, sample.share FROM sample CROSS JOIN (SELECT DISTINCT "
                "conversation_id "
                "FROM buffers_messagesearch WHERE buffers_messagesearch MATCH %s LIMIT %s) p "
                "WHERE NOT sample.common",
                [
                    *_sample_parameters(needles, share),
                    f"body : ({_fts_body(words)})",
                    max(cap + 1, 0),
                ],
            )
        rows = cursor.fetchall()
    if any(row[0] is None for row in rows):
        return [], True, 0.0
    share = float(rows[0][1]) if rows and len(rows[0]) > 1 else 0.0
    return [int(row[0]) for row in rows], False, share


def _sample_sql(holds: str) -> str:
    """The ``sample`` of ``matching_conversations`` (``COMMON_SHARE``): whether the words
    are common among the most recent conversations, ``holds`` saying that the sampled
    conversation ``c`` holds them. Its parameters: ``_sample_parameters``."""
    return (
        "WITH recent AS MATERIALIZED (SELECT r.id, sum(r.message_count) OVER "
        "(ORDER BY r.updated_at DESC, r.id DESC) AS reach FROM (SELECT c.id, "
        "c.message_count, c.updated_at FROM buffers_conversation c "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT %s) r WHERE r.message_count <= %s), "
        "sample AS MATERIALIZED (SELECT s.sampled >= %s AND s.hits >= %s * s.sampled "
        "AS common, CASE WHEN s.sampled >= %s THEN s.hits * 1.0 / s.sampled ELSE 0 END "
        "AS share FROM (SELECT "
        f"count(*) AS sampled, coalesce(sum(CASE WHEN {holds} THEN 1 ELSE 0 END), 0) AS hits "
        "FROM recent c WHERE c.reach <= %s) s) "
    )


def _sample_parameters(holds: Sequence[str], share: float) -> list[int | float | str]:
    return [DENSE_SAMPLE, SAMPLE_LONGEST, SAMPLE_FEWEST, share, SAMPLE_FEWEST, *holds, SAMPLE_ROWS]


def _titles_match(words: Sequence[str]) -> Q:
    """SQLite: the list's conversations whose title and source hold every word."""
    sql = "SELECT rowid FROM buffers_conversationsearch WHERE buffers_conversationsearch MATCH %s"
    return Q(pk__in=RawSQL(sql, (_fts_body(words),)))


def _each_conversation_holds(words: Sequence[str]) -> RawSQL:
    """A condition on each conversation of the list (``buffers_conversation``, its table
    unaliased as the list's main query has it): one of its messages, or its title and
    source, holds every word. Checked as the ordered list reaches each conversation."""
    if _vendor() == "postgresql":
        query = _pg_query(words)
        sql = (
            f"({_pg_conversation_holds('buffers_conversation.id')} OR "
            "buffers_conversation.id IN (SELECT c.id FROM buffers_conversation c "
            f"WHERE {PG_CONVERSATION_DOCUMENT} @@ %s::tsquery))"
        )
        return RawSQL(sql, (query, query), output_field=BooleanField())
    holds, needles = _sqlite_words_held(words)
    sql = (
        "(EXISTS (SELECT 1 FROM buffers_message m JOIN buffers_messagesearch s "
        "ON s.rowid = m.id WHERE m.conversation_id = buffers_conversation.id "
        f"AND {holds}) OR buffers_conversation.id IN (SELECT rowid FROM "
        "buffers_conversationsearch WHERE buffers_conversationsearch MATCH %s))"
    )
    return RawSQL(sql, (*needles, _fts_body(words)), output_field=BooleanField())


def _pg_conversation_holds(conversation_id: str) -> str:
    """PostgreSQL: a condition that a message of the conversation whose id is the column
    ``conversation_id`` holds the words of a ``%s`` tsquery, read row by row until one
    does. The fence (OFFSET 0) keeps the GIN index out of it: asked per conversation, a
    common word's whole entry there (5,000 rows, 0.26 ms) was read for each of a list's
    conversations, a plan the planner chose where statistics were missing (350 ms)."""
    return (
        "EXISTS (SELECT 1 FROM (SELECT s.document FROM buffers_messagesearch s "
        f"WHERE s.conversation_id = {conversation_id} OFFSET 0) s "
        "WHERE s.document @@ %s::tsquery)"
    )


def _sqlite_words_held(words: Sequence[str]) -> tuple[str, list[str]]:
    """SQLite: a condition that the index row ``s`` holds every word, and its parameters.
    An FTS5 query of a prefix gathers every match of it first (18 ms for "report" over a
    million messages), too much to ask of each conversation: the words of its messages
    are read by rowid instead, each indexed word after a space (``words_of``)."""
    holds = " AND ".join(["instr(' ' || s.body || ' ', %s)"] * len(words))
    return holds, [f" {w}" if _prefix(w) else f" {w} " for w in words]


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


def first_hits(
    conversation_ids: Sequence[int], words: Sequence[str], *, per_conversation: bool = False
) -> dict[int, Hit]:
    """For each of these conversations that has a message holding the words, one such
    message (the first written) with a snippet. Two queries, whatever the numbers.
    ``per_conversation``: the list checked each conversation on its own (``Matching``); on SQLite
    their messages are then read as that check read them."""
    if not conversation_ids or not words:
        return {}
    ids = sorted(set(conversation_ids))
    with connection.cursor() as cursor:
        if _vendor() == "sqlite" and per_conversation:
            holds, needles = _sqlite_words_held(words)
            listed = ", ".join(str(int(pk)) for pk in ids)
            cursor.execute(
                "SELECT (SELECT m.id FROM buffers_message m JOIN buffers_messagesearch s "
                f"ON s.rowid = m.id WHERE m.conversation_id = c.id AND {holds} "
                f"ORDER BY m.id LIMIT 1) FROM buffers_conversation c WHERE c.id IN ({listed})",
                needles,
            )
        elif _vendor() == "postgresql":
            cursor.execute(
                "SELECT MIN(message_id) FROM buffers_messagesearch "
                "WHERE conversation_id = ANY(%s) AND document @@ %s::tsquery "
                "GROUP BY conversation_id",
                [ids, _pg_query(words)],
            )
        else:
            within = " OR ".join(f'"{pk}"' for pk in ids)
            cursor.execute(
                "SELECT MIN(rowid) FROM buffers_messagesearch WHERE buffers_messagesearch "
                "MATCH %s GROUP BY conversation_id",
                [f"conversation_id : ({within}) AND body : ({_fts_body(words)})"],
            )
        message_ids = [pk for (pk,) in cursor.fetchall() if pk is not None]
    hits = [_hit(row, words) for row in _messages(message_ids)]
    return {hit.conversation_id: hit for hit in hits}


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
    if _vendor() == "postgresql":
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
    by_pk = {row.pk: row for row in _messages(page)}
    return rows[0][0], [_hit(by_pk[pk], words) for pk in page if pk in by_pk]


def _pg_numbered_hits(
    conversation: Conversation, words: Sequence[str], offset: int, limit: int
) -> tuple[str, list[Any]]:
    """PostgreSQL: ``hits_page``'s rows (the count, a hit's message id, its number) for the
    first hit and the page's, as ``_weighed_hits`` finds hits: counted per block, and the
    messages read only of the blocks that hold the first hit or one of the page's."""
    query = _pg_query(words)
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
    if _vendor() != "postgresql":
        hits, params = _hits(conversation, words)
        return f"SELECT i, 1 AS w, 1 AS x FROM ({hits}) e", params
    query = _pg_query(words)
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
    if _vendor() == "postgresql":
        return (  # the slot by a subquery per hit, as in ``_weighed_hits``
            "SELECT b.start + (SELECT m.slot FROM buffers_message m WHERE m.id = s.message_id) "
            "AS i, s.message_id AS id FROM buffers_messagesearch s "
            "JOIN buffers_block b ON b.id = s.block_id "
            "WHERE s.conversation_id = %s AND s.document @@ %s::tsquery",
            [conversation.pk, _pg_query(words)],
        )
    return (
        "SELECT b.start + m.slot AS i, m.id AS id FROM buffers_messagesearch "
        "JOIN buffers_message m ON m.id = buffers_messagesearch.rowid "
        "JOIN buffers_block b ON b.id = m.block_id WHERE buffers_messagesearch MATCH %s",
        [f'conversation_id : "{conversation.pk}" AND body : ({_fts_body(words)})'],
    )


def _messages(message_ids: Sequence[int]) -> Iterable[Any]:
    if not message_ids:
        return []
    return (
        Message.objects.filter(pk__in=message_ids)
        .annotate(index=BUFFER_INDEX)
        .only("conversation_id", "role", "content", "metadata")
    )


def _hit(row: Any, words: Sequence[str]) -> Hit:
    text = text_of(row.role, row.content, row.metadata)
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
    window = text[start:end]
    pieces: list[tuple[str, bool]] = []
    at = 0
    for match in pattern.finditer(window) if pattern else ():
        pieces.append((window[at : match.start()], False))
        pieces.append((match.group(), True))
        at = match.end()
    pieces.append((window[at:], False))
    if start:
        pieces.insert(0, ("…", False))
    if end < len(text):
        pieces.append(("…", False))
    return Snippet(tuple((_SPACES.sub(" ", p), m) for p, m in pieces if p))


def _pattern(words: Sequence[str]) -> re.Pattern[str] | None:
    if not words:
        return None
    alternatives = [
        re.escape(w) + (r"[^\W_]*" if _prefix(w) else r"(?![^\W_])")
        for w in sorted(words, key=len, reverse=True)
    ]
    return re.compile(r"(?<![^\W_])(?:" + "|".join(alternatives) + ")", re.IGNORECASE)


# Writing the index: the service calls these in the transaction of each write.


def index_messages(
    rows: Iterable[tuple[int, int, str]], *, blocks: Mapping[int, int] | None = None
) -> None:
    """Add (message id, conversation id, text) rows to the index; a text without words
    gets no row. An import, which knows each message's block (``blocks``, by message id),
    gives all its rows at once: PostgreSQL takes them in one COPY as they are made, filing
    each while the next one's words are found."""
    indexed = ((pk, c, words) for pk, c, text in rows if text and (words := words_of(text)))
    if blocks is not None and _vendor() == "postgresql":
        _copy(indexed, blocks)
        return
    for batch in itertools.batched(indexed, _INSERT_CHUNK):
        _insert(list(batch), blocks)


def _insert(rows: list[tuple[int, int, str]], blocks: Mapping[int, int] | None = None) -> None:
    """Index rows (message id, conversation id, words). On PostgreSQL each row also holds
    its message's block (``_weighed_hits``): from ``blocks`` (message id to block id), else
    read from the messages, which are written before their index."""
    with connection.cursor() as cursor:
        if _vendor() == "sqlite":
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
        if _vendor() == "postgresql":
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
    migration can run it whatever the models say later). Returns how many are indexed."""
    done = 0
    last = 0
    with connection.cursor() as cursor:
        # Migration 0006 runs this before 0010 gives PostgreSQL's rows their block.
        with_blocks = _vendor() == "postgresql" and _has_block_column(cursor)
        cursor.execute("DELETE FROM buffers_messagesearch")
        while True:
            cursor.execute(
                "SELECT id, conversation_id, role, content, metadata, block_id "
                "FROM buffers_message WHERE id > %s ORDER BY id LIMIT %s",
                [last, _INSERT_CHUNK],
            )
            rows = cursor.fetchall()
            if not rows:
                return done
            last = rows[-1][0]
            batch = [
                (pk, conversation_id, words)
                for pk, conversation_id, role, content, metadata, _ in rows
                if (text := text_of(role, json_column(content), json_column(metadata) or {}))
                and (words := words_of(text))
            ]
            if batch and with_blocks:
                _insert(batch, {row[0]: row[5] for row in rows})
            elif batch and _vendor() == "postgresql":
                with cursor.cursor.copy(
                    "COPY buffers_messagesearch (message_id, conversation_id, document) FROM STDIN"
                ) as target:
                    for row in batch:
                        target.write_row(row)
            elif batch:
                _insert(batch)
            done += len(rows)


def _has_block_column(cursor: Any) -> bool:
    cursor.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'buffers_messagesearch' AND column_name = 'block_id'"
    )
    return bool(cursor.fetchone()[0])
