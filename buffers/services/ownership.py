"""Ownership: ownerless conversations given an owner, with an entry in each journal."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import models, transaction

from buffers.models import Action, Conversation

from .journal import Actor, Writer


def give_ownerless(
    conversations: models.QuerySet[Conversation], *, owner: User, via: str, by: Actor, reason: str
) -> list[Conversation]:
    """Make ``owner`` the owner of each conversation of ``conversations`` that has none,
    with an entry in its journal; one that has an owner keeps it. Returns those given."""
    given: list[Conversation] = []
    with transaction.atomic():
        for conversation in conversations.filter(owner__isnull=True).select_for_update():
            conversation.owner = owner
            conversation.save(update_fields=["owner"])
            Writer(via, by, Action.OWNER, reason).record(
                conversation,
                version=conversation.version,
                message_count=conversation.message_count,
                rows=[{"change": "owner", "old": None, "new": owner.get_username()}],
            )
            given.append(conversation)
    return given
