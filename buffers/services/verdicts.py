"""The stored verdicts and problem counts (``healing.verdicts.Tally``), kept in the
transaction of every write: computed whole where the write has the whole buffer in hand
(an import, an admin edit or delete), and for an append from what it touches only: the
turns around each change, and the ids it names (docs/decisions.md, "Stored verdicts")."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import batched
from typing import Any

from django.db.models import BooleanField, F, Value

from buffers import healing, selectors
from buffers.healing.verdicts import Tally, is_head, region_counts
from buffers.models import Conversation, DeclaredCall, Message

log = logging.getLogger("buffers")

_NEAR = 8
"""Rows read on each side of a change at first: the heads of the turns near it are most
often within a few rows."""
_PAGE = 32
"""Rows read at a time when the heads are further away."""
_ID_CHUNK = 5_000


def stored_tally(conversation: Conversation) -> Tally:
    return Tally.from_stored(conversation.rejections, conversation.problem_counts)


def tally_fields(tally: Tally) -> dict[str, Any]:
    """The conversation's columns that hold ``tally``, for an ``update``."""
    return {
        "rejections": dict(tally.rejections),
        "problem_counts": dict(tally.problems),
        "sendable": tally.sendable,
    }


def store_tally(conversation: Conversation, tally: Tally) -> None:
    """The tally of a whole buffer (``healing.verdicts.tally``), stored."""
    fields = tally_fields(tally)
    Conversation.objects.filter(pk=conversation.pk).update(**fields)
    for name, value in fields.items():
        setattr(conversation, name, value)


class _OldRows:
    """Rows of the buffer as it was before the write, read a page at a time when asked."""

    def __init__(
        self, conversation: Conversation, length: int, known: Mapping[int, healing.Message]
    ) -> None:
        self.conversation = conversation
        self.length = length
        self.rows: dict[int, healing.Message] = dict(known)

    def __getitem__(self, position: int) -> healing.Message:
        if position not in self.rows:
            first = max(0, position - _PAGE // 2)
            self._load(first, min(self.length, first + _PAGE))
        return self.rows[position]

    def _load(self, first: int, end: int) -> None:
        page = selectors.core_messages_page(self.conversation, offset=first, limit=end - first)
        self.rows.update(page)

    def prefetch(self, points: Sequence[int]) -> None:
        """The rows around ``points`` (in order), a query per cluster of nearby points, not
        per point: a heal of many calls reads the stretches they are in."""
        clusters: list[list[int]] = []
        for point in points:
            if clusters and point - clusters[-1][1] <= _NEAR:
                clusters[-1][1] = point
            else:
                clusters.append([point, point])
        for first, last in clusters:
            start, end = max(0, first - _NEAR), min(self.length, last + _NEAR + 1)
            if not all(position in self.rows for position in range(start, end)):
                self._load(start, end)

    def heads_before(self, position: int, wanted: int) -> list[int]:
        """Up to ``wanted`` heads at or before ``position``, the nearest first."""
        found: list[int] = []
        while position >= 0 and len(found) < wanted:
            if position not in self.rows:
                self._load(max(0, position - _PAGE + 1), position + 1)
            if is_head(self.rows[position]):
                found.append(position)
            position -= 1
        return found

    def heads_after(self, position: int, wanted: int) -> list[int]:
        """Up to ``wanted`` heads after ``position``, the nearest first."""
        found: list[int] = []
        position += 1
        while position < self.length and len(found) < wanted:
            if position not in self.rows:
                self._load(position, min(self.length, position + _PAGE))
            if is_head(self.rows[position]):
                found.append(position)
            position += 1
        return found


@dataclass
class IdPositions:
    """Where ids are declared (their owner's position) and held (each result's position) in
    the buffer as it was, for every id in ``covers``: what an append's reads of its facts
    found, handed to ``tally_after`` so that it reads only the ids they did not cover."""

    owners: dict[str, int] = field(default_factory=dict)
    holders: dict[str, list[int]] = field(default_factory=dict)
    covers: set[str] = field(default_factory=set)


def tally_after(
    conversation: Conversation,
    plan: healing.AppendPlan,
    known: IdPositions | None = None,
    rows: Mapping[int, healing.Message] | None = None,
) -> Tally:
    """The tally once ``plan`` is written, from the stored one and what the plan touches;
    called before the plan is written (it reads the buffer as it was). ``known``: the
    positions of the ids already read, and ``rows``: rows already read, by position (no
    second query for either)."""
    written = [i.message for i in plan.inserts] + [r.message for r in plan.replacements]
    if healing.verdicts.holds_kept_call(written):  # paired over the whole buffer, unindexed
        return _counted_whole(conversation, plan)
    rejections: Counter[str] = Counter()
    problems: Counter[str] = Counter()
    old = _OldRows(conversation, plan.length_before, rows or {})
    tail = _windowed(old, plan, rejections, problems)
    owners, holders = _id_positions(conversation, plan, known or IdPositions())
    replaced = [old[r.original_position] for r in plan.replacements]
    _responses(plan, owners, holders, replaced, rejections)
    _findings(plan, owners, holders, tail, problems)
    try:
        return stored_tally(conversation).plus(rejections, problems)
    except ValueError as below_zero:
        # Stored by an earlier version that judged some message otherwise (a migration
        # counts most such conversations again): counted whole, once, not a failed write.
        log.warning(
            "conversation %s: %s; its tally is counted again from the whole buffer",
            conversation.pk,
            below_zero,
        )
        return _counted_whole(conversation, plan)


def _counted_whole(conversation: Conversation, plan: healing.AppendPlan) -> Tally:
    """The tally of the whole buffer once ``plan`` is written (read before it is)."""
    return healing.verdicts.tally(healing.apply_plan(selectors.buffer_messages(conversation), plan))


def _new_position(plan: healing.AppendPlan, position: int) -> int:
    """Where the row at ``position`` of the buffer as it was ends up; 0 stays 0 (a window
    from the buffer's start takes the rows placed before its first row)."""
    return 0 if position == 0 else plan.shifted(position)


def _windowed(
    old: _OldRows,
    plan: healing.AppendPlan,
    rejections: Counter[str],
    problems: Counter[str],
) -> tuple[int, list[healing.Message]]:
    """Add what the plan changes of the windowed providers' rejections and of the empty
    turns; return the new window that ends the buffer (its start and its messages)."""
    length = plan.length_before
    points = {insert.gap - 1 for insert in plan.inserts}  # the row each insert follows
    points.update(r.original_position for r in plan.replacements)
    old.prefetch(sorted(points))
    spans: list[tuple[int, int, int, int]] = []  # window start, window end, range start, end
    for point in sorted(points):
        before = old.heads_before(point, 2)
        after = old.heads_after(point, 2)
        first = before[0] if before else 0
        window_start = before[1] if len(before) > 1 else 0
        end = after[1] if len(after) > 1 else length
        spans.append((window_start, min(end + 1, length), first, end))
    merged: list[tuple[int, int, list[tuple[int, int]]]] = []
    for window_start, window_end, first, end in sorted(spans):
        if merged and window_start < merged[-1][1]:
            start, stop, ranges = merged[-1]
            merged[-1] = (start, max(stop, window_end), [*ranges, (first, end)])
        else:
            merged.append((window_start, window_end, [(first, end)]))

    by_gap: dict[int, list[healing.Message]] = {}
    for insert in plan.inserts:
        by_gap.setdefault(insert.gap, []).append(insert.message)
    replaced = {r.original_position: r.message for r in plan.replacements}
    tail: tuple[int, list[healing.Message]] = (length, [])
    for start, stop, ranges in merged:
        was = [old[position] for position in range(start, stop)]
        counts = region_counts(was, start, ranges)
        now: list[healing.Message] = list(by_gap.get(0, ())) if start == 0 else []
        for position in range(start, stop):
            if position > start:
                now += by_gap.get(position, ())
            now.append(replaced.get(position, old[position]))
        if stop > start:
            now += by_gap.get(stop, ())
        new_start = _new_position(plan, start)
        new_ranges = [(_new_position(plan, a), plan.shifted(b)) for a, b in ranges]
        counts.subtract(region_counts(now, new_start, new_ranges))
        for key, count in counts.items():
            target = problems if key in healing.verdicts.REJECTION_PROBLEMS else rejections
            target[key] -= count
        if stop == length:
            tail = (new_start, now)
    return tail


def _id_positions(
    conversation: Conversation, plan: healing.AppendPlan, known: IdPositions
) -> tuple[dict[str, int], dict[str, list[int]]]:
    """For each id the plan's new rows name: the position of its owner and of each row that
    holds a result for it, in the buffer as it was; read for the ids ``known`` does not
    cover (none, for an append: its facts covered every id it can write)."""
    written = [i.message for i in plan.inserts] + [r.message for r in plan.replacements]
    named = healing.ids_in_batch(written)
    owners = {i: known.owners[i] for i in named if i in known.owners}
    holders = {i: known.holders[i] for i in named if i in known.holders}
    ids = sorted(named - known.covers)
    owner = Value(True, output_field=BooleanField())
    holder = Value(False, output_field=BooleanField())
    for chunk in batched(ids, _ID_CHUNK):
        declared = DeclaredCall.objects.filter(
            conversation=conversation, call_id__in=chunk
        ).values_list("call_id", F("message__block__start") + F("message__slot"), owner)
        answered = Message.objects.filter(
            conversation=conversation, answers_call_id__in=chunk
        ).values_list("answers_call_id", F("block__start") + F("slot"), holder)
        for call_id, position, is_owner in declared.union(answered, all=True):  # one query
            if is_owner:
                owners[call_id] = position
            else:
                holders.setdefault(str(call_id), []).append(position)
    return owners, holders


def _new_holders(plan: healing.AppendPlan) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for insert in plan.inserts:
        if (call_id := healing.result_call_id(insert.message)) is not None:
            found.setdefault(call_id, []).append(insert.position)
    return found


def _responses(
    plan: healing.AppendPlan,
    owners: dict[str, int],
    holders: dict[str, list[int]],
    replaced: Sequence[healing.Message],
    rejections: Counter[str],
) -> None:
    """OpenAI Responses, id by id: before and after the plan, for every id it names; and
    message by message, for what it writes and the rows it replaces (``replaced``)."""
    verdicts = healing.verdicts
    new_owners = {d.call_id: d.position for d in plan.declarations}
    new_holders = _new_holders(plan)
    change = verdicts.responses_without_id(i.message for i in plan.inserts)
    written = [i.message for i in plan.inserts] + [r.message for r in plan.replacements]
    change += verdicts.responses_refused_parts(written) - verdicts.responses_refused_parts(replaced)
    for call_id in owners.keys() | holders.keys() | new_owners.keys() | new_holders.keys():
        was = holders.get(call_id, [])
        owner = owners.get(call_id)
        change -= verdicts.responses_by_id(owner, was)
        change += verdicts.responses_by_id(
            plan.shifted(owner) if owner is not None else new_owners.get(call_id),
            [plan.shifted(p) for p in was] + new_holders.get(call_id, []),
        )
    rejections["openai-responses"] += change


def _findings(
    plan: healing.AppendPlan,
    owners: dict[str, int],
    holders: dict[str, list[int]],
    tail: tuple[int, list[healing.Message]],
    problems: Counter[str],
) -> None:
    """The analysis's findings: on the new rows at the end, analysed with their ids' facts
    as they will be; and on the rows the plan touches elsewhere, by what it did there."""
    problems["unanswered_call"] -= len(plan.answered)  # their owners are answered now
    problems["healed_placeholder"] -= len(plan.replacements)
    # Placeholders healed in after their turn (or a late result already put in their place):
    # the first row for an open call, right after its owner, so nothing else is found there.
    mid = plan.mid_buffer_inserts()
    problems["healed_placeholder"] += sum(healing.is_placeholder(i.message) for i in mid)
    for declaration in plan.declarations:
        if declaration.call_id in holders:  # an orphan result, now before its declaration
            problems["orphan_result"] -= 1
            problems["non_adjacent_result"] += 1

    rows = plan.tail_inserts()
    if not rows:
        return
    window_start, window = tail
    new_owners = {d.call_id: d.position for d in plan.declarations}
    new_holders = _new_holders(plan)
    facts: dict[str, healing.CallFacts] = {}
    for call_id in healing.ids_in_batch([i.message for i in rows]):
        owner = plan.shifted(owners[call_id]) if call_id in owners else new_owners.get(call_id)
        results = [plan.shifted(p) for p in holders.get(call_id, [])]
        results += new_holders.get(call_id, [])
        facts[call_id] = healing.CallFacts(
            owner=owner,
            first_result=min(results, default=None),
            owner_block_end=None if owner is None else _run_end(owner, window_start, window),
        )
    found = healing.analyze_window([i.message for i in rows], rows[0].position, facts)
    problems.update(finding.kind for finding in found)


def _run_end(owner: int, window_start: int, window: Sequence[healing.Message]) -> int:
    """Just past the run of tool messages after ``owner``, in the buffer after the write,
    known from the window that ends it; an owner before that window has a head (not a tool
    message) between it and the window's rows, so its run ends before them."""
    if owner < window_start:
        return window_start
    for position in range(owner + 1, window_start + len(window)):
        if window[position - window_start].role != "tool":
            return position
    return window_start + len(window)
