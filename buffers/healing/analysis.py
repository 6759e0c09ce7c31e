"""What is wrong or notable about each message of a buffer.

The analysis reads any buffer, healed or crashed, imported or appended, and never
changes it. It uses the same id reader and the same index as the planner, so the
inspector's highlights and the planner's decisions cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def analyze(messages: Sequence[Message]) -> Analysis:
    index: BufferIndex = index_buffer(messages)
    block_end = _next_non_tool(messages)
    findings: list[Finding] = []
    seen_results: dict[str, int] = {}

    for position, message in enumerate(messages):
        if message.role == "assistant":
            seen_here: set[str] = set()
            for ordinal, cid in declared_calls(message):
                if cid is None:
                    findings.append(
                        Finding(position, "unusable_id", f"call {ordinal} has no usable id")
                    )
                    continue
                owner, _ = index.owners[cid]
                if owner != position or cid in seen_here:
                    findings.append(
                        Finding(
                            position,
                            "redeclared_id",
                            f"{cid} was already declared at message {owner}",
                            cid,
                            owner,
                        )
                    )
                elif cid not in index.holders:
                    findings.append(
                        Finding(position, "unanswered_call", f"{cid} has no result", cid)
                    )
                seen_here.add(cid)

        if message.role != "tool":
            continue
        cid = result_call_id(message)
        if is_placeholder(message):
            owner_of = index.owners.get(cid) if cid else None
            findings.append(
                Finding(
                    position,
                    "healed_placeholder",
                    "synthetic result: the call was interrupted and never answered",
                    cid,
                    owner_of[0] if owner_of else None,
                )
            )
        if cid is None:
            findings.append(
                Finding(position, "unusable_id", "this tool result has no usable tool_call_id")
            )
            continue
        if cid in seen_results:
            first = seen_results[cid]
            findings.append(
                Finding(
                    position,
                    "duplicate_result",
                    f"{cid} was already answered at message {first}",
                    cid,
                    first,
                )
            )
            continue
        seen_results[cid] = position
        if cid not in index.owners:
            findings.append(Finding(position, "orphan_result", f"no turn declares {cid}", cid))
            continue
        owner, _ = index.owners[cid]
        if not owner < position < block_end[owner]:
            where = "before" if position < owner else "not directly after"
            findings.append(
                Finding(
                    position,
                    "non_adjacent_result",
                    f"answers {cid}, declared at message {owner}, but sits {where} that turn",
                    cid,
                    owner,
                )
            )

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
