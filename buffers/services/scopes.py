"""Who may write to a buffer: its scope resolved (MEM-6, 7, 8, 13), and whether that
changed while a write waited for the lock."""

from __future__ import annotations

import logging

from buffers import healing
from buffers.models import Conversation, Scope

log = logging.getLogger("buffers")


def resolve_scope(conversation: Conversation, via: str) -> healing.scopes.Resolution:
    """MEM-6, 7, 8 and 13 for a write to ``conversation``: the one place a scope is
    resolved for a buffer, by every consumer (API and inspector appends, admin heals).

    The execution context is built from the conversation, never from the caller: its
    owner is the ``user`` (MEM-8), and the session a ``session`` buffer belongs to is
    the conversation its scope id names (a session's transcript is a conversation). The
    resolved id must be the one the buffer is stored under; a buffer stored under
    another user's or an unknown session's id refuses too. A refusal logs exactly one
    warning naming the entry point, the conversation and the scope.
    """
    resolution = scope_resolution(conversation)
    if resolution.refused:
        log.warning(
            "Refused the %s scope of conversation %s via %s: %s; nothing was read or written.",
            conversation.scope,
            conversation.pk,
            via,
            resolution.reason,
        )
    return resolution


def scope_resolution(conversation: Conversation) -> healing.scopes.Resolution:
    """``resolve_scope``'s answer, logging nothing (asked before a change, not a write)."""
    scope = str(conversation.scope)
    context = healing.scopes.ExecutionContext(
        user_id=conversation.owner_id,
        session_id=(
            _known_session(conversation.scope_id, conversation.owner_id)
            if scope == Scope.SESSION
            else None
        ),
    )
    resolution = healing.scopes.resolve(scope, context)
    if not resolution.refused and resolution.scope_id != conversation.scope_id:
        resolution = healing.scopes.Resolution(
            scope,
            "",
            refused=True,
            reason=(
                f"the buffer is stored under {scope} id {conversation.scope_id!r}, "
                f"but its context resolves to {resolution.scope_id!r}"
            ),
        )
    return resolution


def _refused(conversation: Conversation, via: str) -> healing.AppendReport | None:
    """The neutral report when the buffer's scope refuses a write (``resolve_scope``)."""
    resolution = resolve_scope(conversation, via)
    return healing.AppendReport.refused(resolution.reason) if resolution.refused else None


def _known_session(scope_id: str, owner_id: int | None) -> str | None:
    """The session id when it is usable and names a conversation the buffer's owner owns
    (a session's principal is its owner, MEM-8; and so that the answer says nothing of
    anyone else's conversations). A usable id is looked up (one query on the
    conversations, none on any buffer); an unusable one, or an ownerless buffer, is not."""
    session = healing.scopes.real_identity(scope_id)
    if session is None:
        return scope_id or None
    if owner_id is None:
        return None
    owned = Conversation.objects.filter(pk=int(session), owner_id=owner_id).exists()
    return session if owned else None


def _changed_since_checked(checked: Conversation, locked: Conversation, via: str) -> str:
    """Why a write must not go ahead when who may drive the conversation, or its scope,
    changed between the entry point's check and the lock; "" when nothing did."""
    if (checked.owner_id, checked.scope, checked.scope_id) == (
        locked.owner_id,
        locked.scope,
        locked.scope_id,
    ):
        return ""
    log.warning(
        "Refused a write to conversation %s via %s: its owner or scope changed while it "
        "waited; nothing was written.",
        locked.pk,
        via,
    )
    return "the conversation's owner or scope changed while this write waited; send it again"
