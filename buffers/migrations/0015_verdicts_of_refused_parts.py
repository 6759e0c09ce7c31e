"""Stored verdicts computed again for the conversations whose messages may hold content
parts that are not text (an image, a document, a file, audio, a Gemini media part): the
exporters now translate such a part into each provider's shape where that provider takes
it, and sendability refuses one that cannot be (docs/decisions.md, "Sendability"). A
conversation is read again when one of its messages' content names a part type or
Gemini part key that only a provider takes; one named in a text is read for nothing, and
keeps what it had."""

import importlib
from functools import reduce
from operator import or_
from typing import Any

from django.db import migrations
from django.db.models import Q, TextField
from django.db.models.functions import Cast

stored_verdicts = importlib.import_module("buffers.migrations.0009_stored_verdicts")

# As sendability spells them in this migration's time (``_TYPED_PARTS``, ``_GEMINI_PARTS``).
NAMES = (
    "image", "document", "search_result", "thinking", "redacted_thinking",
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
    "code_execution_tool_result", "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result",
    "container_upload", "tool_use", "tool_result", "image_url", "input_audio", "file",
    "input_image", "input_file", "refusal", "blob", "uri", "inlineData", "fileData",
    "executableCode", "codeExecutionResult", "thought", "inline_data", "file_data",
    "executable_code", "code_execution_result",
)  # fmt: skip


def tally_again(apps: Any, schema_editor: Any) -> None:
    Message = apps.get_model("buffers", "Message")
    text = Cast("content", TextField())
    named = reduce(or_, (Q(content_text__contains=f'"{name}"') for name in NAMES))
    holding = Message.objects.annotate(content_text=text).filter(named)
    stored_verdicts.tally_conversations(
        apps, Message.objects.filter(conversation_id__in=holding.values("conversation_id"))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0014_verdicts_of_kept_blocks"),
    ]

    operations = [
        migrations.RunPython(tally_again, migrations.RunPython.noop, elidable=True),
    ]
