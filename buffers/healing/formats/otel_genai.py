"""OpenTelemetry GenAI messages as a transcript format: the ``gen_ai.input.messages``,
``gen_ai.output.messages`` and ``gen_ai.system_instructions`` values of the GenAI
semantic conventions (1.37 and later), and the log events that carried the same content
before them (1.28 to 1.36). This module tells the shapes apart; ``otel_messages`` reads
the messages (rows, roles, pairing) and ``otel_logs`` the OTLP log exports.

A message is ``{"role", "parts": [...], "name"?, "finish_reason"?}`` and every part has a
string ``type``: that is the signature, and what keeps these files apart from Gemini
``contents`` (``{role, parts}`` too, but parts without a ``type``) and from OpenAI
Responses ``input`` (items, not ``{role, parts}``). A transcript is one of:

- a bare message list (an attribute value copied out of a trace UI, pydantic-ai's
  ``pydantic_ai.all_messages``);
- ``{"input": [...], "output": [...], "system_instructions"?: [...]}``, or the same
  under the attribute names (``gen_ai.input.messages``...), whose values may then be
  JSON text, as Python instrumentations put them on spans;
- JSONL (or a JSON array) of message lists, read one after the other: the upload hook's
  ``<uuid>_inputs.json`` then ``<uuid>_outputs.json``; a list that starts with the whole
  conversation read so far re-sends that history, which is read once
  (``otel.resent`` counts the messages left out so);
- JSONL of one message per line, as the upload hook writes with
  ``OTEL_INSTRUMENTATION_GENAI_UPLOAD_FORMAT=jsonl`` (its ``index`` key is dropped: the
  lines are read in file order, which is the index's order and stays right when the
  inputs and outputs files are concatenated);
- an OpenTelemetry log export (OTLP JSON lines, or records one per line or per array
  item) of ``gen_ai.*`` events: each trace's model calls, chained where a call sends the
  history again (``otel_logs``). A log or trace export without GenAI content is refused
  in one sentence, not line by line.

A transcript is read as a log export when at least half its entries are log records or
exports. Skipped, not read: lines that are not JSON, an entry that is neither a message
nor a message list, and in a log what ``otel_logs`` says; each with where it is.

There is no native writer: what is kept is what a future writer would need
(``arguments_kind``, ``key: result``, the response's ``name``, roles, the layout).
"""

from __future__ import annotations

from collections.abc import Sequence

from .otel_logs import (
    ANY_VALUE_KEYS,
    CHOICE,
    DETAILS,
    LOG_EXPORT_KEYS,
    LOG_EXPORTS,
    NO_GENAI_LOGS,
    RECORD_MARKS,
    TRACES,
    USAGE,
    Collected,
    EventReader,
    ModelCall,
    Record,
    Thread,
    any_value,
    attributes_of,
    calls_by_trace,
    collect,
    is_log,
    read_details,
    read_events,
    read_logs,
    read_trace,
    record_of,
)
from .otel_messages import (
    ALIASES,
    ATTRIBUTE_KEYS,
    GEMINI_PART_KEYS,
    INPUT_KEYS,
    INSTRUCTION_KEYS,
    KEPT_IN_LAYOUT,
    LIST_KEYS,
    MESSAGE_KEYS,
    OUTPUT_KEYS,
    ROLES,
    SPACE,
    WRAPPER_KEYS,
    Declared,
    MessageReader,
    Open,
    Pairing,
    arguments_text,
    canonical_call,
    chunk_parts,
    content_of,
    id_is_usable_or_none,
    read_message_entries,
    read_messages,
    read_wrapper,
    result_content,
    text_part,
)
from .source import Entry, Format, Reading, Source

__all__ = [
    "ALIASES",
    "ANY_VALUE_KEYS",
    "ATTRIBUTE_KEYS",
    "CHOICE",
    "DETAILS",
    "FORMAT",
    "GEMINI_PART_KEYS",
    "INPUT_KEYS",
    "INSTRUCTION_KEYS",
    "KEPT_IN_LAYOUT",
    "LIST_KEYS",
    "LOG_EXPORTS",
    "LOG_EXPORT_KEYS",
    "MESSAGE_KEYS",
    "NO_GENAI_LOGS",
    "OUTPUT_KEYS",
    "RECORD_MARKS",
    "ROLES",
    "SPACE",
    "TRACES",
    "USAGE",
    "WRAPPER_KEYS",
    "Collected",
    "Declared",
    "EventReader",
    "MessageReader",
    "ModelCall",
    "Open",
    "Pairing",
    "Record",
    "Thread",
    "any_value",
    "arguments_text",
    "attributes_of",
    "calls_by_trace",
    "canonical_call",
    "collect",
    "content_of",
    "fits",
    "id_is_usable_or_none",
    "read",
    "read_details",
    "read_events",
    "read_logs",
    "read_message_entries",
    "read_messages",
    "read_trace",
    "read_wrapper",
    "record_of",
    "result_content",
    "text_part",
]


def _values(source: Source) -> list[Entry]:
    entries = source.entries()
    if entries is not None:
        return entries
    return [Entry("", source.document)] if isinstance(source.document, dict) else []


def _kind(values: Sequence[object]) -> str | None:
    """``logs``, ``messages`` or None (not this format)."""
    if not values:
        return None
    if all(is_log(value) for value in values):
        return "logs"
    total = 0
    for value in values:
        count = chunk_parts(value)
        if count is None:
            return None
        total += count
    return "messages" if total else None


def fits(source: Source) -> bool:
    document = source.document
    if source.lines is not None:
        values: Sequence[object] = [entry.value for entry in source.lines]
    else:
        values = document if isinstance(document, list) else [document]
    return _kind(values) is not None


def read(source: Source) -> Reading:
    entries = _values(source)
    logs = sum(1 for entry in entries if is_log(entry.value))
    if logs and logs * 2 >= len(entries):
        return read_logs(source, entries)
    return read_message_entries(source, entries)


FORMAT = Format(
    "otel-genai",
    "OpenTelemetry GenAI messages",
    "gen_ai.input.messages / gen_ai.output.messages values copied from a trace UI; the "
    "upload hook's <uuid>_inputs.json and _outputs.json files "
    "(OTEL_INSTRUMENTATION_GENAI_UPLOAD_BASE_PATH); OTLP JSON log exports of gen_ai.* events "
    "(the collector's file exporter)",
    "lists of {role, parts} messages whose parts each have a string type (bare, under input "
    "and output, or one per JSONL line), or OTLP log records of gen_ai.* message events",
    fits,
    read,
    provider="openai-chat",
    lines=True,
)
