"""The append planner: what a batch of incoming messages does to a buffer.

The batch is processed one message at a time, as if each were appended alone, so
"earlier in the same append" counts as already in the buffer (A3):

- a ``tool`` result whose id a real result already holds is dropped (MEM-1); one
  whose id only a healed placeholder holds replaces that placeholder in place
  (MEM-10), unless it is itself marked healed, when it is dropped (A13);
  otherwise it is appended, orphan or not;
- an ``assistant`` turn is dropped only when it declares at least one id and every
  id it declares is already declared (MEM-2, A1); otherwise it is appended whole;
- a ``user`` turn first heals: every declared call with no result anywhere gets a
  placeholder directly after the turn that owns it, in declaration order (MEM-3,
  A4); then the turn is appended;
- a ``system`` message is appended and heals nothing.

The plan says where each new row goes, which rows are overwritten, and what the
append reports (MEM-14); the caller applies it, to a list or to the database.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from .facts import BufferFacts, ResultSlot
from .ids import declared_call_ids, declared_calls, is_placeholder, result_call_id
from .messages import Message, placeholder_for

DropReason = Literal["duplicate_result", "duplicate_turn", "healed_duplicate"]
Action = Literal["appended", "replaced", "dropped"]

DROP_REASONS: dict[str, str] = {
    "duplicate_result": "a result for this tool call id is already in the buffer (MEM-1)",
    "duplicate_turn": "every tool call this turn declares is already declared (MEM-2)",
    "healed_duplicate": "a message marked healed never replaces or repeats a result (MEM-10)",
}


@dataclass(frozen=True)
class Healed:
    index: int
    tool_call_id: str
    declared_at: int
    """The index of the turn whose call the placeholder answers (it sits right after it)."""
    declared_before: int | None = None
    """Where that turn is in the buffer as it was before this write: what a preview, which
    writes nothing, numbers by. None when the turn came in the same batch."""


@dataclass(frozen=True)
class Replaced:
    index: int
    tool_call_id: str


@dataclass(frozen=True)
class Dropped:
    batch_index: int
    reason: DropReason
    tool_call_id: str | None
    answered_at: int | None = None
    """For a dropped result: the index of the row that already answers its call."""

    @property
    def explanation(self) -> str:
        if self.answered_at is None:
            return DROP_REASONS[self.reason]
        if self.reason == "healed_duplicate":
            return (
                "a message marked healed never replaces or repeats a result, and this call "
                f"is already answered at message {self.answered_at} (MEM-10)"
            )
        return f"this call is already answered at message {self.answered_at} (MEM-1)"


@dataclass(frozen=True)
class Orphan:
    """An appended tool result that no call before it declares: providers that pair
    results with calls by id refuse such a history (``sendability.PAIRS_BY_ID``)."""

    index: int
    tool_call_id: str


@dataclass(frozen=True)
class Outcome:
    """What became of one incoming message."""

    batch_index: int
    action: Action
    index: int | None
    reason: DropReason | None = None


@dataclass(frozen=True)
class AppendReport:
    """MEM-14: how much of an append was new, and what the rules did on the way."""

    count: int
    appended: int
    healed: tuple[Healed, ...]
    replaced: tuple[Replaced, ...]
    dropped: tuple[Dropped, ...]
    outcomes: tuple[Outcome, ...]
    refusal: str = ""
    """Why the buffer's scope refused the write (MEM-6, 7, 13); then nothing was read or
    written, and the report is the neutral one: an empty buffer, ``count`` 0."""
    orphans: tuple[Orphan, ...] = ()

    @property
    def appended_any(self) -> bool:
        return self.appended > 0

    @classmethod
    def refused(cls, reason: str) -> AppendReport:
        return cls(
            count=0, appended=0, healed=(), replaced=(), dropped=(), outcomes=(), refusal=reason
        )


@dataclass(frozen=True)
class Insert:
    """A new row. ``gap`` is where it goes in the buffer as it was: before the row that
    was at ``gap`` (``gap == length`` means after the last one)."""

    gap: int
    position: int
    message: Message
    batch_index: int | None


@dataclass(frozen=True)
class Replacement:
    """A stored row overwritten in place (MEM-10)."""

    original_position: int
    position: int
    message: Message


@dataclass(frozen=True)
class Declaration:
    """A call id this batch declares for the first time, and whether it ends up answered."""

    call_id: str
    position: int
    ordinal: int
    answered: bool


@dataclass(frozen=True)
class AppendPlan:
    length_before: int
    inserts: tuple[Insert, ...]
    replacements: tuple[Replacement, ...]
    declarations: tuple[Declaration, ...]
    answered: tuple[str, ...]
    """Open calls of the buffer as it was that this batch answered, by a result or a placeholder."""
    placeholders_delta: int
    report: AppendReport

    @property
    def unanswered_delta(self) -> int:
        opened = sum(1 for declaration in self.declarations if not declaration.answered)
        return opened - len(self.answered)

    def shifted(self, original_position: int) -> int:
        """Where a row of the buffer as it was ends up."""
        return _shifted(self._gaps, original_position)

    @cached_property
    def _gaps(self) -> list[int]:
        return [i.gap for i in self.inserts]  # non-decreasing: inserts are in buffer order

    def mid_buffer_inserts(self) -> list[Insert]:
        """Placeholders healed into the buffer as it was, in buffer order."""
        return [i for i in self.inserts if i.gap < self.length_before]

    def tail_inserts(self) -> list[Insert]:
        """Rows after the last row of the buffer as it was, in buffer order."""
        return [i for i in self.inserts if i.gap == self.length_before]


def _shifted(gaps: list[int], original_position: int) -> int:
    """``original_position`` plus the rows inserted before it (``gaps`` sorted)."""
    return original_position + bisect_right(gaps, original_position)


class _Row:
    """A new row while planning; its final position is known only at the end."""

    __slots__ = ("batch_index", "gap", "message", "position")

    def __init__(self, message: Message, gap: int, batch_index: int | None) -> None:
        self.message = message
        self.gap = gap
        self.batch_index = batch_index
        self.position = -1


type _Holder = _Row | ResultSlot


class _Planner:
    def __init__(self, facts: BufferFacts) -> None:
        self.facts = facts
        self.length = facts.length
        self.gaps: dict[int, list[_Row]] = {}
        self.tail = self.gaps.setdefault(self.length, [])
        self.held: dict[str, _Holder] = {}
        self.new_owners: dict[str, tuple[_Row, int]] = {}
        self.open_new: dict[str, tuple[_Row, int]] = {}
        self.answered_stored: list[str] = []
        self.replaced_stored: dict[int, Message] = {}
        self.healed: list[tuple[_Row, str, _Row | int]] = []
        self.replaced: list[tuple[_Row | int, str]] = []
        self.dropped: list[tuple[int, DropReason, str | None, _Holder | None]] = []
        self.orphans: list[tuple[_Row, str]] = []
        self.outcomes: list[tuple[int, Action, _Row | int | None, DropReason | None]] = []

    # What is known, stored or planned.

    def holder(self, call_id: str) -> _Holder | None:
        if call_id in self.held:
            return self.held[call_id]
        return self.facts.result_for(call_id)

    def is_declared(self, call_id: str) -> bool:
        return call_id in self.new_owners or self.facts.is_declared(call_id)

    def append(self, message: Message, batch_index: int | None) -> _Row:
        row = _Row(message, self.length, batch_index)
        self.tail.append(row)
        return row

    def answer(self, call_id: str, holder: _Holder) -> None:
        """Record that ``holder`` now answers ``call_id``, which no row answered before."""
        self.held[call_id] = holder
        if self.open_new.pop(call_id, None) is None and self.facts.is_declared(call_id):
            self.answered_stored.append(call_id)

    # One incoming message at a time.

    def take(self, index: int, message: Message) -> None:
        if message.role == "tool":
            self.take_result(index, message)
        elif message.role == "assistant":
            self.take_turn(index, message)
        else:
            if message.role == "user":
                self.heal()
            row = self.append(message, index)
            self.outcomes.append((index, "appended", row, None))

    def take_result(self, index: int, message: Message) -> None:
        call_id = result_call_id(message)
        if call_id is None:
            # Nothing to deduplicate by; the append service refuses these before planning.
            row = self.append(message, index)
            self.outcomes.append((index, "appended", row, None))
            return
        holder = self.holder(call_id)
        if holder is None:
            row = self.append(message, index)
            if not self.is_declared(call_id):
                self.orphans.append((row, call_id))
            self.answer(call_id, row)
            self.outcomes.append((index, "appended", row, None))
            return
        holder_is_placeholder = (
            holder.placeholder if isinstance(holder, ResultSlot) else is_placeholder(holder.message)
        )
        if is_placeholder(message):
            self.drop(index, "healed_duplicate", call_id, holder)
        elif not holder_is_placeholder:
            self.drop(index, "duplicate_result", call_id, holder)
        elif isinstance(holder, ResultSlot):
            message = _unmarked(message)
            self.replaced_stored[holder.position] = message
            self.held[call_id] = ResultSlot(holder.position, placeholder=False)
            self.replaced.append((holder.position, call_id))
            self.outcomes.append((index, "replaced", holder.position, None))
        else:
            holder.message = _unmarked(message)
            self.replaced.append((holder, call_id))
            self.outcomes.append((index, "replaced", holder, None))

    def take_turn(self, index: int, message: Message) -> None:
        ids = declared_call_ids(message)
        if ids and all(self.is_declared(cid) for cid in ids):
            self.drop(index, "duplicate_turn", None)
            return
        row = self.append(message, index)
        for ordinal, cid in declared_calls(message):
            if cid is None or self.is_declared(cid):
                continue
            self.new_owners[cid] = (row, ordinal)
            if self.holder(cid) is None:
                self.open_new[cid] = (row, ordinal)
        self.outcomes.append((index, "appended", row, None))

    def drop(
        self, index: int, reason: DropReason, call_id: str | None, holder: _Holder | None = None
    ) -> None:
        self.dropped.append((index, reason, call_id, holder))
        self.outcomes.append((index, "dropped", None, reason))

    def heal(self) -> None:
        """MEM-3: a placeholder for every open call, directly after the turn that owns it,
        in declaration order."""
        placed_after: dict[int, int] = {}
        for call in self.facts.open_calls_in_order():
            if call.call_id in self.held:
                continue
            already = placed_after.get(call.declared_at, 0)
            placed_after[call.declared_at] = already + 1
            gap = call.declared_at + 1  # the stored turn's own gap, or the tail's start
            placeholder = _Row(placeholder_for(call.call_id), gap, None)
            self.gaps.setdefault(gap, []).insert(already, placeholder)
            self.held[call.call_id] = placeholder
            self.answered_stored.append(call.call_id)
            self.healed.append((placeholder, call.call_id, call.declared_at))
        if not self.open_new:
            return
        owned: dict[_Row, list[str]] = {}
        for call_id, (owner, _) in self.open_new.items():
            owned.setdefault(owner, []).append(call_id)
        tail: list[_Row] = []
        for row in self.tail:
            tail.append(row)
            for call_id in owned.get(row, ()):
                placeholder = _Row(placeholder_for(call_id), self.length, None)
                tail.append(placeholder)
                self.held[call_id] = placeholder
                self.healed.append((placeholder, call_id, row))
        self.tail[:] = tail
        self.open_new.clear()

    # The plan.

    def finish(self) -> AppendPlan:
        shift = 0
        for gap in sorted(self.gaps):
            for offset, row in enumerate(self.gaps[gap]):
                row.position = gap + shift + offset
            shift += len(self.gaps[gap])
        rows = [row for gap in sorted(self.gaps) for row in self.gaps[gap]]
        inserts = tuple(Insert(r.gap, r.position, r.message, r.batch_index) for r in rows)

        gaps = [r.gap for r in rows]

        def where(target: _Row | int) -> int:
            return target.position if isinstance(target, _Row) else _shifted(gaps, target)

        def answering(holder: _Holder | None) -> int | None:
            if holder is None:
                return None
            return where(holder if isinstance(holder, _Row) else holder.position)

        replacements = tuple(
            Replacement(original, where(original), message)
            for original, message in sorted(self.replaced_stored.items())
        )
        declarations = tuple(
            Declaration(cid, row.position, ordinal, answered=self.holder(cid) is not None)
            for cid, (row, ordinal) in self.new_owners.items()
        )
        placeholders_delta = sum(1 for r in rows if is_placeholder(r.message)) - len(
            self.replaced_stored
        )
        report = AppendReport(
            count=self.length + len(rows),
            appended=sum(1 for r in rows if r.batch_index is not None),
            healed=tuple(
                Healed(
                    row.position,
                    cid,
                    where(owner),
                    declared_before=owner if isinstance(owner, int) else None,
                )
                for row, cid, owner in self.healed
            ),
            replaced=tuple(Replaced(where(target), cid) for target, cid in self.replaced),
            dropped=tuple(
                Dropped(index, reason, cid, answering(holder))
                for index, reason, cid, holder in self.dropped
            ),
            outcomes=tuple(
                Outcome(i, action, None if target is None else where(target), reason)
                for i, action, target, reason in self.outcomes
            ),
            orphans=tuple(Orphan(row.position, cid) for row, cid in self.orphans),
        )
        return AppendPlan(
            length_before=self.length,
            inserts=inserts,
            replacements=replacements,
            declarations=declarations,
            answered=tuple(self.answered_stored),
            placeholders_delta=placeholders_delta,
            report=report,
        )


def _unmarked(message: Message) -> Message:
    """A real result as it replaces a placeholder: "the healed marking is removed with it"
    (MEM-10), so a ``healed`` key it carries (only ever false here: one marked healed never
    replaces) is not kept in the slot."""
    if "healed" not in message.metadata:
        return message
    metadata = {key: value for key, value in message.metadata.items() if key != "healed"}
    return message.model_copy(update={"metadata": metadata})


def plan_append(facts: BufferFacts, batch: Sequence[Message]) -> AppendPlan:
    """Plan appending ``batch`` to the buffer that ``facts`` describe."""
    planner = _Planner(facts)
    for index, message in enumerate(batch):
        planner.take(index, message)
    return planner.finish()


def plan_heal(facts: BufferFacts) -> AppendPlan:
    """Plan an explicit repair: a placeholder for every open call, placed exactly as a user
    turn's healing places them (MEM-3), with nothing appended. The admin's "Heal unanswered
    calls" runs this; it is a repair outside MEM-3's user-turn trigger (docs/decisions.md)."""
    planner = _Planner(facts)
    planner.heal()
    return planner.finish()


def apply_plan(messages: Sequence[Message], plan: AppendPlan) -> list[Message]:
    """The buffer that results from applying ``plan`` to the in-memory buffer it was made for."""
    if len(messages) != plan.length_before:
        raise ValueError("this plan was made for a buffer of a different length")
    by_gap: dict[int, list[Message]] = {}
    for insert in plan.inserts:
        by_gap.setdefault(insert.gap, []).append(insert.message)
    replaced = {r.original_position: r.message for r in plan.replacements}
    result: list[Message] = []
    for position in range(len(messages) + 1):
        result.extend(by_gap.get(position, ()))
        if position < len(messages):
            result.append(replaced.get(position, messages[position]))
    return result


def plan_verbatim(facts: BufferFacts, batch: Sequence[Message]) -> AppendPlan:
    """Plan storing ``batch`` after the last row exactly as it is: no rule applies, nothing
    is dropped, healed or replaced. This is how a live trace's messages are recorded (what
    the agent sent, as it happened: healing stays a person's act); the plan keeps the
    declared-call index and the counters right, as an import's does."""
    length = facts.length
    inserts = tuple(
        Insert(length, length + index, message, index) for index, message in enumerate(batch)
    )
    results = {cid for message in batch if (cid := result_call_id(message)) is not None}
    declarations: list[Declaration] = []
    owned: set[str] = set()
    for index, message in enumerate(batch):
        for ordinal, cid in declared_calls(message):
            if cid is None or cid in owned or facts.is_declared(cid):
                continue
            owned.add(cid)
            answered = cid in results or facts.result_for(cid) is not None
            declarations.append(Declaration(cid, length + index, ordinal, answered))
    answered_stored = tuple(
        sorted(cid for cid in results if facts.is_declared(cid) and facts.result_for(cid) is None)
    )
    report = AppendReport(
        count=length + len(batch),
        appended=len(batch),
        healed=(),
        replaced=(),
        dropped=(),
        outcomes=tuple(Outcome(i, "appended", length + i) for i in range(len(batch))),
    )
    return AppendPlan(
        length_before=length,
        inserts=inserts,
        replacements=(),
        declarations=tuple(declarations),
        answered=answered_stored,
        placeholders_delta=sum(1 for message in batch if is_placeholder(message)),
        report=report,
    )
