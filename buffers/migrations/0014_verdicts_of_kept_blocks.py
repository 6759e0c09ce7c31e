"""Stored verdicts computed again for the conversations whose assistant turns keep blocks
for a provider (``metadata.anthropic`` or ``metadata.gemini``: server tool blocks,
thinking, thought parts): sendability now counts what those providers' exporters write
of them (docs/decisions.md, "Sendability"), so a turn of server tool blocks only is no
longer empty for Anthropic, and one of thinking only is refused wherever it stands."""

import importlib
from typing import Any

from django.db import migrations
from django.db.models import Q

stored_verdicts = importlib.import_module("buffers.migrations.0009_stored_verdicts")


def tally_again(apps: Any, schema_editor: Any) -> None:
    Message = apps.get_model("buffers", "Message")
    keeping = Message.objects.filter(role="assistant").filter(
        Q(metadata__has_key="anthropic") | Q(metadata__has_key="gemini")
    )
    conversations = keeping.values("conversation_id")
    stored_verdicts.tally_conversations(
        apps, Message.objects.filter(conversation_id__in=conversations)
    )


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0013_message_indexes_without_repeats"),
    ]

    operations = [
        migrations.RunPython(tally_again, migrations.RunPython.noop, elidable=True),
    ]
