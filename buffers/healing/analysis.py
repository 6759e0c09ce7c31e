"""What is wrong or notable about each message of a buffer.

The analysis reads any buffer, healed or crashed, imported or appended, and never
changes it. It uses the same id reader and the same index as the planner, so the
inspector's highlights and the planner's decisions cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .facts import BufferIndex, index_buffer
from .ids import declared_calls, is_placeholder, result_call_id
from .messages import Message

FindingKind = Literal[
    "unanswered_call",
    "healed_placeholder",
    "orphan_result",
    "duplicate_result",
    "redeclared_id",
    "non_adjacent_result",
    "unusable_id",
]

FINDING_LABELS: dict[str, str] = {
    "unanswered_call": "unanswered call",
    "healed_placeholder": "healed placeholder",
    "orphan_result": "orphan result",
    "duplicate_result": "duplicate result",
    "redeclared_id": "re-declared id",
    "non_adjacent_result": "result not adjacent to its call",
    "unusable_id": "unusable id",
}


@dataclass(frozen=True)
class Finding:
    index: int
    kind: FindingKind
    detail: str
    tool_call_id: str | None = None
    related_index: int | None = None
    """The other message this finding is about: the call a result answers, the first result
    a duplicate repeats, the turn that first declared a re-declared id."""

    @property
    def label(self) -> str:
        return FINDING_LABELS[self.kind]


@dataclass(frozen=True)
class UnansweredCall:
    tool_call_id: str
    declared_at: int


@dataclass(frozen=True)
class Analysis:
    length: int
    findings: tuple[Finding, ...]
    unanswered: tuple[UnansweredCall, ...]
    answered_by: dict[str, int] = field(default_factory=dict)
    """For each declared call that has a result, the index of its (first) result."""
    declared_at: dict[str, int] = field(default_factory=dict)
    """For each declared id, the index of the turn that owns it (its first declaration)."""

    def at(self, index: int) -> list[Finding]:
        return [f for f in self.findings if f.index == index]


@dataclass(frozen=True)
class CallFacts:
    """What the whole buffer says about one tool call id, for analysing part of it."""

    owner: int | None
    """The index of the turn that first declared the id (it owns the call)."""
    first_result: int | None
    """The index of the first tool message holding the id (real or placeholder)."""
    owner_block_end: int | None
    """The index just past the run of tool messages that directly follows the owner."""


def _next_non_tool(messages: Sequence[Message]) -> list[int]:
    """For each index, the first later index that is not a tool message (or the length):
    the end of the block of results that directly follows a turn."""
    result = [0] * len(messages)
    following = len(messages)
    for position in range(len(messages) - 1, -1, -1):
        result[position] = following
        if messages[position].role != "tool":
            following = position
    return result


def call_facts(
    messages: Sequence[Message], index: BufferIndex | None = None
) -> dict[str, CallFacts]:
    """The facts of every id a whole in-memory buffer names; ``index``, the buffer's
    ``index_buffer`` when the caller has it already."""
    if index is None:
        index = index_buffer(messages)
    block_end = _next_non_tool(messages)
    facts: dict[str, CallFacts] = {}
    for cid, (owner, _) in index.owners.items():
        holders = index.holders.get(cid)
        facts[cid] = CallFacts(
            owner=owner,
            first_result=holders[0] if holders else None,
            owner_block_end=block_end[owner],
        )
    for cid, holders in index.holders.items():  # results whose id no turn declares
        if cid not in index.owners:
            facts[cid] = CallFacts(owner=None, first_result=holders[0], owner_block_end=None)
    return facts


def analyze_window(
    window: Sequence[Message], start: int, facts: Mapping[str, CallFacts]
) -> list[Finding]:
    """The findings on messages ``start .. start + len(window)`` of a buffer, given the facts
    of every id the window names (``ids_in_batch(window)``). The inspector analyses the page
    it shows this way; ``analyze`` is this over a whole buffer."""
    findings: list[Finding] = []
    for position, message in enumerate(window, start=start):
        if message.role == "assistant":
            seen_here: set[str] = set()
            for ordinal, cid in declared_calls(message):
                if cid is None:
                    findings.append(
                        Finding(position, "unusable_id", f"call {ordinal} has no usable id")
                    )
                    continue
                declared = facts[cid]
                if declared.owner != position or cid in seen_here:
                    findings.append(
                        Finding(
                            position,
                            "redeclared_id",
                            f"{cid} was already declared at message {declared.owner}",
                            cid,
                            declared.owner,
                        )
                    )
                elif declared.first_result is None:
                    findings.append(
                        Finding(position, "unanswered_call", f"{cid} has no result", cid)
                    )
                seen_here.add(cid)

        if message.role != "tool":
            continue
        cid = result_call_id(message)
        call = facts[cid] if cid else None
        if is_placeholder(message):
            findings.append(
                Finding(
                    position,
                    "healed_placeholder",
                    "synthetic result: the call was interrupted and never answered",
                    cid,
                    call.owner if call else None,
                )
            )
        if call is None:
            findings.append(
                Finding(position, "unusable_id", "this tool result has no usable tool_call_id")
            )
            continue
        if call.first_result != position:
            findings.append(
                Finding(
                    position,
                    "duplicate_result",
                    f"{cid} was already answered at message {call.first_result}",
                    cid,
                    call.first_result,
                )
            )
            continue
        if call.owner is None:
            findings.append(Finding(position, "orphan_result", f"no turn declares {cid}", cid))
            continue
        if not call.owner < position < (call.owner_block_end or 0):
            where = "before" if position < call.owner else "not directly after"
            findings.append(
                Finding(
                    position,
                    "non_adjacent_result",
                    f"answers {cid}, declared at message {call.owner}, but sits {where} that turn",
                    cid,
                    call.owner,
                )
            )
    return findings


def analyze(messages: Sequence[Message]) -> Analysis:
    index: BufferIndex = index_buffer(messages)
    findings = analyze_window(messages, 0, call_facts(messages))
    return Analysis(
        length=len(messages),
        findings=tuple(findings),
        unanswered=tuple(
            UnansweredCall(call.call_id, call.declared_at) for call in index.open_calls()
        ),
        answered_by={
            cid: positions[0] for cid, positions in index.holders.items() if cid in index.owners
        },
        declared_at={cid: owner for cid, (owner, _) in index.owners.items()},
    )
