"""Stored verdicts computed again for the conversations that may hold a thinking block
without its signature: Anthropic refuses one ("thinking.signature: Field required"), so
its verdict now refuses such a block in a message's content, and its export leaves one
out of the blocks an assistant turn keeps, which the verdict judges without it (a final
turn of such thinking only is then an empty final turn, which Anthropic takes)
(docs/decisions.md, "Sendability"). A conversation is read again when one of its
messages' content or metadata names a thinking block; others keep what they had."""

import importlib
from typing import Any

from django.db import migrations
from django.db.models import Q, TextField
from django.db.models.functions import Cast

stored_verdicts = importlib.import_module("buffers.migrations.0009_stored_verdicts")


def tally_again(apps: Any, schema_editor: Any) -> None:
    Message = apps.get_model("buffers", "Message")
    holding = Message.objects.annotate(
        content_text=Cast("content", TextField()), metadata_text=Cast("metadata", TextField())
    ).filter(Q(content_text__contains='"thinking"') | Q(metadata_text__contains='"thinking"'))
    stored_verdicts.tally_conversations(
        apps, Message.objects.filter(conversation_id__in=holding.values("conversation_id"))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0023_verdicts_of_kept_client_calls"),
    ]

    operations = [
        migrations.RunPython(tally_again, migrations.RunPython.noop, elidable=True),
    ]
