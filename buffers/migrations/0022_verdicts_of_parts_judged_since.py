"""Stored verdicts computed again for the conversations holding a message whose content is
a list of parts: since 0015 counted them, a text part without its text and an OpenAI file
sent inline without its filename are refused (docs/decisions.md, "Sendability"), and a
database migrated before kept its old counts: such a conversation was listed as sendable,
and a write that took the part away made its count go below zero. A conversation whose
messages are all plain text keeps what it had."""

import importlib
from typing import Any

from django.db import migrations
from django.db.models import TextField
from django.db.models.functions import Cast

stored_verdicts = importlib.import_module("buffers.migrations.0009_stored_verdicts")


def tally_again(apps: Any, schema_editor: Any) -> None:
    Message = apps.get_model("buffers", "Message")
    parts = Message.objects.annotate(content_text=Cast("content", TextField())).filter(
        content_text__startswith="["
    )
    stored_verdicts.tally_conversations(
        apps, Message.objects.filter(conversation_id__in=parts.values("conversation_id"))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0021_words_under_data_and_source"),
    ]

    operations = [
        migrations.RunPython(tally_again, migrations.RunPython.noop, elidable=True),
    ]
