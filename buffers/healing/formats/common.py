"""What the four converters share: collecting problems, checking the values a provider
document holds, the canonical view of a declared call, text parts in every spelling,
and the regrouping of tool results into the user turn that Anthropic and Gemini need."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import usable_id
from buffers.healing.messages import MAX_ID_LENGTH, Message, describe, json_problem, json_problem_at

Row = dict[str, Any]
"""A message in the stored shape, not yet validated: ``{"role", "content", "metadata"}``."""

NAMESPACES = (
    "anthropic",
    "gemini",
    "responses",
    "responses_item",
    "claude_code",
    "codex",
    "gemini_cli",
    "otel",
    "swe_agent",
    "openhands",
    "facts",
)
"""Metadata keys where a format keeps what only it can write back (on a row or a call),
and ``facts``: what any reader knows of a message that people want to see (``time``,
``model``, ``usage``, ``latency_ms``, ``finish_reason``; see ``FACTS``). None of them is
ever sent as a provider message's key."""

FACTS = ("time", "model", "usage", "latency_ms", "finish_reason")
"""The keys of ``metadata.facts``: ``time`` an ISO 8601 timestamp as the source wrote
it; ``model`` the model's name; ``usage`` token counts ``{"input", "output", "cached",
"reasoning", "total"}`` (any of them); ``latency_ms`` a number; ``finish_reason`` the
source's own word."""


@dataclass(frozen=True)
class Converted:
    """One conversation read from a provider document: stored-shape messages (for
    ``parse_messages``) and the document's conversation-level fields (``model``,
    ``tools``, ``max_tokens``...), which ``write`` puts back around the messages."""

    messages: list[Row]
    metadata: dict[str, Any]
    title: str = ""
    """The conversation's own title, where the format has one (a session's summary)."""


class Problems(list[Problem]):
    """Every problem found in one document, so that all can be reported at once."""

    def add(self, path: str, sentence: str) -> None:
        self.append(Problem(path, sentence))

    def raise_if_any(self) -> None:
        if self:
            raise InvalidInput(list(self))


def row(role: str, content: object, metadata: dict[str, Any] | None = None) -> Row:
    return {"role": role, "content": content, "metadata": metadata or {}}


# Reading: checks that add a problem and say whether the value is usable.


def storable(value: object, path: str, problems: Problems) -> bool:
    """Whether ``value`` is JSON both databases can store; if not, say where it is not."""
    problem = json_problem(value)
    if problem is None:
        return True
    found = json_problem_at(value)
    where, problem = found if found is not None else ("", problem)
    problems.add(f"{path}{where}", problem)
    return False


def is_object(value: object, path: str, problems: Problems) -> bool:
    if isinstance(value, dict):
        return True
    problems.add(path, f"must be an object, not {describe(value)}")
    return False


def has_text(
    holder: Mapping[str, Any],
    key: str,
    path: str,
    problems: Problems,
    *,
    required: bool = True,
    wanted: str = "a string",
) -> bool:
    """Whether ``holder[key]`` is a string; a missing key is a problem when ``required``."""
    where = f"{path}.{key}"
    if key not in holder:
        if required:
            problems.add(where, "is missing")
        return False
    if isinstance(holder[key], str):
        return True
    problems.add(where, f"must be {wanted}, not {describe(holder[key])}")
    return False


def has_id(
    holder: Mapping[str, Any], key: str, path: str, problems: Problems, *, required: bool = True
) -> bool:
    """Whether ``holder[key]`` is an id that names a call (``ids.usable_id``)."""
    where = f"{path}.{key}"
    if key not in holder:
        if required:
            problems.add(where, "is missing")
        return False
    value = holder[key]
    if isinstance(value, bool) or not isinstance(value, str | int):
        problems.add(where, f"must be a string (or an integer), not {describe(value)}")
    elif len(value) > MAX_ID_LENGTH if isinstance(value, str) else abs(value) >= _TOO_LONG:
        problems.add(where, f"is longer than {MAX_ID_LENGTH} characters")
    elif usable_id(value) is None:
        problems.add(where, 'is not a usable id (it is empty, blank or "0")')
    else:
        return True
    return False


_TOO_LONG = 10**MAX_ID_LENGTH


def has_choice(
    holder: Mapping[str, Any], key: str, path: str, choices: Sequence[str], problems: Problems
) -> bool:
    where = f"{path}.{key}"
    if key not in holder:
        problems.add(where, "is missing")
        return False
    value = holder[key]
    if isinstance(value, str) and value in choices:
        return True
    seen = repr(value) if isinstance(value, str) else describe(value)
    problems.add(where, f"must be one of {', '.join(choices)}, not {seen}")
    return False


def body_and_entries(
    document: object, key: str, consumed: Iterable[str], problems: Problems, wanted: str
) -> tuple[dict[str, Any], list[Any]]:
    """A request body's conversation-level fields and the list under ``key`` (a bare
    list is the entries themselves, with no fields)."""
    if isinstance(document, list):
        return {}, document
    if not isinstance(document, dict):
        problems.add("file", f"must be an object or a list, not {describe(document)}")
        return {}, []
    fields = fields_of(document, (key, *consumed), problems)
    if key not in document:
        problems.add(key, "is missing")
        return fields, []
    entries = document[key]
    if not isinstance(entries, list):
        problems.add(key, f"must be {wanted}, not {describe(entries)}")
        return fields, []
    return fields, entries


def fields_of(
    body: Mapping[str, Any], consumed: Iterable[str], problems: Problems
) -> dict[str, Any]:
    """A request body's conversation-level fields: every key but the ``consumed`` ones."""
    skipped = set(consumed)
    fields = {name: value for name, value in body.items() if name not in skipped}
    for name, value in fields.items():
        if not isinstance(name, str):
            problems.add(repr(name), "is a field name that is not a string")
        else:
            storable(value, name, problems)
    return fields


def without(mapping: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if key not in keys}


# JSON text for call arguments.


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def json_text(value: object) -> str | None:
    """Compact JSON text, as providers send arguments; None when it cannot be written."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return None


def arguments_object(arguments: str) -> dict[str, Any]:
    """Arguments as the object Anthropic's ``input`` and Gemini's ``args`` need. Text that
    is not a JSON object (a call cut off mid-stream) is kept whole under ``arguments``."""
    try:
        value = json.loads(arguments, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        value = None
    return value if isinstance(value, dict) else {"arguments": arguments}


# Writing: the stored message as every format reads it.


@dataclass(frozen=True)
class Call:
    """A declared call in whatever spelling it is stored: its id as stored, its name, its
    arguments as JSON text, and the stored entry (where a format keeps its own keys)."""

    id: object
    name: str
    arguments: str
    entry: Mapping[str, Any]


def _call(entry: Mapping[str, Any]) -> Call:
    function = entry.get("function")
    spellings = [function, entry] if isinstance(function, dict) else [entry]
    names = [s["name"] for s in spellings if isinstance(s.get("name"), str)]
    arguments = next(
        (s["arguments"] for s in spellings if isinstance(s.get("arguments"), str)), None
    )
    if arguments is None:
        given = [s[k] for s in spellings for k in ("arguments", "args", "input") if k in s]
        arguments = (json_text(given[0]) if given else None) or "{}"
    stored_id = entry.get("tool_call_id")
    return Call(
        id=stored_id if usable_id(stored_id) is not None else entry.get("id"),
        name=names[0] if names else "",
        arguments=arguments,
        entry=entry,
    )


def written_id(value: object) -> object:
    """A call's or a result's id as healing pairs them (``usable_id``: trimmed, an integer's
    digits), so that a call and its results carry the same string in a provider's body
    (``" c1"`` and ``"c1"`` are one call to the rules, two to OpenAI); an id that names no
    call is written as it is."""
    usable = usable_id(value)
    return value if usable is None else usable


_OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NOT_IN_OPENAI_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_NAME = 64


def openai_names(names: Iterable[str]) -> dict[str, str]:
    """Each of ``names`` (a body's function names, in order) that OpenAI refuses ("string
    does not match pattern '^[a-zA-Z0-9_-]+$'", 64 characters at most: Gemini takes ``.``
    and ``:``), with the name to write instead: its text with each other character a
    ``_``, cut to 64 characters (``tool`` when that leaves nothing), numbered past every
    name of the body's messages, so that two tools stay two. The same name is always written the
    same, for a call and what names it. A name that fits is not in the answer."""
    given = list(names)
    taken = {name for name in given if _OPENAI_NAME.fullmatch(name)}
    fitted: dict[str, str] = {}
    for name in given:
        if name in taken or name in fitted:
            continue
        stem = _NOT_IN_OPENAI_NAME.sub("_", name)[:_MAX_NAME] or "tool"
        fitting, n = stem, 1
        while fitting in taken:
            n += 1
            suffix = f"_{n}"
            fitting = stem[: _MAX_NAME - len(suffix)] + suffix
        taken.add(fitting)
        fitted[name] = fitting
    return fitted


def declared(message: Message) -> list[Call]:
    """The calls an assistant turn declares, as ``ids.declared_calls`` sees them."""
    calls = message.metadata.get("tool_calls")
    if message.role != "assistant" or not isinstance(calls, list):
        return []
    return [_call(entry) for entry in calls if isinstance(entry, dict)]


def namespace(holder: Message | Mapping[str, Any], key: str) -> dict[str, Any]:
    """What one format keeps on a row or a call (empty when it keeps nothing there)."""
    metadata = holder.metadata if isinstance(holder, Message) else holder
    value = metadata.get(key)
    return value if isinstance(value, dict) else {}


def inner(kept: Mapping[str, Any], key: str) -> dict[str, Any]:
    """One entry of a format's namespace that should be an object (empty when it is not)."""
    value = kept.get(key)
    return value if isinstance(value, dict) else {}


def is_foreign_item(message: Message) -> bool:
    """A Responses item other than a message or function call (``reasoning``...), which
    the other formats have no place for."""
    return isinstance(message.metadata.get("responses_item"), dict)


def text_of(part: object) -> str | None:
    """The text of a plain text part in any format's spelling (OpenAI ``text``, Responses
    ``input_text``/``output_text``, Anthropic ``text``, Gemini ``{"text"}``), else None."""
    if not isinstance(part, dict) or not isinstance(part.get("text"), str):
        return None
    if "type" in part:
        return part["text"] if part["type"] in ("text", "input_text", "output_text") else None
    return None if part.get("thought") else part["text"]


def as_parts(content: object) -> list[Any]:
    """Content as a list of parts: a string is one text part (none when empty)."""
    if content is None:
        return []
    if isinstance(content, list):
        return content
    text = content if isinstance(content, str) else json_text(content) or ""
    return [{"type": "text", "text": text}] if text else []


def as_string(content: object) -> str | None:
    """Content that a format takes as a string or a list of parts: an object becomes its
    JSON text, anything else stays."""
    if isinstance(content, dict):
        return json_text(content) or ""
    return content  # type: ignore[return-value]


def joins_results(message: Message, previous: Message | None, space: str, marker: str) -> bool:
    """Whether ``message`` goes into the same user turn as the tool results just before
    it, as Anthropic and Gemini carry results: consecutive results, then one user
    message, share a turn unless the reader marked the row as a turn of its own."""
    return (
        previous is not None
        and previous.role == "tool"
        and message.role != "assistant"
        and not namespace(message, space).get(marker)
    )


def mark_new_turn(rows: list[Row], first: int, space: str, marker: str) -> None:
    """Mark ``rows[first]`` (the first row of a provider turn) when ``joins_results`` would
    otherwise put it into the turn before, so that writing gives the turns back as read."""
    joins = 0 < first < len(rows) and rows[first - 1]["role"] == "tool"
    if joins and rows[first]["role"] != "assistant":
        rows[first]["metadata"].setdefault(space, {})[marker] = True


def layout(kinds: list[Any]) -> list[Any] | None:
    """How an assistant turn's blocks interleave: ``"content"`` (the next content part),
    ``"call"`` (the next call) or a block kept as it is. None for the usual order,
    content then calls, which writing produces anyway."""
    plain = [kind for kind in kinds if kind in ("content", "call")]
    if len(plain) == len(kinds) and plain == sorted(plain, key=lambda kind: kind == "call"):
        return None
    return kinds


def arrange(kinds: object, content: list[Any], calls: list[Any]) -> list[Any]:
    """The blocks of an assistant turn in the order ``layout`` recorded (content parts
    and calls left over, as after an edit, follow in the usual order)."""
    contents, pending = iter(content), iter(calls)
    blocks: list[Any] = []
    for kind in kinds if isinstance(kinds, list) else []:
        if isinstance(kind, dict):
            blocks.append(kind)
            continue
        taken = next(contents if kind == "content" else pending, _NONE)
        if taken is not _NONE:
            blocks.append(taken)
    return [*blocks, *contents, *pending]


_NONE = object()
