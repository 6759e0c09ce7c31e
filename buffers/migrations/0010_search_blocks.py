# Each row of PostgreSQL's search index holds its message's block (buffers/search/hits.py,
# ``_weighed_hits``): counting the hits of a search inside a conversation, and finding the
# next, then read the message rows of a few blocks, never of every hit. A message's block
# never changes (a heal shifts slots and block starts), so the insert writes it; should a
# later write move a message to another block, a trigger moves its row along (it fires only
# on an UPDATE that sets block_id, never on the slot shifts of a heal).
# SQLite's FTS5 table is unchanged: the field is Django's state only there.

import django.db.models.deletion
from django.db import migrations, models

# The GIN index goes while every row is rewritten, and is made again once.
POSTGRESQL = [
    "ALTER TABLE buffers_messagesearch ADD COLUMN block_id bigint",
    "DROP INDEX message_search_document",
    "UPDATE buffers_messagesearch s SET block_id = m.block_id FROM buffers_message m "
    "WHERE m.id = s.message_id",
    # A row whose message is gone (none should be: a trigger deletes them) is no hit.
    "DELETE FROM buffers_messagesearch WHERE block_id IS NULL",
    "ALTER TABLE buffers_messagesearch ALTER COLUMN block_id SET NOT NULL",
    "CREATE INDEX message_search_document ON buffers_messagesearch USING gin (document)",
    "CREATE FUNCTION buffers_messagesearch_move() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN UPDATE buffers_messagesearch SET block_id = NEW.block_id "
    "WHERE message_id = NEW.id; RETURN NULL; END $$",
    "CREATE TRIGGER buffers_messagesearch_move AFTER UPDATE OF block_id ON buffers_message "
    "FOR EACH ROW WHEN (OLD.block_id IS DISTINCT FROM NEW.block_id) "
    "EXECUTE FUNCTION buffers_messagesearch_move()",
]
POSTGRESQL_REVERSE = [
    "DROP TRIGGER IF EXISTS buffers_messagesearch_move ON buffers_message",
    "DROP FUNCTION IF EXISTS buffers_messagesearch_move()",
    "ALTER TABLE buffers_messagesearch DROP COLUMN block_id",
]


def add_blocks(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in POSTGRESQL:
            schema_editor.execute(sql, params=None)


def drop_blocks(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in POSTGRESQL_REVERSE:
            schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0009_stored_verdicts"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="messagesearch",
                    name="block",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        help_text="The message's block, which never changes (migration 0010): "
                        "a search counts hits per block without reading the messages. "
                        "PostgreSQL only.",
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="buffers.block",
                        default=None,
                    ),
                    preserve_default=False,
                ),
            ],
            database_operations=[migrations.RunPython(add_blocks, drop_blocks)],
        ),
    ]
