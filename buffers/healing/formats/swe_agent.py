"""SWE-agent trajectories (``.traj``) and mini-swe-agent trajectories (``.traj.json``).

A ``.traj`` is one JSON object that SWE-agent rewrites whole after every step:
``{"trajectory": [steps], "history": [messages], "info", "replay_config", "environment"}``
(0.x files lack ``replay_config``; a demonstration file may hold ``history`` alone).

What is read, and where the rest is kept:

- ``history`` is read, not ``trajectory``: it is the conversation the model saw, each
  item an OpenAI Chat message plus SWE-agent's bookkeeping. One item is one message:
  ``role`` and ``content`` as they are (a string or a list of parts: SWE-agent's
  ``cache_control`` processor rewrites some contents into parts, and both shapes occur in
  one file); every other key (``agent``, ``message_type``, ``thought``, ``action``,
  ``is_demo``, ``cache_control``, ``thinking_blocks``, ``tags``, ``tool_call_ids``, a
  ``tool_calls: null``, and keys this reader does not know) under ``metadata.swe_agent``.
  Demonstration messages (``is_demo``) are messages like the others, as the model saw
  them, and stay marked by ``swe_agent.is_demo``.
- The conversation keeps every top-level field but ``history`` under
  ``metadata.swe_agent``: ``info`` (``exit_status``, ``submission``, ``model_stats``...),
  ``environment``, ``replay_config`` as written (a JSON string since late 2024, an object
  before), ``trajectory`` and a retry agent's ``attempts``. The steps' ``query`` (before
  1.1.0 ``messages``) is left out: it is the history as sent at that step, so it repeats
  the conversation once per step; each is reported among what the reading skipped
  (``trajectory[3].query``), and a step's ``query`` that is not a list of messages is kept.
  A ``replay_config`` of more than 64 KB is left out too, and reported the same way.
- Text-only histories (0.x and non-function-calling configs: the command is in the
  assistant's text and the next user message is its output) import as plain messages:
  there is nothing to pair and nothing to heal.

Calls and results. An assistant declares ``tool_calls`` in OpenAI's spelling; keys other
than ``id``, ``type`` and ``function`` (LiteLLM's ``index``) move under the call's own
``swe_agent``. A ``tool`` message answers ``tool_call_ids``, a list; SWE-agent asserts it
holds exactly one id and sends the model ``tool_call_id = tool_call_ids[0]``, so the row
answers the first id, as the model was told, and the list stays in ``swe_agent``.
Ids are not unique in a file (replayed and demonstration trajectories reuse
``call_submit`` and the like), and a result answers the nearest declaration before it.
The app pairs by id across the whole buffer (MEM-11), so a declaration of an id already
declared earlier in the file is stored as ``<id>#2`` (``#3``...; the first suffix no
declaration uses yet), its original id kept in the call's ``swe_agent.id`` for an export
to write back, and a result is stored with the id of the latest declaration of its id.

A crash. SWE-agent never writes an unanswered call: it appends a step's assistant turn
and its observation together and saves between steps, and on an error it replaces the
failing step with an exit turn that declares nothing (``"Exit due to ..."``) followed by a
user observation. The crash shows in ``info.exit_status`` (``exit_environment_error``,
``exit_cost``...; ``null`` while running or when killed), kept with ``info``. A history
cut after a turn that declares a call (a copy taken mid-write, another writer) reads with
that call unanswered, for the app to show and heal. A retry agent writes its own ``.traj``
between steps as ``{"attempts": [...]}``, the attempts it finished only (it adds the chosen
attempt's fields once it is done); the running attempt's trajectory is its own file,
``attempt_N/<instance>.traj``. So a killed retry run's ``.traj`` is refused, naming those
files (``RETRY_SUMMARY``): reading a finished attempt in its place would show no crash.

mini-swe-agent writes ``{"info", "messages", "trajectory_format", "instance_id"}``; it is
read here (its label is still "SWE-agent trajectory"), and the conversation keeps every
field but ``messages`` under ``metadata.swe_agent`` (``trajectory_format`` included); its
title is the ``instance_id``. Its messages are OpenAI Chat messages, read by the OpenAI
Chat reader. ``mini-swe-agent-1`` (v1.x, text actions) gives exactly the rows OpenAI Chat
gave when these files were read as such: ``timestamp`` and ``extra`` stay flat in
``metadata``. ``mini-swe-agent-1.1`` (v2.x) is read the same, except that a message's
``extra`` (``actions``, the whole ``response``, ``cost``, ``timestamp``; a result's
``raw_output``, ``returncode``...) moves under ``swe_agent.extra``, with ``facts``
(``time`` from the Unix timestamp, in UTC; ``model``, ``usage``, ``finish_reason`` from
the response), and that the run's closing ``{"role": "exit", "content", "extra":
{"exit_status", "submission"...}}`` is not a message (no provider has the role, and it
was never sent): it is kept in the conversation's ``swe_agent.exits``. mini-swe-agent
ends a run on a submit command by raising ``Submitted`` inside the command, so the turn
that submitted declares calls that get no result, by design. When the exit right after
such a turn says ``Submitted``, those calls are moved from ``tool_calls`` to the turn's
``swe_agent.submitted_calls``: the run did not crash, and nothing shows as unanswered
(as with OpenHands' ``finish``). Any other exit leaves the calls declared and unanswered.
mini-swe-agent runs on a Responses model store Responses items as messages; those are
refused with a sentence that says so.

There is no native writer: a conversation goes back out as OpenAI Chat, the API both
agents talk to through LiteLLM.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import usable_id
from buffers.healing.messages import describe

from . import openai_chat
from .common import (
    Converted,
    Problems,
    Row,
    has_choice,
    has_id,
    inner,
    is_object,
    json_text,
    row,
    storable,
    without,
)
from .litellm_facts import response_facts
from .source import Format, Reading, Skipped, Source

SPACE = "swe_agent"
ROLES = ("system", "user", "assistant", "tool")
CALL_KEYS = ("id", "type", "function")
STEP_QUERIES = ("query", "messages")
"""What a trajectory step holds of the messages sent at that step (``messages`` before 1.1.0)."""
REPEATS_HISTORY = "repeats the history the model was sent"
REPLAY_CONFIG_LIMIT = 64 * 1024
MINI = "mini-swe-agent"
MINI_V1 = "mini-swe-agent-1"
SUBMITTED = "Submitted"
RETRY_SUMMARY = (
    "is a SWE-agent retry agent's trajectory written while it ran: it holds only the "
    "attempts it finished, each in full, not the one running when it stopped; that "
    "attempt's trajectory is attempt_N/<instance>.traj beside it (one per attempt): "
    "import those"
)


def is_retry_summary(document: object) -> bool:
    """A retry agent's ``.traj`` as it writes it between steps: ``{"attempts": [...]}``, the
    finished attempts' trajectories (once it is done it adds the chosen one's fields)."""
    return (
        isinstance(document, dict)
        and document.keys() == {"attempts"}
        and isinstance(document["attempts"], list)
        and all(isinstance(attempt, dict) for attempt in document["attempts"])
    )


def fits(source: Source) -> bool:
    """A ``.traj`` object (``history`` of role messages beside a ``trajectory`` list and an
    ``info`` object, or a demonstration's ``history`` alone), or mini-swe-agent's object with
    ``messages`` and a ``trajectory_format`` of its own."""
    document = source.document
    if source.is_lines or not isinstance(document, dict):
        return False
    if "trajectory_format" in document:
        marked = document["trajectory_format"]
        return (
            isinstance(marked, str)
            and marked.startswith(MINI)
            and isinstance(document.get("messages"), list)
        )
    history = document.get("history")
    if not isinstance(history, list):
        return False
    if isinstance(document.get("trajectory"), list) and isinstance(document.get("info"), dict):
        return not history or (isinstance(history[0], dict) and "role" in history[0])
    return (
        document.keys() == {"history"}
        and bool(history)
        and all(isinstance(item, dict) and "role" in item and "agent" in item for item in history)
    )


def read(source: Source) -> Reading:
    document = source.document
    if not isinstance(document, dict):
        raise InvalidInput(
            [Problem("file", f"must be an object (a trajectory), not {describe(document)}")]
        )
    if "trajectory_format" in document:
        return _read_mini(document)
    return _read_trajectory(document)


# SWE-agent's .traj


def _read_trajectory(document: dict[str, Any]) -> Reading:
    problems = Problems()
    history = document.get("history")
    if not isinstance(history, list):
        missing = "history" not in document
        problems.add(
            "history",
            "is missing" if missing else f"must be a list of messages, not {describe(history)}",
        )
        problems.raise_if_any()
    assert isinstance(history, list)
    kept, skipped = _trajectory_fields(document, problems)
    pairing = _Pairing()
    rows = [
        read_row
        for index, item in enumerate(history)
        if (read_row := _history_row(item, f"history[{index}]", pairing, problems)) is not None
    ]
    problems.raise_if_any()
    if not rows:
        raise InvalidInput([Problem("file", "holds no conversation: its history is empty")])
    return Reading([Converted(rows, {SPACE: kept})], skipped, entries=len(history), unit="message")


def _trajectory_fields(
    document: dict[str, Any], problems: Problems
) -> tuple[dict[str, Any], list[Skipped]]:
    kept: dict[str, Any] = {}
    skipped: list[Skipped] = []
    for name, value in document.items():
        if name == "history":
            continue
        if name == "trajectory":
            value = _without_queries(value, name, skipped)
        elif name == "attempts" and isinstance(value, list):
            value = [
                {
                    **attempt,
                    "trajectory": _without_queries(
                        attempt["trajectory"], f"{name}[{index}].trajectory", skipped
                    ),
                }
                if isinstance(attempt, dict) and "trajectory" in attempt
                else attempt
                for index, attempt in enumerate(value)
            ]
        elif name == "replay_config" and (size := _size(value)) > REPLAY_CONFIG_LIMIT:
            skipped.append(
                Skipped(
                    name,
                    f"is {size:,} characters, more than the {REPLAY_CONFIG_LIMIT:,} kept: "
                    "left out of the conversation's metadata",
                )
            )
            continue
        if storable(value, name, problems):
            kept[name] = value
    return kept, skipped


def _without_queries(steps: object, where: str, skipped: list[Skipped]) -> object:
    """The steps less the messages each was sent (a list under ``query`` or ``messages``),
    each said to be left out."""
    if not isinstance(steps, list):
        return steps
    kept: list[object] = []
    for index, step in enumerate(steps):
        if isinstance(step, dict):
            queries = [key for key in STEP_QUERIES if isinstance(step.get(key), list)]
            skipped.extend(Skipped(f"{where}[{index}].{key}", REPEATS_HISTORY) for key in queries)
            step = without(step, *queries)
        kept.append(step)
    return kept


def _size(value: object) -> int:
    return len(value) if isinstance(value, str) else len(json_text(value) or "")


class _Pairing:
    """Ids made unique for the buffer: each declaration of an id already declared gets the
    next free ``#n`` suffix, and a result takes the id of the latest declaration of its id."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.latest: dict[str, str] = {}
        self.repeats: dict[str, int] = {}

    def declare(self, call: dict[str, Any]) -> dict[str, Any]:
        original = usable_id(call["id"])
        assert original is not None  # checked by check_calls
        stored = original
        repeat = self.repeats.get(original, 1)
        while stored in self.used:
            repeat += 1
            stored = f"{original}#{repeat}"
        self.repeats[original] = repeat
        self.used.add(stored)
        self.latest[original] = stored
        own = without(call, *CALL_KEYS)
        if call.get("type", "function") != "function":
            own["type"] = call["type"]
        if stored != original:
            own["id"] = call["id"]
        entry: dict[str, Any] = {
            "id": stored if stored != original else call["id"],
            "type": "function",
            "function": call["function"],
        }
        if own:
            entry[SPACE] = own
        return entry

    def answer(self, answered: object) -> object:
        key = usable_id(answered)
        return self.latest.get(key, answered) if key is not None else answered


def _history_row(item: object, where: str, pairing: _Pairing, problems: Problems) -> Row | None:
    if not is_object(item, where, problems) or not storable(item, where, problems):
        return None
    assert isinstance(item, dict)
    before = len(problems)
    has_choice(item, "role", where, ROLES, problems)
    content = item.get("content")
    if content is not None and not isinstance(content, str | list):
        problems.add(
            f"{where}.content",
            f"must be a string, a list of content parts or null, not {describe(content)}",
        )
    calls = item.get("tool_calls")
    if item.get("role") == "assistant" and calls is not None:
        openai_chat.check_calls(calls, f"{where}.tool_calls", problems)
    answered = _answered(item, where, problems) if item.get("role") == "tool" else None
    if len(problems) > before:
        return None
    role = item["role"]
    kept = without(item, "role", "content")
    metadata: dict[str, Any] = {}
    if role == "assistant" and isinstance(calls, list):
        metadata["tool_calls"] = [pairing.declare(call) for call in calls]
        del kept["tool_calls"]
    if role == "tool":
        metadata["tool_call_id"] = pairing.answer(answered)
    if kept:
        metadata[SPACE] = kept
    return row(role, content, metadata)


def _answered(item: dict[str, Any], where: str, problems: Problems) -> object:
    """The id a tool message answers: the first of its ``tool_call_ids``, as SWE-agent
    sends it (another writer's single ``tool_call_id`` is taken too)."""
    if "tool_call_ids" not in item and "tool_call_id" in item:
        return item["tool_call_id"] if has_id(item, "tool_call_id", where, problems) else None
    ids = item.get("tool_call_ids")
    if "tool_call_ids" not in item:
        problems.add(f"{where}.tool_call_ids", "is missing")
    elif not isinstance(ids, list):
        problems.add(f"{where}.tool_call_ids", f"must be a list of call ids, not {describe(ids)}")
    elif not ids:
        problems.add(f"{where}.tool_call_ids", "is empty: a tool message answers a call")
    elif has_id({"tool_call_ids[0]": ids[0]}, "tool_call_ids[0]", where, problems):
        return ids[0]
    return None


# mini-swe-agent's .traj.json


def _read_mini(document: dict[str, Any]) -> Reading:
    problems = Problems()
    messages = document.get("messages")
    if not isinstance(messages, list):
        problems.add("messages", f"must be a list of messages, not {describe(messages)}")
        problems.raise_if_any()
    assert isinstance(messages, list)
    kept = {
        name: value
        for name, value in document.items()
        if name != "messages" and storable(value, name, problems)
    }
    plain = document.get("trajectory_format") == MINI_V1
    rows: list[Row] = []
    exits: list[dict[str, Any]] = []
    for index, raw in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(raw, dict) and raw.get("role") == "exit":
            if storable(raw, where, problems):
                exits.append(without(raw, "role"))
                _end_of_run(rows, raw)
            continue
        if isinstance(raw, dict) and "role" not in raw and ("type" in raw or "object" in raw):
            problems.add(
                where,
                "is an OpenAI Responses item (a mini-swe-agent run on a Responses model), "
                "which this reader does not read",
            )
            continue
        read_row = openai_chat.read_message(raw, where, problems)
        if read_row is not None:
            rows.append(read_row if plain else _with_extra(read_row))
    problems.raise_if_any()
    if not rows:
        raise InvalidInput([Problem("file", "holds no conversation: it has no messages")])
    if exits:
        kept["exits"] = exits
    instance = document.get("instance_id")
    title = instance if isinstance(instance, str) else ""
    return Reading(
        [Converted(rows, {SPACE: kept}, title=title)], entries=len(messages), unit="message"
    )


def _end_of_run(rows: list[Row], exit_message: dict[str, Any]) -> None:
    """A submit ends the run inside its own command: the turn that submitted keeps its
    calls aside, unanswered by design, rather than declared."""
    if inner(exit_message, "extra").get("exit_status") != SUBMITTED or not rows:
        return
    last = rows[-1]
    calls = last["metadata"].get("tool_calls")
    if last["role"] == "assistant" and isinstance(calls, list) and calls:
        del last["metadata"]["tool_calls"]
        last["metadata"].setdefault(SPACE, {})["submitted_calls"] = calls


def _with_extra(read_row: Row) -> Row:
    metadata = read_row["metadata"]
    if "extra" not in metadata:
        return read_row
    extra = metadata.pop("extra")
    metadata[SPACE] = {"extra": extra}
    if isinstance(extra, dict):
        facts = response_facts(extra.get("response"))
        if time := _utc(extra.get("timestamp")):
            facts = {"time": time, **facts}
        if facts:
            metadata["facts"] = facts
    return read_row


def _utc(timestamp: object) -> str | None:
    """A Unix timestamp as ISO 8601 text, in UTC."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        return None
    if not math.isfinite(timestamp):
        return None
    try:
        return datetime.fromtimestamp(timestamp, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


FORMAT = Format(
    "swe-agent",
    "SWE-agent trajectory",
    "trajectories/<user>/<run>/<instance>/<instance>.traj (SWE-agent); "
    "<output>/<instance>/<instance>.traj.json (mini-swe-agent)",
    "a JSON object whose history holds messages with a role, beside a trajectory list and "
    "an info object (or a history alone, for a demonstration), or mini-swe-agent's object "
    "with messages and a trajectory_format",
    fits,
    read,
    provider="openai-chat",
    article="a",
)
