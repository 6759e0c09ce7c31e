"""Gemini: ``{"contents", "systemInstruction", ...}`` or a bare list of contents, in the
REST API's camelCase spelling.

Role ``model`` is the assistant; a content without a role is the user's, as Gemini
reads it, and is written back without one. A model turn's text and media parts are its
content, its ``functionCall`` parts its canonical ``tool_calls``; other parts (thoughts, code
execution) and an order other than content-then-calls are kept in
``metadata.gemini.layout``. A user turn becomes one tool row per ``functionResponse``
part, then one user row for its other parts if it has any; writing regroups them as
for Anthropic. ``systemInstruction`` is a leading system row whose content is its parts;
writing puts every system row back there, wherever it stands in the buffer.

Ids are optional in Gemini. A call without one gets ``gemini-<turn>-<k>`` (its turn's
index in ``contents``, its place among the turn's calls). A response without one
answers by position, never by name: the k-th response after a model turn answers that
turn's k-th call (``gemini-unpaired-<turn>-<part>`` when the turn has no k-th call). An
id made up here is marked ``synthesized_id`` and left out again on writing. A response
whose id names no call (from another format) is written as the response to the call at
its place, with that call's name and no id: Gemini refuses an empty name.
``response: {"output": x}`` reads as content x, ``{"error": x}`` as content x with
``metadata.is_error``; any other response object is the content itself
(``whole_response``). Media a response nests in its ``parts`` (images a tool gave, as
Gemini 3 takes them) are kept with the rest of the part (``gemini.part``) and written back
nested: content is what every provider's export can carry, and the others' have no place
for a tool's image.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from buffers.healing.ids import usable_id
from buffers.healing.messages import Message, describe

from . import media
from .common import (
    Call,
    Converted,
    Problems,
    Row,
    arguments_object,
    arrange,
    as_parts,
    body_and_entries,
    declared,
    has_choice,
    has_id,
    has_text,
    inner,
    is_foreign_item,
    is_object,
    joins_results,
    json_text,
    layout,
    mark_new_turn,
    namespace,
    row,
    storable,
    text_of,
    without,
    written_id,
)

NEW_TURN = "new_turn"
WITHOUT_ROLE = "without_role"
"""Marks the first row of a content read without a role, to write it back without one."""
SNAKE_CASE = {"function_call": "functionCall", "function_response": "functionResponse"}
MEDIA = ("inlineData", "fileData")


@dataclass
class Pairing:
    """What positional pairing needs while reading: the last model turn's call ids, the
    responses seen since, and each call id's function name."""

    calls: list[object] = field(default_factory=list)
    answered: int = 0
    names: dict[str | None, str] = field(default_factory=dict)


def read(document: object) -> Converted:
    problems = Problems()
    fields, contents = body_and_entries(
        document, "contents", ("systemInstruction",), problems, "a list of contents"
    )
    rows: list[Row] = []
    if isinstance(document, dict) and "systemInstruction" in document:
        read_instruction(document["systemInstruction"], rows, problems)
    pairing = Pairing()
    for index, turn in enumerate(contents):
        read_turn(turn, index, rows, pairing, problems)
    problems.raise_if_any()
    return Converted(rows, fields)


def read_instruction(instruction: object, rows: list[Row], problems: Problems) -> None:
    where = "systemInstruction"
    if not is_object(instruction, where, problems) or not storable(instruction, where, problems):
        return
    assert isinstance(instruction, dict)
    parts = _parts(instruction, where, problems)
    if parts is not None:
        extras = without(instruction, "parts")
        rows.append(row("system", parts, {"gemini": {"turn": extras}} if extras else {}))


def _parts(turn: dict[str, Any], where: str, problems: Problems) -> list[Any] | None:
    if "parts" not in turn:
        problems.add(f"{where}.parts", "is missing")
        return None
    parts = turn["parts"]
    if not isinstance(parts, list):
        problems.add(f"{where}.parts", f"must be a list of parts, not {describe(parts)}")
        return None
    for index, part in enumerate(parts):
        at = f"{where}.parts[{index}]"
        if not is_object(part, at, problems):
            continue
        for snake, camel in SNAKE_CASE.items():
            if snake in part:
                problems.add(
                    f"{at}.{snake}",
                    f"is the Python SDK's spelling; the REST format read here spells it {camel}",
                )
        has_text(part, "text", at, problems, required=False)
    return parts


def read_turn(
    turn: object, index: int, rows: list[Row], pairing: Pairing, problems: Problems
) -> None:
    where = f"contents[{index}]"
    if not is_object(turn, where, problems) or not storable(turn, where, problems):
        return
    assert isinstance(turn, dict)
    # The role is optional: Gemini takes a content without one as the user's.
    role_ok = "role" not in turn or has_choice(
        turn, "role", where, ("user", "model", "function"), problems
    )
    role = turn.get("role", "user")
    parts = _parts(turn, where, problems)
    if not role_ok or parts is None:
        return
    first = len(rows)
    if role == "model":
        read_model_parts(parts, index, rows, pairing, problems)
    else:
        read_user_parts(parts, index, rows, pairing, problems)
    if len(rows) > first:
        mark_new_turn(rows, first, "gemini", NEW_TURN)
        usual = "model" if role == "model" else "user"
        extras = without(turn, "parts", *(["role"] if role == usual else []))
        if extras:
            rows[first]["metadata"].setdefault("gemini", {})["turn"] = extras
        if "role" not in turn:
            rows[first]["metadata"].setdefault("gemini", {})[WITHOUT_ROLE] = True


def _is_content(part: dict[str, Any]) -> bool:
    return (
        ("text" in part and not part.get("thought")) or "inlineData" in part or "fileData" in part
    )


def read_model_parts(
    parts: list[Any], index: int, rows: list[Row], pairing: Pairing, problems: Problems
) -> None:
    content: list[Any] = []
    calls: list[dict[str, Any]] = []
    kinds: list[Any] = []
    for place, part in enumerate(parts):
        at = f"contents[{index}].parts[{place}]"
        if not isinstance(part, dict):
            continue
        if "functionResponse" in part:
            problems.add(f"{at}.functionResponse", "belongs in a user turn, not a model turn")
        elif "functionCall" in part:
            call = read_call(part, at, f"gemini-{index}-{len(calls)}", problems)
            if call is not None:
                calls.append(call)
                kinds.append("call")
        elif _is_content(part):
            content.append(part)
            kinds.append("content")
        else:
            kinds.append(part)
    pairing.calls = [call["id"] for call in calls]
    pairing.answered = 0
    for call in calls:
        pairing.names[usable_id(call["id"])] = call["function"]["name"]
    metadata: dict[str, Any] = {"tool_calls": calls} if calls else {}
    order = layout(kinds)
    if order is not None:
        metadata["gemini"] = {"layout": order}
    rows.append(row("assistant", content or (None if kinds else []), metadata))


def read_call(
    part: dict[str, Any], at: str, made_up_id: str, problems: Problems
) -> dict[str, Any] | None:
    call = part["functionCall"]
    where = f"{at}.functionCall"
    if not is_object(call, where, problems):
        return None
    checks = [
        has_text(call, "name", where, problems),
        "id" not in call or has_id(call, "id", where, problems),
        "args" not in call or is_object(call["args"], f"{where}.args", problems),
    ]
    arguments = json_text(call.get("args", {}))
    if arguments is None:
        problems.add(f"{where}.args", "cannot be written as JSON text")
    if not all(checks) or arguments is None:
        return None
    kept: dict[str, Any] = {}
    rest = {**part, "functionCall": without(call, "id", "name", "args")}
    if rest != {"functionCall": {}}:
        kept["part"] = rest
    if "id" not in call:
        kept["synthesized_id"] = True
    if "args" not in call:
        kept["without_args"] = True
    canonical = {
        "id": call.get("id", made_up_id),
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments},
    }
    return {**canonical, "gemini": kept} if kept else canonical


def read_user_parts(
    parts: list[Any], index: int, rows: list[Row], pairing: Pairing, problems: Problems
) -> None:
    others: list[Any] = []
    responses = 0
    for place, part in enumerate(parts):
        at = f"contents[{index}].parts[{place}]"
        if not isinstance(part, dict):
            continue
        if "functionCall" in part:
            problems.add(f"{at}.functionCall", "belongs in a model turn, not a user turn")
        elif "functionResponse" in part:
            responses += 1
            result = read_response(part, at, f"gemini-unpaired-{index}-{place}", pairing, problems)
            if result is not None:
                rows.append(result)
        else:
            others.append(part)
    if others or not responses:
        rows.append(row("user", others))


def read_response(
    part: dict[str, Any], at: str, unpaired_id: str, pairing: Pairing, problems: Problems
) -> Row | None:
    answered, pairing.answered = pairing.answered, pairing.answered + 1
    response = part["functionResponse"]
    where = f"{at}.functionResponse"
    if not is_object(response, where, problems):
        return None
    checks = [
        has_text(response, "name", where, problems),
        "id" not in response or has_id(response, "id", where, problems),
    ]
    if "response" not in response:
        problems.add(f"{where}.response", "is missing")
        return None
    if not is_object(response["response"], f"{where}.response", problems) or not all(checks):
        return None
    kept: dict[str, Any] = {}
    if "id" in response:
        call_id = response["id"]
    else:
        call_id = pairing.calls[answered] if answered < len(pairing.calls) else unpaired_id
        kept["synthesized_id"] = True
    rest = {**part, "functionResponse": without(response, "id", "name", "response")}
    if rest != {"functionResponse": {}}:
        kept["part"] = rest
    if response["name"] != pairing.names.get(usable_id(call_id), ""):
        kept["name"] = response["name"]
    content, is_error, whole = _output(response["response"])
    if whole:
        kept["whole_response"] = True
    metadata: dict[str, Any] = {"tool_call_id": call_id}
    if is_error:
        metadata["is_error"] = True
    if kept:
        metadata["gemini"] = kept
    return row("tool", content, metadata)


def nested_parts(response: dict[str, Any]) -> list[Any] | None:
    """The media a ``functionResponse`` nests in its ``parts`` (kept under ``gemini.part``,
    written back nested); None when it has none, or parts of another kind."""
    parts = response.get("parts")
    if not isinstance(parts, list) or not parts:
        return None
    media = all(
        isinstance(part, dict) and "text" not in part and any(key in part for key in MEDIA)
        for part in parts
    )
    return parts if media else None


def _output(response: dict[str, Any]) -> tuple[object, bool, bool]:
    """A response object as (content, is an error, is the whole object)."""
    for key in ("output", "error"):
        if set(response) == {key} and isinstance(response[key], str | list | dict):
            return response[key], key == "error", False
    return response, "error" in response, True


def write(messages: Sequence[Message], fields: Mapping[str, Any]) -> dict[str, Any]:
    """Every system row, wherever it stands, goes into ``systemInstruction``: written in
    place as a user turn, one between a call turn and its responses would split them,
    which the sendability check counts on not happening."""
    body = dict(fields)
    instructions = [message for message in messages if message.role == "system"]
    if instructions:
        turn = inner(namespace(instructions[0], "gemini"), "turn")
        body["systemInstruction"] = {**turn, "parts": system_parts(instructions)}
    written: list[dict[str, Any]] = []
    previous: Message | None = None
    names: dict[str | None, str] = {}
    # Gemini pairs a response that has no id by its place among all the responses since
    # the calls, ids or none. So the responses to the last model turn's calls that went
    # without ids (made up on reading, never written) go at their calls' places, whatever
    # order the buffer holds them in (a heal puts a placeholder right after the turn,
    # before the results already there), and the others fill the places left.
    places: dict[str | None, int] = {}
    unsent: set[str | None] = set()
    responses: list[tuple[int | None, list[Any]]] = []  # this user turn's, as written
    unnamed: list[bool] = []  # whether each of them answers an id that names no call
    before = 0  # the responses of the user turns before it, since the calls
    last_calls: list[Call] = []  # the last model turn's calls
    answered: set[str | None] = set()  # their ids that responses since them answer
    given: list[Call] = []  # those given to responses of no call, in earlier user turns
    giving: list[Call] = []  # those given so in this user turn
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "assistant":
            calls = declared(message)
            if is_foreign_item(message) and not calls:
                continue
            names.update((usable_id(call.id), call.name) for call in calls)
            places = {usable_id(c.id): p for p, c in enumerate(calls) if _id_synthesized(c)}
            unsent.update(places)
            responses, unnamed, before, last_calls, answered = [], [], 0, calls, set()
            given, giving = [], []
            order = namespace(message, "gemini").get("layout")
            content = gemini_parts(message.content, "assistant")
            parts = arrange(order, content, [call_part(c) for c in calls])
            written.append(start(message, "model", parts))
        elif message.role == "tool":
            place = places.get(usable_id(message.metadata.get("tool_call_id")))
            if not joins_results(message, previous, "gemini", NEW_TURN):
                before += len(responses)
                responses, unnamed, given = [], [], given + giving
                written.append(start(message, "user", []))
            responses.append((place, response_parts(message, names, unsent)))
            unnamed.append(_names_no_call(message, names))
            if not unnamed[-1]:
                answered.add(usable_id(message.metadata.get("tool_call_id")))
            order = placed(responses, before)
            free = iter(
                [
                    c
                    for c in last_calls
                    if usable_id(c.id) not in answered and all(c is not g for g in given)
                ]
            )
            giving = []
            for index in order:
                if unnamed[index]:
                    call = next(free, None)
                    giving += [call] if call is not None else []
                    _as_response_to(responses[index][1][0], call)
            written[-1]["parts"] = [part for index in order for part in responses[index][1]]
        else:
            parts = gemini_parts(message.content, message.role)
            if joins_results(message, previous, "gemini", NEW_TURN):
                written[-1]["parts"].extend(parts)
            else:
                written.append(start(message, "user", parts))
        previous = message
    body["contents"] = written
    return body


def start(message: Message, role: str, parts: list[Any]) -> dict[str, Any]:
    kept = namespace(message, "gemini")
    turn = {"role": role, **inner(kept, "turn"), "parts": parts}
    if kept.get(WITHOUT_ROLE) is True and role == "user":
        del turn["role"]
    return turn


def system_parts(messages: Sequence[Message]) -> list[Any]:
    return [part for m in messages for part in gemini_parts(m.content, "system")]


def gemini_parts(content: object, role: str) -> list[Any]:
    """Content as Gemini parts in a ``role`` message: parts of other spellings' text become
    ``{"text"}``, other providers' media Gemini's where it takes them there."""
    return [
        media.written(part, "gemini", role)
        if text_of(part) is None
        else part
        if isinstance(part, dict) and "type" not in part
        else {"text": text_of(part)}
        for part in as_parts(content)
    ]


def _names_no_call(message: Message, names: Mapping[str | None, str]) -> bool:
    """A tool row whose id names no call declared before it, and that keeps no name of
    its own (one read from Gemini does): ``response_part`` would name it ``""``."""
    kept = namespace(message, "gemini")
    return "name" not in kept and usable_id(message.metadata.get("tool_call_id")) not in names


def _as_response_to(part: dict[str, Any], call: Call | None) -> None:
    """A response that names no call, written as the response to ``call``, the first of
    the turn's calls that no other response answers (Gemini answers
    "function_response.name: Name cannot be empty"): that call's name, and no id. With no
    such call, the verdict refuses the turn (more responses than calls)."""
    response = part["functionResponse"]
    response.pop("id", None)
    response["name"] = call.name if call is not None else ""


def placed(responses: Sequence[tuple[int | None, list[Any]]], before: int) -> list[int]:
    """The order of a user turn's responses, each given with the place of the call it
    answers when that call has no id (else None): such a response at its call's place
    less ``before`` (the responses of earlier user turns since the calls), where that is
    among the turn's places; the others in the places left, in their order."""
    slots: list[int | None] = [None] * len(responses)
    rest = []
    for index, (place, _) in enumerate(responses):
        at = -1 if place is None else place - before
        if 0 <= at < len(slots) and slots[at] is None:
            slots[at] = index
        else:
            rest.append(index)
    left = iter(rest)
    return [next(left) if index is None else index for index in slots]


def _id_synthesized(call: Call) -> bool:
    return namespace(call.entry, "gemini").get("synthesized_id") is True


def call_part(call: Call) -> dict[str, Any]:
    kept = namespace(call.entry, "gemini")
    rest = inner(kept, "part")
    function_call = dict(inner(rest, "functionCall"))
    if not kept.get("synthesized_id") and call.id is not None:
        function_call["id"] = written_id(call.id)
    function_call["name"] = call.name
    if not kept.get("without_args"):
        function_call["args"] = arguments_object(call.arguments)
    return {**rest, "functionCall": function_call}


def response_parts(
    message: Message, names: Mapping[str | None, str], unsent: Collection[str | None] = ()
) -> list[dict[str, Any]]:
    """A tool row's ``functionResponse``, and the media its content holds beside its text
    as parts after it, where Gemini's model sees them as media (gemini-cli sent a tool's
    image so before gemini-3). A content of text and any part Gemini cannot take as
    its own goes inside the response as it is, as JSON."""
    content = message.content
    if isinstance(content, list):
        texts = [text for part in content if (text := text_of(part)) is not None]
        others = [part for part in content if text_of(part) is None]
        beside = [found for part in others if (found := _as_gemini_media(part)) is not None]
        if others and len(beside) == len(others):
            output = message.model_copy(update={"content": "\n".join(texts)})
            return [response_part(output, names, unsent), *beside]
    return [response_part(message, names, unsent)]


def _as_gemini_media(part: object) -> dict[str, Any] | None:
    """A media part as a Gemini user turn takes it: Gemini's own, or another's translated;
    None when Gemini takes it in neither shape."""
    found = media.part_family(part)
    if found is not None and found[0] == "gemini":
        assert isinstance(part, dict)
        return part if media.taken(part, "gemini", "user") else None
    return media.translated(part, "gemini", "user")


def response_part(
    message: Message, names: Mapping[str | None, str], unsent: Collection[str | None] = ()
) -> dict[str, Any]:
    """A tool row's ``functionResponse``: with its call's id, unless that id was made up on
    reading (``unsent``: the call went without one), as the response's own was."""
    kept = namespace(message, "gemini")
    rest = inner(kept, "part")
    call_id = message.metadata.get("tool_call_id")
    response = dict(inner(rest, "functionResponse"))
    sent = not kept.get("synthesized_id") and usable_id(call_id) not in unsent
    if sent and call_id is not None:
        response["id"] = written_id(call_id)
    response["name"] = kept["name"] if "name" in kept else names.get(usable_id(call_id), "")
    if kept.get("whole_response") and isinstance(message.content, dict):
        response["response"] = message.content
    else:
        key = "error" if message.metadata.get("is_error") is True else "output"
        response["response"] = {key: "" if message.content is None else message.content}
    return {**rest, "functionResponse": response}
