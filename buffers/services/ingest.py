"""Live ingest: the model calls of OpenTelemetry traces, stored as the conversations they
belong to (docs/decisions.md, "Live ingest").

A model call's span carries the messages it was sent (its input: the history so far) and
what it answered (its output). Spans of one conversation are grouped by
``gen_ai.conversation.id``, else by trace. The first span makes the conversation; each
later one adds only what is new. What is stored is known by its digests
(``TracedMessage``, one per traced message), so recognizing the stored prefix of a span's
input reads two digests, never the buffer: the cost of a span does not grow with the
conversation. A span older than what is stored (out of order, or sent twice) adds
nothing. A span whose input contradicts what is stored (the agent rewrote its history) is
stored as a new conversation that names where it branched, and the first says so too.

Messages are stored verbatim (``healing.plan_verbatim``), through the journal, never
healed: the inspector shows what happened; healing stays a person's act.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from buffers import healing, selectors
from buffers.healing import otlp
from buffers.models import Action, Conversation, Message, Scope, TracedMessage

from .appends import _apply, _claim_version, _load_facts
from .imports import ConversationIn, import_conversations
from .journal import Writer
from .locking import with_buffer_lock

VIA = "otlp"
SOURCE = "OpenTelemetry"


@dataclass
class Ingested:
    """What one request's model calls did: how many were stored (or already were), which
    were refused and why, and the conversations they touched."""

    calls: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)
    conversations: set[int] = field(default_factory=set)


def ingest_model_calls(calls: Sequence[otlp.ModelCall], *, owner: User) -> Ingested:
    """Store each model call in its conversation, in the order their histories grew."""
    done = Ingested()
    groups: dict[str, list[otlp.ModelCall]] = {}
    for call in calls:
        groups.setdefault(_group(call), []).append(call)
    for group, members in groups.items():
        members.sort(key=lambda call: (len(call.messages), call.start_ns))
        for call in members:
            try:
                conversation = _ingest_one(call, group, owner)
            except healing.InvalidInput as error:
                done.rejected.append((call.span_id, "; ".join(str(p) for p in error.problems)))
                continue
            done.calls += 1
            if conversation is not None:
                done.conversations.add(conversation)
    return done


def _group(call: otlp.ModelCall) -> str:
    if call.conversation_id:
        return f"conversation {call.conversation_id}"
    return f"trace {call.trace_id}"


def _key(owner: User, group: str, branch: str = "") -> str:
    """The conversation's key: in the owner's own namespace, so that no one else's
    conversation id ever names (or reveals) one of theirs."""
    digest = hashlib.sha256(f"{group}{branch}".encode()).hexdigest()[:40]
    return f"otlp:{owner.pk}:{digest}"


def _ingest_one(call: otlp.ModelCall, group: str, owner: User) -> int | None:
    if not call.messages:
        return None
    # Keys are per owner: only the owner's conversation under this key is this group's,
    # whatever anyone else has keyed theirs.
    theirs = Conversation.objects.filter(
        owner=owner, scope=Scope.GLOBAL, scope_id="", key=_key(owner, group)
    )
    conversation = theirs.first()
    if conversation is None:
        made = _create(call, group, owner, _key(owner, group))
        if made is not None:
            return made
        conversation = theirs.get()  # made by a request running beside this one
    return with_buffer_lock(conversation.pk, VIA, lambda locked: _extend(locked, call, owner))


def _create(
    call: otlp.ModelCall,
    group: str,
    owner: User,
    key: str,
    branched: dict[str, Any] | None = None,
) -> int | None:
    """The new conversation of ``key``; None when a request running beside this one
    stored it first (the caller extends that one)."""
    rows, starts = _rows(call, 0, 0)
    metadata: dict[str, Any] = {"group": group, "messages": len(call.messages)}
    if call.conversation_id:
        metadata["conversation_id"] = call.conversation_id
    if branched:
        metadata["branched_from"] = branched
    incoming = ConversationIn(
        messages=rows,
        title=call.title[:300],
        source=SOURCE,
        key=key,
        source_format="otel-genai",
        metadata={"otel": metadata},
        origin="",  # the problems are the span's: Ingested.rejected names it
    )
    try:
        with transaction.atomic():
            made = import_conversations(
                [incoming], via=VIA, by=owner, owner=owner, on_existing="skip"
            )
            for conversation in made:
                _trace(conversation, call.messages, 0, starts)
    except IntegrityError:  # the other request committed between the check and the insert
        return None
    return made[0].pk if made else None


def _extend(conversation: Conversation, call: otlp.ModelCall, owner: User) -> int:
    kept: dict[str, Any] = dict(conversation.metadata.get("otel", {}))
    stored = int(kept.get("messages", 0))
    sent = len(call.messages)
    last = min(stored, sent) - 1
    places = {0, last}
    digests = dict(
        TracedMessage.objects.filter(conversation=conversation, position__in=places).values_list(
            "position", "digest"
        )
    )
    if any(digests.get(p) not in otlp.digests(call.messages[p]) for p in places):
        return _branch(conversation, call, owner, kept)
    if sent <= stored:  # older than what is stored, or sent again
        _add_facts(conversation, call, owner)
        return conversation.pk
    rows, starts = _rows(call, stored, conversation.message_count)
    facts, existing = _load_facts(conversation, rows)
    plan = healing.plan_verbatim(facts, rows)
    _apply(conversation, plan, existing, Writer(VIA, owner, Action.APPEND))
    _trace(conversation, call.messages, stored, starts)
    kept["messages"] = sent
    Conversation.objects.filter(pk=conversation.pk).update(
        metadata={**conversation.metadata, "otel": kept}
    )
    return conversation.pk


def _add_facts(conversation: Conversation, call: otlp.ModelCall, owner: User) -> None:
    """A span that came after the next one, whose history stored its answer without the
    facts only its own span knows (model, usage, latency...): they join the answer's row,
    where the answer's own words win; journalled as an edit. Nothing when it has them."""
    facts = call.facts
    if not facts or call.input_count >= len(call.messages):
        return
    position = len(call.messages) - 1
    first_row = (
        TracedMessage.objects.filter(conversation=conversation, position=position)
        .values_list("row", flat=True)
        .first()
    )
    if first_row is None:
        return
    answer = next(
        (row for row in selectors.messages_page(conversation, offset=first_row, limit=1)), None
    )
    # The row the answer was stored at, unless a repair in the admin (a delete, a heal's
    # placeholder before it) has moved another there since: then nothing is written.
    written = healing.parse_messages(otlp.rows(call.messages[position], "answer"))
    if answer is None or answer.role != "assistant" or answer.content != written[0].content:
        return
    had = answer.metadata.get("facts")
    merged = {**facts, **had} if isinstance(had, dict) else facts
    if merged == had:
        return
    old = answer.as_core()
    metadata = {**answer.metadata, "facts": merged}
    _claim_version(conversation)
    Message.objects.filter(pk=answer.pk).update(metadata=metadata)
    new = old.model_copy(update={"metadata": metadata})
    Writer(VIA, owner, Action.EDIT, "the facts of its span, which came after the next").record(
        conversation,
        version=conversation.version + 1,
        message_count=conversation.message_count,
        rows=[
            {"change": "edited", "index": first_row, "old": old.as_stored(), "new": new.as_stored()}
        ],
    )


def _branch(
    conversation: Conversation, call: otlp.ModelCall, owner: User, kept: dict[str, Any]
) -> int:
    """A history that contradicts what is stored: a new conversation from where the two
    part, named on both. A later span of the rewritten history continues the branch."""
    stored = dict(
        TracedMessage.objects.filter(conversation=conversation).values_list("position", "digest")
    )
    at = next(
        (
            position
            for position, message in enumerate(call.messages)
            if stored.get(position) not in otlp.digests(message)
        ),
        len(call.messages),
    )
    row = (
        TracedMessage.objects.filter(conversation=conversation, position=at)
        .values_list("row", flat=True)
        .first()
    )
    at_row = conversation.message_count if row is None else row
    group = str(kept.get("group", ""))
    for branch in reversed(kept.get("branches", [])):
        found = Conversation.objects.filter(pk=branch["conversation"], owner=owner).first()
        if found is not None:
            verdict = with_buffer_lock(found.pk, VIA, lambda locked: _continues(locked, call))
            if verdict:
                return with_buffer_lock(found.pk, VIA, lambda locked: _extend(locked, call, owner))
    key = _key(owner, group, f" branch {call.span_id}")
    existing = Conversation.objects.filter(
        owner=owner, scope=Scope.GLOBAL, scope_id="", key=key
    ).first()
    if existing is not None:  # this very span branched before: it was sent again
        return existing.pk
    made = _create(
        call,
        group,
        owner,
        key,
        branched={"conversation": conversation.pk, "at": at_row, "title": str(conversation)},
    )
    if made is None:  # this very span, sent again, branched in a request beside this one
        return Conversation.objects.get(owner=owner, scope=Scope.GLOBAL, scope_id="", key=key).pk
    branches = [*kept.get("branches", []), {"conversation": made, "at": at_row}]
    Conversation.objects.filter(pk=conversation.pk).update(
        metadata={**conversation.metadata, "otel": {**kept, "branches": branches}}
    )
    return made


def _continues(conversation: Conversation, call: otlp.ModelCall) -> bool:
    kept = conversation.metadata.get("otel", {})
    last = min(int(kept.get("messages", 0)), len(call.messages)) - 1
    if last < 0:
        return False
    digests = dict(
        TracedMessage.objects.filter(conversation=conversation, position__in={0, last}).values_list(
            "position", "digest"
        )
    )
    return all(digests.get(p) in otlp.digests(call.messages[p]) for p in {0, last})


def _rows(
    call: otlp.ModelCall, first: int, row_index: int
) -> tuple[list[healing.Message], list[int]]:
    """The stored rows of the call's messages from ``first`` on, and the buffer index where
    each message's rows start; the output's rows carry the call's facts."""
    rows: list[healing.Message] = []
    starts: list[int] = []
    for position in range(first, len(call.messages)):
        starts.append(row_index + len(rows))
        made = otlp.rows(
            call.messages[position],
            f"messages[{position}]",
            facts=call.facts if position >= call.input_count else None,
        )
        rows.extend(healing.parse_messages(made, json_checked=True))
    return rows, starts


def _trace(
    conversation: Conversation, messages: Sequence[dict[str, Any]], first: int, starts: list[int]
) -> None:
    TracedMessage.objects.bulk_create(
        TracedMessage(
            conversation=conversation,
            position=first + offset,
            digest=otlp.digest(messages[first + offset]),
            row=row,
        )
        for offset, row in enumerate(starts)
    )
