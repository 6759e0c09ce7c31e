# The full-text index (buffers/search/): a table per backend, made by hand, and every
# message already stored indexed.

import django.db.models.deletion
from django.db import migrations, models

import buffers.models

# A message's row goes with the message, by a trigger on both backends (an FTS5 table can
# have no foreign key; on PostgreSQL one would check each of an import's rows).
# SQLite: FTS5 tables, and titles and sources are kept by triggers from the
# conversation's own columns.
SQLITE = [
    "CREATE VIRTUAL TABLE buffers_messagesearch USING fts5("
    "body, conversation_id, tokenize = 'unicode61 remove_diacritics 0', columnsize = 0)",
    "CREATE TRIGGER buffers_messagesearch_forget AFTER DELETE ON buffers_message "
    "BEGIN DELETE FROM buffers_messagesearch WHERE rowid = old.id; END",
    "CREATE VIRTUAL TABLE buffers_conversationsearch USING fts5("
    "words, tokenize = 'unicode61 remove_diacritics 0', columnsize = 0)",
    "CREATE TRIGGER buffers_conversationsearch_add AFTER INSERT ON buffers_conversation "
    "BEGIN INSERT INTO buffers_conversationsearch (rowid, words) "
    "VALUES (new.id, new.title || ' ' || new.source); END",
    "CREATE TRIGGER buffers_conversationsearch_change AFTER UPDATE OF title, source "
    "ON buffers_conversation BEGIN UPDATE buffers_conversationsearch "
    "SET words = new.title || ' ' || new.source WHERE rowid = old.id; END",
    "CREATE TRIGGER buffers_conversationsearch_forget AFTER DELETE ON buffers_conversation "
    "BEGIN DELETE FROM buffers_conversationsearch WHERE rowid = old.id; END",
    "INSERT INTO buffers_conversationsearch (rowid, words) "
    "SELECT id, title || ' ' || source FROM buffers_conversation",
]
# IF EXISTS: a later migration undone before this one may have rebuilt a table, and SQLite
# drops a rebuilt table's triggers (buffers.triggers.keep_sqlite_triggers).
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS buffers_conversationsearch_forget",
    "DROP TRIGGER IF EXISTS buffers_conversationsearch_change",
    "DROP TRIGGER IF EXISTS buffers_conversationsearch_add",
    "DROP TABLE buffers_conversationsearch",
    "DROP TRIGGER IF EXISTS buffers_messagesearch_forget",
    "DROP TABLE buffers_messagesearch",
]

# The expression is buffers.search.PG_CONVERSATION_DOCUMENT, which queries must repeat
# verbatim for the planner to use the index.
POSTGRESQL = [
    "CREATE INDEX message_search_document ON buffers_messagesearch USING gin (document)",
    "CREATE FUNCTION buffers_messagesearch_forget() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN DELETE FROM buffers_messagesearch s USING gone WHERE s.message_id = gone.id; "
    "RETURN NULL; END $$",
    "CREATE TRIGGER buffers_messagesearch_forget AFTER DELETE ON buffers_message "
    "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
    "EXECUTE FUNCTION buffers_messagesearch_forget()",
    "CREATE INDEX conversation_search_words ON buffers_conversation USING gin ("
    "(strip(to_tsvector('simple'::regconfig, "
    "regexp_replace(title || ' ' || source, '[[:punct:]]+', ' ', 'g')))))",
]
POSTGRESQL_REVERSE = [
    "DROP INDEX conversation_search_words",
    "DROP TRIGGER IF EXISTS buffers_messagesearch_forget ON buffers_message",
    "DROP FUNCTION buffers_messagesearch_forget()",
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.create_model(apps.get_model("buffers", "MessageSearch"))
        statements = POSTGRESQL
    else:
        statements = SQLITE
    for sql in statements:
        schema_editor.execute(sql, params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in POSTGRESQL_REVERSE:
            schema_editor.execute(sql, params=None)
        schema_editor.delete_model(apps.get_model("buffers", "MessageSearch"))
    else:
        for sql in SQLITE_REVERSE:
            schema_editor.execute(sql, params=None)


def index_stored_messages(apps, schema_editor):
    from buffers import search

    search.rebuild()


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0005_traced_messages"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="MessageSearch",
                    fields=[
                        (
                            "message",
                            models.OneToOneField(
                                db_constraint=False,
                                help_text="Its row goes with the message: a trigger deletes "
                                "it (a foreign key would check each of an import's rows, a "
                                "third of the index's cost).",
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                primary_key=True,
                                related_name="+",
                                serialize=False,
                                to="buffers.message",
                            ),
                        ),
                        (
                            "document",
                            buffers.models.TsVectorField(
                                help_text="Its GIN index is made by hand, with the table."
                            ),
                        ),
                        (
                            "conversation",
                            models.ForeignKey(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="+",
                                to="buffers.conversation",
                            ),
                        ),
                    ],
                ),
            ],
        ),
        migrations.RunPython(create, drop),
        migrations.RunPython(index_stored_messages, migrations.RunPython.noop),
    ]
