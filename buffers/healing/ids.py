"""The one definition of a tool call id (MEM-11).

Every rule that needs to know which calls a turn declares or which call a result
answers reads it here: deduplication (MEM-1, MEM-2), dangling-call detection
(MEM-3), placeholder replacement (MEM-10), the analysis, and the database index
columns that the service keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .messages import Message


def usable_id(value: object) -> str | None:
    """An id as a trimmed string, or None when it cannot name a call.

    Integers are read as their decimal string (providers do send ``"id": 1``).
    Empty strings and ``"0"`` are unusable: the spec treats ``"0"`` as the id that
    names nothing (MEM-5's example, and A9 in the digest).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str):
        return None
    value = value.strip()
    if value in ("", "0"):
        return None
    return value


def call_id(call: Mapping[str, object]) -> str | None:
    """The id of one declared call: the normalized spelling ``tool_call_id`` when it is
    usable, else the provider-flat spelling ``id``."""
    return usable_id(call.get("tool_call_id")) or usable_id(call.get("id"))


def declared_calls(message: Message) -> list[tuple[int, str | None]]:
    """Each call an assistant turn declares, as (its place in ``tool_calls``, its id or None)."""
    if message.role != "assistant":
        return []
    calls = message.metadata.get("tool_calls")
    if not isinstance(calls, list):
        return []
    return [
        (ordinal, call_id(call) if isinstance(call, dict) else None)
        for ordinal, call in enumerate(calls)
    ]


def declared_call_ids(message: Message) -> list[str]:
    """The usable ids an assistant turn declares, in declaration order."""
    return [cid for _, cid in declared_calls(message) if cid is not None]


def result_call_id(message: Message) -> str | None:
    """The id of the call a tool result answers, or None (not a tool result, or no usable id)."""
    if message.role != "tool":
        return None
    return usable_id(message.metadata.get("tool_call_id"))


def is_placeholder(message: Message) -> bool:
    """A synthetic healed result, recognized by its marker only, never by its text (A20)."""
    return message.role == "tool" and message.metadata.get("healed") is True
