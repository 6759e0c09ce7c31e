"""The storage API: conversations over JSON, under the same rules as every other entry point.

Every endpoint calls the service (writes) or the selectors (reads); no rule is
implemented here. Errors are JSON: ``{"detail": "...", "problems": [{"path", "message"}]}``.
Every request is a user's: an API token's or a signed-in session's (401 otherwise), and
``buffers.access`` decides what it may see (404 for the rest, so ids do not leak) and
drive (403 for a conversation it may only view).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Literal, cast

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe
from django.views.defaults import bad_request, server_error
from ninja import Field, NinjaAPI, Query, Schema, Status
from ninja.errors import HttpError, ValidationError, ValidationErrorContext
from ninja.parser import Parser
from ninja.security import HttpBearer, SessionAuth
from pydantic import ConfigDict, WithJsonSchema
from pydantic_core import ErrorDetails

from . import access, exports, healing, search, selectors, services, transcripts
from .bulk import cyclic_gc_paused
from .healing import formats, jsontext, sendability
from .models import Conversation

MAX_PAGE = 500
"""The most conversations or messages one page answers; a larger ``limit`` is capped."""

_BIGGEST_ID = 2**63 - 1

# The interactive docs (Swagger UI, served from ninja's own static files) set inline
# styles; only that page may, and it shows no transcript content.
_DOCS_CSP: dict[str, list[str]] = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
}


class _BodyNotObject(ValueError):
    pass


class _JsonObjectParser(Parser):
    """JSON bodies (whatever their Content-Type, so a bare ``curl -d`` works) that are objects."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        # As json.loads reads bytes (UTF-8, -16 or -32), refusing a key named twice.
        body = request.body
        data, _ = jsontext.loads(body.decode(json.detect_encoding(body), "surrogatepass"))
        if not isinstance(data, dict):
            raise _BodyNotObject(f"must be a JSON object, not {healing.describe(data)}")
        return data


class _Token(HttpBearer):
    """``Authorization: Bearer fdw_…``: an API token made in the admin or with
    ``manage.py api_token``. The caller is then the token's user, as ``request.user``."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        user = access.user_for_request_token(request, token)
        if user is not None:
            request.user = user
        return user


class _Session(SessionAuth):
    """The signed-in session, with Django's CSRF check on writes; but only once there is
    a session: without one the answer is 401, not a CSRF failure that says nothing of
    what is missing."""

    def __call__(self, request: HttpRequest) -> Any:
        if not request.user.is_authenticated:
            return None
        return super().__call__(request)


class _StorageAPI(NinjaAPI):
    def validation_error_from_error_contexts(
        self, error_contexts: list[ValidationErrorContext[Any]]
    ) -> ValidationError:
        """Ninja's errors, with the input each one was about kept, so that messages can say
        what was sent ("must be one of user, ..., not 'bot'")."""
        error = super().validation_error_from_error_contexts(error_contexts)
        inputs = [
            details["input"]
            for context in error_contexts
            for details in context.pydantic_validation_error.errors(include_url=False)
        ]
        for details, value in zip(error.errors, inputs, strict=True):
            details["input"] = value
        return error


api = _StorageAPI(
    title="FlowDrop Web storage API",
    version="1",
    description=(
        "Store agent transcripts verbatim and append turns under the GR-MEM buffer rules "
        "of the FlowDrop Workflow Specification (storage-api profile): deduplication "
        "(MEM-1, MEM-2), healing of unanswered tool calls at a user turn (MEM-3), "
        "placeholder replacement (MEM-10), both id spellings (MEM-11), serialized appends "
        "(MEM-12) and append reports (MEM-14)."
    ),
    urls_namespace="api",
    parser=_JsonObjectParser(),
    # A token for outside programs; the signed-in session for the inspector's own pages
    # (and the interactive docs), with Django's CSRF check on writes.
    auth=[_Token(), _Session()],
    docs_decorator=lambda view: csrf_exempt(require_safe(csp_override(_DOCS_CSP)(view))),
)


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
        description="With q: a message that holds the words (none when only the title or "
        "source does)."
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


class ExportQuery(Schema):
    format: ExportFormat = "stored"


class Paging(Schema):
    offset: int = Field(0, ge=0, le=_BIGGEST_ID)
    limit: int = Field(100, ge=1, le=_BIGGEST_ID, description=f"Capped at {MAX_PAGE}.")


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


# Errors: every one JSON, every one with its place.


def _error(
    request: HttpRequest, status: int, detail: str, problems: Sequence[healing.Problem] = ()
) -> HttpResponse:
    body = {
        "detail": detail,
        "problems": [{"path": p.path, "message": p.message} for p in problems],
    }
    response = api.create_response(request, body, status=status)
    if status == 401:  # RFC 9110: a 401 says how to authenticate
        response["WWW-Authenticate"] = 'Bearer realm="FlowDrop Web"'
    return response


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, error: ValidationError) -> HttpResponse:
    problems = [
        healing.problem_from(cast(ErrorDetails, e), skip=_request_part(e["loc"]))
        for e in error.errors
    ]
    if any(p.path.startswith("messages[") for p in problems):
        # The schema stops at a message's shape; read the batch as the endpoint would, so
        # that every problem of every message is listed at once, rule problems included.
        others = [p for p in problems if not p.path.startswith("messages[")]
        problems = others + _batch_problems(request)
    return _error(request, 422, "The request is not valid; nothing was written.", problems)


def _batch_problems(request: HttpRequest) -> list[healing.Problem]:
    messages = json.loads(request.body)["messages"]
    appending = request.resolver_match is not None and request.resolver_match.url_name == "append"
    try:
        healing.parse_messages(messages, appendable=appending)
    except healing.InvalidInput as invalid:
        return invalid.problems
    return []


def _request_part(loc: Sequence[Any]) -> int:
    """How much of a ninja error location names the request part, not the field:
    ``("body", "payload", "messages", 3)``, ``("query", "limit")``."""
    return 2 if loc[:1] == ("body",) else 1


@api.exception_handler(healing.InvalidInput)
def _invalid_input(request: HttpRequest, error: healing.InvalidInput) -> HttpResponse:
    return _error(request, 422, "The request is not valid; nothing was written.", error.problems)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, error: HttpError) -> HttpResponse:
    cause = error.__cause__
    if isinstance(cause, _BodyNotObject):
        return _error(
            request, 422, "The request is not valid.", [healing.Problem("body", str(cause))]
        )
    if isinstance(cause, jsontext.DuplicateKey):
        problem = healing.Problem(cause.path or "body", cause.why)
        return _error(request, 422, "The request is not valid; nothing was written.", [problem])
    if isinstance(cause, json.JSONDecodeError):
        where = f"body, line {cause.lineno}, column {cause.colno}"
        return _error(request, 400, "The body is not JSON.", [healing.Problem(where, cause.msg)])
    if isinstance(cause, RecursionError | ValueError | UnicodeDecodeError):
        problem = healing.Problem("body", f"cannot be read: {cause}")
        return _error(request, 400, "The body cannot be read.", [problem])
    return _error(request, error.status_code, str(error))


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, error: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    problem = healing.Problem("body", f"is larger than the limit of {limit:,} bytes")
    return _error(request, 400, "The body is too large; nothing was written.", [problem])


@api.exception_handler(services.ConversationNotFound)
def _not_found(request: HttpRequest, error: services.ConversationNotFound) -> HttpResponse:
    return _error(request, 404, "No such conversation.")


@api.exception_handler(services.BufferBusy)
def _busy(request: HttpRequest, error: services.BufferBusy) -> HttpResponse:
    response = _error(request, 503, f"{error} Try again shortly.")
    response["Retry-After"] = "5"
    return response


def _storable_id(conversation_id: int) -> int:
    """The id, or not found when no database row could have it (the path takes any digits)."""
    if conversation_id > _BIGGEST_ID:
        raise services.ConversationNotFound(conversation_id)
    return conversation_id


def _conversation(request: HttpRequest, conversation_id: int) -> Conversation:
    """The conversation if the caller may view it; a 404 for one it may not, as for one
    that does not exist."""
    visible = access.visible_to(request.user, Conversation.objects.all())
    try:
        return visible.get(pk=_storable_id(conversation_id))
    except Conversation.DoesNotExist:
        raise services.ConversationNotFound(conversation_id) from None


def _conversation_out(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": conversation.pk,
        "title": conversation.title,
        "source": conversation.source,
        "created": conversation.created_at,
        "updated": conversation.updated_at,
        "count": conversation.message_count,
        "unanswered": conversation.unanswered_count,
        "healed": conversation.healed_count,
        "sendable": conversation.sendable,
        "rejected_by": conversation.tally.rejected_by,
        "rejections": dict(conversation.tally.rejections),
        "problems": dict(conversation.tally.problems),
    }


# Endpoints.


def _get_and_head(path: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A GET endpoint that answers HEAD too (as HTTP asks), documented once."""

    def register(view: Callable[..., Any]) -> Callable[..., Any]:
        api.get(path, **options)(view)
        head = {key: value for key, value in options.items() if key != "url_name"}
        api.api_operation(["HEAD"], path, include_in_schema=False, **head)(view)
        return view

    return register


# 401: no token and no session. 403: a write by a session without its CSRF token, or an
# append to a conversation the caller may view but not drive. 404: none the caller may see.
# 409: a write whose Idempotency-Key is still being written (buffers/idempotency.py).
_ERRORS = {
    400: Error, 401: Error, 403: Error, 404: Error, 405: Error, 409: Error, 422: Error, 503: Error
}  # fmt: skip
# 400 on reads too: any query parameter, even one no endpoint takes, can hold a character
# no parameter takes (a NUL), and RefuseUnstorableQuery answers it before any view runs.
_READ_ERRORS = {400: Error, 401: Error, 404: Error, 405: Error, 422: Error}
_CREATE_ERRORS = {
    400: Error, 401: Error, 403: Error, 405: Error, 409: Error, 422: Error, 503: Error
}  # fmt: skip
_RETRY_AFTER = {"headers": {"Retry-After": {"description": "Seconds to wait before trying again.",
                                            "schema": {"type": "integer"}}}}  # fmt: skip
_HEADERS: dict[int, Any] = {  # ninja keys responses by int: so must we, or they double
    201: {"headers": {"Location": {"description": "The new conversation's URL.",
                                     "schema": {"type": "string"}}}},
    409: _RETRY_AFTER,
    503: _RETRY_AFTER,
}  # fmt: skip
_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "maxLength": 200},
    "description": "Makes the write exactly-once: sent again with the same key and the same "
    "request, it gets the first answer (status and body, `Idempotent-Replayed: true`) and "
    "writes nothing; the same key with another request is a 422; while the first is still "
    "being written, a 409. Keys are per user and kept 24 hours.",
}


def _write_extra(*statuses: int) -> dict[str, Any]:
    """What a write's OpenAPI operation says beyond ninja: the Idempotency-Key header, and
    the response headers of these statuses."""
    return {
        "parameters": [_IDEMPOTENCY_KEY],
        "responses": {status: _HEADERS[status] for status in statuses},
    }


@api.post(
    "/conversations",
    response={201: Created, **_CREATE_ERRORS},
    tags=["conversations"],
    openapi_extra=_write_extra(201, 409, 503),
)
def create_conversation(
    request: HttpRequest, response: HttpResponse, payload: NewConversation
) -> Status[dict[str, int]]:
    """Store a transcript verbatim: no healing, no dedup. A crashed transcript is kept as it is."""
    [conversation] = services.import_conversations(
        [
            services.ConversationIn(
                messages=healing.parse_messages(payload.messages),
                title=payload.title,
                source=payload.source or "api",
                origin="",
                source_format="stored",
            )
        ],
        via="api",
        by=request.user,
        owner=access.real_user(request.user),
    )
    response["Location"] = reverse("api:conversation", kwargs={"conversation_id": conversation.pk})
    return Status(201, {"id": conversation.pk, "count": conversation.message_count})


@api.post(
    "/imports",
    response={201: Imported, **_CREATE_ERRORS},
    tags=["conversations"],
    openapi_extra=_write_extra(409, 503),
)
def import_transcript(request: HttpRequest, payload: ImportIn) -> Status[dict[str, Any]]:
    """Store a transcript in the stored shape or a provider's, verbatim and in one transaction:
    every conversation it holds is stored, or none."""
    given = "document" if payload.text is None else "text"
    if (payload.document is None) == (payload.text is None):
        raise healing.InvalidInput(
            [
                healing.Problem(
                    "document", "give either document (a JSON value) or text (a file's text)"
                )
            ]
        )
    title = payload.title or payload.name.rsplit("/", 1)[-1].rsplit(".", 1)[0] or "imported"
    try:
        with cyclic_gc_paused():
            if payload.text is None:
                source = formats.Source(document=payload.document)
            else:
                source = transcripts.text_source(
                    payload.text, jsonl=payload.name.endswith(".jsonl")
                )
            reading = transcripts.read_source(source, payload.format, title)
    except healing.InvalidInput as error:
        raise healing.InvalidInput(formats.collapse(error.within(f"{given}.").problems)) from None
    created = services.import_conversations(
        [replace(c, origin=f"{given}.{c.origin}") for c in reading.conversations],
        via="api",
        by=request.user,
        owner=access.real_user(request.user),
    )
    return Status(
        201,
        {
            "conversations": [
                {
                    "id": c.pk,
                    "count": c.message_count,
                    "source_format": c.source_format,
                    "unanswered": c.unanswered_count,
                }
                for c in created
            ],
            "read_as": reading.summary(),
            "skipped": [
                {"where": p.path, "why": p.message} for p in formats.collapse(reading.skipped)
            ],
        },
    )


@_get_and_head(
    "/conversations",
    response={200: ConversationPage, **_READ_ERRORS},
    tags=["conversations"],
)
def list_conversations(request: HttpRequest, filters: Query[ConversationFilter]) -> dict[str, Any]:
    """Conversations, newest (most recently created) first, so that paging stays put while
    others append."""
    conversations = access.visible_to(request.user, selectors.conversations_newest())
    if filters.unanswered is True:
        conversations = conversations.with_unanswered_calls()
    elif filters.unanswered is False:
        conversations = conversations.without_unanswered_calls()
    if filters.sendable is not None:
        conversations = conversations.filter(sendable=filters.sendable)
    query = search.clean(filters.q)
    words = search.terms(query)
    if query:
        conversations = conversations.filter(search.matching_conversations(words))
    limit = min(filters.limit, MAX_PAGE)
    page = list(conversations[filters.offset : filters.offset + limit])
    hits = search.first_hits([c.pk for c in page], words)
    # Counted no further than a few pages on, as the list page counts: every row of a
    # 100,000-row list (or every match of a common word) would cost more than the page.
    bound = min(filters.offset + TOTAL_PAGES * limit, _BIGGEST_ID - 1)
    total = conversations[: bound + 1].count()
    return {
        "total": min(total, bound),
        "total_exact": total <= bound,
        "offset": filters.offset,
        "limit": limit,
        "conversations": [
            {**_conversation_out(c), "match": _hit_out(hits.get(c.pk))} for c in page
        ],
    }


def _hit_out(hit: search.Hit | None) -> dict[str, Any] | None:
    if hit is None:
        return None
    return {"index": hit.index, "role": hit.role, "snippet": hit.snippet.text}


@_get_and_head(
    "/conversations/{int:conversation_id}",
    response={200: ConversationOut, **_READ_ERRORS},
    tags=["conversations"],
    url_name="conversation",
)
def get_conversation(request: HttpRequest, conversation_id: int) -> dict[str, Any]:
    return _conversation_out(_conversation(request, conversation_id))


@api.post(
    "/conversations/{int:conversation_id}/messages",
    response={200: AppendOut, **_ERRORS},
    tags=["messages"],
    url_name="append",
    openapi_extra=_write_extra(409, 503),
)
def append_messages(request: HttpRequest, conversation_id: int, batch: Batch) -> dict[str, Any]:
    """Append under the rules (MEM-1, 2, 3, 10, 11, 12, 14). A batch is processed one message
    at a time; a refused batch writes nothing. Indexes are positions in the resulting buffer."""
    messages = healing.parse_messages(batch.messages, appendable=True)
    conversation = _conversation(request, conversation_id)
    if not access.may_drive(request.user, conversation):
        raise HttpError(403, "You may view this conversation but not drive it: only its owner may.")
    report = services.append_messages(
        conversation=conversation, messages=messages, via="api", by=request.user
    )
    return {
        "scope": conversation.scope,
        "resolved_scope_id": "" if report.refusal else conversation.scope_id,
        "refused": report.refusal or None,
        "count": report.count,
        "appended": report.appended,
        "appended_any": report.appended_any,
        "healed": report.healed,
        "replaced": report.replaced,
        "dropped": [
            {
                "batch_index": d.batch_index,
                "reason": d.reason,
                "tool_call_id": d.tool_call_id,
                "answered_at": d.answered_at,
                "explanation": d.explanation,
            }
            for d in report.dropped
        ],
        "outcomes": report.outcomes,
        "orphans": report.orphans,
    }


@_get_and_head(
    "/conversations/{int:conversation_id}/messages",
    response={200: MessagePage, **_READ_ERRORS},
    tags=["messages"],
)
def list_messages(
    request: HttpRequest, conversation_id: int, paging: Query[Paging]
) -> dict[str, Any]:
    """The buffer in order, in the stored shape, a page at a time: a page deep in a long
    buffer costs what the first one does."""
    conversation = _conversation(request, conversation_id)
    limit = min(paging.limit, MAX_PAGE)
    rows = selectors.messages_page(conversation, offset=paging.offset, limit=limit)
    return {
        "count": conversation.message_count,
        "offset": paging.offset,
        "limit": limit,
        "messages": [row.as_core().as_stored() for row in rows],
    }


@_get_and_head(
    "/conversations/{int:conversation_id}/search",
    response={200: SearchPage, **_READ_ERRORS},
    tags=["messages"],
)
def search_conversation(
    request: HttpRequest, conversation_id: int, query: Query[SearchQuery]
) -> dict[str, Any]:
    """The messages of the buffer that hold every word of ``q`` (their text: content, text
    parts, tool calls' names and arguments, tool results), in buffer order, a page at a
    time, each with its index and a snippet around the first match."""
    conversation = _conversation(request, conversation_id)
    limit = min(query.limit, MAX_PAGE)
    words = search.terms(search.clean(query.q))
    count, hits = search.hits_page(conversation, words, offset=query.offset, limit=limit)
    return {
        "count": count,
        "offset": query.offset,
        "limit": limit,
        "hits": [_hit_out(hit) for hit in hits],
    }


@_get_and_head(
    "/conversations/{int:conversation_id}/analysis",
    response={200: AnalysisOut, **_READ_ERRORS},
    tags=["messages"],
)
def analyze_conversation(request: HttpRequest, conversation_id: int) -> dict[str, Any]:
    """What is wrong or notable in the buffer: unanswered calls with the turn that declared
    each, healed placeholders, orphan, duplicate and misplaced results, re-declared and
    unusable ids, each with its message index."""
    conversation = _conversation(request, conversation_id)
    messages = selectors.buffer_messages(conversation)
    analysis = healing.analyze(messages)
    return {
        "count": analysis.length,
        "sendability": [
            {
                "provider": verdict.provider,
                "accepted": verdict.accepted,
                "summary": verdict.summary,
                "rejections": [
                    {
                        "index": r.index,
                        "tool_call_id": r.call_id,
                        "reason": r.reason,
                        "sentence": r.sentence,
                    }
                    for r in verdict.rejections
                ],
            }
            for verdict in sendability.check_all(messages).values()
        ],
        "unanswered": analysis.unanswered,
        "findings": [
            {
                "index": f.index,
                "kind": f.kind,
                "label": f.label,
                "detail": f.detail,
                "tool_call_id": f.tool_call_id,
                "related_index": f.related_index,
            }
            for f in analysis.findings
        ],
    }


@_get_and_head(
    "/conversations/{int:conversation_id}/export",
    response={200: Any, **_READ_ERRORS},
    tags=["messages"],
    url_name="export",
)
def export_conversation(
    request: HttpRequest, conversation_id: int, query: Query[ExportQuery]
) -> HttpResponse:
    """The buffer as it is stored, in a format: the stored shape (JSON, or a JSONL line) to
    import again, the MEM-5 normalized list with what it dropped, or a provider's request
    body. Not healed: ``analysis`` says which providers would accept it. A conversation
    read from a Claude Code session or a Codex rollout is also written back as that file
    (``claude-code``, ``codex``), healed, for the runtime to resume."""
    exported = exports.export(_conversation(request, conversation_id), query.format)
    return HttpResponse(exported.body, content_type=exported.content_type)


@csrf_exempt  # an API path: no CSRF token is asked for, here as on the real endpoints
def not_found(request: HttpRequest) -> HttpResponse:
    """Any other path under /api/: a JSON 404, like every other API error."""
    return _error(request, 404, "No such endpoint.")


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's own 400s (too many fields, a bad Host): JSON under /api/."""
    if request.path.startswith("/api/"):
        return _error(request, 400, f"Bad request: {exception}")
    return bad_request(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    """An unexpected error: JSON under /api/. It is a bug: the traceback is logged."""
    if request.path.startswith("/api/"):
        return _error(request, 500, "Internal error; nothing was written.")
    return server_error(request)


def json_method_not_allowed(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: ninja answers a wrong method with a plain-text 405; under /api/ it is JSON
    like every other error (the Allow header stays)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if response.status_code == 405 and request.path.startswith("/api/"):
            allowed = response.get("Allow", "")
            response = _error(request, 405, f"Method not allowed here; allowed: {allowed}.")
            response["Allow"] = allowed
        return response

    return middleware
