"""The SQLite triggers the schema relies on, made again after every migrate.

SQLite alters a table by making a new one and copying the rows, which drops the table's
triggers: any later migration that alters one of these tables would leave them unmade.
So after every migrate (``post_migrate``) they are made again where missing; the rows
they keep survive a copy (same ids). Each group is made only while the schema has what
it keeps (a database migrated back before it has not).

The cascades' bodies name another table that a migration may rebuild (a block's trigger
deletes messages), and SQLite refuses to rename a rebuilt table into place while a
trigger names it missing. So they are dropped before every migrate (``pre_migrate``)
and made after it: no migration runs beside them."""

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


def keep_sqlite_triggers(using: str = "default", **_: Any) -> None:
    """``post_migrate``: make the SQLite triggers again where a migration dropped them."""
    from django.db import connections

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


def drop_sqlite_cascades(using: str = "default", **_: Any) -> None:
    """``pre_migrate``: drop the cascades, which ``keep_sqlite_triggers`` makes again."""
    from django.db import connections

    target = connections[using]
    if target.vendor != "sqlite":
        return
    with target.cursor() as cursor:
        for name in CASCADES:
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
