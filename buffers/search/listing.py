"""The list's search: which conversations hold the words (``matching_conversations``), and
the first hit of each listed one for its snippet (``first_hits``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from .hits import Hit, hit_of, messages_of
from .words import fts_body, is_prefix, pg_query

PG_CONVERSATION_DOCUMENT = "(search_words::tsvector)"
"""PostgreSQL: the expression the titles-and-sources GIN index is on (migration 0018),
which a query must repeat verbatim for the planner to use the index. Their words are made
in Python (``Conversation.search_words``), as a message's are."""


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


FEW_IN_A_BLOCK = 16
"""PostgreSQL: ``first_hits`` looks up each match of a conversation's first block with
matches up to this many; more, it reads the block's messages in order to the first match
(with k matches among a block's 512 messages, about 512 / k rows)."""


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
    collected = _matching_ids(words, cap, share)
    listed, found = collected.listed, collected.found
    if collected.common or found > cap:
        return Matching(Q(_each_conversation_holds(words)), per_conversation=True)
    # PostgreSQL's ids include the conversations whose title and source match: ORed with
    # their index's condition, the planner walked the list's whole order instead.
    titles = Q() if connection.vendor == "postgresql" else _titles_match(words)
    if not found:
        return Matching(titles if titles else Q(pk__in=[]))
    # The ids written into the statement, as the database wrote them out (digits and
    # commas, checked): as parameters, Django would prepare and the driver quote
    # thousands of them, twice, for the count and the page (20 ms), where the database
    # takes 2 ms. PostgreSQL reads them as one array constant: a list of 5,050 constants
    # took it 6 to 7 ms to parse and plan, twice.
    if connection.vendor == "postgresql":
        condition = f"buffers_conversation.id = ANY('{{{listed}}}'::bigint[])"
    else:
        column = "buffers_conversation.id"
        if not narrowed and found * collected.sampled_share >= SCAN_FROM:
            column = f"+{column}"  # not usable by an index: the list's order is walked instead
        condition = f"{column} IN ({listed})"
    return Matching(Q(RawSQL(condition, (), output_field=BooleanField())) | titles)


class _Collected(NamedTuple):
    listed: str
    """Up to ``cap`` + 1 ids of conversations with a matching message (on PostgreSQL, or
    whose title and source match), as the database lists them (``1,21,41``: one row, not
    a row an id)."""
    found: int
    """How many ids ``listed`` holds."""
    common: bool
    """Whether the sample found the words common (then no ids are read)."""
    sampled_share: float
    """SQLite: the share of the sample that holds the words (else 0)."""


_IDS = re.compile(r"[0-9]+(?:,[0-9]+)*")


def _matching_ids(words: Sequence[str], cap: int, share: float) -> _Collected:
    """What ``matching_conversations`` asks first, in one query: the sample, then the ids
    of the conversations that hold the words, unless the sample found them common."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            query = pg_query(words)
            # The sample is read once, as the query's one row; when it finds the word
            # common, the ids' subquery is filtered out before it reads anything (a
            # one-time filter on the sample's row). OFFSET 0 keeps the ids read through
            # the GIN index (never the btree walked in order, all of it for a rare word).
            cursor.execute(
                _sample_sql(_pg_conversation_holds("c.id"))
                + "SELECT sample.common, 0.0, (SELECT string_agg(ids.id::text, ',') "
                "FROM (SELECT DISTINCT m.id FROM ((SELECT s.conversation_id AS id "
                "FROM buffers_messagesearch s WHERE s.document @@ %s::tsquery OFFSET 0) "
                "UNION ALL (SELECT c.id FROM buffers_conversation c "
                f"WHERE {PG_CONVERSATION_DOCUMENT} @@ %s::tsquery OFFSET 0)) m "
                "WHERE NOT sample.common LIMIT %s) ids) FROM sample",
                [*_sample_parameters([query], share), query, query, max(cap + 1, 0)],
            )
        else:
            # FTS5 gives a word's rows as it finds them, so DISTINCT ... LIMIT stops early,
            # but it gathers every match of a prefix before the first (18 ms for "report"
            # over a million messages): the sample keeps such words from asking. Each
            # match's conversation is read from the rows as FTS5 keeps them (its
            # ``_content`` shadow table, whose columns are the table's: c0 the words, c1
            # the conversation; fts5.html, appendix B), sparing the virtual table's cost
            # per row (5,050 matches: 8-9 ms through it, 5-6 ms so).
            holds, needles = _sqlite_words_held(words)
            cursor.execute(
                _sample_sql(
                    "EXISTS (SELECT 1 FROM buffers_message m JOIN buffers_messagesearch s "
                    f"ON s.rowid = m.id WHERE m.conversation_id = c.id AND {holds})"
                )
                + "SELECT sample.common, sample.share, CASE WHEN sample.common THEN NULL "
                "ELSE (SELECT group_concat(p.id) FROM (SELECT DISTINCT c.c1 AS id FROM "
                "(SELECT rowid FROM buffers_messagesearch WHERE buffers_messagesearch "
                "MATCH %s) r JOIN buffers_messagesearch_content c ON c.id = r.rowid "
                "LIMIT %s) p) END FROM sample",
                [
                    *_sample_parameters(needles, share),
                    f"body : ({fts_body(words)})",
                    max(cap + 1, 0),
                ],
            )
        common, sampled_share, listed = cursor.fetchone()
    if common:
        return _Collected("", 0, True, 0.0)
    listed = listed or ""
    if listed and not _IDS.fullmatch(listed):
        raise ValueError(
            f"the search index gave conversation ids not of digits and commas: {listed[:50]!r}"
        )
    return _Collected(listed, listed.count(",") + 1 if listed else 0, False, float(sampled_share))


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
    return Q(pk__in=RawSQL(sql, (fts_body(words),)))


def _each_conversation_holds(words: Sequence[str]) -> RawSQL:
    """A condition on each conversation of the list (``buffers_conversation``, its table
    unaliased as the list's main query has it): one of its messages, or its title and
    source, holds every word. Checked as the ordered list reaches each conversation."""
    if connection.vendor == "postgresql":
        query = pg_query(words)
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
    return RawSQL(sql, (*needles, fts_body(words)), output_field=BooleanField())


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
    return holds, [f" {w}" if is_prefix(w) else f" {w} " for w in words]


def first_hits(
    conversation_ids: Sequence[int], words: Sequence[str], *, per_conversation: bool = False
) -> dict[int, Hit]:
    """For each of these conversations that has a message holding the words, the first such
    message in its buffer (the one its page opens with), with a snippet. Two queries,
    whatever the numbers. ``per_conversation``: the list checked each conversation on its
    own (``Matching``); on SQLite their messages are then read as that check read them.

    The first in the buffer, not the first written: a heal writes its placeholder after
    the messages it comes before. A message's place is its block's start plus its slot,
    which the message row holds, so each match's row is read (SQLite), or, on PostgreSQL,
    whose index rows know their block, the rows of the matches in each conversation's
    first block with matches only."""
    if not conversation_ids or not words:
        return {}
    ids = sorted(set(conversation_ids))
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite" and per_conversation:
            holds, needles = _sqlite_words_held(words)
            listed = ", ".join(str(int(pk)) for pk in ids)
            # The blocks in order (``block_start``), each one's messages by slot
            # (``message_slot``): the walk stops at the first message that holds the words.
            cursor.execute(
                "SELECT (SELECT m.id FROM buffers_block b JOIN buffers_message m "
                "ON m.block_id = b.id JOIN buffers_messagesearch s ON s.rowid = m.id "
                f"WHERE b.conversation_id = c.id AND {holds} ORDER BY b.start, m.slot LIMIT 1) "
                f"FROM buffers_conversation c WHERE c.id IN ({listed})",
                needles,
            )
        elif connection.vendor == "postgresql":
            cursor.execute(
                # Each block's matches, then each conversation's first block with some:
                # its start read by key, a small row a block (a join let the planner read
                # every block of the database, as it did with few of them).
                "WITH per AS MATERIALIZED (SELECT s.block_id AS b, "
                "MIN(s.conversation_id) AS c, array_agg(s.message_id) AS ids "
                "FROM buffers_messagesearch s WHERE s.conversation_id = ANY(%s) "
                "AND s.document @@ %s::tsquery GROUP BY s.block_id), "
                "firsts AS MATERIALIZED (SELECT DISTINCT ON (per.c) per.b, per.ids FROM per "
                "ORDER BY per.c, (SELECT k.start FROM buffers_block k WHERE k.id = per.b)) "
                # A few matches in the block: each one's row. Many: the block's rows by
                # slot (``message_slot``) up to the first of them, a few rows in (the ids
                # tested as a list, not through the primary key's index).
                "SELECT CASE WHEN cardinality(f.ids) <= %s THEN (SELECT m.id "
                "FROM buffers_message m WHERE m.id = ANY(f.ids) ORDER BY m.slot LIMIT 1) "
                "ELSE (SELECT m.id FROM buffers_message m WHERE m.block_id = f.b "
                "AND m.id + 0 = ANY(f.ids) ORDER BY m.slot LIMIT 1) END FROM firsts f",
                [ids, pg_query(words), FEW_IN_A_BLOCK],
            )
        else:
            within = " OR ".join(f'"{pk}"' for pk in ids)
            # SQLite gives a bare column the value of the row the one MIN() picked
            # (lang_select.html, "bare columns in an aggregate query").
            cursor.execute(
                "SELECT m.id, MIN(b.start + m.slot) FROM (SELECT rowid AS id "
                "FROM buffers_messagesearch WHERE buffers_messagesearch MATCH %s) h "
                "JOIN buffers_message m ON m.id = h.id JOIN buffers_block b ON b.id = m.block_id "
                "GROUP BY m.conversation_id",
                [f"conversation_id : ({within}) AND body : ({fts_body(words)})"],
            )
        message_ids = [row[0] for row in cursor.fetchall() if row[0] is not None]
    hits = [hit_of(row, words) for row in messages_of(message_ids)]
    return {hit.conversation_id: hit for hit in hits}
