# Writes keep one index fewer per message row: three foreign keys lose the index Django
# gives each, which a unique constraint starting with the same column already is
# (message_slot, block_start, declared_call_once). On SQLite, message content and
# metadata lose their JSON_VALID check: the app writes that text only from values it has
# read and checked, and the check parsed it all again (buffers.models.WrittenJSONField).
# An import of a 100,000-message Claude Code session writes 140 MB of it: the checks and
# the block's index took 0.28 s of the insert's 0.72 s (docs/decisions.md, "Import").
# The indexes are dropped by name, without the table rebuild SQLite makes for an altered
# foreign key; the checks go with a rebuild (SQLite; a no-op on PostgreSQL), after which
# buffers.triggers.keep_sqlite_triggers makes the search index's triggers again.

import django.db.models.deletion
from django.db import migrations, models

import buffers.models

_REPEATED_INDEXES = [
    ("buffers_block_conversation_id_e85f20ac", "buffers_block", "conversation_id"),
    ("buffers_declaredcall_conversation_id_9c41667f", "buffers_declaredcall", "conversation_id"),
    ("buffers_message_block_id_aff07fb0", "buffers_message", "block_id"),
]


class Migration(migrations.Migration):

    dependencies = [
        ('buffers', '0012_conversation_keys_without_constraints'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='block',
                    name='conversation',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.DB_CASCADE, related_name='blocks', to='buffers.conversation'),
                ),
                migrations.AlterField(
                    model_name='declaredcall',
                    name='conversation',
                    field=models.ForeignKey(db_constraint=False, db_index=False, help_text="Its message's conversation; the message's foreign key is the constraint and the cascade (migration 0012).", on_delete=django.db.models.deletion.DO_NOTHING, related_name='declared_calls', to='buffers.conversation'),
                ),
                migrations.AlterField(
                    model_name='message',
                    name='block',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.DB_CASCADE, related_name='messages', to='buffers.block'),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX "{name}" ON "{table}" ("{column}")',
                )
                for name, table, column in _REPEATED_INDEXES
            ],
        ),
        migrations.AlterField(
            model_name='message',
            name='content',
            field=buffers.models.WrittenJSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='message',
            name='metadata',
            field=buffers.models.WrittenJSONField(blank=True, default=dict),
        ),
    ]
