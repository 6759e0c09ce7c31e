"""Gemini CLI chats: what ``gemini`` records under ``~/.gemini/tmp/<project>/chats/``,
and its checkpoints.

Two layouts hold the same records. Up to v0.38 a chat is one JSON object,
``{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...], "kind",
"summary"...}``, rewritten whole on every change (``session-<time>-<id>.json``). Since
v0.39 it is an append-only log (``.jsonl``): a first line with ``sessionId`` and
``projectHash``, then one record per line, replayed as the CLI replays it:

- a record with a string ``id`` is a message: a later record with the same id replaces
  its body and keeps its place (the CLI appends a message again when its tokens or tool
  calls arrive);
- ``{"$set": {...}}`` merges into the session's fields; a ``$set.messages`` list (the
  CLI's snapshot of its history at start, after a compression, a rewind or a failed
  request) replaces every message (one of them without a string id is skipped and said;
  a ``messages`` that is not a list, nor null, is an error);
- ``{"$rewindTo": id}`` removes that message and every one after it (all of them when
  the id is unknown);
- a line with ``sessionId`` and ``projectHash`` merges into the session's fields, and its
  ``messages``, if any, are added (a legacy session written on one line).

A line that is not JSON (a torn last line), a line that is none of these records, and
every message the replay removed (by a snapshot or a rewind: the CLI resumes without
them) is skipped and reported (nothing a file holds vanishes unsaid); what is wrong
inside a record the conversation uses is an error named at its line and path
(``line 7: toolCalls[0].id``).

Messages (``type``):

- ``gemini``: one assistant row each, never merged with the next. Its content is its
  text: ``content`` when a string, else the text of its non-thought parts (media parts
  make it a list of parts). ``thoughts`` (``{subject, description}`` summaries, not a
  provider's reasoning block, so not sent on export), ``tokens``, ``id``, a content
  given as parts (with thought parts and ``thoughtSignature``) and any other key stay
  under ``metadata.gemini_cli``; ``facts`` hold ``time``, ``model`` and ``usage``
  (``thoughts`` is ``reasoning``). Its ``toolCalls`` are canonical calls (``id`` the
  call's, ``arguments`` the JSON text of ``args``; the call's other keys, ``status``,
  ``resultDisplay``, ``description``..., under the call's ``gemini_cli``; a ``status``
  that is neither a string nor null is an error), followed directly by one tool row per
  call that carries a result: the ``functionResponse`` part of ``result`` whose id is the
  call's (one without an id answers when it is the only one, or the only one of the
  call's name). ``{"output"}`` is the content, ``{"error"}``
  the content with ``is_error`` (both: output, then error), any other response its JSON
  text; media parts beside the ``functionResponse`` follow that text in the content, a
  list of parts, and those nested in it (images for gemini-3 models) are kept under
  ``gemini.part``, so that the Gemini export nests them again and the other providers'
  exports, which have no place for them, carry the text; a result the row does not give
  back as written stays under the tool row's ``gemini_cli.result``. A cancelled call,
  answered ``[Operation Cancelled]``, is answered, as an error. A call with no
  ``result``, ``result: null`` or ``[]``, no ``functionResponse`` for it, or a status
  that is not final (``validating``, ``scheduled``, ``awaiting_approval``,
  ``executing``) is unanswered: healing sees it. A ``functionCall`` part of ``content``
  (v0.44+) that no ``toolCalls`` entry holds is declared too, and answered by a later
  user message's ``functionResponse``. Without an id, the k-th such call of a name takes
  the id of the next message's k-th ``functionResponse`` of that name (leaving out the ids
  this turn's calls give), else ``gemini_synth_<message id>_<part>`` (``_2``, ``_3``...
  when that id is taken; marked ``gemini.synthesized_id``, so the Gemini export leaves it
  out). An id an earlier turn declared is not declared again (the CLI records a skill
  activation twice). A ``thoughtSignature`` is kept on its call under ``gemini``, so
  that the Gemini export sends it back.
- ``user``: a user row; content given as parts becomes one string when every part is
  text (the parts' boundaries are not kept), else a list of parts. ``displayContent``
  stays in the namespace, and a message the CLI leaves out when it resumes (``/`` or
  ``?`` commands, ``<session_context>`` or ``<hook_context>`` blocks, empty text) is
  marked ``ignored_on_resume``. A user message's ``functionResponse`` parts (v0.44+)
  repeat results the CLI sent: a result already read from its call is not read again
  (the tool row notes ``echoed_by``, and keeps under ``echoes`` a repeated part that is
  not the one it was read from); one for a call still open is that call's tool row; one
  for no call is an orphan tool row. The message's other parts are a user row after
  them; a message of ``functionResponse`` parts only is not.
- ``info``, ``error``, ``warning`` (and any other type) are the CLI's own notices, never
  sent to the model: not rows, but kept in the conversation's
  ``metadata.gemini_cli.notices``, each with ``at``, the index of the row it preceded.

The conversation's ``metadata.gemini_cli`` holds ``session`` (every session field but
``messages``), ``layout`` (``json`` or ``jsonl``) and ``notices``; its title is the
session's ``summary``. A call the CLI never recorded (it records a batch once every call
has finished, so a crash mid-batch leaves nothing) cannot be seen or healed: when the
chat ends on a gemini message with ``content: ""`` and no calls (what the CLI writes
before its tools run), that row is marked ``calls_not_recorded`` and the reading says so
among what it skipped. There is no native writer: a healed chat is exported through the
Gemini provider format.

Checkpoints hold Gemini API contents, read as the Gemini reader reads them (a problem is
named at ``history[2]...``). ``/chat save <tag>`` writes ``checkpoint-<tag>.json``:
``{"history": [...], "authType"}`` since v0.16 (before, the bare list, which is read as
Gemini contents). ``/restore``'s ``checkpoints/<time>-<file>-<tool>.json`` is ``{history,
clientHistory, toolCall, commitHash, messageId}``, written while an edit awaits approval:
``clientHistory`` is the contents (ending on the turn that asks for the edit, unanswered),
``history`` the CLI's display items; one without ``clientHistory`` is refused. The other
fields stay under ``gemini_cli.checkpoint``, with ``layout`` ``chat-checkpoint`` or
``restore-checkpoint``. ``logs.json`` beside ``chats/`` holds the user's prompts only:
detection refuses it, saying so (``PROMPT_LOG``).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import usable_id
from buffers.healing.messages import describe, json_problem, json_problem_at

from .common import Converted, Problems, Row, has_id, has_text, json_text, row, storable
from .gemini import nested_parts
from .gemini import read as read_contents
from .source import Entry, Format, Reading, Skipped, Source

NOT_FINISHED = frozenset({"validating", "scheduled", "awaiting_approval", "executing"})
"""Statuses of a call that has not finished: its result, if any, was never sent."""
FAILED = frozenset({"error", "cancelled"})
NOT_RESUMED = ("/", "?", "<session_context>", "<hook_context>")
"""What a user message the CLI leaves out on resume starts with (``isIgnoredUserContent``)."""
USAGE = {
    "input": "input",
    "output": "output",
    "cached": "cached",
    "thoughts": "reasoning",
    "total": "total",
}
SESSION_KEYS = ("sessionId", "projectHash")
CHAT_CHECKPOINT = "chat-checkpoint"
CHAT_CHECKPOINT_KEYS = frozenset({"history", "authType"})
RESTORE_CHECKPOINT = "restore-checkpoint"
RESTORE_CHECKPOINT_KEYS = frozenset(
    {"history", "clientHistory", "toolCall", "commitHash", "messageId"}
)
PROMPT_LOG_KEYS = frozenset({"sessionId", "messageId", "timestamp", "type", "message"})
PROMPT_LOG = (
    "is a Gemini CLI prompt log (logs.json): it holds the user's prompts only, not the "
    "conversation; import the session files in chats/ beside it"
)
CALLS_NOT_RECORDED = (
    "is the chat's last message, from gemini, with no text and no tool calls: the CLI "
    "writes one when the model asks for tools, and adds the calls only once all of them "
    "have finished, so the run most likely stopped while its tool calls ran (or the chat "
    "was copied mid-reply). Such calls are not in the file: nothing can show them "
    "unanswered or heal them (the message is read, marked calls_not_recorded)"
)
GEMINI_READ = frozenset({"type", "toolCalls", "content", "timestamp", "model"})
"""What a gemini message's row holds elsewhere than in its namespace (when a string)."""


def fits(source: Source) -> bool:
    """A session object whose messages are typed records, a log whose first record is
    the session header (``sessionId`` and ``projectHash``, none of a record's keys), or a
    checkpoint."""
    if not source.is_lines and isinstance(source.document, dict):
        document = source.document
        kind = checkpoint_kind(document)
        if kind is not None:
            return _is_checkpoint(document, kind)
        messages = document.get("messages")
        return (
            _is_header(document)
            and isinstance(messages, list)
            and all(isinstance(m, dict) and isinstance(m.get("type"), str) for m in messages)
        )
    entries = source.entries()
    if not entries:
        return False
    first = next((e.value for e in entries if isinstance(e.value, dict)), None)
    return (
        first is not None
        and _is_header(first)
        and not first.keys() & {"id", "type", "$set", "$rewindTo", "message", "payload"}
    )


def _is_header(value: dict[str, Any]) -> bool:
    return all(isinstance(value.get(key), str) for key in SESSION_KEYS)


def checkpoint_kind(document: dict[str, Any]) -> str | None:
    """Which checkpoint an object's keys make it: ``/chat save``'s ``{history,
    authType?}``, or ``/restore``'s ``{history?, clientHistory?, toolCall, commitHash?,
    messageId?}``; None for any other object."""
    keys = document.keys()
    if "history" in keys and keys <= CHAT_CHECKPOINT_KEYS:
        return CHAT_CHECKPOINT
    if "toolCall" in keys and keys <= RESTORE_CHECKPOINT_KEYS:
        return RESTORE_CHECKPOINT
    return None


def _is_checkpoint(document: dict[str, Any], kind: str) -> bool:
    """A ``/chat save`` checkpoint: an ``authType``, or a history of Gemini contents (a
    SWE-agent demonstration is a ``history`` of role messages). A ``/restore`` one: a
    ``toolCall`` object, and ``history`` or ``clientHistory`` lists."""
    if kind == RESTORE_CHECKPOINT:
        lists = [document[key] for key in ("history", "clientHistory") if key in document]
        return (
            isinstance(document["toolCall"], dict)
            and bool(lists)
            and all(isinstance(value, list) for value in lists)
        )
    history = document["history"]
    return isinstance(history, list) and (
        isinstance(document.get("authType"), str)
        or (bool(history) and all(_is_content(content) for content in history))
    )


def _is_content(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("parts"), list) and "type" not in value


def is_prompt_log(document: object) -> bool:
    """``logs.json``: a list of the user's prompts, each ``{sessionId, messageId,
    timestamp, type, message}`` (``LogEntry``)."""
    return (
        isinstance(document, list)
        and bool(document)
        and all(
            isinstance(entry, dict)
            and entry.keys() <= PROMPT_LOG_KEYS
            and {"sessionId", "messageId", "message"} <= entry.keys()
            for entry in document
        )
    )


def read(source: Source) -> Reading:
    if not source.is_lines and isinstance(source.document, dict):
        kind = checkpoint_kind(source.document)
        if kind is not None:
            return _read_checkpoint(source.document, kind)
        return _read_document(source.document)
    entries = source.entries()
    if entries is None:
        raise InvalidInput(
            [Problem("file", f"must be a Gemini CLI session, not {describe(source.document)}")]
        )
    return _read_log(source, entries)


# The two layouts, as one list of message records.


@dataclass(frozen=True)
class Record:
    """A message as the replay left it: where its body was written, and the body."""

    where: str
    value: dict[str, Any]
    storable: bool = False
    """Known to be storable JSON from the line it was read from (``Entry.storable``)."""

    def at(self, path: str) -> str:
        """The place of ``path`` inside this record: ``line 7: toolCalls[0].id``,
        ``messages[3].toolCalls[0].id``."""
        if not path:
            return self.where
        joiner = ": " if ":" not in self.where and self.where.startswith("line ") else "."
        return f"{self.where}{'' if path.startswith('[') else joiner}{path}"


def _read_document(document: dict[str, Any]) -> Reading:
    problems = Problems()
    messages = document.get("messages")
    if not isinstance(messages, list):
        problems.add("messages", f"must be a list of messages, not {describe(messages)}")
        problems.raise_if_any()
        return Reading([])
    records: list[Record] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(message, dict):
            records.append(Record(where, message))
        else:
            problems.add(where, f"must be an object, not {describe(message)}")
    session = {key: value for key, value in document.items() if key != "messages"}
    for key, value in session.items():
        storable(value, key, problems)
    conversation, noticed = _convert(records, session, "json", problems)
    return Reading([conversation], noticed, entries=len(messages), unit="message")


@dataclass
class Replay:
    """The CLI's replay of a log: messages by id in order, the session's fields, and what
    was removed or could not be read."""

    messages: dict[str, Record] = field(default_factory=dict)
    removed: dict[str, tuple[Record, str]] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)
    set_at: dict[str, str] = field(default_factory=dict)
    skipped: list[tuple[int, Skipped]] = field(default_factory=list)
    problems: Problems = field(default_factory=Problems)
    read: int = 0

    def put(self, record: Record) -> None:
        key = record.value["id"]
        self.removed.pop(key, None)
        self.messages[key] = record

    def rewind(self, target: str, where: str) -> None:
        why = (
            f"is a message that the $rewindTo on {where} removes (the conversation was "
            "rewound to before it); the CLI resumes without it"
        )
        if target not in self.messages:
            self._remove(list(self.messages), why)
            return
        gone: list[str] = []
        for key in reversed(self.messages):
            gone.append(key)
            if key == target:
                break
        self._remove(gone, why)

    def add(self, messages: object, where: str, at: str, checked: bool) -> bool:
        """Put each message of a list that has a string id; skip and say the others.
        Whether ``messages`` is a list (a problem is said when it is neither that nor null)."""
        if not isinstance(messages, list):
            if messages is not None:
                self.problems.add(
                    f"{where}: {at}", f"must be a list of messages, not {describe(messages)}"
                )
            return False
        for index, message in enumerate(messages):
            place = f"{where}: {at}[{index}]"
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                self.put(Record(place, message, checked))
            else:
                why = "has no string id: the CLI leaves it out of the chat"
                self.skipped.append((_number(where), Skipped(place, why)))
        return True

    def snapshot(self, messages: object, where: str, checked: bool) -> None:
        earlier = self.messages
        self.messages = {}
        if not self.add(messages, where, "$set.messages", checked):
            self.messages = earlier
            return
        why = (
            f"is a message that the $set.messages snapshot on {where} leaves out (the CLI "
            "rolled the turn back or compressed the history); the CLI resumes without it"
        )
        for key, record in earlier.items():
            if key not in self.messages:
                self.removed[key] = (record, why)

    def merge(self, fields: dict[str, Any], prefix: str) -> None:
        for key, value in fields.items():
            if key != "messages":
                self.session[key] = value
                self.set_at[key] = f"{prefix}{key}"

    def _remove(self, keys: list[str], why: str) -> None:
        for key in keys:
            self.removed[key] = (self.messages.pop(key), why)


_LINE = re.compile(r"(?:line |\[)(\d+)")


def _number(where: str) -> int:
    found = _LINE.match(where)
    return int(found[1]) if found else 0


def _read_log(source: Source, entries: list[Entry]) -> Reading:
    replay = Replay()
    replay.skipped.extend((_number(s.where), s) for s in source.unreadable)
    for entry in entries:
        _replay_entry(entry, replay)
    problems = replay.problems
    if not all(key in replay.session for key in SESSION_KEYS):
        problems.add("file", "has no line with the session's sessionId and projectHash")
    for key, value in replay.session.items():
        storable(value, replay.set_at[key], problems)
    conversation, noticed = _convert(
        list(replay.messages.values()), replay.session, "jsonl", problems
    )
    skipped = replay.skipped + [
        (_number(record.where), Skipped(record.where, why))
        for record, why in replay.removed.values()
    ]
    skipped.extend((_number(note.where), note) for note in noticed)
    skipped.sort(key=lambda pair: pair[0])
    return Reading(
        [conversation],
        [entry for _, entry in skipped],
        entries=replay.read,
        unit="line" if source.is_lines else "record",
    )


def _replay_entry(entry: Entry, replay: Replay) -> None:
    """One line, in the CLI's order of checks: $rewindTo, id, $set, session header."""
    value, where = entry.value, entry.where
    if not isinstance(value, dict):
        replay.skipped.append(
            (_number(where), Skipped(where, f"is {describe(value)}, not a record"))
        )
        return
    if "$rewindTo" in value and isinstance(value["$rewindTo"], str):
        replay.rewind(value["$rewindTo"], where)
    elif isinstance(value.get("id"), str):
        replay.put(Record(where, value, entry.storable))
    elif isinstance(value.get("$set"), dict):
        fields = value["$set"]
        replay.snapshot(fields.get("messages"), where, entry.storable)
        replay.merge(fields, f"{where}: $set.")
    elif _is_header(value):
        replay.merge(value, f"{where}: ")
        replay.add(value.get("messages"), where, "messages", entry.storable)
    else:
        replay.skipped.append(
            (
                _number(where),
                Skipped(
                    where,
                    "is not a Gemini CLI record: it has no string id, no $set object, no "
                    "$rewindTo, and not both sessionId and projectHash",
                ),
            )
        )
        return
    replay.read += 1


# Checkpoints: Gemini contents, as the CLI sends them.


def _read_checkpoint(document: dict[str, Any], kind: str) -> Reading:
    """The contents a checkpoint holds (``history`` for ``/chat save``, ``clientHistory``
    for ``/restore``, whose ``history`` is the CLI's display items), read as Gemini
    contents; its other fields stay under ``gemini_cli.checkpoint``."""
    key = "history" if kind == CHAT_CHECKPOINT else "clientHistory"
    if key not in document:
        raise InvalidInput(
            [
                Problem(
                    key,
                    "is missing: without it a /restore checkpoint holds no conversation "
                    "(its history is the CLI's display items, not the contents sent to "
                    "the model)",
                )
            ]
        )
    problems = Problems()
    contents = document[key]
    rows: list[Row] = []
    kept = {name: value for name, value in document.items() if name != key}
    for name, value in kept.items():
        storable(value, name, problems)
    if not isinstance(contents, list):
        problems.add(key, f"must be a list of Gemini contents, not {describe(contents)}")
    else:
        try:
            rows = read_contents(contents).messages
        except InvalidInput as error:
            problems.extend(_within_contents(error.problems, key))
        else:
            if not rows and not problems:
                problems.add(key, "holds no conversation: it is empty")
    problems.raise_if_any()
    metadata = {"gemini_cli": {"layout": kind, "checkpoint": kept}}
    return Reading([Converted(rows, metadata)], entries=len(contents), unit="checkpoint content")


def _within_contents(problems: list[Problem], key: str) -> list[Problem]:
    """The Gemini reader's problems, placed in the checkpoint's list (``contents[2]`` is
    ``history[2]``)."""
    return [
        Problem(f"{key}{p.path.removeprefix('contents')}", p.message)
        if p.path.startswith("contents[")
        else p
        for p in problems
    ]


# Records into rows.


def _convert(
    records: list[Record], session: dict[str, Any], layout: str, problems: Problems
) -> tuple[Converted, list[Skipped]]:
    """The conversation, and what the report should say of it beside what was skipped."""
    reader = Reader(problems)
    for index, record in enumerate(records):
        following = records[index + 1] if index + 1 < len(records) else None
        reader.message(record, following)
    problems.raise_if_any()
    if not reader.rows:
        notices = len(reader.notices)
        found = f"only {notices} notice{'s' if notices != 1 else ''}" if notices else "nothing"
        raise InvalidInput(
            [Problem("file", f"holds no conversation: no user or gemini message ({found})")]
        )
    kept: dict[str, Any] = {"session": session, "layout": layout}
    if reader.notices:
        kept["notices"] = reader.notices
    summary = session.get("summary")
    title = summary.strip() if isinstance(summary, str) else ""
    return Converted(reader.rows, {"gemini_cli": kept}, title), reader.noticed


class Reader:
    """What pairing needs while reading in order: the ids declared so far, the tool row
    that answered each and the part it was read from, and the calls still open (by id,
    and the made-up ones by name)."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        self.rows: list[Row] = []
        self.notices: list[dict[str, Any]] = []
        self.noticed: list[Skipped] = []
        self.declared: set[str | None] = set()
        self.answered: dict[str | None, Row] = {}
        self.read_from: dict[str | None, object] = {}
        self.open: dict[str | None, str] = {}
        self.made_up: dict[str, deque[str]] = {}
        self.made_up_again: dict[str, int] = {}

    def message(self, record: Record, following: Record | None) -> None:
        value = record.value
        kind = value.get("type")
        if kind == "user" and self._repeats_results(value):
            self._note_echo(record)
            return
        if not self._storable(record):
            return
        if not isinstance(kind, str):
            has_text(value, "type", record.where, self.problems)
        elif kind == "user":
            self.user(record)
        elif kind == "gemini":
            self.gemini(record, following)
        else:
            self.notices.append({"at": len(self.rows), **value})

    def _repeats_results(self, value: dict[str, Any]) -> bool:
        """Whether a user message only repeats results already read (the CLI's echo of what
        it sent): every part a ``functionResponse`` for a call already answered. Such a
        message is not read again: each part is noted on the tool row it repeats."""
        content = value.get("content")
        return (
            isinstance(content, list)
            and bool(content)
            and all(self._echoed_key(part) is not None for part in content)
        )

    def _echoed_key(self, part: object) -> str | None:
        """The id of the answered call a part repeats the result of, if it is one."""
        answer = part.get("functionResponse") if isinstance(part, dict) else None
        key = usable_id(answer.get("id")) if isinstance(answer, dict) else None
        return key if key is not None and key in self.answered else None

    def _note_echo(self, record: Record) -> None:
        if not record.storable and not storable(
            record.value.get("id"), record.at("id"), self.problems
        ):
            return
        for index, part in enumerate(record.value["content"]):
            self._echo(record, index, part, self._echoed_key(part))

    def _echo(self, record: Record, index: int, part: dict[str, Any], key: str | None) -> None:
        """Note on a tool row the message that repeats its result, and keep the repeated
        part when it is not the one the row was read from."""
        kept = self.answered[key]["metadata"].setdefault("gemini_cli", {})
        message_id = record.value.get("id")
        kept.setdefault("echoed_by", message_id)
        if part != self.read_from.get(key) and (
            record.storable or storable(part, record.at(f"content[{index}]"), self.problems)
        ):
            kept.setdefault("echoes", []).append({"message_id": message_id, "part": part})

    def _storable(self, record: Record) -> bool:
        if record.storable or json_problem(record.value) is None:
            return True
        found = json_problem_at(record.value)
        assert found is not None
        where, problem = found
        self.problems.add(record.at(where.removeprefix(".")), problem)
        return False

    # User messages.

    def user(self, record: Record) -> None:
        value = record.value
        if "content" not in value:
            self.problems.add(record.at("content"), "is missing")
            return
        content = value["content"]
        parts = [] if isinstance(content, str) else self.parts(content, record, "content")
        if parts is None:
            return
        responses = [i for i, part in enumerate(parts) if "functionResponse" in part]
        for index in responses:
            self.response(record, index, parts[index])
        others = [part for part in parts if "functionResponse" not in part]
        if responses and not others:
            return
        kept = {k: v for k, v in value.items() if k not in ("type", "content", "timestamp")}
        if isinstance(content, str):
            written: object = content
            text = content
        else:
            written = _content(others)
            text = "".join(part["text"] for part in others if isinstance(part.get("text"), str))
            if any("text" in part and part.keys() != {"text"} for part in others):
                kept["content"] = content
        if text.strip() == "" or text.lstrip().startswith(NOT_RESUMED):
            kept["ignored_on_resume"] = True
        self.rows.append(row("user", written, _metadata(value, kept)))

    def response(self, record: Record, index: int, part: dict[str, Any]) -> None:
        """Read a ``functionResponse`` of a user message: the tool row of its call, or a
        note on the tool row whose result it repeats."""
        at = f"content[{index}].functionResponse"
        answer = part["functionResponse"]
        if not self._response_ok(answer, record, at):
            return
        name = answer.get("name") if isinstance(answer.get("name"), str) else ""
        given = answer.get("id")
        call_id = given if given is not None else self._made_up_for(name)
        if usable_id(call_id) in self.answered:
            self._echo(record, index, part, usable_id(call_id))
            return
        gemini: dict[str, Any] = {}
        if call_id is None:
            call_id = self._made_up_id(record, index)
        if given is None:
            gemini["synthesized_id"] = True
        if self.open.pop(usable_id(call_id), None) != name:
            gemini["name"] = name
        text, is_error = _answer(answer["response"])
        nested = nested_parts(answer)
        if nested is not None:
            gemini["part"] = _nested(nested)
        content = text
        kept: dict[str, Any] = {"message_id": record.value.get("id")}
        if not _is_plain(part, call_id, name):
            kept["part"] = part
        metadata: dict[str, Any] = {"tool_call_id": call_id}
        if is_error:
            metadata["is_error"] = True
        metadata["gemini_cli"] = kept
        if gemini:
            metadata["gemini"] = gemini
        _add_time(metadata, record.value)
        tool = row("tool", content, metadata)
        self.answered[usable_id(call_id)] = tool
        self.read_from[usable_id(call_id)] = part
        self.rows.append(tool)

    def _response_ok(self, answer: object, record: Record, at: str) -> bool:
        if not isinstance(answer, dict):
            self.problems.add(record.at(at), f"must be an object, not {describe(answer)}")
            return False
        checks = [
            "id" not in answer or has_id(answer, "id", record.at(at), self.problems),
            has_text(answer, "name", record.at(at), self.problems, required=False)
            or "name" not in answer,
        ]
        response = answer.get("response")
        if not isinstance(response, dict):
            sentence = "is missing" if "response" not in answer else "must be an object"
            self.problems.add(record.at(f"{at}.response"), f"{sentence}, not {describe(response)}")
            return False
        return all(checks)

    def _made_up_for(self, name: str) -> str | None:
        waiting = self.made_up.get(name)
        return waiting.popleft() if waiting else None

    def _made_up_id(self, record: Record, index: int) -> str:
        """``gemini_synth_<message id>_<part>``, never an id already declared or answered
        (messages without an id, or with the same one, get ``_2``, ``_3``...)."""
        message_id = record.value.get("id")
        base = f"gemini_synth_{message_id if isinstance(message_id, str) else ''}_{index}"
        made = base
        while made in self.declared or made in self.answered:
            self.made_up_again[base] = again = self.made_up_again.get(base, 1) + 1
            made = f"{base}_{again}"
        return made

    # Gemini messages.

    def gemini(self, record: Record, following: Record | None) -> None:
        value = record.value
        self.made_up = {}
        content = value.get("content")
        given_parts = content is not None and not isinstance(content, str)
        parts = (self.parts(content, record, "content") or []) if given_parts else []
        entries = value.get("toolCalls")
        if entries is not None and not isinstance(entries, list):
            self.problems.add(
                record.at("toolCalls"), f"must be a list of calls, not {describe(entries)}"
            )
            entries = None
        calls: list[dict[str, Any]] = []
        results: list[tuple[Row, object]] = []
        redeclared: list[Any] = []
        for index, entry in enumerate(entries or []):
            read = self.tool_call(record, index, entry)
            if read is None:
                continue
            call, answer = read
            key = usable_id(call["id"])
            if key in self.declared:
                redeclared.append(entry)
                continue
            self.declared.add(key)
            calls.append(call)
            if answer is None:
                self.open[key] = call["function"]["name"]
            else:
                results.append(answer)
        if parts:
            self.content_calls(record, parts, following, calls)
        for index, part in enumerate(parts):
            if "functionResponse" in part:
                self.problems.add(
                    record.at(f"content[{index}].functionResponse"),
                    "belongs in a user message, not a gemini message",
                )
        kept = {k: v for k, v in value.items() if k not in GEMINI_READ}
        for key in ("timestamp", "model", "content"):
            if key in value and not isinstance(value[key], str | None):
                kept[key] = value[key]
        if redeclared:
            kept["redeclared_calls"] = redeclared
        if content == "" and not entries and following is None:
            kept["calls_not_recorded"] = True
            self.noticed.append(Skipped(record.where, CALLS_NOT_RECORDED))
        metadata = _metadata(value, kept)
        if calls:
            metadata = {"tool_calls": calls, **metadata}
        facts = metadata.setdefault("facts", {})
        if isinstance(value.get("model"), str):
            facts["model"] = value["model"]
        usage = _usage(value.get("tokens"))
        if usage:
            facts["usage"] = usage
        if not facts:
            del metadata["facts"]
        text = _content([p for p in parts if _is_shown(p)]) if given_parts else content or ""
        self.rows.append(row("assistant", text, metadata))
        for result, read_from in results:
            key = usable_id(result["metadata"]["tool_call_id"])
            self.answered[key] = result
            self.read_from[key] = read_from
            self.rows.append(result)

    def tool_call(
        self, record: Record, index: int, entry: object
    ) -> tuple[dict[str, Any], tuple[Row, object] | None] | None:
        """A ``toolCalls`` entry as a canonical call, with its tool row and the part it was
        read from when its ``result`` answers it."""
        at = record.at(f"toolCalls[{index}]")
        if not isinstance(entry, dict):
            self.problems.add(at, f"must be an object, not {describe(entry)}")
            return None
        checks = [
            has_id(entry, "id", at, self.problems),
            has_text(entry, "name", at, self.problems),
            entry.get("status") is None or has_text(entry, "status", at, self.problems),
        ]
        args = entry.get("args", {})
        arguments = json_text(args) if isinstance(args, dict) else None
        if not isinstance(args, dict):
            self.problems.add(f"{at}.args", f"must be an object, not {describe(args)}")
        elif arguments is None:
            self.problems.add(f"{at}.args", "cannot be written as JSON text")
        if not all(checks) or arguments is None:
            return None
        call_id, name = entry["id"], entry["name"]
        kept = {k: v for k, v in entry.items() if k not in ("id", "name", "args", "result")}
        result = self.result(entry, call_id, name, at)
        if result is None and entry.get("result") is not None:
            kept["result"] = entry["result"]
        call: dict[str, Any] = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        if kept:
            call["gemini_cli"] = kept
        return call, result

    def result(
        self, entry: dict[str, Any], call_id: object, name: str, at: str
    ) -> tuple[Row, object] | None:
        """The tool row of a call's ``result`` and the part it was read from, or None when
        it has none that answers it."""
        given = entry.get("result")
        status = entry.get("status")
        status = status if isinstance(status, str) else None
        if given is None or given == [] or status in NOT_FINISHED:
            return None
        nested: list[Any] | None = None
        if isinstance(given, str):
            content: object = given
            is_error, plain = False, True
            read_from: object = {
                "functionResponse": {"id": call_id, "name": name, "response": {"output": given}}
            }
        else:
            parts = self.parts(given, Record(at, entry), "result")
            if not parts:
                return None
            found = _own_response(parts, call_id, name)
            if found is None:
                return None
            index, answer = found
            if not self._response_ok(
                answer, Record(at, entry), f"result[{index}].functionResponse"
            ):
                return None
            text, is_error = _answer(answer["response"])
            read_from = parts[index]
            responses = sum("functionResponse" in part for part in parts)
            others = [part for part in parts if "functionResponse" not in part]
            beside = others if responses == 1 else []
            nested = nested_parts(answer)
            content = _with_media(text, _as_parts(beside))
            # A batch's results, as a snapshot writes them, hold the other calls' too.
            plain = (
                isinstance(given, list)
                and _is_plain(parts[index], call_id, name)
                and responses == len(parts)
            )
        metadata: dict[str, Any] = {"tool_call_id": call_id}
        if is_error or status in FAILED:
            metadata["is_error"] = True
        if nested is not None:
            metadata["gemini"] = {"part": _nested(nested)}
        if not plain:
            metadata["gemini_cli"] = {"result": given}
        _add_time(metadata, entry)
        return row("tool", content, metadata), read_from

    def content_calls(
        self,
        record: Record,
        parts: list[dict[str, Any]],
        following: Record | None,
        calls: list[dict[str, Any]],
    ) -> None:
        """Declare the ``functionCall`` parts no ``toolCalls`` entry holds; keep the
        others' ``thoughtSignature`` on their call."""
        in_turn = {usable_id(call["id"]): call for call in calls}
        answers: dict[str, deque[object]] | None = None
        for index, part in enumerate(parts):
            if "functionCall" not in part:
                continue
            at = record.at(f"content[{index}].functionCall")
            called = part["functionCall"]
            if not isinstance(called, dict):
                self.problems.add(at, f"must be an object, not {describe(called)}")
                continue
            checks = [
                has_text(called, "name", at, self.problems),
                "id" not in called or has_id(called, "id", at, self.problems),
            ]
            args = called.get("args", {})
            arguments = json_text(args) if isinstance(args, dict) else None
            if arguments is None:
                wrong = "cannot be written as JSON text" if isinstance(args, dict) else None
                self.problems.add(f"{at}.args", wrong or f"must be an object, not {describe(args)}")
            if not all(checks) or arguments is None:
                continue
            name = called["name"]
            gemini: dict[str, Any] = {}
            rest = {k: v for k, v in part.items() if k != "functionCall"}
            extra = {k: v for k, v in called.items() if k not in ("id", "name", "args")}
            if extra:
                rest["functionCall"] = extra
            if rest:
                gemini["part"] = rest
            call_id = called.get("id")
            if call_id is None:
                if answers is None:
                    answers = _answers_by_name(following, _given_ids(parts))
                waiting = answers.get(name)
                call_id = waiting.popleft() if waiting else None
            if call_id is None:
                call_id = self._made_up_id(record, index)
                gemini["synthesized_id"] = True
                self.made_up.setdefault(name, deque()).append(call_id)
            key = usable_id(call_id)
            if key in in_turn:
                if "part" in gemini:
                    in_turn[key].setdefault("gemini", {})["part"] = gemini["part"]
                continue
            if key in self.declared:
                continue
            call: dict[str, Any] = {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            if gemini:
                call["gemini"] = gemini
            self.declared.add(key)
            self.open[key] = name
            in_turn[key] = call
            calls.append(call)

    def parts(self, content: object, record: Record, at: str) -> list[dict[str, Any]] | None:
        """Content as the CLI reads it (``PartListUnion``): a string, a part, or a list of
        both, as parts; None, with the problem said, when it is none of them."""
        if isinstance(content, str):
            return [{"text": content}]
        if isinstance(content, dict):
            return [content]
        if not isinstance(content, list):
            self.problems.add(
                record.at(at), f"must be a string or a list of parts, not {describe(content)}"
            )
            return None
        parts: list[dict[str, Any]] = []
        for index, part in enumerate(content):
            if isinstance(part, str):
                parts.append({"text": part})
            elif isinstance(part, dict):
                if "text" in part:
                    has_text(part, "text", record.at(f"{at}[{index}]"), self.problems)
                parts.append(part)
            else:
                self.problems.add(
                    record.at(f"{at}[{index}]"),
                    f"must be a part (an object) or a string, not {describe(part)}",
                )
        return parts


def _is_shown(part: dict[str, Any]) -> bool:
    """A part that is the message's content: not a thought, a call or a result."""
    return not (part.get("thought") or "functionCall" in part or "functionResponse" in part)


def _content(parts: list[dict[str, Any]]) -> str | list[Any]:
    """Parts as content: one string when all are text, else a list of parts."""
    if all(isinstance(part.get("text"), str) for part in parts):
        return "".join(part["text"] for part in parts)
    return _as_parts(parts)


def _as_parts(parts: list[dict[str, Any]]) -> list[Any]:
    return [
        {"type": "text", "text": part["text"]} if isinstance(part.get("text"), str) else part
        for part in parts
    ]


def _nested(media: list[Any]) -> dict[str, Any]:
    """What the Gemini export adds to a tool row's ``functionResponse``: the media a
    gemini-3 model's tool nested in it (``gemini.part``; the other providers' exports have
    no place for them, so they stay out of the content)."""
    return {"functionResponse": {"parts": media}}


def _with_media(text: str, media: list[Any]) -> str | list[Any]:
    """A result's text as content, and the media given beside it as parts."""
    if not media:
        return text
    return [*([{"type": "text", "text": text}] if text else []), *media]


def _own_response(
    parts: list[dict[str, Any]], call_id: object, name: str
) -> tuple[int, Any] | None:
    """The ``functionResponse`` of a call's result that answers it: the one with its id;
    else, among those without an id, the only one of its name, or the only one."""
    responses = [
        (index, part["functionResponse"])
        for index, part in enumerate(parts)
        if "functionResponse" in part
    ]
    for index, answer in responses:
        if isinstance(answer, dict) and answer.get("id") == call_id:
            return index, answer
    without_id = [(i, a) for i, a in responses if not isinstance(a, dict) or a.get("id") is None]
    named = [(i, a) for i, a in without_id if isinstance(a, dict) and a.get("name") == name]
    if len(named) == 1:
        return named[0]
    if len(responses) == 1 and without_id:
        return without_id[0]
    return None


def _given_ids(parts: list[dict[str, Any]]) -> set[str]:
    """The ids a message's ``functionCall`` parts give."""
    given = (part.get("functionCall") for part in parts)
    return {
        key for called in given if isinstance(called, dict) and (key := usable_id(called.get("id")))
    }


def _answers_by_name(following: Record | None, taken: set[str]) -> dict[str, deque[object]]:
    """The ids of the next message's ``functionResponse`` parts by name, in order (None
    for one without a usable id), but those a call of this turn gives itself: the k-th
    call of a name without an id takes the k-th."""
    answers: dict[str, deque[object]] = {}
    if following is None or following.value.get("type") != "user":
        return answers
    content = following.value.get("content")
    for part in content if isinstance(content, list) else []:
        answer = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(answer, dict) or not isinstance(answer.get("name"), str):
            continue
        key = usable_id(answer.get("id"))
        if key not in taken:
            answers.setdefault(answer["name"], deque()).append(
                None if key is None else answer["id"]
            )
    return answers


def _answer(response: dict[str, Any]) -> tuple[str, bool]:
    """A ``functionResponse.response`` as (content, is an error): ``output`` and ``error``
    as text (both, output first, after a cancelled run that printed something); any
    other object as its JSON text."""
    if response.keys() <= {"output", "error"}:
        texts = [
            value if isinstance(value, str) else json_text(value) or ""
            for key in ("output", "error")
            if (value := response.get(key)) not in (None, "")
        ]
        return "\n".join(texts), "error" in response
    return json_text(response) or "", "error" in response


def _is_plain(part: dict[str, Any], call_id: object, name: str) -> bool:
    """Whether a result part is what the tool row gives back: its call's id and name and
    one ``output`` or ``error`` text, and the media nested in it, nothing else."""
    answer = part.get("functionResponse")
    if part.keys() != {"functionResponse"} or not isinstance(answer, dict):
        return False
    response = answer.get("response")
    nested = ["parts"] if nested_parts(answer) is not None else []
    return (
        answer.keys() == {"id", "name", "response", *nested}
        and answer["id"] == call_id
        and answer["name"] == name
        and isinstance(response, dict)
        and len(response) == 1
        and isinstance(response.get("output", response.get("error")), str)
    )


def _metadata(value: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    _add_time(metadata, value)
    if kept:
        metadata["gemini_cli"] = kept
    return metadata


def _add_time(metadata: dict[str, Any], value: dict[str, Any]) -> None:
    if isinstance(value.get("timestamp"), str):
        metadata["facts"] = {"time": value["timestamp"]}


def _usage(tokens: object) -> dict[str, Any]:
    if not isinstance(tokens, dict):
        return {}
    return {
        USAGE[key]: count
        for key, count in tokens.items()
        if key in USAGE and type(count) in (int, float)
    }


FORMAT = Format(
    "gemini-cli",
    "Gemini CLI chat",
    "~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl (up to v0.38 .json); "
    "a subagent's in chats/<session id>/<agent id>.jsonl; checkpoint-<tag>.json (/chat save) "
    "and checkpoints/<time>-<file>-<tool>.json (/restore)",
    "a session with string sessionId and projectHash: one JSON object whose messages each "
    "have a type (user, gemini, info...), or JSONL whose first record is that header, then "
    "message records with an id, $set and $rewindTo; or a checkpoint, {history, authType} "
    "or {clientHistory, toolCall, commitHash...}, whose contents are Gemini's",
    fits,
    read,
    provider="gemini",
    article="a",
    lines=True,
)
