"""Stored verdicts computed again for the conversations that may hold a client call the
OpenAI Responses reader keeps whole (``custom_tool_call``, ``computer_call``...), or its
output: OpenAI Responses now refuses such a call with no output of its kind after it, and
such an output with no call before it, as it does function calls (docs/decisions.md,
"Sendability"). A conversation is read again when one of its messages' content or metadata
names such an item type; others keep what they had."""

import importlib
from functools import reduce
from operator import or_
from typing import Any

from django.db import migrations
from django.db.models import Q, TextField
from django.db.models.functions import Cast

stored_verdicts = importlib.import_module("buffers.migrations.0009_stored_verdicts")

# As sendability spells them in this migration's time (``CLIENT_CALLS``).
NAMES = (
    "custom_tool_call", "custom_tool_call_output", "computer_call", "computer_call_output",
    "local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output",
    "apply_patch_call", "apply_patch_call_output",
)  # fmt: skip


def tally_again(apps: Any, schema_editor: Any) -> None:
    Message = apps.get_model("buffers", "Message")
    named = reduce(
        or_,
        (
            Q(content_text__contains=f'"{name}"') | Q(metadata_text__contains=f'"{name}"')
            for name in NAMES
        ),
    )
    holding = Message.objects.annotate(
        content_text=Cast("content", TextField()), metadata_text=Cast("metadata", TextField())
    ).filter(named)
    stored_verdicts.tally_conversations(
        apps, Message.objects.filter(conversation_id__in=holding.values("conversation_id"))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0022_verdicts_of_parts_judged_since"),
    ]

    operations = [
        migrations.RunPython(tally_again, migrations.RunPython.noop, elidable=True),
    ]
