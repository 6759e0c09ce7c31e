"""Messages in the two shapes the spec uses, and how incoming JSON becomes one.

The *stored* shape (``Message``) keeps the role and content at top level and every
other key under ``metadata``::

    {"role": "tool", "content": "Found 3 cats", "metadata": {"tool_call_id": "c1"}}

The *flat* provider shape (``FlatMessage``) carries the tool keys at top level::

    {"role": "tool", "content": "Found 3 cats", "tool_call_id": "c1"}

Both are accepted on the way in: ``FlatMessage`` validates either (a stored message
is a flat message whose tool keys happen to sit under ``metadata``), and
``to_stored()`` moves every top-level key the stored shape has no place for under
``metadata``, so nothing a client sent is lost. A message is held, stored and
returned in the stored shape.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, cast, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    JsonValue,
    StrictBool,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from .errors import InvalidInput, Problem
from .ids import result_call_id, usable_id

Role = Literal["user", "assistant", "tool", "system"]
ROLES: tuple[str, ...] = get_args(Role)

INTERRUPTED_TEXT = "Tool call was interrupted; no result."

# A tool call id this long is not an id; it is a mistake upstream.
MAX_ID_LENGTH = 512


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


MAX_DEPTH = 64
"""How deeply arrays and objects may nest inside one message's content or metadata."""

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_problem(value: object) -> str | None:
    """Why ``value`` cannot be stored as JSON, or None when it can: the first problem found.

    Besides what JSON itself refuses (NaN, infinities, values of other types), a string
    may not hold U+0000 or a lone surrogate (U+D800 to U+DFFF): PostgreSQL cannot store
    either and UTF-8 cannot encode the second, so neither database takes them. Nesting
    deeper than MAX_DEPTH is refused too.
    """
    # Hot: every message of every import and append passes here, twice for a provider
    # import. Strings and numbers inside a container are checked where they are met; only
    # containers go on the stack.
    if not isinstance(value, list | dict):
        return _scalar_problem(value)
    pending: list[tuple[list[Any] | dict[Any, Any], int]] = [(value, 0)]
    search = _UNSTORABLE.search
    while pending:
        item, depth = pending.pop()
        if depth >= MAX_DEPTH:
            return f"nests arrays or objects more than {MAX_DEPTH} levels deep"
        values: Iterable[object]
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return "holds an object key that is not a string"
                if search(key):
                    return _scalar_problem(key)
            values = item.values()
        else:
            values = item
        for nested in values:
            kind = type(nested)
            if kind is str:
                if search(cast(str, nested)):
                    return _scalar_problem(nested)
            elif kind is int or kind is bool or nested is None:
                continue
            elif isinstance(nested, list | dict):
                pending.append((nested, depth + 1))
            elif (problem := _scalar_problem(nested)) is not None:
                return problem
    return None


def _scalar_problem(item: object) -> str | None:
    """``json_problem`` for a value that is not a list or an object."""
    if item is None or isinstance(item, bool | int):
        return None
    if isinstance(item, float):
        if math.isfinite(item):
            return None
        return "holds a number that JSON cannot carry (NaN or infinity)"
    if isinstance(item, str):
        if found := _UNSTORABLE.search(item):
            return f"holds the character U+{ord(found.group()):04X}, which cannot be stored"
        return None
    return f"holds a value that is not JSON ({type(item).__name__})"


def json_problem_at(value: object) -> tuple[str, str] | None:
    """Where in ``value`` the problem ``json_problem`` finds is (``[2].text``, ``.note``, or
    ``""`` for the value itself; nesting too deep is named at the value), and the problem.
    Slower than ``json_problem``: for errors only."""
    pending: deque[tuple[object, str, int]] = deque([(value, "", 0)])
    while pending:
        item, where, depth = pending.popleft()
        if isinstance(item, list | dict) and depth >= MAX_DEPTH:
            return "", f"nests arrays or objects more than {MAX_DEPTH} levels deep"
        if isinstance(item, list):
            pending.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))
        elif isinstance(item, dict):
            for key, nested in item.items():
                if problem := json_problem(key):
                    return where, f"has a key that {problem}"
                pending.append((nested, f"{where}.{key}", depth + 1))
        elif problem := json_problem(item):
            return where, problem
    return None


REPLACEMENT = "\ufffd"
"""What ``storable_copy`` writes for a character no database stores (U+FFFD)."""


def storable_text(text: str) -> str:
    """``text`` with each U+0000 and lone surrogate replaced by U+FFFD."""
    return _UNSTORABLE.sub(REPLACEMENT, text)


def storable_copy(value: object) -> tuple[object, list[tuple[str, str]]]:
    """``value`` with each U+0000 and lone surrogate in its strings and keys replaced by
    U+FFFD, and where (``.output``, ``[2].text``, as ``json_problem_at`` names places; a
    key by its new name) with the first character of each kind there (``U+0000``,
    ``U+D800``), once a kind. Only what held one is copied. For a runtime's log
    (``formats.source``): a tool's output of a binary file holds a NUL as often as not,
    and one should not cost the log."""
    places: list[tuple[str, str]] = []

    def replaced(text: str, where: str, *, key: bool = False) -> str:
        surrogate = _SURROGATE.search(text)
        if surrogate is None and "\x00" not in text:
            return text
        copy = storable_text(text)
        place = f"{where}.{copy}" if key else where
        if "\x00" in text:
            places.append((place, "U+0000"))
        if surrogate is not None:
            places.append((place, f"U+{ord(surrogate.group()):04X}"))
        return copy

    def fixed(item: object, where: str, depth: int) -> object:
        if isinstance(item, str):
            return replaced(item, where)
        if depth >= MAX_DEPTH:  # refused as it is, by json_problem
            return item
        if isinstance(item, list):
            items = [fixed(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item)]
            return item if all(a is b for a, b in zip(items, item, strict=True)) else items
        if isinstance(item, dict):
            pairs = []
            for key, nested in item.items():
                new_key = replaced(key, where, key=True) if isinstance(key, str) else key
                pairs.append((new_key, fixed(nested, f"{where}.{new_key}", depth + 1)))
            changed = any(
                a is not b or c is not d for (a, c), (b, d) in zip(pairs, item.items(), strict=True)
            )
            copied = dict(pairs)
            # Two keys that differ only there would become one: left for json_problem.
            return copied if changed and len(copied) == len(pairs) else item
        return item

    return fixed(value, "", 0), places


def _content(value: object) -> object:
    """The kinds of content there are; what they hold is checked with the message
    (``FlatMessage.to_stored``), so that a problem is named at its exact place."""
    if value is not None and not isinstance(value, str | list | dict):
        raise PydanticCustomError(
            "content_type",
            "must be a string, a list of content parts, an object or null, not {kind}",
            {"kind": describe(value)},
        )
    return value


def _json(value: object) -> object:
    problem = json_problem(value)
    if problem:
        raise PydanticCustomError("json", problem)
    return value


def _call_id(value: object) -> object:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise PydanticCustomError(
            "call_id_type",
            "must be a string (or an integer), not {kind}",
            {"kind": describe(value)},
        )
    if len(str(value)) > MAX_ID_LENGTH:
        raise PydanticCustomError("call_id_length", f"is longer than {MAX_ID_LENGTH} characters")
    return value


StorableText = Annotated[str, AfterValidator(_json)]
"""Text both databases can store: no U+0000, no lone surrogate."""

Content = Annotated[str | list[JsonValue] | dict[str, JsonValue] | None, BeforeValidator(_json)]
SentContent = Annotated[
    Any,
    BeforeValidator(_content),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string"},
                {"type": "array", "items": {}},
                {"type": "object"},
                {"type": "null"},
            ]
        }
    ),
]
"""Content as sent: a string, a list of parts, an object or null."""
CallId = Annotated[Any, BeforeValidator(_call_id)]
"""As sent: a string or an integer. ``ids.usable_id`` decides whether it names a call."""


class Message(BaseModel):
    """One buffer entry, in the stored shape."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: Content = None
    metadata: Annotated[dict[str, JsonValue], BeforeValidator(_json)] = {}

    def as_stored(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "metadata": self.metadata}

    def to_flat(self) -> FlatMessage:
        return FlatMessage.model_validate(
            {"role": self.role, "content": self.content, **self.metadata}
        )


def placeholder_for(call_id: str) -> Message:
    """The synthetic result that MEM-3 inserts for a call that was never answered."""
    return Message(
        role="tool",
        content=INTERRUPTED_TEXT,
        metadata={"tool_call_id": call_id, "healed": True},
    )


class ToolCall(BaseModel):
    """One entry of an assistant turn's ``tool_calls``, in either spelling (MEM-11)."""

    model_config = ConfigDict(extra="allow")

    tool_call_id: CallId = None
    id: CallId = None


class ToolKeys(BaseModel):
    """The keys that pair calls with results, wherever a message carries them."""

    model_config = ConfigDict(extra="allow")

    tool_calls: list[ToolCall] | None = None
    tool_call_id: CallId = None
    healed: StrictBool | None = None


class FlatMessage(ToolKeys):
    """A message in the flat provider shape, or in the stored shape (tool keys under
    ``metadata``): what the API, imports and forms accept."""

    role: Role
    content: SentContent = None
    metadata: ToolKeys | None = None

    def to_stored(self, *, json_checked: bool = False) -> Message:
        """The stored shape: every top-level key but role and content under ``metadata``,
        where the same key already under ``metadata`` must agree. ``json_checked``: the
        caller has already checked that every value can be stored (``json_problem``)."""
        top = _as_sent(self)
        nested = _as_sent(self.metadata) if self.metadata else {}
        clashes = [key for key, value in top.items() if key in nested and nested[key] != value]
        if clashes:
            raise InvalidInput(
                [
                    Problem(
                        key, "is given both at top level and under metadata, with different values"
                    )
                    for key in clashes
                ]
            )
        metadata = {**nested, **top}
        if not json_checked:
            _check_json(self.content, "content")
            _check_json(metadata, "metadata")
        return Message.model_construct(
            _fields_set=_STORED_FIELDS, role=self.role, content=self.content, metadata=metadata
        )


_STORED_FIELDS = {"role", "content", "metadata"}
_TOOL_FIELDS = frozenset(ToolKeys.model_fields)


def _as_sent(keys: ToolKeys) -> dict[str, Any]:
    """The tool keys (in the model's order: ``model_fields_set`` is a set, whose order
    changes from process to process) and other extra keys of a message (or of its
    metadata) as sent."""
    given = keys.model_fields_set
    sent: dict[str, Any] = {
        name: getattr(keys, name) for name in ToolKeys.model_fields if name in given
    }
    if sent.get("tool_calls") is not None:
        sent["tool_calls"] = [call.model_dump(exclude_unset=True) for call in sent["tool_calls"]]
    sent.update(keys.model_extra or {})
    return sent


def _check_json(value: object, field: str) -> None:
    if json_problem(value) is not None:
        found = json_problem_at(value)
        assert found is not None
        where, problem = found
        raise InvalidInput([Problem(f"{field}{where}", problem)])


_SENTENCES = {
    "missing": "is missing",
    "model_type": "must be an object, not {kind}",
    "model_attributes_type": "must be an object, not {kind}",
    "dict_type": "must be an object, not {kind}",
    "list_type": "must be a list, not {kind}",
    "bool_type": "must be true or false, not {kind}",
    "literal_error": "must be one of {allowed}, not {input!r}",
    "string_type": "must be a string, not {kind}",
    "string_unicode": "holds a lone surrogate (U+D800 to U+DFFF), which cannot be stored",
}


def _allowed(expected: str) -> str:
    """pydantic's ``"'a', 'b' or 'c'"`` as ``a, b, c``."""
    return ", ".join(re.findall(r"'([^']*)'", expected)) or expected


def problem_from(error: ErrorDetails, path: str = "", skip: int = 0) -> Problem:
    """A pydantic error as a Problem: where (``path`` followed by the error's location,
    less its first ``skip`` parts, as ``messages[3].role``) and a sentence."""
    where = path
    for part in error["loc"][skip:]:
        if isinstance(part, int):
            where += f"[{part}]"
        else:
            where += f".{part}" if where else str(part)
    template = _SENTENCES.get(error["type"])
    if error["type"] == "list_type" and error["loc"][-1:] == ("tool_calls",):
        template = "must be a list of calls, not {kind}"
    if template is None:
        return Problem(where or "body", error["msg"])
    if "input" not in error:  # what was sent is not known: say what is wanted only
        template = template.split(", not {")[0]
    expected = (error.get("ctx") or {}).get("expected")
    allowed = _allowed(expected) if isinstance(expected, str) else ", ".join(ROLES)
    sentence = template.format(
        kind=describe(error.get("input")), input=error.get("input"), allowed=allowed
    )
    return Problem(where or "body", sentence)


def parse_message(
    raw: object, path: str, *, json_checked: bool = False, storable: bool = False
) -> Message:
    """Read one message in either shape into the stored shape, or raise InvalidInput.

    This checks structure only (what a stored transcript must have to be kept at
    all); whether a message may be *appended* is ``appendable_problems``' question.
    ``storable``: every value in ``raw`` is known to pass ``json_problem``.
    """
    plain = _plainly_stored(raw, json_checked=json_checked)
    if plain is None:
        return _parse_by_model(raw, path, json_checked=json_checked, storable=storable)
    role, content, metadata = plain
    if not (json_checked or storable):  # as ``to_stored`` checks them
        try:
            _check_json(content, "content")
            _check_json(metadata, "metadata")
        except InvalidInput as error:
            raise _placed(error, raw, path) from None
    return Message.model_construct(
        _fields_set=_STORED_FIELDS, role=role, content=content, metadata=metadata
    )


def _parse_by_model(
    raw: object, path: str, *, json_checked: bool, storable: bool = False
) -> Message:
    try:
        flat = FlatMessage.model_validate(raw)
    except ValidationError as error:
        raise InvalidInput([problem_from(e, path) for e in error.errors()]) from None
    if json_checked and type(raw) is dict and raw.keys() <= _STORED_FIELDS:
        # Already in the stored shape (a format reader's row): its metadata is what
        # ``to_stored`` would rebuild from the validated keys, key for key; taken as it is.
        metadata = raw.get("metadata")
        return Message.model_construct(
            _fields_set=_STORED_FIELDS,
            role=flat.role,
            content=flat.content,
            metadata=metadata if metadata is not None else {},
        )
    try:
        return flat.to_stored(json_checked=json_checked or storable)
    except InvalidInput as error:
        raise _placed(error, raw, path) from None


def _placed(error: InvalidInput, raw: object, path: str) -> InvalidInput:
    """What ``to_stored`` found wrong, under the message's path, and where it was sent."""
    return InvalidInput([_where_sent(p.within(f"{path}."), raw, path) for p in error.problems])


def _plainly_stored(raw: object, *, json_checked: bool) -> tuple[Role, Any, dict[str, Any]] | None:
    """The role, content and metadata of a message in the stored shape that ``FlatMessage``
    surely accepts, as ``parse_message`` would give them; None for anything else, which
    the model reads (and says what is wrong with). A shortcut past the model for the rows
    of a long transcript, never a rule of its own: what it takes, the model takes too.

    Plain: an object with role, content and metadata only, each of a type the model takes,
    and tool keys of the usual kinds (an id a string of at most ``MAX_ID_LENGTH``
    characters, ``tool_calls`` a list of objects, ``healed`` a boolean)."""
    if type(raw) is not dict or not raw.keys() <= _STORED_FIELDS:
        return None
    role, content, metadata = raw.get("role"), raw.get("content"), raw.get("metadata")
    if type(role) is not str or role not in ROLES:
        return None
    if content is not None and type(content) not in (str, list, dict):
        return None
    if metadata is None:
        return cast(Role, role), content, {}
    if type(metadata) is not dict or not _plain_metadata(metadata):
        return None
    if json_checked:  # a format reader's row: its metadata is taken as it is
        return cast(Role, role), content, metadata
    ordered = _in_model_order(metadata)
    return None if ordered is None else (cast(Role, role), content, ordered)


def _plain_metadata(metadata: dict[Any, Any]) -> bool:
    healed, calls = metadata.get("healed"), metadata.get("tool_calls")
    return (
        _string_keys(metadata)
        and _plain_id(metadata.get("tool_call_id"))
        and (healed is None or type(healed) is bool)
        and (calls is None or (type(calls) is list and all(_plain_call(c) for c in calls)))
    )


def _in_model_order(metadata: dict[Any, Any]) -> dict[str, Any] | None:
    """``metadata`` as ``to_stored`` rebuilds it: its tool key first, and in each call the
    ids first (as ``ToolCall.model_dump`` gives it back). None when it has several tool
    keys, whose order is the model's own."""
    tool_keys = [key for key in _TOOL_FIELDS if key in metadata]
    if not tool_keys:
        return dict(metadata)
    if len(tool_keys) > 1:
        return None
    [key] = tool_keys
    value = metadata[key]
    if key == "tool_calls" and value:
        value = [_ids_first(call) for call in value]
    return {key: value, **{name: kept for name, kept in metadata.items() if name != key}}


def _plain_id(value: object) -> bool:
    return value is None or (type(value) is str and len(value) <= MAX_ID_LENGTH)


def _plain_call(call: object) -> bool:
    return (
        type(call) is dict
        and _plain_id(call.get("tool_call_id"))
        and _plain_id(call.get("id"))
        and _string_keys(call)
    )


def _string_keys(value: dict[Any, Any]) -> bool:
    return all(type(key) is str for key in value)


def _ids_first(call: dict[str, Any]) -> dict[str, Any]:
    """A call as the model gives it back (``ToolCall.model_dump``): its ids first."""
    return {**{key: call[key] for key in ("tool_call_id", "id") if key in call}, **call}


def parse_messages(
    raw: object,
    path: str = "messages",
    *,
    appendable: bool = False,
    json_checked: bool = False,
    storable: bool = False,
) -> list[Message]:
    """Read a list of messages in either shape, reporting every problem of every message at
    once. With ``appendable``, a message must also meet what the append rules need of it
    (``appendable_problems``); those problems are named where the client put the key.
    With ``json_checked``, the caller vouches that every value can be stored, as the
    provider-format readers check each turn of their document (``formats.read``): the
    walk over every value, the costliest check, is then not made twice. With
    ``storable``, the caller knows it from the text the values were read from
    (``jsontext.known_storable_document``), and the messages are read as without it but
    for that walk."""
    if not isinstance(raw, list):
        raise InvalidInput([Problem(path, f"must be a list of messages, not {describe(raw)}")])
    messages: list[Message] = []
    problems: list[Problem] = []
    for index, item in enumerate(raw):
        where = f"{path}[{index}]"
        try:
            message = parse_message(item, where, json_checked=json_checked, storable=storable)
        except InvalidInput as error:
            problems.extend(error.problems)
            continue
        if appendable:
            problems.extend(_where_sent(p, item, where) for p in _append_problems(message, where))
        messages.append(message)
    if problems:
        raise InvalidInput(problems)
    return messages


def appendable_problems(messages: Sequence[Message], path: str = "messages") -> list[Problem]:
    """What stops a batch from being appended under the rules.

    A stored transcript is kept as it is, unusable ids included (the analysis flags
    them). An append is held to more: MEM-1 decides by a tool result's id and MEM-2
    by the ids a turn declares, so a tool result and every declared call must carry
    a usable id (docs/decisions.md, MEM-1 and MEM-11).
    """
    return [
        problem
        for index, message in enumerate(messages)
        for problem in _append_problems(message, f"{path}[{index}]")
    ]


def _append_problems(message: Message, where: str) -> list[Problem]:
    problems: list[Problem] = []
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
            if usable_id(call.get("tool_call_id")) is None and usable_id(call.get("id")) is None:
                problems.append(
                    Problem(
                        f"{where}.metadata.tool_calls[{i}]",
                        "a declared call needs a usable id (tool_call_id or id)",
                    )
                )
    return problems


def _where_sent(problem: Problem, sent: object, where: str) -> Problem:
    """A problem about a key of ``metadata``, named where the client put that key: at top
    level (the flat shape) or under ``metadata``."""
    under = f"{where}.metadata."
    if not problem.path.startswith(under):
        return problem
    rest = problem.path.removeprefix(under)
    key = re.split(r"[.\[]", rest, maxsplit=1)[0]
    if _sent_at_top_level(sent, key):
        return Problem(f"{where}.{rest}", problem.message)
    return problem


def _sent_at_top_level(sent: object, key: str) -> bool:
    if isinstance(sent, FlatMessage):
        return key in sent.model_fields_set or key in (sent.model_extra or {})
    return isinstance(sent, dict) and key in sent
