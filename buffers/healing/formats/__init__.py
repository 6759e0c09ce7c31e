"""Converters between the providers' conversation formats and the stored shape.

``read(document, format)`` turns one provider document (a whole ``.json`` file's value,
or one JSONL line's value) into stored-shape rows plus the document's
conversation-level fields; ``write(messages, format, metadata)`` is its inverse:
``write(parse_messages(c.messages), f, c.metadata) == document`` for what ``read`` gave,
key order aside. Any conversation, whatever format it came from, writes to every format.

What every format shares:

- A declared call is stored in OpenAI Chat's spelling, ``{"id", "type": "function",
  "function": {"name", "arguments": "<JSON text>"}}`` under ``metadata.tool_calls``; a
  result names it in ``metadata.tool_call_id``; ``metadata.is_error`` marks a failed
  tool (Anthropic ``is_error``, Gemini ``response.error``; OpenAI has no place for it).
- Nothing is lost: what has no stored-shape place is kept under one metadata key per
  format (``anthropic``, ``gemini``, ``responses``, ``responses_item``), on the row or
  on the call, and only that format writes it back. OpenAI Chat keys (``name``,
  ``refusal``...) sit directly under ``metadata``, as the stored importer keeps them.
- Writing OpenAI Chat sends every metadata key but the app's (``healed``,
  ``is_error``) and the other formats' as a message key, as ``Message.to_flat`` does:
  a key a client stored (``{"run": 7}``) goes out too. A placeholder (``healed``) is written as an
  ordinary tool result with its text. Text parts change spelling between formats;
  other parts (images, files) are copied as they are.
- A request body is ``{**metadata, <messages>}``; a bare list reads like a body with
  no other fields, and writes as a body. A list of bodies is several conversations.
- A result whose call no earlier turn declares is kept, as the stored importer keeps
  it; the analysis reports it. Only the document's shape is checked here.
- Conversation-level fields stay fields: OpenAI Responses ``instructions`` is not made
  a system row (Anthropic ``system`` and Gemini ``systemInstruction`` are, since both
  hold content blocks).
- OpenAI Chat: ``developer`` is a system row with ``metadata.openai_role``; the legacy
  ``function`` role is refused (it names no call id to pair on). A message without
  ``content`` reads as null content and is written with ``content: null`` when it is an
  assistant turn that makes calls, else ``""`` (OpenAI takes null there only).
- Anthropic: tool results in a user message that come after text are written back
  first, as Anthropic requires.

Detection (``detect_source``) asks every format whether a transcript fits its signature
and reads it as the one that fits; a transcript that fits none, or more than one, is
refused with what it looks like and what was tried. The provider request formats and
the stored shape are told apart as one family, by ``_family`` below, so that they stay
disjoint from each other; the agent-runtime formats each declare their own signature.
A file that is known not to hold a conversation is refused saying what it is (a Gemini
CLI prompt log, ``logs.json``).
Within the family, ``_family`` tells the formats apart by their keys. A ``title``,
``source``, ``key``, ``scope`` or ``scope_id`` field is the stored shape when the
document has a ``messages`` list or no field the stored shape lacks (an OpenHands event
has a ``source`` too). Otherwise ``contents`` is Gemini (whose parts never have a
``type``: OpenTelemetry GenAI messages are ``{role, parts}`` too, with typed parts),
``input`` OpenAI Responses (items, not ``{role, parts}`` messages); a ``messages`` list
whose entries each have a ``role`` is the stored shape when it carries the stored shape's
other marks (no field but ``metadata`` beside it, a message ``metadata`` or ``healed``
key, or a call spelled ``tool_call_id``); ``metadata`` beside ``model`` is OpenAI's own
request field. Anthropic
when it has Anthropic's marks (a top-level ``system``, ``tool_use``/``tool_result``
blocks, a ``claude`` model...), and OpenAI Chat when it has OpenAI's (a field the stored
shape lacks such as ``model``, a message ``tool_calls`` in OpenAI's spelling or
``tool_call_id``, the ``developer`` or ``function`` role). The stored shape's marks
win, so the stored reader reports what else is wrong. A plain ``{"messages": [{"role",
"content"}]}`` reads the same either way and is called stored. A ``messages`` list beside
a ``trajectory_format`` is none of the family: it is a mini-swe-agent trajectory, which
the SWE-agent reader reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.messages import Message

from . import anthropic, gemini, gemini_cli, openai_chat, openai_responses
from .common import Converted
from .source import Entry, Format, Reading, Skipped, Source, collapse, parse_lines, parse_values

__all__ = [
    "FORMATS",
    "READABLE",
    "Converted",
    "Entry",
    "Format",
    "Reading",
    "Skipped",
    "Source",
    "collapse",
    "detect",
    "detect_source",
    "label",
    "named",
    "parse_lines",
    "parse_values",
    "read",
    "write",
]

FORMATS: tuple[str, ...] = ("openai-chat", "openai-responses", "anthropic", "gemini")
"""The provider request formats: each is read and written (exports, sendability)."""

_READERS: dict[str, Callable[[object], Converted]] = {
    "openai-chat": openai_chat.read,
    "openai-responses": openai_responses.read,
    "anthropic": anthropic.read,
    "gemini": gemini.read,
}
_WRITERS: dict[str, Callable[[Sequence[Message], Mapping[str, Any]], dict[str, Any]]] = {
    "openai-chat": openai_chat.write,
    "openai-responses": openai_responses.write,
    "anthropic": anthropic.write,
    "gemini": gemini.write,
}
_ENTRIES = {
    "openai-chat": "messages",
    "openai-responses": "input",
    "anthropic": "messages",
    "gemini": "contents",
}


def _known(format: str) -> None:
    if format not in FORMATS:
        raise InvalidInput(
            [Problem("format", f"must be one of {', '.join(FORMATS)}, not {format!r}")]
        )


def read(document: object, format: str) -> list[Converted]:
    """The conversations one document holds in ``format`` (a provider format): one for a
    body or a bare list of messages, one each for a list of bodies. Raises InvalidInput
    with every problem."""
    _known(format)
    key = _ENTRIES[format]
    if not _is_list_of_bodies(document, key):
        return [_READERS[format](document)]
    assert isinstance(document, list)
    conversations: list[Converted] = []
    problems: list[Problem] = []
    for index, body in enumerate(document):
        try:
            conversations.append(_READERS[format](body))
        except InvalidInput as error:
            problems.extend(error.within(f"conversations[{index}].").problems)
    if problems:
        raise InvalidInput(problems)
    return conversations


def _is_list_of_bodies(document: object, key: str) -> bool:
    return (
        isinstance(document, list)
        and bool(document)
        and all(isinstance(body, dict) and key in body for body in document)
    )


def write(
    messages: Sequence[Message], format: str, metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The conversation as one ``format`` request body, around ``metadata``'s fields."""
    _known(format)
    return _WRITERS[format](messages, metadata or {})


# Every format a transcript can be read as, and detection.


def _family_member(name: str, label: str, where: str, needs: str) -> Format:
    def fits(source: Source) -> bool:
        return not source.is_lines and _family(source.document) == name

    def read_one(source: Source) -> Reading:
        conversations = read(source.document, name)
        return Reading(conversations, entries=len(conversations), unit="conversation")

    return Format(name, label, where, needs, fits, read_one)


def _stored_fits(source: Source) -> bool:
    return not source.is_lines and _family(source.document) == "stored"


def _read_elsewhere(source: Source) -> Reading:
    raise NotImplementedError("the stored shape is read by buffers.transcripts")


def _registry() -> dict[str, Format]:
    from . import claude_code, codex, openhands, otel_genai, swe_agent

    family = [
        Format(
            "stored",
            "stored shape",
            "a FlowDrop Web export (stored JSON or JSONL)",
            'conversations {"messages": [...]} with title, source, key or message metadata',
            _stored_fits,
            _read_elsewhere,
            article="the",
        ),
        _family_member(
            "openai-chat",
            "OpenAI Chat Completions",
            "a request body or its messages list; fine-tuning JSONL, one body per line",
            "messages with a role each, and OpenAI's marks (model, tool_calls, tool_call_id)",
        ),
        _family_member(
            "openai-responses",
            "OpenAI Responses input",
            "a Responses request body or its input items",
            "input items (message, function_call, function_call_output...)",
        ),
        _family_member(
            "anthropic",
            "Anthropic Messages",
            "a Messages request body or its messages list",
            "messages with Anthropic's marks (system, tool_use and tool_result blocks)",
        ),
        _family_member(
            "gemini",
            "Gemini contents",
            "a generateContent body or its contents (a Gemini CLI checkpoint before v0.16, "
            "a /chat share .json)",
            "contents of {role, parts} whose parts are Gemini's (text, functionCall...)",
        ),
    ]
    runtimes = [
        claude_code.FORMAT,
        codex.FORMAT,
        gemini_cli.FORMAT,
        otel_genai.FORMAT,
        swe_agent.FORMAT,
        openhands.FORMAT,
    ]
    return {f.name: f for f in (*family, *runtimes)}


READABLE: dict[str, Format] = _registry()
"""Every format a transcript may be read as, by name (``--format``)."""


def label(format: str) -> str:
    """A format's name for people ("Claude Code session"); the name itself if unknown."""
    known = READABLE.get(format)
    return known.label if known else format


def named(format: str) -> str:
    """A format's name for a sentence ("a Claude Code session")."""
    known = READABLE.get(format)
    return known.named if known else format


def detect_source(source: Source) -> Format | None:
    """The one format ``source`` fits. None for a JSONL file that no log format fits, whose
    lines are then documents of their own. Raises InvalidInput when it fits none (saying
    what it looks like and what was tried) or more than one."""
    candidates = [f for f in READABLE.values() if (f.lines or not source.is_lines)]
    fitting = [f for f in candidates if f.fits(source)]
    if len(fitting) == 1:
        return fitting[0]
    if len(fitting) > 1:
        names = " and ".join(f.named for f in fitting)
        raise _cannot_tell(f"fits more than one format ({names}); name the format to read it as")
    if source.is_lines:
        return None
    if hint := _family_hint(source.document):
        raise _cannot_tell(hint)
    if loose := _family(source.document, strict=False):
        # A provider body that breaks its own format (a message without a role): read
        # as what its keys say, so that its reader names each wrong place.
        return READABLE[loose]
    tried = ", ".join(f.label for f in candidates)
    raise _cannot_tell(
        f"is not a transcript in a format this reads: found {source.looks()}; tried {tried}"
    )


def detect(document: object) -> str:
    """Which format one JSON document is in (a name of READABLE). Raises InvalidInput when
    it cannot tell, saying what it saw."""
    found = detect_source(Source(document=document))
    assert found is not None
    return found.name


def _cannot_tell(sentence: str) -> InvalidInput:
    return InvalidInput([Problem("file", sentence)])


# The provider request formats and the stored shape, told apart by their keys.

_STORED_MARKS = frozenset({"title", "source", "key", "scope", "scope_id"})
"""Fields only the stored shape has: a document with one is stored, with messages or not,
so that the stored reader says what else is wrong."""
_STORED_FIELDS = _STORED_MARKS | {"metadata", "messages"}
_ANTHROPIC_FIELDS = frozenset(
    {"system", "anthropic_version", "stop_sequences", "top_k", "thinking", "mcp_servers"}
)
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use"}
)
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
_RESPONSES_ITEMS = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "file_search_call",
        "web_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "item_reference",
        "compaction",
    }
)


def _family(document: object, *, strict: bool = True) -> str | None:
    """Which of the stored shape and the provider request formats ``document`` is in, or
    None when it is none of them. Not ``strict``: what its keys say it would be, when its
    entries break that format (for the reader to say where)."""
    if isinstance(document, dict):
        return _family_body(document, strict)
    if not isinstance(document, list) or not document:
        return None
    if all(isinstance(body, dict) and _is_stored_body(body) for body in document):
        return "stored"
    if all(
        isinstance(body, dict) and set(body) & {"messages", "input", "contents"}
        for body in document
    ):
        found = {_family_body(body, strict) for body in document}
        return found.pop() if len(found) == 1 else None
    if not all(isinstance(entry, dict) for entry in document):
        return None
    return _family_entries(document, strict)


def _family_hint(document: object) -> str | None:
    """Why a document that looks like the family's fits none of it, where that can be said
    better than by its keys."""
    from . import swe_agent

    if document == []:
        return "is an empty list, which could be any format"
    if gemini_cli.is_prompt_log(document):
        return gemini_cli.PROMPT_LOG
    if swe_agent.is_retry_summary(document):
        return swe_agent.RETRY_SUMMARY
    if not isinstance(document, list) or not all(isinstance(v, dict) for v in document):
        return None
    if all(set(body) & {"messages", "input", "contents"} for body in document):
        found = [_family_body(body) or "none of them" for body in document]
        if len(set(found)) > 1:
            listed = ", ".join(f"conversations[{i}] is {f}" for i, f in enumerate(found))
            return f"holds conversations in more than one format ({listed})"
    if all("role" in entry for entry in document) and _has_stored_marks(document):
        return (
            "is a list of messages in the stored shape; a stored file holds conversations, "
            'each {"messages": [...]}'
        )
    return None


def _is_stored_body(body: dict[str, Any]) -> bool:
    return bool(body.keys() & _STORED_MARKS) and (
        "messages" in body or body.keys() <= _STORED_FIELDS
    )


def _family_body(body: dict[str, Any], strict: bool = True) -> str | None:
    if _is_stored_body(body):
        return "stored"
    if "contents" in body:
        entries = body["contents"]
        fits = not strict or not isinstance(entries, list) or _all_gemini(entries)
        return "gemini" if fits else None
    if "input" in body and "messages" not in body:
        entries = body["input"]
        fits = not strict or not isinstance(entries, list) or _all_items(entries)
        return "openai-responses" if fits else None
    if {"sessionId", "projectHash"} <= body.keys():
        return None  # a Gemini CLI session
    if "messages" not in body or "trajectory_format" in body:
        return None  # no messages, or a mini-swe-agent trajectory's (a SWE-agent one)
    raw = body["messages"]
    messages = [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
    fields = set(body)
    if (fields <= _STORED_FIELDS and fields != {"messages"}) or _has_stored_marks(messages):
        return "stored"
    if strict and not all("role" in m for m in messages):
        return None  # not messages of a chat format
    if fields & _ANTHROPIC_FIELDS or _has_anthropic_marks(messages):
        return "anthropic"
    # A Claude model's name is Anthropic's, but OpenAI-compatible endpoints (LiteLLM,
    # OpenRouter) take it in OpenAI's messages, with marks Anthropic's never carry.
    model = body.get("model")
    openai_shaped = _has_openai_marks(messages) or any(
        m.get("role") in ("system", "tool") for m in messages
    )
    if isinstance(model, str) and model.startswith("claude") and not openai_shaped:
        return "anthropic"
    if fields - _STORED_FIELDS or _has_openai_marks(messages):
        return "openai-chat"
    return "stored"


def _family_entries(entries: list[dict[str, Any]], strict: bool = True) -> str | None:
    if any("parts" in entry for entry in entries):
        return "gemini" if _all_gemini(entries) else None
    if any("type" in entry or _part_types(entry) & _RESPONSES_PARTS for entry in entries):
        fits = _all_items(entries) if strict else _known_item_types(entries)
        return "openai-responses" if fits else None
    if not entries or not all("role" in entry for entry in entries):
        return None
    if _has_stored_marks(entries):
        return None  # stored messages, but a stored file holds conversations
    return "anthropic" if _has_anthropic_marks(entries) else "openai-chat"


def _all_gemini(contents: list[Any]) -> bool:
    """Gemini contents: objects whose parts never have a ``type`` (OpenTelemetry's do)."""
    return all(
        isinstance(content, dict)
        and "type" not in content
        and not any(
            isinstance(part, dict) and "type" in part for part in _list(content.get("parts"))
        )
        for content in contents
    )


def _all_items(items: list[Any]) -> bool:
    """Responses input items: typed items of Responses' own types, or role messages
    without Gemini's or OpenTelemetry's ``parts``."""
    return all(
        isinstance(item, dict)
        and "parts" not in item
        and (str(item["type"]) in _RESPONSES_ITEMS if "type" in item else "role" in item)
        for item in items
    )


def _known_item_types(items: list[dict[str, Any]]) -> bool:
    """Whether every item's string ``type`` is a Responses item's: the Responses reader
    keeps an item of another type whole, so a list of those (a Gemini CLI prompt log)
    would be read as empty assistant turns instead of refused."""
    return all(
        not isinstance(item.get("type"), str) or item["type"] in _RESPONSES_ITEMS for item in items
    )


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _part_types(message: dict[str, Any]) -> set[str]:
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    return {p["type"] for p in parts if isinstance(p, dict) and isinstance(p.get("type"), str)}


def _has_stored_marks(messages: list[dict[str, Any]]) -> bool:
    def app_spelled(message: dict[str, Any]) -> bool:
        calls = message.get("tool_calls")
        return isinstance(calls, list) and any(
            isinstance(call, dict) and "tool_call_id" in call for call in calls
        )

    return any("metadata" in m or "healed" in m or app_spelled(m) for m in messages)


def _has_anthropic_marks(messages: list[dict[str, Any]]) -> bool:
    return any(_part_types(m) & _ANTHROPIC_BLOCKS for m in messages)


def _has_openai_marks(messages: list[dict[str, Any]]) -> bool:
    return any(
        "tool_calls" in m or "tool_call_id" in m or m.get("role") in ("developer", "function")
        for m in messages
    )
