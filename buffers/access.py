"""Who may see and drive a conversation: the one policy every entry point asks (views, API,
admin, commands). Its answers combine with AND and nothing overrides a denial (MEM-15):
there is no hook, signal or backend through which an extension could grant one.

- A conversation's **owner** may view it and drive it (append, heal), and share it: say
  who else may view it.
- Users it is **shared** with, directly or through a group, may view it. Viewing never
  grants driving (MEM-9).
- **Staff** may view every conversation and reach the admin tier, where a repair is
  made (heal, edit, delete: MEM-15). Staff do not drive someone else's conversation
  from the inspector or the API.
- Every ownership test needs a real identity on both sides (MEM-9): an anonymous caller
  (no pk), a user whose pk is 0 or an inactive user owns nothing, and an ownerless
  conversation is owned by nobody, never by everybody.
- The **shell** (a management command run by whoever holds the server) is the
  administrative tier.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, Final

from django.contrib.auth.models import User
from django.db import OperationalError, connection
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from .models import ApiToken, Conversation
from .selectors import columns_of, conversation_by_pk, instance_from_row

log = logging.getLogger("buffers")


class _Shell:
    """The principal of a management command: whoever can run one holds the database."""

    def __repr__(self) -> str:
        return "SHELL"


SHELL: Final = _Shell()

Principal = Any
"""A user (``request.user``, so possibly ``AnonymousUser``), ``None``, or ``SHELL``."""


def is_real(principal: Principal) -> bool:
    """An identity that can own something: a signed-in, active user with a usable pk."""
    return (
        principal is not None
        and principal is not SHELL
        and bool(getattr(principal, "is_authenticated", False))
        and bool(getattr(principal, "is_active", False))
        and getattr(principal, "pk", None) not in (None, 0, "0", "")
    )


def real_user(principal: Principal) -> User | None:
    """The user behind ``principal`` when it is a real identity, else None."""
    return principal if is_real(principal) and isinstance(principal, User) else None


def owns(principal: Principal, conversation: Conversation) -> bool:
    """True only when both identities are real and the same (MEM-9): ``None == None``
    owns nothing."""
    return (
        is_real(principal)
        and conversation.owner_id is not None
        and conversation.owner_id != 0
        and conversation.owner_id == principal.pk
    )


def is_administrative(principal: Principal) -> bool:
    """The admin tier: the shell, or a real staff user."""
    return principal is SHELL or (is_real(principal) and bool(principal.is_staff))


def may_view(principal: Principal, conversation: Conversation) -> bool:
    if owns(principal, conversation) or is_administrative(principal):
        return True
    if not is_real(principal):
        return False
    return visible_to(principal, Conversation.objects.filter(pk=conversation.pk)).exists()


def may_drive(principal: Principal, conversation: Conversation) -> bool:
    """Append a turn or heal through the inspector or the API: the owner only (MEM-9)."""
    return owns(principal, conversation)


def may_share(principal: Principal, conversation: Conversation) -> bool:
    """Add or remove the users it is shared with, from the inspector: the owner only.
    Staff share any conversation in the admin (the administrative tier)."""
    return owns(principal, conversation)


def visible_to[Conversations: QuerySet[Conversation]](
    principal: Principal, conversations: Conversations
) -> Conversations:
    """The conversations ``principal`` may view, so that lists and searches show nothing
    else and ids do not leak."""
    if is_administrative(principal):
        return conversations
    if not is_real(principal):
        return conversations.none()
    shared = Q(viewers=principal) | Q(viewer_groups__in=principal.groups.all())
    return conversations.filter(
        Q(owner=principal) | Q(pk__in=Conversation.objects.filter(shared).values("pk"))
    )


def visible_one(
    principal: Principal, pk: int, conversations: QuerySet[Conversation] | None = None
) -> Conversation:
    """The conversation ``pk`` (from ``conversations``) if ``principal`` may view it; else
    ``Conversation.DoesNotExist``, as for one that does not exist, so that an answer says
    nothing of another's conversation. Fetched by its key and checked here: for its owner
    or staff, one plain query, where ``visible_to``'s filter costs several times more to
    build than to run; for anyone else, one more query, to look for a share."""
    conversation = conversation_by_pk(pk) if conversations is None else conversations.get(pk=pk)
    if not may_view(principal, conversation):
        raise Conversation.DoesNotExist(f"Conversation {pk} is not visible to {principal}.")
    return conversation


_TOKEN_USER = "_flowdrop_token_user"


def user_for_request_token(request: HttpRequest, token: str) -> Any | None:
    """``user_for_token``, looked up once per request: the idempotency middleware and then
    the API's auth both ask for the user of the request's token."""
    known = getattr(request, _TOKEN_USER, None)
    if known is not None and known[0] == token:
        return known[1]
    found = user_for_token(token)
    setattr(request, _TOKEN_USER, (token, found))
    return found


def user_for_token(token: str) -> Any | None:
    """The user a live API token stands for, or None: unknown, revoked, or its user is no
    longer active. Marks when the token was last used, at most once a minute."""
    now = timezone.now()
    marked_before = connection.ops.adapt_datetimefield_value(now - timedelta(minutes=1))
    with connection.cursor() as cursor:
        cursor.execute(_USER_OF_TOKEN, [marked_before, ApiToken.digest_of(token)])
        row = cursor.fetchone()
    if row is None:
        return None
    found: Any = instance_from_row(User, row)
    found.token_id, found.token_hint, found.token_unmarked = row[-3:]
    if not is_real(found):
        return None
    if found.token_unmarked:
        try:
            ApiToken.objects.filter(pk=found.token_id).update(last_used_at=now)
        except OperationalError:  # the database is busy: the mark can wait for next time
            log.warning(
                "Could not mark API token %s… as used: the database is busy.", found.token_hint
            )
    return found


# Every API request asks this: a plain statement, built once (the ORM's ``get`` cost three
# times as much to build as to run, and a raw query set 0.2 ms in all against 0.1). The
# user's columns are converted as the ORM converts them; the token's three are attributes
# of the user as the database gives them.
_USER_OF_TOKEN = f"""
SELECT {columns_of(User, "u")}, t.id, t.hint,
    (t.last_used_at IS NULL OR t.last_used_at < %s)
FROM {User._meta.db_table} u JOIN {ApiToken._meta.db_table} t ON t.user_id = u.id
WHERE t.digest = %s AND t.revoked_at IS NULL
"""
