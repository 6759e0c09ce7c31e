"""Messages in the two shapes the spec uses, and how incoming JSON becomes one.

The *stored* shape keeps the role and content at top level and every other key
under ``metadata``::

    {"role": "tool", "content": "Found 3 cats", "metadata": {"tool_call_id": "c1"}}

The *flat* (provider) shape carries the tool keys at top level::

    {"role": "tool", "content": "Found 3 cats", "tool_call_id": "c1"}

Both are accepted on the way in; a message is always held, stored and returned in
the stored shape. Keys that the stored shape has no place for go under
``metadata``, so nothing a client sent is lost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, JsonValue

from .errors import InvalidInput, Problem, parse_each
from .ids import result_call_id, usable_id

Role = Literal["user", "assistant", "tool", "system"]
ROLES: tuple[str, ...] = get_args(Role)

Content = str | list[JsonValue] | dict[str, JsonValue] | None

INTERRUPTED_TEXT = "Tool call was interrupted; no result."

# A tool call id this long is not an id; it is a mistake upstream.
MAX_ID_LENGTH = 512


class Message(BaseModel):
    """One buffer entry, in the stored shape."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: Content = None
    metadata: dict[str, JsonValue] = {}

    def as_stored(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "metadata": self.metadata}


def placeholder_for(call_id: str) -> Message:
    """The synthetic result that MEM-3 inserts for a call that was never answered."""
    return Message(
        role="tool",
        content=INTERRUPTED_TEXT,
        metadata={"tool_call_id": call_id, "healed": True},
    )


def describe(value: object) -> str:
    """What kind of JSON value this is, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def json_problem(value: object) -> str | None:
    """Why ``value`` cannot be stored as JSON, or None when it can.

    Besides what JSON itself refuses (NaN, infinities, non-string keys, other types), a
    string may not hold U+0000: PostgreSQL cannot store it, so neither database does.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if item is None or isinstance(item, bool | int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return "holds a number that JSON cannot carry (NaN or infinity)"
        elif isinstance(item, str):
            if "\x00" in item:
                return "holds a NUL character (U+0000), which cannot be stored"
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            for key, nested in item.items():
                if not isinstance(key, str):
                    return "holds an object key that is not a string"
                pending.extend((key, nested))
        else:
            return f"holds a value that is not JSON ({type(item).__name__})"
    return None


def _check_id(value: object, path: str, problems: list[Problem]) -> None:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int):
        problems.append(Problem(path, f"must be a string (or an integer), not {describe(value)}"))
    elif len(str(value)) > MAX_ID_LENGTH:
        problems.append(Problem(path, f"is longer than {MAX_ID_LENGTH} characters"))


def parse_message(raw: object, path: str) -> Message:
    """Read one message in either shape into the stored shape, or raise InvalidInput.

    This checks structure only (what a stored transcript must have to be kept at
    all); whether a message may be *appended* is ``appendable_problems``' question.
    """
    problems: list[Problem] = []
    if not isinstance(raw, dict):
        raise InvalidInput([Problem(path, f"must be an object, not {describe(raw)}")])

    role = raw.get("role")
    if "role" not in raw:
        problems.append(Problem(f"{path}.role", "is missing"))
    elif role not in ROLES:
        allowed = ", ".join(ROLES)
        problems.append(Problem(f"{path}.role", f"must be one of {allowed}, not {role!r}"))

    content = raw.get("content")
    if content is not None and not isinstance(content, str | list | dict):
        problems.append(
            Problem(
                f"{path}.content",
                "must be a string, a list of content parts, an object or null, "
                f"not {describe(content)}",
            )
        )

    metadata = raw.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        problems.append(Problem(f"{path}.metadata", f"must be an object, not {describe(metadata)}"))
        metadata = {}
    merged: dict[str, Any] = dict(metadata)
    for key, value in raw.items():
        if key in ("role", "content", "metadata"):
            continue
        if key in merged and merged[key] != value:
            problems.append(
                Problem(
                    f"{path}.{key}",
                    "is given both at top level and under metadata, with different values",
                )
            )
        merged[key] = value

    def where(key: str) -> str:
        """The path of a tool key as the client sent it: top level, or under metadata."""
        return f"{path}.{key}" if key in raw else f"{path}.metadata.{key}"

    if "tool_calls" in merged:
        calls = merged["tool_calls"]
        if not isinstance(calls, list):
            problems.append(
                Problem(where("tool_calls"), f"must be a list of calls, not {describe(calls)}")
            )
        else:
            for i, call in enumerate(calls):
                call_path = f"{where('tool_calls')}[{i}]"
                if not isinstance(call, dict):
                    problems.append(Problem(call_path, f"must be an object, not {describe(call)}"))
                    continue
                for key in ("tool_call_id", "id"):
                    if key in call and call[key] is not None:
                        _check_id(call[key], f"{call_path}.{key}", problems)
    if "tool_call_id" in merged and merged["tool_call_id"] is not None:
        _check_id(merged["tool_call_id"], where("tool_call_id"), problems)
    if "healed" in merged and not isinstance(merged["healed"], bool):
        problems.append(
            Problem(where("healed"), f"must be true or false, not {describe(merged['healed'])}")
        )

    if not problems:
        for field, value in (("content", content), ("metadata", merged)):
            problem = json_problem(value)
            if problem:
                problems.append(Problem(f"{path}.{field}", problem))
    if problems:
        raise InvalidInput(problems)
    return Message.model_construct(role=cast(Role, role), content=content, metadata=merged)


def parse_messages(raw: object, path: str = "messages") -> list[Message]:
    """Read a list of messages, reporting every problem of every message at once."""
    if not isinstance(raw, list):
        raise InvalidInput([Problem(path, f"must be a list of messages, not {describe(raw)}")])
    return parse_each(raw, parse_message, path)


def appendable_problems(messages: Sequence[Message], path: str = "messages") -> list[Problem]:
    """What stops a batch from being appended under the rules.

    A stored transcript is kept as it is, unusable ids included (the analysis flags
    them). An append is held to more: MEM-1 decides by a tool result's id and MEM-2
    by the ids a turn declares, so a tool result and every declared call must carry
    a usable id (docs/decisions.md, MEM-1 and MEM-11).
    """
    problems: list[Problem] = []
    for index, message in enumerate(messages):
        where = f"{path}[{index}]"
        if message.role == "tool" and result_call_id(message) is None:
            problems.append(
                Problem(
                    f"{where}.metadata.tool_call_id",
                    "a tool result needs a usable tool_call_id (a non-empty string other "
                    'than "0") to say which call it answers',
                )
            )
        calls = message.metadata.get("tool_calls")
        if message.role == "assistant" and isinstance(calls, list):
            for i, call in enumerate(calls):
                if not isinstance(call, dict):
                    continue
                if (
                    usable_id(call.get("tool_call_id")) is None
                    and usable_id(call.get("id")) is None
                ):
                    problems.append(
                        Problem(
                            f"{where}.metadata.tool_calls[{i}]",
                            "a declared call needs a usable id (tool_call_id or id)",
                        )
                    )
    return problems
