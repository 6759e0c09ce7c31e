"""What the API takes and answers: every body and query, as pydantic schemas (OpenAPI)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict, WithJsonSchema

from buffers import healing, search, services
from buffers.healing import sendability

from .site import BIGGEST_ID, MAX_PAGE

# Schemas.


class Problem(Schema):
    path: str = Field(examples=["messages[3].metadata.tool_call_id"])
    message: str


class Error(Schema):
    detail: str
    problems: list[Problem] = Field(default_factory=list)


class NewConversation(Schema):
    model_config = ConfigDict(extra="forbid")

    title: healing.StorableText = Field("", max_length=300)
    source: healing.StorableText = Field("", max_length=300, description='"api" when not given.')
    messages: list[healing.FlatMessage] = Field(
        [], description="Messages in the stored or the flat shape, kept verbatim."
    )


class Created(Schema):
    id: int
    count: int


class ConversationOut(Schema):
    id: int
    title: str
    source: str
    created: datetime
    updated: datetime
    count: int = Field(description="Messages in the buffer.")
    unanswered: int = Field(description="Declared tool calls with no result anywhere.")
    healed: int = Field(description="Healed placeholders the buffer holds.")
    sendable: bool = Field(description="No provider would refuse the buffer as history.")
    rejected_by: list[str] = Field(
        description="The providers that would refuse it (openai-chat, openai-responses, "
        "anthropic, gemini)."
    )
    rejections: dict[str, int] = Field(
        description="For each provider, how many reasons it would have to refuse it."
    )
    problems: dict[str, int] = Field(
        description="How many problems of each kind the buffer holds (unanswered_call, "
        "orphan_result, duplicate_result, empty_turn...; only the kinds present)."
    )


class SearchHit(Schema):
    index: int = Field(description="The message's position in the buffer.")
    role: healing.Role
    snippet: str = Field(description="Its text around the first match.")


class ListedConversation(ConversationOut):
    match: SearchHit | None = Field(
        description="With q: the earliest written message that holds the words (none when "
        "only the title or source does); a placeholder inserted before it was written later."
    )


TOTAL_PAGES = 5
"""The list's total is counted up to this many pages past the offset (``BoundedPaginator``)."""


class ConversationPage(Schema):
    total: int = Field(
        description="How many conversations the list holds, counted no further than "
        f"{TOTAL_PAGES} pages of this limit past the offset: when total_exact is false "
        "there are more than this."
    )
    total_exact: bool = Field(
        description="Whether total is the list's length; false: it holds more than total."
    )
    offset: int
    limit: int
    conversations: list[ListedConversation]


class SearchPage(Schema):
    count: int = Field(description="Messages of the buffer that hold every word.")
    offset: int
    limit: int
    hits: list[SearchHit] = Field(description="In buffer order.")


class Batch(Schema):
    model_config = ConfigDict(extra="forbid")

    messages: list[healing.FlatMessage] = Field(
        description=f"At most {services.MAX_BATCH} messages, in the stored or the flat shape."
    )


class IndexedCall(Schema):
    index: int = Field(description="Position in the resulting buffer.")
    tool_call_id: str


class HealedCall(IndexedCall):
    declared_at: int = Field(description="Position of the turn that declared the call.")
    declared_before: int | None = Field(
        description="Where that turn was before this append; null when the batch brought it."
    )


class DroppedMessage(Schema):
    batch_index: int
    reason: Literal["duplicate_result", "duplicate_turn", "healed_duplicate"]
    tool_call_id: str | None
    answered_at: int | None = Field(
        description="For a dropped result: the position of the result that already answers "
        "its call."
    )
    explanation: str


class OutcomeOut(Schema):
    batch_index: int
    action: Literal["appended", "replaced", "dropped"]
    index: int | None
    reason: str | None


class AppendOut(Schema):
    scope: str = Field(examples=["global", "user", "session"])
    resolved_scope_id: str = Field(
        description='The bucket the append went to: "" for the global scope, and "" when '
        "the scope refused (MEM-7)."
    )
    refused: str | None = Field(
        description="Why the conversation's scope refused the append (MEM-6, MEM-13), "
        "when it did: then nothing was read or written, and count and appended are 0."
    )
    count: int = Field(description="Messages in the buffer after the append (MEM-14).")
    appended: int = Field(description="Incoming messages that became new entries (MEM-14).")
    appended_any: bool
    healed: list[HealedCall] = Field(description="Placeholders inserted (MEM-3).")
    replaced: list[IndexedCall] = Field(description="Placeholders replaced in place (MEM-10).")
    dropped: list[DroppedMessage] = Field(description="Duplicates (MEM-1, MEM-2, MEM-10).")
    outcomes: list[OutcomeOut] = Field(description="What became of each incoming message.")
    orphans: list[IndexedCall] = Field(
        description="Appended tool results that no call before them declares: OpenAI, OpenAI "
        "Responses and Anthropic refuse such a history (Gemini, unless a call turn right "
        "before it still awaits a response)."
    )


class StoredMessage(Schema):
    role: healing.Role
    content: Any = Field(description="A string, a list of content parts, an object or null.")
    metadata: dict[str, Any] = Field(
        description="Every other key: tool_calls, tool_call_id and the rest."
    )


class MessagePage(Schema):
    count: int = Field(description="Messages in the whole buffer.")
    offset: int
    limit: int
    messages: list[StoredMessage]


class UnansweredOut(Schema):
    tool_call_id: str
    declared_at: int


class FindingOut(Schema):
    index: int
    kind: str
    label: str
    detail: str
    tool_call_id: str | None
    related_index: int | None


class RejectionOut(Schema):
    index: int
    tool_call_id: str | None
    reason: str
    sentence: str


class VerdictOut(Schema):
    provider: str = Field(examples=list(sendability.PROVIDERS))
    accepted: bool
    summary: str = Field(examples=["OpenAI would reject this: call c1 at message 3 has no result"])
    rejections: list[RejectionOut]


class AnalysisOut(Schema):
    count: int
    unanswered: list[UnansweredOut]
    findings: list[FindingOut]
    sendability: list[VerdictOut] = Field(
        description="Whether each provider would accept the buffer as history, and if not, why."
    )


ImportFormat = Literal[
    "auto",
    "stored",
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "claude-code",
    "codex",
    "gemini-cli",
    "otel-genai",
    "swe-agent",
    "openhands",
]
ExportFormat = Literal[
    "stored",
    "stored-jsonl",
    "normalized",
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "claude-code",
    "codex",
]


class ImportIn(Schema):
    model_config = ConfigDict(extra="forbid")

    format: ImportFormat = Field("auto", description="Detected from the document unless given.")
    title: healing.StorableText = Field(
        "", max_length=300, description="For a format that has no title; else the format's."
    )
    document: Any = Field(
        None,
        description="A transcript as a .json file would hold it: a stored-shape conversation "
        "or a list of them, an OpenAI Chat body or messages list, OpenAI Responses input items, "
        "an Anthropic Messages body, Gemini contents, a list of bodies, a Gemini CLI chat, "
        "OpenTelemetry GenAI messages, a SWE-agent trajectory, an OpenHands event list, or a "
        "log's events as a list (Claude Code, Codex). Give this or text.",
    )
    text: str | None = Field(
        None,
        description="A transcript file's text, as the file holds it: for a JSONL log (a Claude "
        "Code session, a Codex rollout), whose lines that are not JSON are skipped and "
        "reported. Give this or document.",
    )
    name: healing.StorableText = Field(
        "", max_length=300, description="The file's name; a .jsonl name reads text as JSONL."
    )


class ImportedConversation(Created):
    source_format: str
    unanswered: int


class SkippedEntry(Schema):
    where: str = Field(examples=["line 41"])
    why: str


class Imported(Schema):
    conversations: list[ImportedConversation]
    read_as: str = Field(examples=["read as a Claude Code session (40 lines, 2 skipped)"])
    skipped: list[SkippedEntry]
    changed: list[SkippedEntry] = Field(
        description="A log's lines read with U+0000 or a lone surrogate, which no database "
        "stores, replaced by U+FFFD: where, and which strings."
    )


class ExportQuery(Schema):
    format: ExportFormat = "stored"


class Paging(Schema):
    offset: int = Field(0, ge=0, le=BIGGEST_ID)
    limit: int = Field(100, ge=1, le=BIGGEST_ID, description=f"Capped at {MAX_PAGE}.")


_QUERY_DESCRIPTION = (
    "Words, each of which must be there (a word of two letters or more matches the words it "
    "begins); punctuation only separates them. Empty: no search. At most "
    f"{search.MAX_QUERY} characters."
)


class ConversationFilter(Paging):
    unanswered: Annotated[bool | None, WithJsonSchema({"type": "boolean"})] = Field(
        None, description="true: only conversations with unanswered calls; false: only without."
    )
    sendable: Annotated[bool | None, WithJsonSchema({"type": "boolean"})] = Field(
        None,
        description="true: only conversations every provider would accept as history; false: "
        "only those some provider would refuse.",
    )
    q: str = Field(
        "",
        max_length=search.MAX_QUERY,
        description="Only conversations whose title and source, or one of whose messages, "
        f"hold the words. {_QUERY_DESCRIPTION}",
    )


class SearchQuery(Paging):
    q: str = Field("", max_length=search.MAX_QUERY, description=_QUERY_DESCRIPTION)
