"""Sharing: who else may view a conversation (never drive it, MEM-9), each change with an
entry in its journal. Whoever calls decides who may share (``access.may_share``); these
functions keep the rules every entry point shares: a conversation is never shared with
its owner, and only with an active account."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction

from buffers.models import Action, Conversation, SharedWithGroup, SharedWithUser

from .journal import Actor, Writer

USERNAME_MAX = User._meta.get_field("username").max_length or 150


SHARING_ROWS = ("viewer added", "viewer removed", "group added", "group removed")
"""The ``change`` of each journal row a sharing write records (the ``owner`` action)."""


class SharingRefused(ValueError):
    """A share that cannot be made; its message says why, in words for the person asking."""


def viewer_named(username: str, *, among: Conversation | None = None) -> User:
    """The active user called ``username`` (exactly, as at sign-in); with ``among``, one
    of the users that conversation is shared with, active or not (to stop sharing)."""
    username = username.strip()
    if not username:
        raise SharingRefused("Type the username of the person to share it with.")
    if not username.isprintable() or len(username) > USERNAME_MAX:
        # No account has such a name, and PostgreSQL cannot even compare a NUL: no query.
        raise SharingRefused(
            f"No one here has the username {username[:USERNAME_MAX]!r}."
            if among is None
            else f"This conversation is not shared with {username[:USERNAME_MAX]!r}."
        )
    if among is not None:
        found = among.viewers.filter(username=username).first()
        if found is None:
            raise SharingRefused(f"This conversation is not shared with {username!r}.")
        return found
    found = User.objects.filter(username=username, is_active=True).first()
    if found is None:
        raise SharingRefused(f"No one here has the username {username!r}.")
    return found


def share_conversation(
    *, conversation: Conversation, viewer: User, via: str, by: Actor, reason: str = ""
) -> bool:
    """Let ``viewer`` view ``conversation``; True if that is new (then journalled), False if
    they could already. Refused for its owner, and for an inactive account."""
    if viewer.pk == conversation.owner_id:
        raise SharingRefused(
            f"{viewer.get_username()} owns this conversation: they can view and drive it."
        )
    if not viewer.is_active:
        raise SharingRefused(f"{viewer.get_username()}'s account is not active.")
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        _, created = SharedWithUser.objects.get_or_create(conversation=locked, user=viewer)
        if created:
            _journal(locked, "viewer added", viewer, via, by, reason)
    return created


def unshare_conversation(
    *, conversation: Conversation, viewer: User, via: str, by: Actor, reason: str = ""
) -> bool:
    """Stop ``viewer`` viewing ``conversation`` through a share of their own (a group's
    stays); True if they had one (then journalled)."""
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        removed, _ = SharedWithUser.objects.filter(conversation=locked, user=viewer).delete()
        if removed:
            _journal(locked, "viewer removed", viewer, via, by, reason)
    return bool(removed)


def share_with_group(
    *, conversation: Conversation, group: Group, via: str, by: Actor, reason: str = ""
) -> bool:
    """Let every member of ``group`` view ``conversation`` (the admin shares with groups);
    True if that is new (then journalled)."""
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        _, created = SharedWithGroup.objects.get_or_create(conversation=locked, group=group)
        if created:
            _record(locked, {"change": "group added", "group": group.name}, via, by, reason)
    return created


def unshare_with_group(
    *, conversation: Conversation, group: Group, via: str, by: Actor, reason: str = ""
) -> bool:
    """Stop sharing ``conversation`` with ``group``; True if it was (then journalled)."""
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
        removed, _ = SharedWithGroup.objects.filter(conversation=locked, group=group).delete()
        if removed:
            _record(locked, {"change": "group removed", "group": group.name}, via, by, reason)
    return bool(removed)


def _journal(
    conversation: Conversation, change: str, viewer: User, via: str, by: Actor, reason: str
) -> None:
    _record(conversation, {"change": change, "user": viewer.get_username()}, via, by, reason)


def _record(
    conversation: Conversation, row: dict[str, str], via: str, by: Actor, reason: str
) -> None:
    # Sharing changes who may see the buffer, not the buffer: the journal's "owner" action,
    # at the buffer's current version.
    Writer(via, by, Action.OWNER, reason).record(
        conversation,
        version=conversation.version,
        message_count=conversation.message_count,
        rows=[row],
    )
