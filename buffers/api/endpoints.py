"""The endpoints: each calls the service (writes) or the selectors (reads), nothing more."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from ninja import Query, Status
from ninja.errors import HttpError

from buffers import (
    access,
    exports,
    healing,
    idempotency,
    search,
    selectors,
    services,
    transcripts,
)
from buffers.bulk import cyclic_gc_paused
from buffers.healing import formats, sendability
from buffers.models import Conversation

from .schemas import (
    TOTAL_PAGES,
    AnalysisOut,
    AppendOut,
    Batch,
    ConversationFilter,
    ConversationOut,
    ConversationPage,
    Created,
    Error,
    ExportQuery,
    Imported,
    ImportIn,
    MessagePage,
    NewConversation,
    Paging,
    SearchPage,
    SearchQuery,
)
from .site import BIGGEST_ID, MAX_PAGE, api


def _storable_id(conversation_id: int) -> int:
    """The id, or not found when no database row could have it (the path takes any digits)."""
    if conversation_id > BIGGEST_ID:
        raise services.ConversationNotFound(conversation_id)
    return conversation_id


def _conversation(request: HttpRequest, conversation_id: int) -> Conversation:
    """The conversation if the caller may view it; a 404 for one it may not, as for one
    that does not exist."""
    try:
        return access.visible_one(request.user, _storable_id(conversation_id))
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
    extra = options.setdefault("openapi_extra", {})
    extra.setdefault("responses", {})[401] = _CHALLENGE

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
_LOCATION = {
    "Location": {"description": "The new conversation's URL.", "schema": {"type": "string"}}
}
_CHALLENGE = {
    "headers": {
        "WWW-Authenticate": {
            "description": "How to authenticate: a Bearer token.",
            "schema": {"type": "string"},
        }
    }
}
_REPLAYED = {"Idempotent-Replayed": {"description": "`true` when this is the first answer, "
                                     "sent again for a retry with the same Idempotency-Key.",
                                     "schema": {"type": "string", "enum": ["true"]}}}  # fmt: skip
_EXPORT_TYPES = {
    "application/json": {"schema": {"description": "Every format but the JSONL ones."}},
    "application/jsonl": {
        "schema": {
            "type": "string",
            "description": "stored-jsonl, and the runtime files claude-code and codex.",
        }
    },
}
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


def _write_extra(success: int, *, location: bool = False) -> dict[str, Any]:
    """What a write's OpenAPI operation says beyond ninja: the Idempotency-Key header, the
    headers of its success (a replayed one says so, and a new conversation's ``Location``
    where it has one), the 401's challenge, and when to try a 409 or 503 again. Ninja keys
    responses by int: so must we, or they double."""
    headers = {**(_LOCATION if location else {}), **_REPLAYED}
    return {
        "parameters": [_IDEMPOTENCY_KEY],
        "responses": {
            success: {"headers": headers},
            401: _CHALLENGE,
            409: _RETRY_AFTER,
            503: _RETRY_AFTER,
        },
    }


@api.post(
    "/conversations",
    response={201: Created, **_CREATE_ERRORS},
    tags=["conversations"],
    openapi_extra=_write_extra(201, location=True),
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
    openapi_extra=_write_extra(201),
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
                source = transcripts.text_source(  # a file's text, BOM dropped as files'
                    payload.text.removeprefix("\ufeff"), jsonl=payload.name.endswith(".jsonl")
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
            "changed": [{"where": p.path, "why": p.message} for p in reading.changed],
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
    narrowed = filters.unanswered is not None or filters.sendable is not None
    matching = search.matching_conversations(words, narrowed=narrowed) if query else None
    if matching is not None:
        conversations = conversations.filter(matching.condition)
    limit = min(filters.limit, MAX_PAGE)
    page = list(conversations[filters.offset : filters.offset + limit])
    hits = search.first_hits(
        [c.pk for c in page],
        words,
        per_conversation=matching is not None and matching.per_conversation,
    )
    # Counted no further than a few pages on, as the list page counts: every row of a
    # 100,000-row list (or every match of a common word) would cost more than the page.
    bound = min(filters.offset + TOTAL_PAGES * limit, BIGGEST_ID - 1)
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
    openapi_extra=_write_extra(200),
)
def append_messages(
    request: HttpRequest, response: HttpResponse, conversation_id: int, batch: Batch
) -> dict[str, Any]:
    """Append under the rules (MEM-1, 2, 3, 10, 11, 12, 14). A batch is processed one message
    at a time; a refused batch writes nothing. Indexes are positions in the resulting buffer."""
    messages = healing.parse_messages(batch.messages, appendable=True)
    conversation = _conversation(request, conversation_id)
    if not access.may_drive(request.user, conversation):
        raise HttpError(403, "You may view this conversation but not drive it: only its owner may.")
    report = services.append_messages(
        conversation=conversation, messages=messages, via="api", by=request.user
    )
    if report.refusal:
        # The scope refused: nothing was written, so an Idempotency-Key stays free for the
        # request sent again once the scope is put right (ninja answers with this response).
        idempotency.wrote_nothing(response)
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
    openapi_extra={"responses": {200: {"content": _EXPORT_TYPES}}},
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
