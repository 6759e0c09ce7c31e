"""A stored conversation written out: in the stored shape (re-importable), as the MEM-5
normalized list, as a provider's request body (``healing.formats``), or back in its agent
runtime's own file, healed (a Claude Code session, a Codex rollout).

The buffer is written as it is stored: a crashed conversation exports with its unanswered
calls, and ``sendability`` says which providers would refuse it. The normalized export is
the one that repairs (MEM-5), and says what it dropped. A runtime's own file is written
healed, so that the runtime can resume it: each unanswered call gets its placeholder
directly after its turn (MEM-3's placement, planned by the same planner as the admin's
heal), as the runtime's own result event; the stored buffer is not changed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from . import healing, selectors
from .bulk import cyclic_gc_paused
from .healing import formats, normalize
from .models import Action, Conversation


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

NATIVE_FORMATS: dict[str, ExportFormat] = {
    "claude-code": ExportFormat("Claude Code session, healed", ".jsonl", "application/jsonl"),
    "codex": ExportFormat("Codex CLI rollout, healed", ".jsonl", "application/jsonl"),
}
"""Runtime files written back healed; only for a conversation read from that runtime."""
DOCUMENT_FORMATS = dict(EXPORT_FORMATS)
"""What every conversation exports to."""
EXPORT_FORMATS.update(NATIVE_FORMATS)


def formats_for(conversation: Conversation) -> dict[str, ExportFormat]:
    """The exports a conversation offers: every one but the runtime files of runtimes it
    was not read from."""
    return {
        name: kind
        for name, kind in EXPORT_FORMATS.items()
        if name not in NATIVE_FORMATS or name == conversation.source_format
    }


def native_refusal(conversation: Conversation) -> str | None:
    """Why ``conversation`` is not written back to its runtime, though read from it: what
    its writer refuses (a layout no current runtime resumes); or a repair, since a
    runtime's writer writes each message's lines as they were read, so a message edited or
    deleted in the admin would be written as it was, or leave the session's chain of events
    broken, in a file said to be healed. None when nothing stands in the way."""
    runtime = formats.READABLE.get(conversation.source_format)
    refuses = runtime.native_refusal if runtime is not None else None
    if refuses is not None and (refused := refuses(conversation.metadata)) is not None:
        return refused
    repair = (
        conversation.changes.filter(action__in=(Action.EDIT, Action.DELETE))
        .order_by("-at", "-pk")
        .first()
    )
    if repair is None:
        return None
    done = "edited" if repair.action == Action.EDIT else "deleted"
    return (
        f"this conversation was repaired in the admin (a message {done}, "
        f"{repair.at:%Y-%m-%d %H:%M} UTC), which its runtime's file, written from the lines "
        "as they were read, would not carry; export it in a provider's format instead"
    )


@dataclass(frozen=True)
class Export:
    body: bytes
    filename: str
    content_type: str

    def __post_init__(self) -> None:
        # The name may come from the file's own data (a session id): only what is safe in
        # a Content-Disposition header, anywhere.
        object.__setattr__(self, "filename", _SAFE_NAME.sub("-", self.filename) or "export")


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def export(conversation: Conversation, format: str) -> Export:
    """``conversation`` in ``format`` (a key of EXPORT_FORMATS); InvalidInput for another."""
    if format not in EXPORT_FORMATS:
        allowed = ", ".join(EXPORT_FORMATS)
        raise healing.InvalidInput(
            [healing.Problem("format", f"must be one of {allowed}, not {format!r}")]
        )
    kind = EXPORT_FORMATS[format]
    if format in NATIVE_FORMATS:
        return _native(conversation, format, kind)
    with cyclic_gc_paused():
        document = document_of(conversation, format, selectors.buffer_messages(conversation))
        # Compact: indenting would make json use its pure-Python encoder, several times
        # slower on a long buffer (benchmarks/exchange.py).
        body = json.dumps(document, ensure_ascii=False)
    if format == "stored-jsonl":
        body += "\n"
    return Export(body.encode(), _filename(conversation, format, kind), kind.content_type)


def _filename(conversation: Conversation, format: str, kind: ExportFormat) -> str:
    stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in conversation.title)[:60]
    return f"{stem.strip('-') or 'conversation'}-{conversation.pk}-{format}{kind.suffix}"


def _native(conversation: Conversation, format: str, kind: ExportFormat) -> Export:
    runtime = formats.READABLE[format]
    if conversation.source_format != format or runtime.write_native is None:
        raise healing.InvalidInput(
            [
                healing.Problem(
                    "format",
                    f"only a conversation read from {runtime.named} can be written back as "
                    f"one; this one was read from "
                    f"{formats.named(conversation.source_format) or 'no file'}",
                )
            ]
        )
    if refusal := native_refusal(conversation):
        raise healing.InvalidInput([healing.Problem("format", refusal)])
    with cyclic_gc_paused():
        healed = healed_messages(selectors.buffer_messages(conversation))
        body = runtime.write_native(healed, conversation.metadata)
    name = runtime.native_name(conversation.metadata) if runtime.native_name else ""
    return Export(body.encode(), name or _filename(conversation, format, kind), kind.content_type)


def native_export(conversation: Conversation) -> dict[str, str] | None:
    """What the page says of writing ``conversation`` back to its runtime, if it can be."""
    if conversation.source_format not in NATIVE_FORMATS:
        return None
    runtime = formats.READABLE[conversation.source_format]
    if runtime.write_native is None:
        return None
    return {
        "refused": native_refusal(conversation) or "",
        "format": runtime.name,
        "label": runtime.label,
        "named": runtime.named,
        "where": runtime.where,
        "filename": runtime.native_name(conversation.metadata) if runtime.native_name else "",
    }


def healed_messages(messages: list[healing.Message]) -> list[healing.Message]:
    """The buffer as MEM-3 heals it, with nothing written: a placeholder directly after
    the turn of each unanswered call."""
    return healing.apply_plan(messages, healing.plan_heal(healing.facts_from_messages(messages)))


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
