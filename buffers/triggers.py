"""The SQLite triggers the schema relies on, made again after every migrate.

SQLite alters a table by making a new one and copying the rows, which drops the table's
triggers: any later migration that alters one of these tables would leave them unmade.
So after every migrate (``post_migrate``) they are made again where missing; the rows
they keep survive a copy (same ids). Each group is made only while the schema has what
it keeps (a database migrated back before it has not).

The cascades' bodies name another table that a migration may rebuild (a block's trigger
deletes messages), and SQLite refuses to rename a rebuilt table into place while a
trigger names it missing. So they are dropped before every migrate that applies a
migration (``pre_migrate``; one with nothing to apply, which a deploy runs beside
serving workers, leaves them standing) and made after it: no migration runs beside them.
So is the append's view, whose trigger names every table an append writes; it is made
again after every migrate, in one transaction, as the code now writes it."""

from __future__ import annotations

from typing import Any

# The search index's (migration 0006; the titles' words since 0018, ``TITLES_AS_WRITTEN``
# before it).
SEARCH = (
    "CREATE TRIGGER IF NOT EXISTS buffers_messagesearch_forget AFTER DELETE ON buffers_message "
    "BEGIN DELETE FROM buffers_messagesearch WHERE rowid = old.id; END",
    "CREATE TRIGGER IF NOT EXISTS buffers_conversationsearch_add AFTER INSERT "
    "ON buffers_conversation BEGIN INSERT INTO buffers_conversationsearch (rowid, words) "
    "VALUES (new.id, new.search_words); END",
    "CREATE TRIGGER IF NOT EXISTS buffers_conversationsearch_change AFTER UPDATE OF "
    "search_words ON buffers_conversation BEGIN UPDATE buffers_conversationsearch "
    "SET words = new.search_words WHERE rowid = old.id; END",
    "CREATE TRIGGER IF NOT EXISTS buffers_conversationsearch_forget AFTER DELETE "
    "ON buffers_conversation BEGIN DELETE FROM buffers_conversationsearch "
    "WHERE rowid = old.id; END",
)
TITLES_AS_WRITTEN = (
    SEARCH[0],
    "CREATE TRIGGER IF NOT EXISTS buffers_conversationsearch_add AFTER INSERT "
    "ON buffers_conversation BEGIN INSERT INTO buffers_conversationsearch (rowid, words) "
    "VALUES (new.id, new.title || ' ' || new.source); END",
    "CREATE TRIGGER IF NOT EXISTS buffers_conversationsearch_change AFTER UPDATE OF title, "
    "source ON buffers_conversation BEGIN UPDATE buffers_conversationsearch "
    "SET words = new.title || ' ' || new.source WHERE rowid = old.id; END",
    SEARCH[3],
)

# The deletes that no foreign key cascades (migration 0016): a block's messages, and a
# message's declared calls.
CASCADES = {
    "buffers_message_forget_with_block": "AFTER DELETE ON buffers_block "
    "BEGIN DELETE FROM buffers_message WHERE block_id = old.id; END",
    "buffers_declaredcall_forget_with_message": "AFTER DELETE ON buffers_message "
    "BEGIN DELETE FROM buffers_declaredcall WHERE message_id = old.id; END",
}


# The append's one statement (``buffers.services.appends``): a row inserted into this view
# holds the whole write, and the trigger does it, as PostgreSQL's data-modifying CTEs do.
# First the compare-and-set: unless the conversation is as the append read it (the same
# version, owner and scope), the statement fails with ``STALE`` and writes nothing. Then
# the counters, the journal, the calls the plan answered, and the rows at the end of the
# last block (``block_id``; ``rows``, ``words`` and ``declared`` are JSON arrays, each item
# an array that starts with its slot, read by ``json_extract``: the ``->>`` operator came
# in SQLite 3.38, and Django runs on 3.37), their search index and the calls they declare,
# joined to the new rows by slot. Those joins are CROSS JOINs, which SQLite never reorders:
# each item of the batch looks its row up by (block, slot). Left to itself, SQLite read
# every row of the block and scanned the batch's JSON again for each, an append's work
# growing with the rows already in the block. Change it with ``_apply`` and ``_unchanged``.
STALE = "buffers_append: the conversation changed since it was read"
APPEND_VIEW = (
    "CREATE VIEW IF NOT EXISTS buffers_append (added, unanswered, healed, updated_at, "
    "rejections, problem_counts, sendable, conversation_id, version, owner_id, scope, scope_id, "
    "at, actor_id, actor_name, via, action, reason, new_version, message_count, journal_rows, "
    "answered, block_id, rows, words, declared) AS SELECT " + ", ".join(["NULL"] * 26) + " WHERE 0"
)
APPEND_TRIGGER = f"""CREATE TRIGGER IF NOT EXISTS buffers_append_write
INSTEAD OF INSERT ON buffers_append BEGIN
SELECT RAISE(ABORT, '{STALE}') WHERE NOT EXISTS (
    SELECT 1 FROM buffers_conversation WHERE id = new.conversation_id
    AND version = new.version AND owner_id IS new.owner_id AND scope = new.scope
    AND scope_id = new.scope_id);
UPDATE buffers_conversation SET version = version + 1, message_count = message_count + new.added,
    unanswered_count = unanswered_count + new.unanswered, healed_count = healed_count + new.healed,
    updated_at = new.updated_at, rejections = new.rejections,
    problem_counts = new.problem_counts, sendable = new.sendable
WHERE id = new.conversation_id;
INSERT INTO buffers_bufferchange (conversation_id, at, actor_id, actor_name, via, action, reason,
    version, message_count, rows)
VALUES (new.conversation_id, new.at, new.actor_id, new.actor_name, new.via, new.action,
    new.reason, new.new_version, new.message_count, new.journal_rows);
UPDATE buffers_declaredcall SET answered = 1
WHERE conversation_id = new.conversation_id
    AND call_id IN (SELECT value FROM json_each(new.answered));
UPDATE buffers_block SET size = size + json_array_length(new.rows) WHERE id = new.block_id;
INSERT INTO buffers_message (conversation_id, block_id, slot, role, content, metadata,
    answers_call_id, is_placeholder)
SELECT new.conversation_id, new.block_id, json_extract(r.value, '$[0]'),
    json_extract(r.value, '$[1]'), json_extract(r.value, '$[2]'), json_extract(r.value, '$[3]'),
    json_extract(r.value, '$[4]'), json_extract(r.value, '$[5]')
FROM json_each(new.rows) AS r ORDER BY r.key;
INSERT INTO buffers_messagesearch (rowid, conversation_id, body)
SELECT m.id, new.conversation_id, json_extract(w.value, '$[1]')
FROM json_each(new.words) AS w CROSS JOIN buffers_message AS m
    ON m.block_id = new.block_id AND m.slot = json_extract(w.value, '$[0]');
INSERT INTO buffers_declaredcall (conversation_id, message_id, call_id, ordinal, answered)
SELECT new.conversation_id, m.id, json_extract(c.value, '$[1]'),
    json_extract(c.value, '$[2]'), json_extract(c.value, '$[3]')
FROM json_each(new.declared) AS c CROSS JOIN buffers_message AS m
    ON m.block_id = new.block_id AND m.slot = json_extract(c.value, '$[0]');
END"""


def keep_sqlite_triggers(using: str = "default", **_: Any) -> None:
    """``post_migrate``: make the SQLite triggers again where a migration dropped them."""
    from django.db import connections, transaction

    target = connections[using]
    if target.vendor != "sqlite":
        return
    with target.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = {name for (name,) in cursor.fetchall()}
        if "buffers_conversationsearch" in tables:  # else migrated back to before the index
            cursor.execute(
                "SELECT count(*) FROM pragma_table_info('buffers_conversation') "
                "WHERE name = 'search_words'"
            )
            for sql in SEARCH if cursor.fetchone()[0] else TITLES_AS_WRITTEN:
                cursor.execute(sql)
        if not {"buffers_block", "buffers_message", "buffers_declaredcall"} <= tables:
            return  # migrated back to before the app
        cursor.execute(
            "SELECT count(*) FROM pragma_foreign_key_list('buffers_message') "
            "WHERE \"from\" = 'block_id'"
        )
        if not cursor.fetchone()[0]:  # else migrated back to when foreign keys cascaded
            for name, body in CASCADES.items():
                cursor.execute(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")
            # Made again as the code writes it, in one transaction: an append beside it
            # finds the view of before or this one, never none.
            with transaction.atomic(using=using):
                cursor.execute("DROP VIEW IF EXISTS buffers_append")  # and its trigger
                cursor.execute(APPEND_VIEW)
                cursor.execute(APPEND_TRIGGER)


def drop_sqlite_cascades(using: str = "default", plan: Any = None, **_: Any) -> None:
    """``pre_migrate``: drop the cascades and the append's view, which
    ``keep_sqlite_triggers`` makes again. Not when the migrate has nothing to apply
    (``plan`` empty): ``manage.py migrate`` sends the signal all the same, and a deploy
    runs it beside workers that append and delete meanwhile."""
    from django.db import connections

    if plan is not None and not plan:
        return
    target = connections[using]
    if target.vendor != "sqlite":
        return
    with target.cursor() as cursor:
        for name in CASCADES:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
        cursor.execute("DROP VIEW IF EXISTS buffers_append")  # and its trigger
