"""Stored verdicts computed again for the conversations whose verdicts changed since 0015
counted them (docs/decisions.md, "Sendability"); a database migrated before kept its old
counts, so such a conversation was listed as sendable, and a write that took the part away
made a count go below zero. Read again, the conversations holding a message:

- whose content is a list of parts: a text part without its text, and an OpenAI file sent
  inline without its filename, are refused;
- whose content or metadata names a client call the OpenAI Responses reader keeps whole
  (``custom_tool_call``, ``computer_call``...) or its output: Responses refuses such a call
  with no output of its kind after it, and such an output with no call before it;
- whose content or metadata names a thinking block: Anthropic refuses one without its
  signature in a message's content, and its export leaves one out of the blocks an
  assistant turn keeps, which the verdict judges without it.

A conversation whose messages are all plain text, naming none of these, keeps what it had."""

import importlib
from functools import reduce
from operator import or_
from typing import Any

from django.db import migrations
from django.db.models import Q, TextField
from django.db.models.functions import Cast

stored_verdicts = importlib.import_module("buffers.migrations.0009_stored_verdicts")

# As sendability spells them in this migration's time (``CLIENT_CALLS``, ``THINKING``).
NAMES = (
    "custom_tool_call", "custom_tool_call_output", "computer_call", "computer_call_output",
    "local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output",
    "apply_patch_call", "apply_patch_call_output", "thinking",
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
    ).filter(Q(content_text__startswith="[") | named)
    stored_verdicts.tally_conversations(
        apps, Message.objects.filter(conversation_id__in=holding.values("conversation_id"))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0021_words_under_data_and_source"),
    ]

    operations = [
        migrations.RunPython(tally_again, migrations.RunPython.noop, elidable=True),
    ]
