"""What a buffer looks like on its way to a provider: assembly (MEM-4), normalization
(MEM-5) and text made into a message (MEM-16).

All three are read-path views. They never change a stored buffer: storage keeps the
stored shape, healed placeholders included, and normalization only shows what would be
sent. Every id is read through ``ids`` (MEM-11).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .ids import call_id, usable_id
from .messages import INTERRUPTED_TEXT, ROLES

DropReason = Literal[
    "not_an_object",
    "no_role",
    "unknown_role",
    "unusable_call_id",
    "redeclared_call",
    "empty_turn",
    "unusable_result_id",
    "orphan_result",
    "duplicate_result",
    "misplaced_result",
    "leading_tool",
]

DROP_REASONS: dict[str, str] = {
    "not_an_object": "the entry is not a message object",
    "no_role": "the entry has no role",
    "unknown_role": "the role is none of user, assistant, tool or system",
    "unusable_call_id": "a declared call has no usable id",
    "redeclared_call": "an earlier turn already declares this call id, and owns it",
    "empty_turn": "with its unusable or re-declared calls removed, the turn was empty",
    "unusable_result_id": "a tool result has no usable tool_call_id",
    "orphan_result": "no turn declares the call this result answers",
    "duplicate_result": "the call already has its result",
    "misplaced_result": "the result is not in the run of results right after its call's turn",
    "leading_tool": "a tool result leads the conversation, before the turn of its call",
}


@dataclass(frozen=True)
class Drop:
    """One thing normalization removed: where (the index of the entry in the input list;
    for a call, the turn that declared it), why, and the call id concerned, if any."""

    index: int | None
    reason: DropReason
    call_id: str | None = None

    @property
    def explanation(self) -> str:
        return DROP_REASONS[self.reason]

    @property
    def whole_message(self) -> bool:
        """Whether the entry itself was dropped, not one call of its turn."""
        return self.reason not in ("unusable_call_id", "redeclared_call")


@dataclass(frozen=True)
class Normalized:
    """The messages in the flat provider shape, and what was dropped to get them."""

    messages: list[dict[str, Any]]
    drops: tuple[Drop, ...] = ()

    @property
    def dropped(self) -> int:
        """MEM-5's drop count: the records of the passes that dropped, counted (A10)."""
        return len(self.drops)


def assemble(ports: Mapping[str, object] | Sequence[tuple[str, object]]) -> list[object]:
    """MEM-4: the messages of every input port, in declared order (a mapping's own order).

    A list (or tuple) contributes its items in order, None (an unwired port) nothing, and
    anything else one item: a single message, or junk that normalization then drops and
    counts rather than this function losing it silently.
    """
    wired = ports.items() if isinstance(ports, Mapping) else ports
    messages: list[object] = []
    for _, value in wired:
        if value is None:
            continue
        if isinstance(value, list | tuple):
            messages.extend(value)
        else:
            messages.append(value)
    return messages


def coerce_content(value: object) -> str:
    """Content as the text a provider is sent (MEM-5 (1), MEM-16), in Python's terms (A15).

    - a string is kept as it is, and None becomes ``""``;
    - true and false become ``"true"`` and ``"false"``, their JSON spelling, the same
      language non-scalar content is written in; PHP's ``"1"`` and ``""`` would turn a
      real ``false`` into empty content, which MEM-16 then drops;
    - an integer or a finite float becomes its decimal text (``"3"``, ``"2.5"``,
      ``"1e+16"``); NaN, the infinities and an integer too long for Python to write
      (over 4,300 digits) cannot be written as JSON and become ``""``;
    - anything else is JSON: compact (``{"a":1}``, as PHP's ``json_encode`` writes it),
      non-ASCII kept as it is, keys in their given order. What JSON cannot encode (NaN
      inside a list, a circular list, a set, an object) becomes ``""``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        try:
            return str(int(value))
        except ValueError:
            return ""
    if isinstance(value, float):
        return str(value) if math.isfinite(value) else ""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return ""


def interrupted_result(tool_call_id: str) -> dict[str, Any]:
    """The synthetic result normalization gives an unanswered call: flat, with no healed
    marker (A12), unlike the stored placeholder of MEM-3."""
    return {"role": "tool", "content": INTERRUPTED_TEXT, "tool_call_id": tool_call_id}


Row = tuple[int, dict[str, Any]]
"""A message being normalized, with the index of the input entry it came from."""


def normalize(entries: Sequence[object]) -> Normalized:
    """MEM-5: the entries made sendable, by four rules in order.

    (1) Each entry becomes a flat message ``{"role", "content"}``, with ``tool_calls`` on
    an assistant turn and ``tool_call_id`` on a tool result, lifted from ``metadata``
    when stored; nothing else is kept (no metadata, no timestamp, no healed marker, so a
    stored placeholder becomes a plain result). Content goes through ``coerce_content``.
    An entry that is not an object, has no role, or has a role outside the four (A11) is
    dropped. (2) System messages move to the front; each group keeps its order.
    (3) Pairing is repaired: see ``_repair``. (4) A tool result still leading the
    conversation is stripped: it is dropped as ``leading_tool`` by the same pass, which
    then gives its call a synthetic result, as applying (3) again would.

    ``dropped`` counts the records these passes write as they drop (A10).
    """
    drops: list[Drop] = []
    rows = [
        (index, message)
        for index, entry in enumerate(entries)
        if (message := _flat(entry, index, drops)) is not None
    ]
    system_first = [row for row in rows if row[1]["role"] == "system"] + [
        row for row in rows if row[1]["role"] != "system"
    ]
    return Normalized(_repair(system_first, drops), tuple(drops))


def _flat(entry: object, index: int, drops: list[Drop]) -> dict[str, Any] | None:
    if not isinstance(entry, Mapping):
        drops.append(Drop(index, "not_an_object"))
        return None
    role = entry.get("role")
    if role is None or role == "":
        drops.append(Drop(index, "no_role"))
        return None
    if not isinstance(role, str) or role not in ROLES:
        drops.append(Drop(index, "unknown_role"))
        return None
    metadata = entry.get("metadata")
    if not isinstance(metadata, Mapping):
        metadata = {}
    message: dict[str, Any] = {"role": role, "content": coerce_content(entry.get("content"))}
    if role == "assistant":
        calls = entry.get("tool_calls")
        if calls is None:
            calls = metadata.get("tool_calls")
        if calls is not None:
            # A tool_calls that is not a list declares nothing usable: one unusable call.
            listed = calls if isinstance(calls, list) else [None]
            message["tool_calls"] = [dict(c) if isinstance(c, Mapping) else c for c in listed]
    elif role == "tool":
        message["tool_call_id"] = usable_id(entry.get("tool_call_id")) or usable_id(
            metadata.get("tool_call_id")
        )
    return message


def _repair(rows: list[Row], drops: list[Drop]) -> list[dict[str, Any]]:
    """MEM-5 (3) and (4), recording every drop in ``drops``.

    First the declarations: a call without a usable id (A9) is removed from its turn, and
    so is an id an earlier turn declared (the first declaration owns the call); a turn
    left with no calls and blank content is removed too. Then the results: a result
    answers its call only from the run of tool results right after the turn that owns
    the call (A7). Any other result is dropped: without a usable id, as an orphan (no
    turn declares it), as a duplicate (its call is answered), as leading (before any
    turn) or as misplaced. Each call still unanswered when its run ends gets a synthetic
    result there, after the results already in the run, in declaration order (A4).
    """
    owners: set[str] = set()
    declared: list[Row] = []
    for index, message in rows:
        if "tool_calls" in message:
            kept = []
            for call in message["tool_calls"]:
                cid = call_id(call) if isinstance(call, Mapping) else None
                if cid is None:
                    drops.append(Drop(index, "unusable_call_id"))
                elif cid in owners:
                    drops.append(Drop(index, "redeclared_call", cid))
                else:
                    owners.add(cid)
                    kept.append(call)
            had_calls = bool(message.pop("tool_calls"))
            if kept:
                message["tool_calls"] = kept
            elif had_calls and not message["content"].strip():
                drops.append(Drop(index, "empty_turn"))
                continue
        declared.append((index, message))

    repaired: list[dict[str, Any]] = []
    answered: set[str] = set()
    run_of: dict[str, None] = {}
    """The calls of the turn whose run of results is being read, in declaration order (a
    dict, so that asking whether a result belongs to the run does not scan the turn)."""
    started = False
    """Whether a turn has been seen (system messages aside): results before it are leading."""

    def end_run() -> None:
        repaired.extend(interrupted_result(cid) for cid in run_of if cid not in answered)
        run_of.clear()

    for index, message in declared:
        if message["role"] != "tool":
            end_run()
            repaired.append(message)
            started = started or message["role"] != "system"
            run_of.update(
                (cid, None) for call in message.get("tool_calls", []) if (cid := call_id(call))
            )
            continue
        cid = message["tool_call_id"]
        if cid is None:
            drops.append(Drop(index, "unusable_result_id"))
        elif cid not in owners:
            drops.append(Drop(index, "orphan_result", cid))
        elif cid in answered:
            drops.append(Drop(index, "duplicate_result", cid))
        elif cid not in run_of:
            drops.append(Drop(index, "misplaced_result" if started else "leading_tool", cid))
        else:
            answered.add(cid)
            repaired.append(message)
    end_run()
    return repaired


def text_to_message(
    text: object, role: object = None, tool_call_id: object = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """MEM-16: one message from a text, as a one-element list and as the row itself.

    - The content is ``coerce_content(text)``. When there is none (no text, an empty list
      or object, text that is empty or only whitespace, as the user-turn form decides)
      there is no message: ``([], {})``, for a tool row too.
    - The role is one of user, assistant, system and tool, spelled exactly; anything
      else, an absent role included, is user.
    - ``tool_call_id`` is kept on a tool row only, read by the one id reader: trimmed, an
      integer as its decimal text, and omitted when blank or ``"0"``, which names no
      call anywhere in this project (A9). The row is still made without it.
    """
    content = coerce_content(text)
    if not content.strip() or text == [] or text == {}:
        return [], {}
    chosen = role if isinstance(role, str) and role in ROLES else "user"
    message: dict[str, Any] = {"role": chosen, "content": content}
    if chosen == "tool" and (cid := usable_id(tool_call_id)) is not None:
        message["tool_call_id"] = cid
    return [message], dict(message)
