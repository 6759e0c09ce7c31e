"""Reads: what the pages, the API and the commands show of stored buffers."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet, Subquery

from . import healing
from .models import BUFFER_INDEX, Block, Conversation, ConversationQuerySet, Message


def conversations_newest() -> ConversationQuerySet:
    """Most recently created first: a stable order to page through while others append."""
    return Conversation.objects.order_by("-created_at", "-id")


def conversations_recent() -> ConversationQuerySet:
    """Most recently updated first: what an inspector wants to see on top."""
    return Conversation.objects.order_by("-updated_at", "-id")


def messages_page(conversation: Conversation, *, offset: int, limit: int) -> QuerySet[Any]:
    """``limit`` messages from buffer index ``offset``, each annotated with its ``index``
    (typed ``Any``: django-stubs cannot carry the annotation through the custom queryset).

    A page at offset 99,950 costs what a page at offset 0 does: the blocks that hold the
    page are found by their indexed start, and their rows by slot.
    """
    first_start = (
        Block.objects.filter(conversation=conversation, start__lte=offset)
        .order_by("-start")
        .values("start")[:1]
    )
    covering = Block.objects.filter(
        conversation=conversation, start__gte=Subquery(first_start), start__lt=offset + limit
    )
    page = (
        Message.objects.filter(block__in=covering.values("pk"))
        .in_buffer_order()
        .annotate(index=BUFFER_INDEX)
        .filter(index__gte=offset, index__lt=offset + limit)
    )
    return page


def buffer_messages(conversation: Conversation) -> list[healing.Message]:
    """The whole buffer, in order, as the pure core's messages."""
    rows = Message.objects.filter(conversation=conversation).in_buffer_order()
    return [row.as_core() for row in rows.only("role", "content", "metadata")]
