# A block's messages, and a message's declared calls, are deleted with it by a trigger,
# not by a foreign key's cascade. PostgreSQL checked each foreign key for each row an
# import wrote, at the commit, while the command waited: for a 100,000-message import,
# 125,000 checks took 0.36 s of the store's 1.57 s (docs/decisions.md, "Import"). The
# service writes every message with its block, and every declared call with its message,
# in one transaction; tests/integrity.py checks that each has its own after any write.
# SQLite rebuilds both tables. Its triggers are made after every migrate, not here
# (buffers.triggers: each names a table a later migration may rebuild, which SQLite
# refuses while the trigger stands), and dropped before it.

import django.db.models.deletion
from django.db import migrations, models

SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS buffers_declaredcall_forget_with_message",
    "DROP TRIGGER IF EXISTS buffers_message_forget_with_block",
]
# Once per statement, over the rows it deleted: a conversation's delete removes its blocks
# in one statement (their foreign key's cascade), then their messages in one.
POSTGRESQL = [
    "CREATE FUNCTION buffers_message_forget_with_block() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN DELETE FROM buffers_message m USING gone WHERE m.block_id = gone.id; "
    "RETURN NULL; END $$",
    "CREATE TRIGGER buffers_message_forget_with_block AFTER DELETE ON buffers_block "
    "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
    "EXECUTE FUNCTION buffers_message_forget_with_block()",
    "CREATE FUNCTION buffers_declaredcall_forget_with_message() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ "
    "BEGIN DELETE FROM buffers_declaredcall d USING gone WHERE d.message_id = gone.id; "
    "RETURN NULL; END $$",
    "CREATE TRIGGER buffers_declaredcall_forget_with_message AFTER DELETE ON buffers_message "
    "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
    "EXECUTE FUNCTION buffers_declaredcall_forget_with_message()",
]
POSTGRESQL_REVERSE = [
    "DROP TRIGGER buffers_declaredcall_forget_with_message ON buffers_message",
    "DROP FUNCTION buffers_declaredcall_forget_with_message()",
    "DROP TRIGGER buffers_message_forget_with_block ON buffers_block",
    "DROP FUNCTION buffers_message_forget_with_block()",
]


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":  # SQLite's: post_migrate
        for sql in POSTGRESQL:
            schema_editor.execute(sql, params=None)


def drop_triggers(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    for sql in POSTGRESQL_REVERSE if postgresql else SQLITE_REVERSE:
        schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('buffers', '0015_verdicts_of_refused_parts'),
    ]

    operations = [
        migrations.AlterField(
            model_name='declaredcall',
            name='conversation',
            field=models.ForeignKey(db_constraint=False, db_index=False, help_text="Its message's conversation; the message's trigger is the cascade (migrations 0012, 0016).", on_delete=django.db.models.deletion.DO_NOTHING, related_name='declared_calls', to='buffers.conversation'),
        ),
        migrations.AlterField(
            model_name='declaredcall',
            name='message',
            field=models.ForeignKey(db_constraint=False, help_text="A trigger deletes the message's declared calls with it (migration 0016).", on_delete=django.db.models.deletion.DO_NOTHING, related_name='declared_calls', to='buffers.message'),
        ),
        migrations.AlterField(
            model_name='message',
            name='block',
            field=models.ForeignKey(db_constraint=False, db_index=False, help_text="A trigger deletes the block's messages with it (migration 0016: a foreign key checked each of an import's rows at the commit).", on_delete=django.db.models.deletion.DO_NOTHING, related_name='messages', to='buffers.block'),
        ),
        migrations.AlterField(
            model_name='message',
            name='conversation',
            field=models.ForeignKey(db_constraint=False, help_text="Its block's conversation, kept here for the indexes that start with it. The block's trigger deletes it (a foreign key checked each of an import's rows again: migrations 0012, 0016).", on_delete=django.db.models.deletion.DO_NOTHING, related_name='messages', to='buffers.conversation'),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
