"""Claude Code sessions: ``~/.claude/projects/<sanitized cwd>/<sessionId>.jsonl`` (the
config directory is ``$CLAUDE_CONFIG_DIR`` when set), one session per file, one compact
JSON event per line, appended as the CLI goes. Subagents (the Task/Agent tool) are
written into the main file up to about 2.0.25, with ``isSidechain: true``; since then
into ``agent-<agentId>.jsonl`` files of their own (``<sessionId>/subagents/`` since
2.1.x), every line a sidechain event. The notes this follows were checked against the
CLI's own code (1.0.30 to 2.1.112) and by resuming every fixture with it; what 2.1.3xx
adds (new records, queued prompts, rewind checkpoints), against the strings of the
2.1.332 bundle only.

The conversation is the ``user`` and ``assistant`` events, each an Anthropic message
(``message.content`` a string or blocks) in an envelope: ``uuid``, ``parentUuid`` (the
event before it, ``null`` at a root), ``isSidechain``, ``sessionId``, ``timestamp``,
``cwd``, ``version``...

- An assistant response is written one content block per line, every line with the same
  ``message.id``: consecutive lines with the same ``message.id`` are one assistant row;
  tool results (or bookkeeping) between them do not end it, since newer versions write a
  quick tool's result before the response's next block, a user message or another response
  does. Another response is also a line of the same ``message.id`` and another
  ``requestId``: the API has answered several requests in a row with one message id
  (anthropics/claude-code#64880), each sent the results of the one before, and every line
  of one response carries its request's id. Its blocks are read as ``anthropic`` reads an
  assistant message's (``read_tool_use`` for calls): text blocks are the content,
  ``tool_use`` blocks canonical calls (``arguments`` the JSON text of ``input``), thinking
  blocks and an order other than text-then-calls stay in ``metadata.anthropic.layout``, so
  that the Anthropic export sends them back in order (a response of server tool blocks
  only, ``server_tool_use`` and its ``web_search_tool_result`` or ``advisor_tool_result``,
  has no content: its blocks are all in the layout). ``facts``: ``time`` the first line's
  timestamp, ``model`` its model (not ``<synthetic>``), and, once per response,
  ``usage`` from the last line (the earlier ones repeat the stream's start: ``input``
  counts every input token, cache reads and writes included, as OpenAI's ``prompt_tokens``
  does, ``cached`` the cache reads, ``output``) and ``finish_reason`` its last
  ``stop_reason`` that is not null.
- A ``user`` event's ``tool_result`` blocks are tool rows (``tool_call_id`` the block's
  ``tool_use_id``, ``is_error`` kept), results first; its other blocks, or its string
  content, a user row after them. The results of a turn come right after it, even when
  their lines sat between the turn's lines. A call is answered by the ``tool_result``
  with its id, wherever its line is; an interrupted or rejected tool has one (an error).
  A call with no result in the file is unanswered.
- What the CLI sends the model as a user message is a user row: an ``isMeta`` event (the
  local-command caveat...) flagged ``claude_code.meta``, command and interrupt markers,
  and a compaction's summary, flagged ``claude_code.compact_summary``. A synthetic
  API-error turn (``isApiErrorMessage``) is never sent: it is bookkeeping.
- A prompt typed while Claude was responding is written, once the CLI delivers it, as an
  ``attachment`` line ``{"type": "queued_command", "prompt", "commandMode": "prompt"}``
  (the ``queue-operation`` lines before it are bookkeeping). The CLI sends it as a user
  message ("The user sent a new message while you were working:" and the prompt) after
  the tool results of the response it came during, merged into their message. It is a
  user row flagged ``claude_code.queued`` (and ``meta`` when the attachment is), its
  content the prompt as typed (a string, or text and image blocks), and it stands where
  its line is; but one read while a response is still open (between its lines, or
  before its results) stands after the response and its results, as the model saw it,
  never between a call and its result. Another ``commandMode`` (``bash``...) stays
  bookkeeping.

Per row, ``claude_code.lines`` holds the event lines it was read from, verbatim (the
envelope, ``uuid``s, ``requestId``, ``toolUseResult``, signatures), with their line
numbers in ``lines_at``; the rows after the first that one user event makes are
``same_event``. ``facts.time`` is the event's timestamp.

Bookkeeping: ``system`` (hook notices, turn durations, compact boundaries),
``progress`` (``agent_progress`` copies a subagent's events: never read as content),
``attachment`` (but a queued prompt), ``summary``, ``custom-title``, ``ai-title``,
``last-prompt``, ``file-history-snapshot``, ``queue-operation`` and the CLI's other
session records (``claude_code_events.BOOKKEEPING``, those of 2.1.3xx among them:
``file-history-delta``, ``bridge-session``, ``cost-state``, ``api-request-*``...) are
never messages. They are read (counted) and kept in place, with their line numbers,
under the ``claude_code.before`` (``before_at``) of the row whose first line comes next,
and those after the last one under its ``after``. Skipped, with the reason, and kept in
place too: an event of a type the CLI does not know, an object without a type, a line
repeating an earlier line's ``uuid`` (the CLI reads one event per uuid) and the events
of an abandoned branch (below). Skipped and not kept: lines that are not JSON (a cut-off
last line among them), that are not objects, and bookkeeping that cannot be stored.
What is wrong inside a user or assistant event is refused, named by its line and path
(``line 8: message.content[0].tool_use_id: is missing``); so is such an event without
a ``uuid``.

Branches (``claude_code_chain``): the conversation is what ``claude --resume`` sends,
the chain from the session's last event (or the event a ``/rewind`` checkpoint after it
resumes from) back to its root and what the CLI joins back to it. An event that is not
on it, but whose own chain meets it, is on an abandoned branch: skipped, named ("on a
branch the session left when the user re-asked at line 7").

Compaction: the CLI resumes a compacted session from its summary on, but the file keeps
the history before it, and so does the conversation (it is the user's transcript):
its rows are flagged ``claude_code.compacted`` (the resumed model no longer sees them),
the boundary is kept bookkeeping, and the summary a user row flagged
``compact_summary``.

Subagents are kept out of the main conversation, and read as a conversation each: the
events of one ``agentId``, or, in a 1.x file, of one sidechain chain (grouped by its
root). One is titled after the session plus " (subagent)" (untitled when the session
is) and carries ``claude_code.subagent_of`` = ``{"sessionId", "tool_use_id"}``, the
Task or Agent call that ran it when the file tells (its result's ``agentId``, else the
call whose ``prompt`` is the subagent's first message); the main conversation's
``claude_code.subagents`` counts those read from its file, and it keeps their lines in
place for writing. A file of sidechain events only (a subagent's own file) is one
subagent conversation, whose ``subagent_of`` names its session.

Title: the last ``custom-title`` of the session (``/rename``), else the last
``ai-title``, else a ``summary`` whose ``leafUuid`` is an event of this file (the CLI
writes summaries of other sessions into each file), else "". Conversation metadata:
``sessionId``, ``cwd``, ``gitBranch``, ``slug``, ``agentId`` (the first of each), the
``versions`` that wrote the events, ``subagents``, ``compactions``.

Detection (``fits``) is a signature: a transcript event with the session's envelope, and
the file's object lines mostly the CLI's (a string ``type`` with a key of the envelope,
``sessionId``, ``uuid`` or ``parentUuid``, whatever the type; or one of the CLI's records
that carry none, ``summary``, ``file-history-snapshot``, ``file-history-delta``...), so
that another format's
lines with one stray event pasted among them are not taken for a session; lines that are
not JSON, and a few odd objects, are a log's junk.

This module detects and reads; ``claude_code_chain`` follows the parentUuid chain (the
first pass), ``claude_code_writer`` writes a session back (``write_native``,
``native_name``), and ``claude_code_events`` names what the three share: the line types,
the envelope's keys, the metadata key ``claude_code``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.messages import describe

from . import anthropic
from .claude_code_chain import Chain
from .claude_code_events import (
    BOOKKEEPING,
    BOOKKEEPING_PREFIXES,
    CHAIN,
    MESSAGES,
    SPACE,
    block_ids,
    is_bookkeeping,
    queued_prompt,
)
from .claude_code_writer import native_name, write_native
from .common import (
    Converted,
    Problems,
    Row,
    has_text,
    is_object,
    layout,
    storable,
)
from .source import Entry, Format, Reading, Skipped, Source

__all__ = ["FORMAT", "fits", "native_name", "read", "write_native"]

SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
FIRST_OF = ("sessionId", "cwd", "gitBranch", "slug", "agentId")


# Detection.


def fits(source: Source) -> bool:
    """A transcript event with the session envelope (a ``type`` of the chain, string
    ``uuid``, ``sessionId`` and ``timestamp``, the ``parentUuid`` key, a boolean
    ``isSidechain``, and for a user or assistant event a ``message`` with ``role`` and
    ``content``), in a file whose object lines are mostly the CLI's (``_is_own``); or,
    with no event, only ``summary`` and ``file-history-snapshot`` lines (a session with
    no conversation, which ``read`` refuses)."""
    entries = source.entries()
    if not entries:
        return False
    event = False
    records = own = others = 0
    half = len(entries) // 2
    for entry in entries:
        value = entry.value
        if not isinstance(value, dict):
            continue
        if not _is_own(value):
            others += 1
        elif event:
            own += 1
            if own > half:
                return True
        else:
            own += 1
            event = _is_event(value)
            records += _is_record(value)
    if event:
        return own > others
    return records == own > 0 and not others


def _is_event(value: dict[str, Any]) -> bool:
    kind = value.get("type")
    if not isinstance(kind, str) or kind not in CHAIN or "parentUuid" not in value:
        return False
    parent = value["parentUuid"]
    if not (parent is None or isinstance(parent, str)):
        return False
    if not isinstance(value.get("isSidechain"), bool):
        return False
    if not all(isinstance(value.get(key), str) for key in ("uuid", "sessionId", "timestamp")):
        return False
    if kind in MESSAGES:
        message = value.get("message")
        return isinstance(message, dict) and "role" in message and "content" in message
    return True


def _is_record(value: dict[str, Any]) -> bool:
    kind = value.get("type")
    if kind == "summary":
        return isinstance(value.get("summary"), str) and "leafUuid" in value
    return kind == "file-history-snapshot" and isinstance(value.get("snapshot"), dict)


def _is_own(value: dict[str, Any]) -> bool:
    """A line the CLI writes: a string ``type`` with a key of the envelope, or one of its
    records that carry none (``summary``, ``file-history-snapshot``...)."""
    kind = value.get("type")
    return isinstance(kind, str) and (
        kind in RECORDS
        or kind.startswith(BOOKKEEPING_PREFIXES)
        or "sessionId" in value
        or "uuid" in value
        or "parentUuid" in value
    )


RECORDS = BOOKKEEPING - CHAIN
"""The CLI's lines outside the chain, some without the envelope (``file-history-delta``
has neither ``sessionId`` nor ``uuid``)."""


# Reading.


def read(source: Source) -> Reading:
    entries = source.entries() or []
    session = _Session(entries, source.is_lines)
    session.read()
    session.problems.raise_if_any()
    conversations = session.conversations()
    skipped = sorted([*source.unreadable, *session.skipped], key=_position)
    return Reading(conversations, skipped, session.count, session.unit)


def _position(skipped: Skipped) -> int:
    digits = re.search(r"\d+", skipped.where)
    return int(digits.group()) if digits else 0


def _number(where: str, index: int) -> int:
    """An entry's line number (``line 7``), else its index (in a JSON array)."""
    try:
        return int(where[5:])
    except ValueError:
        return index


@dataclass
class _Turn:
    """An assistant response being read, line by line."""

    id: str | None
    request: str | None
    """The line's ``requestId``: the API has answered several requests in a row with one
    message id (anthropics/claude-code#64880), and every line of one response carries its
    request's id."""
    row: Row
    time: object
    texts: list[Any] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    kinds: list[Any] = field(default_factory=list)
    model: str | None = None
    usage: object = None
    stop: object = None

    def continued_by(self, message_id: str | None, request: str | None) -> bool:
        """Whether a line of this message id and request id is more of this response."""
        return (
            message_id is not None
            and message_id == self.id
            and (request is None or self.request is None or request == self.request)
        )


class _Builder:
    """The rows of one conversation (the session's, or a subagent's), and the lines kept
    in place among them."""

    def __init__(self, problems: Problems) -> None:
        self.rows: list[Row] = []
        self.problems = problems
        self.pending: list[Any] = []
        self.pending_at: list[int] = []
        self.turn: _Turn | None = None
        self.compacted = 0
        """How many rows came before the last compaction summary."""
        self.compactions = 0
        self.first: dict[str, Any] = {}
        self.missing = list(FIRST_OF)
        self.versions: dict[str, None] = {}
        self.root: str | None = None
        self.prompts: list[tuple[object, str]] = []
        """Each Task or Agent call's prompt, and its id, in file order."""
        self.queued_rows: list[Row] = []
        """Queued prompts read while a response is open, for after its results."""

    def keep(self, value: Any, number: int) -> None:
        self.pending.append(value)
        self.pending_at.append(number)

    def note(self, value: dict[str, Any]) -> None:
        if self.root is None:
            self.root = value.get("uuid")
        for key in self.missing:
            if isinstance(value.get(key), str):
                self.first[key] = value[key]
                self.missing = [k for k in self.missing if k not in self.first]
        version = value.get("version")
        if isinstance(version, str) and version not in self.versions:
            self.versions[version] = None

    def start(self, new: Row, value: Any, number: int) -> dict[str, Any]:
        """Make ``new`` the row that writes ``value``'s line, after the lines kept so far."""
        kept: dict[str, Any] = {"lines": [value], "lines_at": [number]}
        if self.pending:
            kept["before"], kept["before_at"] = self.pending, self.pending_at
            self.pending, self.pending_at = [], []
        new["metadata"][SPACE] = kept
        return kept

    def assistant(self, entry: Entry, value: dict[str, Any], number: int) -> None:
        message = value["message"]
        message_id = message.get("id")
        if not isinstance(message_id, str):
            message_id = None
        request = value.get("requestId")
        request = request if isinstance(request, str) else None
        turn = self.turn
        if turn is None or not turn.continued_by(message_id, request):
            self.close()
            new: Row = {"role": "assistant", "content": None, "metadata": {}}
            turn = self.turn = _Turn(message_id, request, new, value.get("timestamp"))
            self.rows.append(turn.row)
            self.start(turn.row, value, number)
        else:
            kept = turn.row["metadata"][SPACE]
            kept["lines"].append(value)
            kept["lines_at"].append(number)
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        if content:
            self.blocks(turn, content, entry.where)
        if turn.model is None:
            model = message.get("model")
            if isinstance(model, str) and model != "<synthetic>":
                turn.model = model
        usage, stop = message.get("usage"), message.get("stop_reason")
        if usage is not None:
            turn.usage = usage
        if stop is not None:
            turn.stop = stop

    def blocks(self, turn: _Turn, blocks: list[Any], where: str) -> None:
        """One line's blocks, read as ``anthropic.read_assistant_blocks`` reads a message's
        (a response's blocks come one line at a time)."""
        for index, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                turn.texts.append(block)
                turn.kinds.append("content")
            elif kind == "tool_use":
                at = f"{where}: message.content[{index}]"
                call = anthropic.read_tool_use(block, at, self.problems)
                if call is not None:
                    turn.calls.append(call)
                    turn.kinds.append("call")
                    if block["name"] in SUBAGENT_TOOLS:
                        self.prompts.append((block["input"].get("prompt"), block["id"]))
            elif isinstance(kind, str) and kind != "tool_result":
                turn.kinds.append(block)
            else:
                at = f"{where}: message.content[{index}]"
                if is_object(block, at, self.problems) and has_text(
                    block, "type", at, self.problems
                ):
                    self.problems.add(at, "is a tool_result block, which belongs in a user message")

    def queued(self, value: dict[str, Any], number: int, prompt: str | list[Any]) -> None:
        """A prompt the user typed while Claude was responding: a user row flagged
        ``queued``, where its line is; while a response is open, held for after its lines
        and its results (``close``), where the CLI delivers it."""
        new: Row = {"role": "user", "content": prompt, "metadata": {}}
        kept = self.start(new, value, number)
        kept["queued"] = True
        if value["attachment"].get("isMeta") is True:
            kept["meta"] = True
        time = value.get("timestamp")
        if isinstance(time, str):
            new["metadata"]["facts"] = {"time": time}
        if self.turn is None:
            self.rows.append(new)
        else:
            self.queued_rows.append(new)

    def close(self) -> None:
        """End the open response: its row gets its content and facts, and the prompts
        queued while it was open follow it and its results."""
        turn, self.turn = self.turn, None
        if turn is None:
            return
        self.rows.extend(self.queued_rows)
        self.queued_rows = []
        row = turn.row
        row["content"] = turn.texts or (None if turn.kinds else [])
        metadata = row["metadata"]
        if turn.calls:
            metadata["tool_calls"] = turn.calls
        order = layout(turn.kinds)
        if order is not None:
            metadata["anthropic"] = {"layout": order}
        facts: dict[str, Any] = {}
        if isinstance(turn.time, str):
            facts["time"] = turn.time
        if turn.model is not None:
            facts["model"] = turn.model
        if usage := _usage(turn.usage):
            facts["usage"] = usage
        if isinstance(turn.stop, str):
            facts["finish_reason"] = turn.stop
        if facts:
            metadata["facts"] = facts

    def user(self, entry: Entry, value: dict[str, Any], number: int) -> list[Row]:
        message = value["message"]
        content = message["content"]
        if not block_ids(message, "tool_result", "tool_use_id"):
            self.close()
        first = len(self.rows)
        if isinstance(content, str):
            self.rows.append({"role": "user", "content": content, "metadata": {}})
        else:
            anthropic.read_user_blocks(content, f"{entry.where}: message", self.rows, self.problems)
        made = self.rows[first:]
        if not made:
            return made
        flags: dict[str, Any] = {}
        if value.get("isMeta") is True:
            flags["meta"] = True
        if value.get("isCompactSummary") is True:
            flags["compact_summary"] = True
            self.compacted = first
            self.compactions += 1
        kept = self.start(made[0], value, number)
        if flags:
            kept.update(flags)
        for new in made[1:]:
            new["metadata"][SPACE] = {"same_event": True, **flags}
        time = value.get("timestamp")
        if isinstance(time, str):
            for new in made:
                new["metadata"]["facts"] = {"time": time}
        if made[-1]["role"] != "tool":
            self.close()
        return made

    def finish(self) -> None:
        self.close()
        if self.pending and self.rows:
            kept = self.rows[-1]["metadata"][SPACE]
            kept["after"], kept["after_at"] = self.pending, self.pending_at
            self.pending, self.pending_at = [], []
        for earlier in self.rows[: self.compacted]:
            earlier["metadata"][SPACE]["compacted"] = True

    def metadata(self) -> dict[str, Any]:
        kept = dict(self.first)
        if self.versions:
            kept["versions"] = list(self.versions)
        if self.compactions:
            kept["compactions"] = self.compactions
        return kept


def _usage(usage: object) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {}

    def count(key: str) -> int | None:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    fresh, written, cached = (
        count("input_tokens"),
        count("cache_creation_input_tokens"),
        count("cache_read_input_tokens"),
    )
    found: dict[str, int] = {}
    if fresh is not None or written is not None or cached is not None:
        found["input"] = (fresh or 0) + (written or 0) + (cached or 0)
    if (output := count("output_tokens")) is not None:
        found["output"] = output
    if cached is not None:
        found["cached"] = cached
    return found


class _Session:
    """Two passes over a session's lines: the chain (``Chain``: which events an abandoned
    branch holds, which subagent each sidechain event belongs to), then the rows."""

    def __init__(self, entries: list[Entry], is_lines: bool) -> None:
        self.entries = entries
        self.unit = "line" if is_lines else "event"
        self.problems = Problems()
        self.skipped: list[Skipped] = []
        self.count = 0
        self.chain = Chain(entries)
        self.session = self.chain.session
        self.own = _Builder(self.problems)
        self.subagents: dict[str, _Builder] = {}
        self.agents: dict[str, str] = {}
        """The Task or Agent call whose result names each agentId."""
        self.custom_title: str | None = None
        self.ai_title: str | None = None
        self.summaries: list[tuple[str, str]] = []

    def read(self) -> None:
        for index, entry in enumerate(self.entries):
            self.entry(index, entry)
        self.own.finish()
        for builder in self.subagents.values():
            builder.finish()

    # The rows.

    def entry(self, index: int, entry: Entry) -> None:
        value = entry.value
        if not isinstance(value, dict):
            self.skip(entry, f"{describe(value)}, not a Claude Code event (an object)")
            return
        kind = value.get("type")
        number = _number(entry.where, index)
        if not isinstance(kind, str):
            self.skip(entry, "an object without a type, which Claude Code does not read", number)
        elif index in self.chain.repeats:
            first = self.entries[self.chain.repeats[index]].where
            self.skip(
                entry,
                f"a repeat of {first} (the same uuid), which Claude Code reads as one event",
                number,
            )
        elif kind in MESSAGES:
            self.message(index, entry, value, kind, number)
        elif (prompt := queued_prompt(value)) is not None and self.own_prompt(value):
            self.queued(index, entry, value, prompt, number)
        elif is_bookkeeping(kind):
            self.bookkeeping(entry, value, kind, number)
        else:
            self.skip(entry, f"an event of type {kind!r}, which Claude Code does not read", number)

    def skip(self, entry: Entry, why: str, number: int | None = None) -> None:
        """Skip an entry, kept in place for writing back when ``number`` is given."""
        if number is not None and entry.problem() is None:
            self.own.keep(entry.value, number)
        self.skipped.append(Skipped(entry.where, why))

    def bookkeeping(self, entry: Entry, value: dict[str, Any], kind: str, number: int) -> None:
        problem = entry.problem(value)
        if problem is not None:
            self.skipped.append(Skipped(entry.where, f"an event of type {kind!r} that {problem}"))
            return
        self.own.keep(value, number)
        self.count += 1
        if kind == "custom-title" and isinstance(value.get("customTitle"), str):
            if value.get("sessionId", self.session) == self.session:
                self.custom_title = value["customTitle"]
        elif kind == "ai-title" and isinstance(value.get("aiTitle"), str):
            self.ai_title = value["aiTitle"]
        elif kind == "summary" and isinstance(value.get("summary"), str):
            leaf = value.get("leafUuid")
            if isinstance(leaf, str) and leaf in self.chain.position:
                self.summaries.append((leaf, value["summary"]))

    def own_prompt(self, value: dict[str, Any]) -> bool:
        """Whether a queued prompt is the conversation's own (not a subagent's in its
        session's file) and an event (with a uuid): else it stays bookkeeping."""
        own = value.get("isSidechain") is not True or self.chain.sidechain_only
        return own and isinstance(value.get("uuid"), str)

    def queued(
        self, index: int, entry: Entry, value: dict[str, Any], prompt: str | list[Any], number: int
    ) -> None:
        problem = entry.problem(value)
        if problem is not None:
            self.skipped.append(Skipped(entry.where, f"a queued prompt that {problem}"))
        elif index in self.chain.abandoned:
            self.skip(entry, self.chain.abandoned[index], number)
        else:
            self.count += 1
            self.own.note(value)
            self.own.queued(value, number, prompt)

    def message(
        self, index: int, entry: Entry, value: dict[str, Any], kind: str, number: int
    ) -> None:
        if not self.well_formed(entry, value):
            return
        sidechain = value.get("isSidechain") is True and not self.chain.sidechain_only
        if index in self.chain.abandoned and not sidechain:
            self.skip(entry, self.chain.abandoned[index], number)
            return
        builder = self.own
        if sidechain:
            builder = self.subagent(value)
            self.own.keep(value, number)
        self.count += 1
        builder.note(value)
        if kind == "assistant" and value.get("isApiErrorMessage") is True:
            builder.keep(value, number)
        elif kind == "assistant":
            builder.assistant(entry, value, number)
        else:
            made = builder.user(entry, value, number)
            result = value.get("toolUseResult")
            agent = result.get("agentId") if isinstance(result, dict) else None
            if builder is self.own and isinstance(agent, str) and made:
                answered = made[0]["metadata"].get("tool_call_id")
                if isinstance(answered, str):
                    self.agents.setdefault(agent, answered)

    def well_formed(self, entry: Entry, value: dict[str, Any]) -> bool:
        message = value.get("message")
        if (
            isinstance(value.get("uuid"), str)
            and isinstance(message, dict)
            and isinstance(message.get("content"), str | list)
            and entry.problem(value) is None
        ):
            return True
        self.refuse(entry, value)
        return False

    def refuse(self, entry: Entry, value: dict[str, Any]) -> None:
        """Say what is wrong inside a user or assistant event, at its place."""
        where = entry.where
        before = len(self.problems)
        identity = value.get("uuid")
        if not isinstance(identity, str):
            wrong = (
                "is missing"
                if "uuid" not in value
                else f"must be a string, not {describe(identity)}"
            )
            self.problems.add(f"{where}: uuid", wrong)
        if "message" not in value:
            self.problems.add(f"{where}: message", "is missing")
        elif is_object(value["message"], f"{where}: message", self.problems):
            message = value["message"]
            if "content" not in message:
                self.problems.add(f"{where}: message.content", "is missing")
            elif not isinstance(message["content"], str | list):
                self.problems.add(
                    f"{where}: message.content",
                    "must be a string or a list of content blocks, not "
                    f"{describe(message['content'])}",
                )
        if len(self.problems) > before:
            return
        found = Problems()
        storable(value, "", found)
        for problem in found:
            inside = problem.path.lstrip(".")
            self.problems.add(f"{where}: {inside}" if inside else where, problem.message)

    def subagent(self, value: dict[str, Any]) -> _Builder:
        agent = value.get("agentId")
        key = (
            f"agent {agent}"
            if isinstance(agent, str)
            else f"root {self.chain.root_of(value['uuid'])}"
        )
        builder = self.subagents.get(key)
        if builder is None:
            builder = self.subagents[key] = _Builder(self.problems)
        return builder

    # The conversations.

    def title(self) -> str:
        if self.custom_title is not None:
            return self.custom_title
        if self.ai_title is not None:
            return self.ai_title
        leaf = self.chain.leaf
        named = [summary for at, summary in self.summaries if at == leaf]
        if named or self.summaries:
            return (named or [summary for _, summary in self.summaries])[-1]
        return ""

    def conversations(self) -> list[Converted]:
        own = self.own
        if not own.rows:
            counted = (
                f"{self.count:,} of {len(self.entries):,} {self.unit}s read, "
                "none a user or assistant message"
            )
            raise InvalidInput([Problem("file", f"holds no conversation: {counted}")])
        title = self.title()
        metadata = own.metadata()
        if self.chain.sidechain_only:
            metadata["root"] = own.root
            metadata["subagent_of"] = {"sessionId": metadata.get("sessionId", self.session)}
            return [Converted(own.rows, {SPACE: metadata}, title=title)]
        subagents: list[Converted] = []
        unclaimed = list(self.own.prompts)
        for builder in self.subagents.values():
            if not builder.rows:
                continue
            kept = builder.metadata()
            kept["root"] = builder.root
            parent: dict[str, Any] = {"sessionId": self.session}
            call = self.agents.get(kept.get("agentId", ""))
            if call is None:
                call = _claim(unclaimed, _first_text(builder.rows[0]))
            if call is not None:
                parent["tool_use_id"] = call
            kept["subagent_of"] = parent
            named = f"{title} (subagent)" if title else ""
            subagents.append(Converted(builder.rows, {SPACE: kept}, title=named))
        metadata["subagents"] = len(subagents)
        return [Converted(own.rows, {SPACE: metadata}, title=title), *subagents]


def _first_text(first: Row) -> str | None:
    content = first["content"]
    if isinstance(content, str):
        return content
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            return str(part["text"])
    return None


def _claim(prompts: list[tuple[object, str]], text: str | None) -> str | None:
    """The first Task or Agent call not yet claimed whose prompt is ``text``."""
    if text is None:
        return None
    for index, (prompt, call) in enumerate(prompts):
        if prompt == text:
            del prompts[index]
            return call
    return None


FORMAT = Format(
    "claude-code",
    "Claude Code session",
    "~/.claude/projects/<cwd, every character but letters and digits as ->/<sessionId>.jsonl "
    "($CLAUDE_CONFIG_DIR/projects/ when set); subagents in <sessionId>/subagents/"
    "agent-<agentId>.jsonl",
    "JSONL events with a string type; user and assistant events carrying uuid, parentUuid, "
    "isSidechain, sessionId, timestamp and an Anthropic message {role, content}",
    fits,
    read,
    provider="anthropic",
    article="a",
    lines=True,
    write_native=write_native,
    native_name=native_name,
)
