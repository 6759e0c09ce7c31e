"""Ownership: who owns a conversation (ownerless ones given an owner, an owner changed in
the admin), with an entry in its journal for each change."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import models, transaction

from buffers.models import Action, Conversation, Scope, SharedWithUser

from .journal import Actor, Writer
from .scopes import scope_resolution


class OwnershipRefused(ValueError):
    """An owner a conversation cannot be given; its message says why."""


def key_taken_by(conversation: Conversation, owner: User | None) -> str:
    """Why ``owner`` (None: nobody) cannot own ``conversation``: another of the conversations
    they own (or of the ownerless ones, which share one space of keys) is stored under its
    scope, scope id and key, which name one conversation of each owner's. Empty when they
    can."""
    owners = (
        Conversation.objects.filter(owner__isnull=True)
        if owner is None
        else Conversation.objects.filter(owner=owner)
    )
    other = (
        owners.filter(
            scope=conversation.scope, scope_id=conversation.scope_id, key=conversation.key
        )
        .exclude(pk=conversation.pk)
        .values_list("pk", flat=True)
        .first()
    )
    if other is None:
        return ""
    under = (
        f"the key {conversation.key!r}"
        if conversation.scope == Scope.GLOBAL
        else f"the {conversation.scope} scope {conversation.scope_id!r} and the key "
        f"{conversation.key!r}"
    )
    if owner is None:
        return (
            f"An ownerless conversation is already stored under {under} (conversation "
            f"{other}): ownerless conversations share one space of keys."
        )
    return (
        f"{owner.get_username()} already owns a conversation stored under {under} "
        f"(conversation {other}): a key names one conversation of each owner's."
    )


def owner_refusal(conversation: Conversation, owner: User | None) -> str:
    """Why ``owner`` (None: nobody) cannot own ``conversation``: a key they already hold
    (``key_taken_by``), or a scope that takes writes now and would refuse every one under
    them (a user buffer is stored under its owner's id, MEM-8). Empty when they can."""
    if why := key_taken_by(conversation, owner):
        return why
    if conversation.scope == Scope.GLOBAL or scope_resolution(conversation).refused:
        return ""
    moved = Conversation(
        pk=conversation.pk,
        scope=conversation.scope,
        scope_id=conversation.scope_id,
        owner_id=owner.pk if owner is not None else None,
    )
    after = scope_resolution(moved)
    if not after.refused:
        return ""
    whom = owner.get_username() if owner is not None else "nobody"
    return (
        f"It is a {conversation.scope} buffer stored under {conversation.scope} id "
        f"{conversation.scope_id!r}: owned by {whom}, its scope would refuse every write "
        f"({after.reason}). Export it and import it for them instead."
    )


def _no_longer_viewer(conversation: Conversation, owner: User | None) -> list[dict[str, str]]:
    """A new owner is no viewer of their own conversation: the journal's rows for that."""
    if owner is None:
        return []
    removed, _ = SharedWithUser.objects.filter(conversation=conversation, user=owner).delete()
    return [{"change": "viewer removed", "user": owner.get_username()}] if removed else []


def change_owner(
    *, conversation: Conversation, owner: User | None, via: str, by: Actor, reason: str = ""
) -> bool:
    """Make ``owner`` (None: nobody) the owner of ``conversation``, with an entry in its
    journal; True if that changed anything. Refused (``OwnershipRefused``) when the new
    owner cannot own it (``owner_refusal``). A viewer made owner is a viewer no longer."""
    with transaction.atomic():
        locked = (
            Conversation.objects.select_for_update(of=("self",))
            .select_related("owner")
            .get(pk=conversation.pk)
        )
        old = locked.owner
        if (old.pk if old is not None else None) == (owner.pk if owner is not None else None):
            return False
        if why := owner_refusal(locked, owner):
            raise OwnershipRefused(why)
        Conversation.objects.filter(pk=locked.pk).update(owner=owner)
        Writer(via, by, Action.OWNER, reason).record(
            locked,
            version=locked.version,
            message_count=locked.message_count,
            rows=[
                {
                    "change": "owner",
                    "old": old.get_username() if old is not None else None,
                    "new": owner.get_username() if owner is not None else None,
                },
                *_no_longer_viewer(locked, owner),
            ],
        )
    conversation.owner = owner
    return True


def give_ownerless(
    conversations: models.QuerySet[Conversation], *, owner: User, via: str, by: Actor, reason: str
) -> list[Conversation]:
    """Make ``owner`` the owner of each conversation of ``conversations`` that has none,
    with an entry in its journal; one that has an owner keeps it, and one stored under a
    key ``owner`` already holds stays ownerless (``owner_refusal``: keys are per owner).
    Returns those given."""
    given: list[Conversation] = []
    with transaction.atomic():
        for conversation in conversations.filter(owner__isnull=True).select_for_update():
            if owner_refusal(conversation, owner):
                continue
            conversation.owner = owner
            conversation.save(update_fields=["owner"])
            Writer(via, by, Action.OWNER, reason).record(
                conversation,
                version=conversation.version,
                message_count=conversation.message_count,
                rows=[
                    {"change": "owner", "old": None, "new": owner.get_username()},
                    *_no_longer_viewer(conversation, owner),
                ],
            )
            given.append(conversation)
    return given
