# A message's conversation is its block's, and a declared call's is its message's: the
# column is kept for the indexes that start with it, but only the block's (and the
# message's) foreign key constrains and cascades. The second constraint was checked again
# for each row an import writes: on PostgreSQL 250,000 checks at the commit of a
# 100,000-message import (0.77 s), half of them these (docs/decisions.md, "Import").
# SQLite rebuilds both tables; buffers.triggers.keep_sqlite_triggers makes the search
# index's triggers again after the migration, as after any rebuild.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('buffers', '0011_search_pending_lists'),
    ]

    operations = [
        migrations.AlterField(
            model_name='declaredcall',
            name='conversation',
            field=models.ForeignKey(db_constraint=False, help_text="Its message's conversation; the message's foreign key is the constraint and the cascade (migration 0012).", on_delete=django.db.models.deletion.DO_NOTHING, related_name='declared_calls', to='buffers.conversation'),
        ),
        migrations.AlterField(
            model_name='message',
            name='conversation',
            field=models.ForeignKey(db_constraint=False, help_text="Its block's conversation, kept here for the indexes that start with it. The block's foreign key is the constraint, and its cascade the delete (a second constraint checked each of an import's rows again: migration 0012).", on_delete=django.db.models.deletion.DO_NOTHING, related_name='messages', to='buffers.conversation'),
        ),
    ]
