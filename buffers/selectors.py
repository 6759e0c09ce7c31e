"""Reads: what the pages, the API and the commands show of stored buffers."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from . import healing
from .models import BUFFER_INDEX, Block, Conversation, Message


def conversations_recent() -> QuerySet[Conversation]:
    return Conversation.objects.order_by("-updated_at", "-id")


def messages_page(conversation: Conversation, *, offset: int, limit: int) -> QuerySet[Message]:
    """``limit`` messages from buffer index ``offset``, each annotated with its ``index``.

    A page at offset 99,950 costs what a page at offset 0 does: the block holding
    ``offset`` is found by its indexed start, and rows by their slot within it.
    """
    first_block_start = (
        Block.objects.filter(conversation=OuterRef("conversation"), start__lte=offset)
        .order_by("-start")
        .values("start")[:1]
    )
    return (
        Message.objects.in_buffer_order()
        .annotate(index=BUFFER_INDEX)
        .filter(
            conversation=conversation,
            block__start__gte=Subquery(first_block_start),
            block__start__lt=offset + limit,
            index__gte=offset,
            index__lt=offset + limit,
        )
    )


def buffer_messages(conversation: Conversation) -> list[healing.Message]:
    """The whole buffer, in order, as the pure core's messages."""
    rows = Message.objects.filter(conversation=conversation).in_buffer_order()
    return [row.as_core() for row in rows.only("role", "content", "metadata")]
