"""What must hold of a stored buffer after any write: its order is dense, and its index
columns and counters say what a scan of its messages says."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from buffers import healing, search, selectors
from buffers.models import Block, Conversation, DeclaredCall, Message


def assert_consistent(conversation: Conversation) -> None:
    conversation.refresh_from_db()
    blocks = list(Block.objects.filter(conversation=conversation).order_by("start"))
    expected_start = 0
    for block in blocks:
        assert block.start == expected_start, f"block {block.pk} starts at {block.start}"
        assert block.size > 0
        slots = sorted(Message.objects.filter(block=block).values_list("slot", flat=True))
        assert slots == list(range(block.size)), f"block {block.pk} slots {slots}"
        expected_start += block.size
    assert conversation.message_count == expected_start

    # The title's and source's words, as the search reads them (migration 0018).
    assert set(conversation.search_words.split()) == set(
        search.words_of(f"{conversation.title} {conversation.source}").split()
    )

    messages = selectors.buffer_messages(conversation)
    index = healing.index_buffer(messages)
    assert conversation.unanswered_count == len(index.open_calls())
    assert conversation.healed_count == len(index.placeholders)
    expected = healing.verdicts.tally(messages)  # the stored verdicts, as a fresh check says
    assert (conversation.rejections, conversation.problem_counts, conversation.sendable) == (
        dict(expected.rejections),
        dict(expected.problems),
        expected.sendable,
    )

    # What no foreign key keeps (migrations 0012, 0016): each message has its block, each
    # declared call its message, and their conversation columns are their block's and
    # their message's.
    blocks_of = Block.objects.filter(pk=OuterRef("block_id"))
    assert not Message.objects.filter(~Exists(blocks_of), conversation=conversation).exists()
    messages_of = Message.objects.filter(pk=OuterRef("message_id"))
    assert not DeclaredCall.objects.filter(~Exists(messages_of), conversation=conversation).exists()
    assert (
        not Message.objects.filter(block__conversation=conversation)
        .exclude(conversation=conversation)
        .exists()
    )
    assert (
        not Message.objects.filter(conversation=conversation)
        .exclude(block__conversation=conversation)
        .exists()
    )
    assert (
        not DeclaredCall.objects.filter(message__conversation=conversation)
        .exclude(conversation=conversation)
        .exists()
    )

    rows = Message.objects.filter(conversation=conversation).in_buffer_order()
    assert [(r.answers_call_id, r.is_placeholder) for r in rows] == [
        (healing.result_call_id(m), healing.is_placeholder(m)) for m in messages
    ]
    declared = {
        d.call_id: (d.message_id, d.ordinal, d.answered)
        for d in DeclaredCall.objects.filter(conversation=conversation)
    }
    row_ids = list(rows.values_list("pk", flat=True))
    assert declared == {
        call_id: (row_ids[position], ordinal, call_id in index.holders)
        for call_id, (position, ordinal) in index.owners.items()
    }
