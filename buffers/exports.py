"""A stored conversation written out: in the stored shape (re-importable), as the MEM-5
normalized list, or as a provider's request body (``healing.formats``).

The buffer is written as it is stored: a crashed conversation exports with its unanswered
calls, and ``sendability`` says which providers would refuse it. The normalized export is
the one that repairs (MEM-5), and says what it dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import healing, selectors
from .bulk import cyclic_gc_paused
from .healing import formats, normalize
from .models import Conversation


@dataclass(frozen=True)
class ExportFormat:
    label: str
    suffix: str
    content_type: str


EXPORT_FORMATS: dict[str, ExportFormat] = {
    "stored": ExportFormat("Stored shape (JSON)", ".json", "application/json"),
    "stored-jsonl": ExportFormat("Stored shape (JSONL)", ".jsonl", "application/jsonl"),
    "normalized": ExportFormat("Normalized for a provider (MEM-5)", ".json", "application/json"),
    "openai-chat": ExportFormat("OpenAI Chat Completions", ".json", "application/json"),
    "openai-responses": ExportFormat("OpenAI Responses", ".json", "application/json"),
    "anthropic": ExportFormat("Anthropic Messages", ".json", "application/json"),
    "gemini": ExportFormat("Gemini contents", ".json", "application/json"),
}


@dataclass(frozen=True)
class Export:
    body: bytes
    filename: str
    content_type: str


def export(conversation: Conversation, format: str) -> Export:
    """``conversation`` in ``format`` (a key of EXPORT_FORMATS); InvalidInput for another."""
    if format not in EXPORT_FORMATS:
        allowed = ", ".join(EXPORT_FORMATS)
        raise healing.InvalidInput(
            [healing.Problem("format", f"must be one of {allowed}, not {format!r}")]
        )
    kind = EXPORT_FORMATS[format]
    with cyclic_gc_paused():
        document = document_of(conversation, format, selectors.buffer_messages(conversation))
        # Compact: indenting would make json use its pure-Python encoder, several times
        # slower on a long buffer (benchmarks/exchange.py).
        body = json.dumps(document, ensure_ascii=False)
    if format == "stored-jsonl":
        body += "\n"
    stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in conversation.title)[:60]
    filename = f"{stem.strip('-') or 'conversation'}-{conversation.pk}-{format}{kind.suffix}"
    return Export(body.encode(), filename, kind.content_type)


def document_of(
    conversation: Conversation, format: str, messages: list[healing.Message]
) -> dict[str, Any]:
    """The JSON value an export of ``messages`` (the conversation's buffer) holds."""
    if format in ("stored", "stored-jsonl"):
        return {
            "title": conversation.title,
            "source": conversation.source,
            "key": conversation.key,
            "scope": conversation.scope,
            "scope_id": conversation.scope_id,
            "metadata": conversation.metadata,
            "messages": [message.as_stored() for message in messages],
        }
    if format == "normalized":
        normalized = normalize.normalize([message.as_stored() for message in messages])
        return {
            "messages": normalized.messages,
            "dropped": normalized.dropped,
            "drops": [
                {
                    "index": drop.index,
                    "reason": drop.reason,
                    "call_id": drop.call_id,
                    "explanation": drop.explanation,
                }
                for drop in normalized.drops
            ],
        }
    # The fields a provider document held beside its messages (model, tools...) are that
    # provider's: they go back only into the format they came from.
    fields = conversation.metadata if conversation.source_format == format else {}
    return formats.write(messages, format, fields)
