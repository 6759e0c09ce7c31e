"""What the append rules need to know about a buffer, without needing the buffer.

The planner never looks at stored messages directly. It asks ``BufferFacts``:
which row already holds a result for this id (and is it a placeholder), is this id
declared, and which declared calls have no result anywhere. An in-memory buffer
answers these by scanning (``facts_from_messages``); the database answers them from
indexed columns for just the ids of one batch, so an append to a 100,000-message
conversation reads a handful of rows, not the buffer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from .ids import declared_calls, is_placeholder, result_call_id
from .messages import Message


@dataclass(frozen=True)
class ResultSlot:
    """The tool result already held for an id.

    ``placeholder`` is true only when every row holding the id is a healed
    placeholder; ``position`` is then the first of them, the one MEM-10 replaces.
    """

    position: int
    placeholder: bool


@dataclass(frozen=True)
class OpenCall:
    """A declared call with no result anywhere in the buffer, at its owning turn.

    When an id is declared by more than one turn, the first declaration owns it (A4).
    """

    call_id: str
    declared_at: int
    ordinal: int


@dataclass(frozen=True)
class BufferIndex:
    """One pass over a buffer: every id's owning declaration and every row holding a result."""

    owners: dict[str, tuple[int, int]]
    holders: dict[str, list[int]]
    placeholders: frozenset[int]

    def open_calls(self) -> list[OpenCall]:
        return [
            OpenCall(call_id, position, ordinal)
            for call_id, (position, ordinal) in self.owners.items()
            if call_id not in self.holders
        ]

    def result_slot(self, call_id: str) -> ResultSlot | None:
        positions = self.holders.get(call_id)
        if not positions:
            return None
        real = [p for p in positions if p not in self.placeholders]
        if real:
            return ResultSlot(real[0], placeholder=False)
        return ResultSlot(positions[0], placeholder=True)


def index_buffer(messages: Sequence[Message]) -> BufferIndex:
    owners: dict[str, tuple[int, int]] = {}
    holders: dict[str, list[int]] = {}
    placeholders: set[int] = set()
    for position, message in enumerate(messages):
        for ordinal, cid in declared_calls(message):
            if cid is not None and cid not in owners:
                owners[cid] = (position, ordinal)
        answered = result_call_id(message)
        if answered is not None:
            holders.setdefault(answered, []).append(position)
        if is_placeholder(message):
            placeholders.add(position)
    return BufferIndex(owners, holders, frozenset(placeholders))


@dataclass(frozen=True)
class BufferFacts:
    """The answers the planner needs, complete for ``covers`` (every id when None).

    ``open_calls`` is None when it was not loaded; the planner only asks for it when
    a batch holds a user turn.
    """

    length: int
    results: Mapping[str, ResultSlot] = field(default_factory=dict)
    declared: Collection[str] = frozenset()
    open_calls: Sequence[OpenCall] | None = None
    covers: Collection[str] | None = None

    def _check_covered(self, call_id: str) -> None:
        if self.covers is not None and call_id not in self.covers:
            raise LookupError(f"these facts were not loaded for tool call id {call_id!r}")

    def result_for(self, call_id: str) -> ResultSlot | None:
        self._check_covered(call_id)
        return self.results.get(call_id)

    def is_declared(self, call_id: str) -> bool:
        self._check_covered(call_id)
        return call_id in self.declared

    def open_calls_in_order(self) -> list[OpenCall]:
        if self.open_calls is None:
            raise LookupError("the open calls of this buffer were not loaded")
        return sorted(self.open_calls, key=lambda call: (call.declared_at, call.ordinal))


def facts_from_messages(messages: Sequence[Message]) -> BufferFacts:
    """Complete facts for an in-memory buffer."""
    index = index_buffer(messages)
    results = {cid: slot for cid in index.holders if (slot := index.result_slot(cid))}
    return BufferFacts(
        length=len(messages),
        results=results,
        declared=frozenset(index.owners),
        open_calls=index.open_calls(),
    )


def ids_in_batch(batch: Sequence[Message]) -> set[str]:
    """Every id a batch names, as a result or a declaration: what facts must cover."""
    ids: set[str] = set()
    for message in batch:
        ids.update(cid for _, cid in declared_calls(message) if cid is not None)
        answered = result_call_id(message)
        if answered is not None:
            ids.add(answered)
    return ids
