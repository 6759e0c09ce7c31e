"""Where rows go in a buffer's blocks: making room mid-buffer, shifting slots and block
starts, placing the tail, resizing blocks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import batched

from django.conf import settings
from django.db import connection
from django.db.models import Case, F, Value, When

from buffers import healing
from buffers.models import Block, Conversation, Message

from .verdicts import IdPositions

_INSERT_BATCH = 2_000


@dataclass(frozen=True)
class _Stored:
    """Where a stored message lives: for the rows a plan touches (owners of open calls,
    holders of results), found while loading the facts."""

    pk: int
    block_id: int
    block_start: int
    slot: int

    @property
    def position(self) -> int:
        return self.block_start + self.slot


class _Loaded(dict[int, _Stored]):
    """The rows a plan touches, by position, as the facts' reads found them; and, for the
    ids those reads covered, where each is declared and held in the buffer as it was
    (``ids``), and the buffer's last rows (``last``, by position), so that the stored
    verdicts do not read them again (``tally_after``); and the id and start of the block
    that holds the last row (``end_block``)."""

    def __init__(self, ids: IdPositions | None = None) -> None:
        super().__init__()
        self.ids = ids
        self.last: dict[int, healing.Message] = {}
        self.end_block: tuple[int, int] | None = None


def _make_room(
    conversation: Conversation, plan: healing.AppendPlan, stored: dict[int, _Stored]
) -> dict[int, int]:
    """Shift the rows after each mid-buffer insert point (placeholders go into the block of
    the turn they follow) and the blocks after them. Returns how many rows each block gets."""
    per_gap = Counter(insert.gap for insert in plan.mid_buffer_inserts())
    grown: Counter[int] = Counter()
    shifts_in: dict[int, list[tuple[int, int]]] = {}
    for gap, count in sorted(per_gap.items()):
        owner = stored[gap - 1]
        grown[owner.block_id] += count
        shifts_in.setdefault(owner.block_id, []).append((owner.slot, count))
    _shift_slots(shifts_in)
    if per_gap:
        _shift_block_starts(conversation, plan, min(per_gap))
    return dict(grown)


def _shift_slots(shifts_in: dict[int, list[tuple[int, int]]]) -> None:
    """Make room in each block after the slots that receive rows. A row after several
    insert points moves by all of them. Slots are unique per block, so rows go through
    negative values (``-slot - 1``) and back, never clashing on the way."""
    for block_id, shifts in shifts_in.items():
        whens = []
        moved = 0
        for after_slot, count in sorted(shifts):
            moved += count
            whens.append(When(slot__gt=after_slot, then=Value(moved)))
        lowest = min(slot for slot, _ in shifts)
        Message.objects.filter(block_id=block_id, slot__gt=lowest).update(
            slot=-(F("slot") + Case(*reversed(whens), default=Value(0))) - 1
        )
        Message.objects.filter(block_id=block_id, slot__lt=0).update(slot=-F("slot") - 1)


def _shift_block_starts(
    conversation: Conversation, plan: healing.AppendPlan, first_gap: int
) -> None:
    """Move the blocks after the first insert point by the rows inserted before them: one
    CASE branch per run of blocks that move alike, so at most one per block. Starts are
    unique per conversation: through negative values and back, as for slots."""
    later = Block.objects.filter(conversation=conversation, start__gte=first_gap)
    starts = sorted(later.values_list("start", flat=True))
    runs: list[tuple[int, int]] = []  # (first start of a run, how far it moves)
    for start in starts:
        moved = plan.shifted(start) - start
        if not runs or runs[-1][1] != moved:
            runs.append((start, moved))
    whens = [When(start__gte=first, then=Value(moved)) for first, moved in reversed(runs)]
    later.update(start=-(F("start") + Case(*whens, default=Value(0))) - 1)
    Block.objects.filter(conversation=conversation, start__lt=0).update(start=-F("start") - 1)


def _place_tail(
    conversation: Conversation, tail: Sequence[healing.Insert], grown: dict[int, int]
) -> list[Message]:
    """Rows appended at the end: into the last block while it has room, then new blocks."""
    if not tail:
        return []
    block_size = settings.FLOWDROP_BUFFER_BLOCK_SIZE
    placed: list[Message] = []
    remaining = list(tail)
    last: tuple[int, int] | None  # the last block's id and start
    if grown:  # mid-buffer rows too: the last block's room counts them
        found = Block.objects.filter(conversation=conversation).order_by("-start").first()
        last, room = None, 0
        if found is not None:
            last, room = (found.pk, found.start), block_size - found.size - grown.get(found.pk, 0)
            grown[found.pk] = grown.get(found.pk, 0) + max(0, min(room, len(remaining)))
    else:
        last, room = _grow_last_block(conversation, tail[0].position, len(tail), block_size)
    if last is not None:
        room = max(0, room)
        placed += [
            Message.from_core(
                insert.message,
                conversation=conversation,
                block_id=last[0],
                slot=insert.position - last[1],
            )
            for insert in remaining[:room]
        ]
        remaining = remaining[room:]
    chunks = [list(chunk) for chunk in batched(remaining, block_size)]
    blocks = Block.objects.bulk_create(
        [
            Block(conversation=conversation, start=chunk[0].position, size=len(chunk))
            for chunk in chunks
        ]
    )
    for block, chunk in zip(blocks, chunks, strict=True):
        placed += [
            Message.from_core(
                insert.message,
                conversation=conversation,
                block=block,
                slot=insert.position - block.start,
            )
            for insert in chunk
        ]
    return placed


def _grow_last_block(
    conversation: Conversation, end: int, count: int, block_size: int
) -> tuple[tuple[int, int] | None, int]:
    """The common append, rows at the end only: the last block (which ends at ``end``, the
    buffer's length) grows by as many of the ``count`` rows as it has room for, in one
    statement that answers its id and start (None: no block yet) and how many it took."""
    greatest, least = ("MAX", "MIN") if connection.vendor == "sqlite" else ("GREATEST", "LEAST")
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE buffers_block SET size = {greatest}(size, {least}(%s, %s - start)) "
            "WHERE id = (SELECT id FROM buffers_block WHERE conversation_id = %s "
            "ORDER BY start DESC LIMIT 1) RETURNING id, start, size",
            [block_size, end + count, conversation.pk],
        )
        row = cursor.fetchone()
    if row is None:
        return None, 0
    pk, start, size = row
    return (pk, start), size - (end - start)


def _resize_blocks(grown: dict[int, int]) -> None:
    if not grown:
        return
    Block.objects.filter(pk__in=grown).update(
        size=F("size")
        + Case(*(When(pk=pk, then=Value(n)) for pk, n in grown.items()), default=Value(0))
    )
