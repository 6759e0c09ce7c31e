"""OpenHands event streams: a conversation's events, as OpenHands writes and exports them.

A stream is a JSON list of events (the GUI's "Export conversation", a headless
``save_trajectory_path``, an ``event_cache`` page), the same events one per JSONL line, the
API's ``{"trajectory": [events]}``, one per-event file, or an evaluation output: JSONL
(or one JSON object, or a list) of records ``{"instance_id", "history": [events],
"metrics", "error"...}``, one conversation per record, titled by its ``instance_id``
(2024 records whose history holds ``[action, observation]`` pairs are read pair by pair).
Everything a record or the API object holds beside its events is kept in the
conversation's ``metadata.openhands``.

Events of OpenHands 0.x (``id`` an integer, ``source``, ``timestamp``, and ``action`` with
``args`` or ``observation`` with ``content`` and ``extras``) become messages as
OpenHands' own ``ConversationMemory`` makes them for the model:

- ``system`` action: a system message, ``args.content``. ``message`` action: the user's
  message (``args.content``, and its ``image_urls``, a list of URLs or null, as
  ``image_url`` parts), or from the agent an assistant reply that calls nothing.
- Every action with ``tool_call_metadata`` belongs to the assistant turn of its model
  response, ``tool_call_metadata.model_response.id``: one assistant message per response,
  whose content is the response's
  ``choices[0].message.content`` and whose ``tool_calls`` are that message's calls. The
  calls come from the response, not from the actions: a response of several calls is
  emitted one action at a time, and calls whose actions were never emitted (a run stopped
  by its budget between two of them) exist only there: they are declared and unanswered.
  The response is kept once, in the turn's ``openhands.model_response``; each action, less
  its copy of the response, in ``openhands.actions``; a call's keys other than ``id``,
  ``type`` and ``function`` (``index``) under the call's own ``openhands``. A copy that is
  not the turn's response (it differs, or its turn is not in the stream) is no repeat: it
  stays where it is, in the action or the observation.
- As in ``ConversationMemory`` (its ``pending_tool_call_action_messages``), a response's
  turn is sent once every call it declares has a result, followed by those results in the
  order of its calls; what came meanwhile (a message the user sent while a command ran, the
  response's first results when its calls ran apart) comes before it. OpenHands leaves out
  a turn whose calls never all got results (a run that stopped there); here it stays where
  its first action stands, with the results it got after it and the rest unanswered, for
  healing to answer.
- An observation with ``tool_call_metadata`` is a tool result answering
  ``tool_call_metadata.tool_call_id`` (its ``cause``, the action's event id, is kept, and
  its ``tool_call_metadata`` less the copy of the turn's response).
  Its content is the event's ``content`` (what the model was shown around it, the exit
  code and working directory, stays in ``extras``). An ``error`` observation is a failed
  result (``is_error``). OpenHands writes such an error itself for an action it never
  ran when the agent stopped or the runtime died (``AGENT_ERROR$ERROR_ACTION_NOT_EXECUTED
  ...``, "The action has not been executed...", "Stop button pressed..."): it answers its
  call as an error, marked ``openhands.not_executed``.
- ``finish`` (and ``reject``) never get an observation: the run ends there. OpenHands
  sends the model such a turn as plain assistant text with the call removed, and so it is
  read: an assistant message with the response's text (else ``args.thought``) and, when
  it says something else, the final message (``args.final_thought``) as a second text
  part, declaring no ``finish`` call; the action's arguments are kept in
  ``openhands.finish`` (with its ``tool_call_id`` and ``function_name``). The run did not
  crash, so nothing shows as unanswered. Other calls of the same response are declared.
- Other actions and observations without ``tool_call_metadata`` (streams from before
  function calling, a command the user ran) are assistant (from the agent) or user
  messages of their text: the action's thought and summary, the observation's content.
- ``agent_state_changed``, ``change_agent_state``, ``null``, ``recall`` (the recalled
  context's text is made at send time, not stored), ``condensation``, ``loop_recovery``
  and the like are not conversation. Each is reported as skipped and kept, verbatim, in
  ``openhands.passthrough`` of the next message (those after the last message, in the
  conversation's); the last agent state is the conversation's ``openhands.agent_state``.

Events of the OpenHands agent SDK (1.x: ``id`` a UUID, ``kind``) are read by the SDK's own
rules: ``SystemPromptEvent`` a system message; ``MessageEvent`` its ``llm_message``;
``ActionEvent`` s sharing an ``llm_response_id`` one assistant turn, whose content is
their ``thought`` and whose calls are their ``tool_call`` s (spelled flat in the SDK,
``{id, name, arguments}``); ``ObservationEvent`` (with ``observation.is_error``),
``AgentErrorEvent`` (an error) and ``UserRejectObservation`` ("Action rejected: ...") a
result answering ``tool_call_id`` (a ``MessageEvent`` declares calls only from the
assistant: another role's ``tool_calls`` stay in its ``llm_message``). In the SDK
``finish`` is an ordinary tool whose ``FinishObservation`` answers it, so it is read as a
declared and answered call.
``ConversationStateUpdateEvent`` and the other events are passed through as above; the
last ``execution_status`` is the conversation's ``openhands.execution_status``. Text
parts are written ``{"type": "text", "text"}``; a part's other keys (``cache_prompt``)
are kept in ``openhands.part_keys``, by the part's index in the message's content, when
they are not the default.

Every message keeps the rest of its event under ``openhands``, and ``facts``: ``time``
(the event's timestamp, as written), and for a model turn the response's ``model``,
``usage``, ``finish_reason`` and, when its action's metrics end with it, ``latency_ms``.

OpenHands numbers its events as it writes them, one file each (``events/<id>.json``), and
reads them back by their ids, so a stream's events are read in the order of their ids when
each has an integer one: joined in the order of their file names (``jq -s . events/*.json``
lists ``10.json`` before ``2.json``), or from a 2024 evaluation history of pairs, they come
out of order, and the conversation says it read them by id (``openhands.reordered_by_id``).
An event whose id an earlier one has (a file joined twice) is a repeat: skipped, named with
the place of the first. Events of the agent SDK, whose ids are UUIDs, keep the file's order.

A stream is a log: a line that is not JSON and a value that is not an object are skipped
and reported; what is wrong inside an event is an error named at its place (``line 9:
tool_call_metadata.tool_call_id``). The file fits this format only when every object in
it is an event (or a record whose history holds events), so an object of some other kind
among the events makes it fit none. There is no native writer: a conversation goes back
out as OpenAI Chat, the API OpenHands talks to through LiteLLM.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import usable_id
from buffers.healing.messages import describe, json_problem, json_problem_at

from . import openai_chat
from .common import (
    Converted,
    Problems,
    Row,
    has_id,
    has_text,
    inner,
    json_text,
    row,
    storable,
    without,
)
from .litellm_facts import response_facts
from .source import Entry, Format, Reading, Skipped, Source

SPACE = "openhands"
FINISHING = frozenset({"finish", "reject"})
"""Actions that end a run and get no observation."""
NOT_CONVERSATION = frozenset(
    {
        "agent_state_changed",
        "change_agent_state",
        "null",
        "recall",
        "condensation",
        "condensation_request",
        "condense",
        "loop_recovery",
        "loop_detection",
    }
)
"""Action and observation types that OpenHands keeps out of what it sends the model."""
NOT_EXECUTED = ("The action has not been executed", "Stop button pressed.")
NOT_EXECUTED_ERROR = "AGENT_ERROR$ERROR_ACTION_NOT_EXECUTED"
SDK_RESULTS = frozenset({"ObservationEvent", "AgentErrorEvent", "UserRejectObservation"})
CALL_KEYS = ("id", "type", "function")
TEXT_PART_DEFAULTS = {"cache_prompt": False}


# What a transcript must look like.


def _is_event(value: object) -> bool:
    """An event of OpenHands 0.x (an integer id, an action or an observation) or of its SDK
    (a string id and a kind), with its timestamp and source."""
    if not isinstance(value, dict):
        return False
    if not isinstance(value.get("timestamp"), str) or not isinstance(value.get("source"), str):
        return False
    ident = value.get("id")
    if isinstance(ident, str):
        return isinstance(value.get("kind"), str)
    return (
        type(ident) is int
        and isinstance(value.get("action", value.get("observation")), str)
        and ("action" in value) != ("observation" in value)
    )


def _history_items(history: list[Any], where: str, known_storable: bool = False) -> Iterator[Entry]:
    """A history's events, the 2024 ``[action, observation]`` pairs taken one by one (known
    to be storable when the record they are in is)."""
    for index, item in enumerate(history):
        if isinstance(item, list):
            for inside, value in enumerate(item):
                yield Entry(f"{where}[{index}][{inside}]", value, known_storable)
        else:
            yield Entry(f"{where}[{index}]", item, known_storable)


def _is_record(value: object) -> bool:
    """An evaluation output record: a ``history`` of events (or an empty one)."""
    if not isinstance(value, dict) or not isinstance(value.get("history"), list):
        return False
    events = [e.value for e in _history_items(value["history"], "") if isinstance(e.value, dict)]
    if not events:
        return not value["history"] and "instance_id" in value
    return all(_is_event(event) for event in events)


@dataclass(frozen=True)
class _Stream:
    """The events of one conversation, and what their container held beside them."""

    events: list[Entry]
    fields: dict[str, Any] = field(default_factory=dict)
    where: str = ""


def _streams(source: Source) -> list[_Stream] | None:
    """The conversations a transcript holds as event streams, or None when it is not one."""
    document = source.document
    if not source.is_lines and isinstance(document, dict):
        if _is_event(document):
            return [_Stream([Entry("event", document)])]
        if _is_record(document):
            return [_record(document, "")]
        trajectory = document.get("trajectory")
        if (
            isinstance(trajectory, list)
            and "history" not in document
            and trajectory
            and all(_is_event(event) for event in trajectory)
        ):
            events = [Entry(f"trajectory[{i}]", e) for i, e in enumerate(trajectory)]
            return [_Stream(events, without(document, "trajectory"))]
        return None
    entries = source.entries()
    if entries is None:
        return None
    objects = [entry for entry in entries if isinstance(entry.value, dict)]
    if not objects:
        return None
    if all(_is_event(entry.value) for entry in objects):
        return [_Stream(entries)]
    if all(_is_record(entry.value) for entry in objects):
        return [
            _record(value, entry.where, entry.storable)
            for entry in objects
            if isinstance(value := entry.value, dict)
        ]
    return None


def _record(record: dict[str, Any], where: str, known_storable: bool = False) -> _Stream:
    prefix = f"{where}: history" if where else "history"
    return _Stream(
        list(_history_items(record["history"], prefix, known_storable)),
        without(record, "history"),
        where,
    )


def fits(source: Source) -> bool:
    return _streams(source) is not None


# Reading.


def read(source: Source) -> Reading:
    streams = _streams(source)
    if streams is None:
        raise InvalidInput(
            [Problem("file", f"is not an OpenHands event stream: found {source.looks()}")]
        )
    problems = Problems()
    skipped: list[Skipped] = list(source.unreadable)
    conversations: list[Converted] = []
    events = 0
    for stream in streams:
        events += len(stream.events)
        for name, value in stream.fields.items():
            storable(value, f"{stream.where}: {name}" if stream.where else name, problems)
        reader = _Reader(problems, skipped)
        ordered, reordered = _by_id(stream.events)
        if reordered:
            reader.state["reordered_by_id"] = True
        for entry in ordered:
            reader.event(entry)
        conversation = reader.conversation(stream)
        if conversation is not None:
            conversations.append(conversation)
        elif len(streams) > 1 and not problems:
            skipped.append(Skipped(stream.where, "is a record whose history holds no message"))
    problems.raise_if_any()
    if not conversations:
        raise InvalidInput(
            [
                Problem(
                    "file",
                    f"holds no conversation: none of its {events:,} events is a message, "
                    "an action or an observation of one",
                )
            ]
        )
    return Reading(conversations, skipped, entries=events, unit="event")


def _by_id(events: list[Entry]) -> tuple[list[Entry], bool]:
    """The events in the order of their ids when every event has an integer id (other
    values keep their places among them), and whether the file's order was another. A
    repeat of an id (skipped when read) does not count as out of order."""
    slots = [index for index, entry in enumerate(events) if isinstance(entry.value, dict)]
    values = [events[index].value for index in slots]
    ids = [
        ident
        for value in values
        if isinstance(value, dict) and isinstance(ident := _stream_id(value.get("id")), int)
    ]
    if not ids or len(ids) < len(slots):
        return events, False
    first = list(dict.fromkeys(ids))
    if first == sorted(first):
        return events, False
    ordered = list(events)
    for slot, (_, index) in zip(slots, sorted(zip(ids, slots, strict=True)), strict=True):
        ordered[slot] = events[index]
    return ordered, True


def _stream_id(ident: object) -> int | str | None:
    """An event's id in its stream: an integer from 0 (OpenHands 0.x) or a string (the
    agent SDK's UUIDs). An event never added to a stream has -1 (the null observations
    padding a 2024 evaluation history's pairs): no id, however many there are."""
    if isinstance(ident, str) or (type(ident) is int and ident >= 0):
        return ident
    return None


@dataclass
class _Waiting:
    """A model response's turn (OpenHands 0.x) whose calls are not all answered yet, and the
    results that came for it."""

    response: str
    turn: Row
    place: int
    """How many messages came before its first action: where it stays if its calls never
    all get results."""
    calls: frozenset[str]
    unanswered: set[str]
    results: list[Row] = field(default_factory=list)

    def messages(self) -> list[Row]:
        """The turn and its results, in the order of its calls (OpenHands' order)."""
        order: dict[str | None, int] = {}
        for index, call in enumerate(self.turn["metadata"].get("tool_calls", [])):
            order.setdefault(usable_id(call["id"]), index)
        results = sorted(
            self.results, key=lambda result: order[usable_id(result["metadata"]["tool_call_id"])]
        )
        return [self.turn, *results]


@dataclass
class _Held:
    """An event that is not conversation, waiting for the message it is kept on."""

    where: str
    what: str
    event: dict[str, Any]


class _Reader:
    """One stream's messages, made event by event."""

    def __init__(self, problems: Problems, skipped: list[Skipped]) -> None:
        self.problems = problems
        self.skipped = skipped
        self.rows: list[Row] = []
        self.responses: dict[str, Row] = {}
        """The assistant turn of each model response (OpenHands 0.x), by the response's id."""
        self.waiting: dict[str, _Waiting] = {}
        """The turns whose calls are not all answered yet, by their response's id, in the
        order their first actions came."""
        self.awaited: dict[str, _Waiting] = {}
        """The waiting turns, by the id of each call they declare."""
        self.turns: dict[str, Row] = {}
        """The assistant turn of each ``llm_response_id`` (the agent SDK)."""
        self.held: list[_Held] = []
        self.state: dict[str, Any] = {}
        self.places: dict[int | str, str] = {}
        """Where the event of each id was read, to name a repeat by it."""

    def conversation(self, stream: _Stream) -> Converted | None:
        self._place_waiting()
        if not self.rows:
            self._release("not kept: its record holds no message")
            return None
        kept = {**stream.fields, **self.state}
        if self.held:
            kept["passthrough"] = [held.event for held in self.held]
            self._release("kept in the conversation's metadata")
        instance = stream.fields.get("instance_id")
        title = instance if isinstance(instance, str) else ""
        return Converted(self.rows, {SPACE: kept} if kept else {}, title=title)

    def _release(self, where_kept: str) -> None:
        for held in self.held:
            self.skipped.append(
                Skipped(held.where, f"{held.what}, which holds no conversation; {where_kept}")
            )

    def add(self, message: Row) -> None:
        self.claim(message)
        self.rows.append(message)

    def claim(self, message: Row) -> None:
        """Keep the events held so far on ``message``, the next one made (whenever it is
        placed)."""
        if self.held:
            message["metadata"].setdefault(SPACE, {})["passthrough"] = [h.event for h in self.held]
            self._release("kept in the metadata of the next message")
            self.held = []

    def wait(self, key: str, turn: Row) -> None:
        """Place a new turn once every call it declares has a result (now, if it declares
        none)."""
        self.claim(turn)
        declared = turn["metadata"].get("tool_calls", [])
        calls = frozenset(cid for call in declared if (cid := usable_id(call["id"])) is not None)
        if not calls:
            self.rows.append(turn)
            return
        waiting = _Waiting(key, turn, len(self.rows), calls, set(calls))
        self.waiting[key] = waiting
        for cid in calls:
            self.awaited[cid] = waiting

    def answer(self, result: Row) -> None:
        """Place a result: with its waiting turn (and the turn with its results once this
        was the last one it waited for), or where it came when it answers no waiting turn."""
        cid = usable_id(result["metadata"]["tool_call_id"])
        waiting = self.awaited.get(cid) if cid is not None else None
        if cid is None or waiting is None:
            self.add(result)
            return
        self.claim(result)
        waiting.results.append(result)
        waiting.unanswered.discard(cid)
        if waiting.unanswered:
            return
        self.rows.extend(waiting.messages())
        del self.waiting[waiting.response]
        for answered in waiting.calls:
            if self.awaited.get(answered) is waiting:
                del self.awaited[answered]

    def _place_waiting(self) -> None:
        """The turns whose calls never all got results, each where its first action came."""
        if not self.waiting:
            return
        rows: list[Row] = []
        start = 0
        for waiting in self.waiting.values():
            rows.extend(self.rows[start : waiting.place])
            rows.extend(waiting.messages())
            start = waiting.place
        rows.extend(self.rows[start:])
        self.rows = rows
        self.waiting = {}
        self.awaited = {}

    def hold(self, entry: Entry, event: dict[str, Any], what: str) -> None:
        self.held.append(_Held(entry.where, what, event))

    def event(self, entry: Entry) -> None:
        event = entry.value
        if not isinstance(event, dict):  # every object is an event: the file fits
            self.skipped.append(Skipped(entry.where, f"is {describe(event)}, not an event"))
            return
        if self.repeats(entry, event.get("id")):
            return
        if not self.storable(_without_response(event), entry):
            return
        if isinstance(event.get("kind"), str) and isinstance(event["id"], str):
            self.sdk_event(entry, event)
        elif "action" in event:
            self.action(entry, event)
        else:
            self.observation(entry, event)

    def repeats(self, entry: Entry, ident: object) -> bool:
        """Whether the event repeats an earlier one's id (skipped, named with its place):
        OpenHands holds one event per id."""
        known = _stream_id(ident)
        if known is None:
            return False
        first = self.places.setdefault(known, entry.where)
        if first == entry.where:
            return False
        self.skipped.append(
            Skipped(
                entry.where,
                f"a repeat of {first} (the same id), which OpenHands holds as one event",
            )
        )
        return True

    def storable(self, value: object, entry: Entry, path: str = "") -> bool:
        """Whether ``value`` can be stored; if not, the problem is named at its place."""
        if entry.storable or json_problem(value) is None:
            return True
        found = json_problem_at(value)
        inside, problem = found if found is not None else ("", "cannot be stored")
        self.problems.add(self.place(entry, f"{path}{inside}".lstrip(".")), problem)
        return False

    def place(self, entry: Entry, path: str) -> str:
        """Where a value of an event is: ``line 9: tool_call_metadata.tool_call_id``."""
        return f"{entry.where}: {path}" if path else entry.where

    def checked(
        self, check: Check, holder: dict[str, Any], key: str, entry: Entry, path: str = ""
    ) -> bool:
        """``check`` (``has_text``, ``has_id``) of ``holder[key]``, its problem named at
        its place in the event."""
        found = Problems()
        passed = check(holder, key, "~", found)
        for problem in found:
            inside = problem.path.removeprefix("~.")
            self.problems.add(
                self.place(entry, f"{path}.{inside}" if path else inside), problem.message
            )
        return passed

    # OpenHands 0.x

    def action(self, entry: Entry, event: dict[str, Any]) -> None:
        kind = event["action"]
        args = event.get("args", {})
        if not isinstance(args, dict):
            self.problems.add(f"{entry.where}: args", f"must be an object, not {describe(args)}")
            return
        if "tool_call_metadata" in event and event["tool_call_metadata"] is not None:
            self.call(entry, event, kind, args)
        elif kind in NOT_CONVERSATION:
            self.hold(entry, event, f"an action of type '{kind}'")
        elif kind in ("system", "message"):
            if not self.checked(has_text, args, "content", entry, "args"):
                return
            role = "system" if kind == "system" else "assistant" if _by_agent(event) else "user"
            content = args["content"]
            if role != "system":
                urls = self.image_urls(args, entry)
                if urls is None:
                    return
                content = _with_images(content, urls)
            self.add(_event_row(role, content, event, args_used=("content",)))
        elif kind in FINISHING:
            text = args.get("thought") if isinstance(args.get("thought"), str) else ""
            message = _event_row("assistant", _with_final(text, args), event)
            message["metadata"][SPACE]["finish"] = args
            self.add(message)
        else:
            role = "assistant" if _by_agent(event) else "user"
            self.add(_event_row(role, _action_text(event, args), event))

    def image_urls(self, args: dict[str, Any], entry: Entry) -> list[str] | None:
        """A message's ``image_urls`` (none when null), or None when they are not a list of
        URLs (each problem named at its place)."""
        urls = args.get("image_urls")
        if urls is None:
            return []
        where = self.place(entry, "args.image_urls")
        if not isinstance(urls, list):
            self.problems.add(where, f"must be a list of URLs, not {describe(urls)}")
            return None
        wrong = [(index, url) for index, url in enumerate(urls) if not isinstance(url, str)]
        for index, url in wrong:
            self.problems.add(f"{where}[{index}]", f"must be a URL (a string), not {describe(url)}")
        return None if wrong else urls

    def call(self, entry: Entry, event: dict[str, Any], kind: str, args: dict[str, Any]) -> None:
        metadata = event["tool_call_metadata"]
        if not isinstance(metadata, dict):
            where = self.place(entry, "tool_call_metadata")
            self.problems.add(where, f"must be an object, not {describe(metadata)}")
            return
        where = self.place(entry, "tool_call_metadata")
        response = metadata.get("model_response")
        if not isinstance(response, dict):
            wanted = (
                "is missing" if response is None else f"must be an object, not {describe(response)}"
            )
            self.problems.add(f"{where}.model_response", wanted)
            return
        if not self.checked(has_id, response, "id", entry, "tool_call_metadata.model_response"):
            return
        turn = self.responses.get(str(usable_id(response["id"])))
        action = _without_response(event)
        if turn is None:
            turn = self.turn(response, f"{where}.model_response", event)
            if turn is None or not self.storable(
                response, entry, "tool_call_metadata.model_response"
            ):
                return
            self.responses[str(usable_id(response["id"]))] = turn
            self.wait(str(usable_id(response["id"])), turn)
        elif not self.repeated(response):
            if not self.storable(response, entry, "tool_call_metadata.model_response"):
                return
            action = event
        kept = turn["metadata"][SPACE]
        kept["actions"].append(action)
        if kind in FINISHING:
            kept["finish"] = {
                "tool_call_id": metadata.get("tool_call_id"),
                "function_name": metadata.get("function_name"),
                **args,
            }
            turn["content"] = _with_final(turn["content"] or _text(args.get("thought")), args)

    def repeated(self, response: object) -> bool:
        """Whether ``response`` is a copy of a model response already kept on its turn."""
        key = usable_id(response.get("id")) if isinstance(response, dict) else None
        turn = self.responses.get(str(key)) if key is not None else None
        if turn is None:
            return False
        kept = turn["metadata"][SPACE]["model_response"]
        return bool(kept is response or kept == response)

    def turn(self, response: dict[str, Any], where: str, first: dict[str, Any]) -> Row | None:
        """The assistant turn of one model response, from its first choice's message."""
        choices = response.get("choices")
        message = choices[0] if isinstance(choices, list) and choices else None
        message = message.get("message") if isinstance(message, dict) else None
        if not isinstance(message, dict):
            self.problems.add(f"{where}.choices[0].message", "is missing")
            return None
        path = f"{where}.choices[0].message"
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            self.problems.add(
                f"{path}.content",
                f"must be a string, a list of parts or null, not {describe(content)}",
            )
            return None
        calls = message.get("tool_calls") or []
        before = len(self.problems)
        openai_chat.check_calls(calls, f"{path}.tool_calls", self.problems)
        if len(self.problems) > before:
            return None
        declared = [_call(call) for call in calls if call["function"]["name"] not in FINISHING]
        metadata: dict[str, Any] = {}
        if declared:
            metadata["tool_calls"] = declared
        metadata[SPACE] = {"model_response": response, "actions": []}
        facts = {"time": first["timestamp"], **response_facts(response)}
        if latency := _latency(first, response["id"]):
            facts["latency_ms"] = latency
        metadata["facts"] = facts
        return row("assistant", content, metadata)

    def observation(self, entry: Entry, event: dict[str, Any]) -> None:
        kind = event["observation"]
        metadata = event.get("tool_call_metadata")
        if metadata is None and kind in NOT_CONVERSATION:
            if kind == "agent_state_changed":
                self.state["agent_state"] = event.get("extras")
            self.hold(entry, event, f"an observation of type '{kind}'")
            return
        if not self.checked(has_text, event, "content", entry):
            return
        if metadata is None:
            self.add(_event_row("user", event["content"], event, used=("content",)))
            return
        where = self.place(entry, "tool_call_metadata")
        if not isinstance(metadata, dict):
            self.problems.add(where, f"must be an object, not {describe(metadata)}")
            return
        if not self.checked(has_id, metadata, "tool_call_id", entry, "tool_call_metadata"):
            return
        response = metadata.get("model_response")
        if "model_response" in metadata and not self.repeated(response):
            if not self.storable(response, entry, "tool_call_metadata.model_response"):
                return
        else:
            metadata = without(metadata, "model_response")
        result = _event_row("tool", event["content"], event, used=("content",))
        result["metadata"] = {"tool_call_id": metadata["tool_call_id"], **result["metadata"]}
        kept = result["metadata"][SPACE]
        kept["tool_call_metadata"] = metadata
        if kind == "error":
            result["metadata"]["is_error"] = True
            if _not_executed(event):
                kept["not_executed"] = True
        self.answer(result)

    # The OpenHands agent SDK

    def sdk_event(self, entry: Entry, event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "SystemPromptEvent":
            self.sdk_system(entry, event)
        elif kind == "MessageEvent":
            self.sdk_message(entry, event)
        elif kind == "ActionEvent":
            self.sdk_action(entry, event)
        elif kind in SDK_RESULTS:
            self.sdk_result(entry, event)
        else:
            if kind == "ConversationStateUpdateEvent" and event.get("key") == "execution_status":
                self.state["execution_status"] = event.get("value")
            self.hold(entry, event, f"an event of kind '{kind}'")

    def sdk_system(self, entry: Entry, event: dict[str, Any]) -> None:
        prompt = event.get("system_prompt")
        where = self.place(entry, "system_prompt")
        if not isinstance(prompt, dict):
            self.problems.add(
                where,
                "is missing" if prompt is None else f"must be an object, not {describe(prompt)}",
            )
            return
        if not self.checked(has_text, prompt, "text", entry, "system_prompt"):
            return
        kept = {**without(event, "system_prompt"), "system_prompt": without(prompt, "text")}
        context = event.get("dynamic_context")
        content: str | list[Any] = prompt["text"]
        if isinstance(context, dict) and isinstance(context.get("text"), str):
            content = [_text_part(prompt["text"]), _text_part(context["text"])]
            kept["dynamic_context"] = without(context, "text")
        self.add(row("system", content, {SPACE: kept, "facts": {"time": event["timestamp"]}}))

    def sdk_message(self, entry: Entry, event: dict[str, Any]) -> None:
        message = event.get("llm_message")
        where = self.place(entry, "llm_message")
        if not isinstance(message, dict):
            self.problems.add(
                where,
                "is missing" if message is None else f"must be an object, not {describe(message)}",
            )
            return
        role = message.get("role")
        if role not in ("system", "user", "assistant"):
            self.problems.add(
                f"{where}.role", f"must be one of system, user, assistant, not {role!r}"
            )
            return
        parts, part_keys = self.sdk_parts(message.get("content"), f"{where}.content")
        calls = (message.get("tool_calls") or []) if role == "assistant" else []
        if not isinstance(calls, list):
            self.problems.add(
                f"{where}.tool_calls", f"must be a list of calls, not {describe(calls)}"
            )
            return
        declared = [
            made
            for index, call in enumerate(calls)
            if (made := self.sdk_call(call, entry, f"llm_message.tool_calls[{index}]"))
        ]
        own = without(message, "role", "content", *(["tool_calls"] if declared else []))
        kept = {**without(event, "llm_message"), "llm_message": own}
        if part_keys:
            kept["part_keys"] = part_keys
        metadata: dict[str, Any] = {SPACE: kept, "facts": {"time": event["timestamp"]}}
        if declared:
            metadata["tool_calls"] = declared
        self.add(row(role, parts, metadata))

    def sdk_action(self, entry: Entry, event: dict[str, Any]) -> None:
        call = self.sdk_call(event.get("tool_call"), entry, "tool_call")
        if call is None:
            return
        response = event.get("llm_response_id")
        key = (
            f"response {response}"
            if isinstance(response, str) and response
            else f"event {event['id']}"
        )
        turn = self.turns.get(key)
        if turn is None:
            kept: dict[str, Any] = {"actions": []}
            turn = row(
                "assistant",
                None,
                {"tool_calls": [], SPACE: kept, "facts": {"time": event["timestamp"]}},
            )
            self.turns[key] = turn
            self.add(turn)
        content = turn["content"] or []
        thought, part_keys = self.sdk_parts(
            event.get("thought", []), self.place(entry, "thought"), first=len(content)
        )
        if thought:
            content.extend(thought)
            turn["content"] = content
        if part_keys:
            turn["metadata"][SPACE].setdefault("part_keys", {}).update(part_keys)
        turn["metadata"]["tool_calls"].append(call)
        turn["metadata"][SPACE]["actions"].append(without(event, "thought", "tool_call"))

    def sdk_call(self, call: object, entry: Entry, path: str) -> dict[str, Any] | None:
        """A call spelled flat by the SDK (``{id, name, arguments}``) in OpenAI's spelling."""
        if not isinstance(call, dict):
            wanted = "is missing" if call is None else f"must be an object, not {describe(call)}"
            self.problems.add(self.place(entry, path), wanted)
            return None
        passed = [self.checked(check, call, key, entry, path) for check, key in _FLAT_CALL]
        if not all(passed):
            return None
        made: dict[str, Any] = {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": call["arguments"]},
        }
        if own := without(call, "id", "name", "arguments"):
            made[SPACE] = own
        return made

    def sdk_result(self, entry: Entry, event: dict[str, Any]) -> None:
        if not self.checked(has_id, event, "tool_call_id", entry):
            return
        kind = event["kind"]
        kept = dict(event)
        metadata: dict[str, Any] = {"tool_call_id": event["tool_call_id"]}
        content: object
        if kind == "ObservationEvent":
            observation = event.get("observation")
            where = self.place(entry, "observation")
            if not isinstance(observation, dict):
                self.problems.add(
                    where,
                    "is missing"
                    if observation is None
                    else f"must be an object, not {describe(observation)}",
                )
                return
            content, part_keys = self.sdk_parts(observation.get("content", []), f"{where}.content")
            kept["observation"] = without(observation, "content")
            if part_keys:
                kept["part_keys"] = part_keys
            if observation.get("is_error") is True:
                metadata["is_error"] = True
        elif kind == "AgentErrorEvent":
            if not self.checked(has_text, event, "error", entry):
                return
            content = event["error"]
            del kept["error"]
            metadata["is_error"] = True
        else:
            reason = event.get("rejection_reason")
            content = f"Action rejected: {reason}" if isinstance(reason, str) else "Action rejected"
        metadata[SPACE] = kept
        metadata["facts"] = {"time": event["timestamp"]}
        self.add(row("tool", content, metadata))

    def sdk_parts(
        self, content: object, where: str, *, first: int = 0
    ) -> tuple[list[Any], dict[str, Any]]:
        """SDK content as content parts: text parts in the plain spelling (their other keys,
        when not the defaults, by their index in the message's content, whose parts before
        these are ``first``), other parts as they are."""
        if content is None:
            return [], {}
        if isinstance(content, str):
            return [_text_part(content)], {}
        if not isinstance(content, list):
            self.problems.add(where, f"must be a list of content parts, not {describe(content)}")
            return [], {}
        parts: list[Any] = []
        keys: dict[str, Any] = {}
        for index, part in enumerate(content):
            if (
                isinstance(part, dict)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
            ):
                parts.append(_text_part(part["text"]))
                own = without(part, "type", "text")
                if any(TEXT_PART_DEFAULTS.get(k, _UNSET) != v for k, v in own.items()):
                    keys[str(first + index)] = own
            else:
                parts.append(part)
        return parts, keys


_UNSET = object()


def _without_response(event: dict[str, Any]) -> dict[str, Any]:
    """The event less its copy of the model response, which is kept once per turn (and
    checked there) or not at all."""
    metadata = event.get("tool_call_metadata")
    if not isinstance(metadata, dict) or "model_response" not in metadata:
        return event
    return {**event, "tool_call_metadata": without(metadata, "model_response")}


Check = Callable[[dict[str, Any], str, str, Problems], bool]


def _has_arguments(holder: dict[str, Any], key: str, path: str, problems: Problems) -> bool:
    return has_text(holder, key, path, problems, wanted="a string (the arguments as JSON text)")


_FLAT_CALL: list[tuple[Check, str]] = [
    (has_id, "id"),
    (has_text, "name"),
    (_has_arguments, "arguments"),
]


def _call(call: dict[str, Any]) -> dict[str, Any]:
    """A call of a model response, its keys other than OpenAI's own kept under ``openhands``."""
    entry = {"id": call["id"], "type": "function", "function": call["function"]}
    own = without(call, *CALL_KEYS)
    if call.get("type", "function") != "function":
        own["type"] = call["type"]
    if own:
        entry[SPACE] = own
    return entry


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _by_agent(event: dict[str, Any]) -> bool:
    return event.get("source") == "agent"


def _event_row(
    role: str,
    content: object,
    event: dict[str, Any],
    *,
    used: tuple[str, ...] = (),
    args_used: tuple[str, ...] = (),
) -> Row:
    """A message made of one event: the event, less what became the content, under
    ``openhands``, and its time."""
    kept = without(event, *used)
    if args_used:
        kept["args"] = without(event["args"], *args_used)
    return row(role, content, {SPACE: kept, "facts": {"time": event["timestamp"]}})


def _with_images(text: str, urls: list[str]) -> object:
    """A message's text and its images as ``image_url`` parts (its text alone without)."""
    if not urls:
        return text
    images = [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    return [_text_part(text), *images] if text else images


def _with_final(content: object, args: dict[str, Any]) -> object:
    """A finishing turn's content, and the final message when it says something else."""
    final = _text(args.get("final_thought"))
    if isinstance(content, list):
        return [*content, _text_part(final)] if final.strip() else content
    text = _text(content)
    if not final.strip() or final.strip() == text.strip():
        return content
    return [_text_part(text), _text_part(final)] if text else final


def _action_text(event: dict[str, Any], args: dict[str, Any]) -> str:
    """An action without a tool call, as text: its thought and its summary."""
    said = [_text(args.get("thought")).strip(), _text(event.get("message")).strip()]
    return "\n\n".join(text for text in said if text) or json_text(args) or ""


def _not_executed(event: dict[str, Any]) -> bool:
    """Whether an error observation is the one OpenHands writes for an action it never ran."""
    error_id = inner(event, "extras").get("error_id")
    if isinstance(error_id, str) and error_id.startswith(NOT_EXECUTED_ERROR):
        return True
    return _text(event.get("content")).startswith(NOT_EXECUTED)


def _latency(action: dict[str, Any], response_id: object) -> float | None:
    """The response's latency in milliseconds, when the action's metrics end with it (the
    metrics accumulate: only their last entry is looked at)."""
    latencies = inner(action, "llm_metrics").get("response_latencies")
    last = latencies[-1] if isinstance(latencies, list) and latencies else None
    if not isinstance(last, dict) or last.get("response_id") != response_id:
        return None
    seconds = last.get("latency")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    return round(seconds * 1000, 3)


FORMAT = Format(
    "openhands",
    "OpenHands event stream",
    "a conversation's export (trajectory-<id>.json), "
    "~/.openhands/sessions/<id>/events/ and event_cache/, evaluation output.jsonl "
    "(history), an agent SDK conversation's events/",
    "events with an id, a timestamp, a source and an action or an observation (or the "
    "agent SDK's kind), as a JSON list or JSONL, or evaluation records whose history holds "
    "such events",
    fits,
    read,
    provider="openai-chat",
    article="an",
    lines=True,
)
