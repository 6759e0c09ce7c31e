"""Claude Code sessions: ``~/.claude/projects/<sanitized cwd>/<sessionId>.jsonl`` (the
config directory is ``$CLAUDE_CONFIG_DIR`` when set), one session per file, one compact
JSON event per line, appended as the CLI goes. Subagents (the Task/Agent tool) are
written into the main file up to about 2.0.25, with ``isSidechain: true``; since then
into ``agent-<agentId>.jsonl`` files of their own (``<sessionId>/subagents/`` since
2.1.x), every line a sidechain event. The notes this follows were checked against the
CLI's own code (1.0.30 to 2.1.112) and by resuming every fixture with it.

The conversation is the ``user`` and ``assistant`` events, each an Anthropic message
(``message.content`` a string or blocks) in an envelope: ``uuid``, ``parentUuid`` (the
event before it, ``null`` at a root), ``isSidechain``, ``sessionId``, ``timestamp``,
``cwd``, ``version``...

- An assistant response is written one content block per line, every line with the same
  ``message.id``: consecutive lines with the same ``message.id`` are one assistant row;
  tool results (or bookkeeping) between them do not end it, since newer versions write
  a quick tool's result before the response's next block, a user message or another
  response does. Its blocks are read as ``anthropic`` reads an assistant message's
  (``read_tool_use`` for calls): text blocks are the content, ``tool_use`` blocks
  canonical calls (``arguments`` the JSON text of ``input``), thinking blocks and an
  order other than text-then-calls stay in ``metadata.anthropic.layout``, so that the
  Anthropic export sends them back in order. ``facts``: ``time`` the first line's
  timestamp, ``model`` its model (not ``<synthetic>``), and, once per ``message.id``,
  ``usage`` from the last line (the earlier ones repeat the stream's start:
  ``input`` counts every input token, cache reads and writes included, as OpenAI's
  ``prompt_tokens`` does, ``cached`` the cache reads, ``output``) and ``finish_reason``
  its last ``stop_reason`` that is not null.
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

Per row, ``claude_code.lines`` holds the event lines it was read from, verbatim (the
envelope, ``uuid``s, ``requestId``, ``toolUseResult``, signatures), with their line
numbers in ``lines_at``; the rows after the first that one user event makes are
``same_event``. ``facts.time`` is the event's timestamp.

Bookkeeping: ``system`` (hook notices, turn durations, compact boundaries),
``progress`` (``agent_progress`` copies a subagent's events: never read as content),
``attachment``, ``summary``, ``custom-title``, ``ai-title``, ``last-prompt``,
``file-history-snapshot``, ``queue-operation`` and the CLI's other session records are
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

Branches: a rewind (the user re-asks from an earlier point) writes the new prompt with
the earlier parent, and the old branch stays in the file. The conversation is what
``claude --resume`` sends: the chain from the last event (in file order) back to its
root, through ``progress`` lines as the CLI bridges them, and across a compact boundary
to its ``logicalParentUuid``; plus what the CLI joins back to it, the other lines of a
response on it and the results of its calls (2.1.x chains parallel results to their
own tool_use line). An event that is not on it, but whose own chain meets it, is on an
abandoned branch: skipped, named ("on a branch the session left when the user re-asked
at line 7"). Events whose chain never meets it (a broken chain, an older history the
1.0.x compaction left as a separate root) are read: nothing shows they were abandoned.

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
place for writing. A
file of sidechain events only (a subagent's own file) is one subagent conversation,
whose ``subagent_of`` names its session.

Title: the last ``custom-title`` of the session (``/rename``), else the last
``ai-title``, else a ``summary`` whose ``leafUuid`` is an event of this file (the CLI
writes summaries of other sessions into each file), else "". Conversation metadata:
``sessionId``, ``cwd``, ``gitBranch``, ``slug``, ``agentId`` (the first of each), the
``versions`` that wrote the events, ``subagents``, ``compactions``.

Writing back (``write_native``): every kept line (message lines, bookkeeping, skipped
events kept) in its original order, as the CLI writes JSON (compact, keys in order), so
that a clean session comes back line for line (on PostgreSQL, whose ``jsonb`` keeps no
key order, with the keys in its order). A healed placeholder becomes the CLI's own
result event, a ``user`` event whose first block is a ``tool_result`` (``is_error``
true, the placeholder's text; ``toolUseResult`` "Error: <text>"), its envelope copied
from the line that declared the call (``promptId`` from the turn's prompt,
``sourceToolAssistantUUID`` where the file uses it), its uuid ``uuid5(NAMESPACE_URL,
"<sessionId>:<call id>")``, its timestamp 1 ms after the line before it (never past the
line after it). It is placed right after the turn's last line and the healed turn is
straightened as the CLI of every version resumes it: the response's lines, its existing
results, then the new ones, each pointing to the one before, and whatever pointed into
the turn then points to its last line (so does the event right after it whose parent
is no longer in the file, lost with the result). A user turn made in the app is a plain
``user`` event at the end, pointing to the last event before it (an assistant turn made
in the app, a ``<synthetic>`` assistant event; a system message made in the app has no
place in a session and is refused). Not written back: blank lines, lines that are not
JSON or not objects, the cut-off last line, bookkeeping that could not be stored.
Nothing that was kept is regenerated, so nothing else is lost; a conversation not read
from a Claude Code session is not written as one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from buffers.healing.errors import InvalidInput, Problem
from buffers.healing.ids import is_placeholder, usable_id
from buffers.healing.messages import Message, describe

from . import anthropic
from .common import (
    Converted,
    Problems,
    Row,
    declared,
    has_text,
    is_object,
    json_text,
    layout,
    namespace,
    storable,
)
from .source import Entry, Format, Reading, Skipped, Source

SPACE = "claude_code"
MESSAGES = frozenset({"user", "assistant"})
CHAIN = frozenset({"user", "assistant", "system", "attachment", "progress"})
"""Event types that carry a uuid and sit in the parentUuid chain."""
BOOKKEEPING = frozenset(
    {
        "system",
        "attachment",
        "progress",
        "summary",
        "custom-title",
        "ai-title",
        "last-prompt",
        "file-history-snapshot",
        "attribution-snapshot",
        "queue-operation",
        "tag",
        "agent-name",
        "agent-color",
        "agent-setting",
        "mode",
        "permission-mode",
        "worktree-state",
        "pr-link",
        "speculation-accept",
        "content-replacement",
        "marble-origami-commit",
        "marble-origami-snapshot",
        "checkpoint",
    }
)
"""Line types the CLI writes that are never a message: kept in place for writing back."""
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
ENVELOPE = frozenset(
    {
        "parentUuid",
        "logicalParentUuid",
        "isSidechain",
        "agentId",
        "userType",
        "entrypoint",
        "cwd",
        "sessionId",
        "version",
        "gitBranch",
        "slug",
        "teamName",
        "agentName",
        "sessionKind",
    }
)
"""The keys every event of a session carries beside its body, copied onto new events."""
FIRST_OF = ("sessionId", "cwd", "gitBranch", "slug", "agentId")


# Detection.


def fits(source: Source) -> bool:
    """A transcript event with the session envelope (a ``type`` of the chain, string
    ``uuid``, ``sessionId`` and ``timestamp``, the ``parentUuid`` key, a boolean
    ``isSidechain``, and for a user or assistant event a ``message`` with ``role`` and
    ``content``); or, with no event, only ``summary`` and ``file-history-snapshot``
    lines (a session with no conversation, which ``read`` refuses)."""
    entries = source.entries()
    if not entries:
        return False
    records = others = 0
    for entry in entries:
        value = entry.value
        if not isinstance(value, dict):
            continue
        if _is_event(value):
            return True
        if _is_record(value):
            records += 1
        else:
            others += 1
    return records > 0 and not others


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
    row: Row
    time: object
    texts: list[Any] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    kinds: list[Any] = field(default_factory=list)
    model: str | None = None
    usage: object = None
    stop: object = None


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
        turn = self.turn
        if turn is None or message_id is None or turn.id != message_id:
            self.close()
            new: Row = {"role": "assistant", "content": None, "metadata": {}}
            turn = self.turn = _Turn(message_id, new, value.get("timestamp"))
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

    def close(self) -> None:
        turn, self.turn = self.turn, None
        if turn is None:
            return
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
        content = value["message"]["content"]
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
    """Two passes over a session's lines: the chain (which events an abandoned branch
    holds, which subagent each sidechain event belongs to), then the rows."""

    def __init__(self, entries: list[Entry], is_lines: bool) -> None:
        self.entries = entries
        self.unit = "line" if is_lines else "event"
        self.problems = Problems()
        self.skipped: list[Skipped] = []
        self.count = 0
        self.position: dict[str, int] = {}
        """Each uuid's first event (its entry index)."""
        self.repeats: dict[int, int] = {}
        self.parent: dict[str, Any] = {}
        self.progress: set[str] = set()
        self.main: list[str] = []
        """The uuids of the session's own chain events (not sidechain, not progress)."""
        self.session: str | None = None
        self.sidechain_only = False
        self.abandoned: dict[int, str] = {}
        self.roots: dict[str, str] = {}
        self.own = _Builder(self.problems)
        self.subagents: dict[str, _Builder] = {}
        self.agents: dict[str, str] = {}
        """The Task or Agent call whose result names each agentId."""
        self.custom_title: str | None = None
        self.ai_title: str | None = None
        self.summaries: list[tuple[str, str]] = []

    def read(self) -> None:
        self.index()
        self.abandoned = self.branches()
        for index, entry in enumerate(self.entries):
            self.entry(index, entry)
        self.own.finish()
        for builder in self.subagents.values():
            builder.finish()

    # The chain.

    def index(self) -> None:
        messages = sidechain = 0
        for index, entry in enumerate(self.entries):
            value = entry.value
            if not isinstance(value, dict):
                continue
            kind = value.get("type")
            identity = value.get("uuid")
            if not isinstance(kind, str) or kind not in CHAIN or not isinstance(identity, str):
                continue
            if identity in self.position:
                self.repeats[index] = self.position[identity]
                continue
            self.position[identity] = index
            self.parent[identity] = value.get("parentUuid")
            if kind == "progress":
                self.progress.add(identity)
            elif value.get("isSidechain") is True:
                sidechain += kind in MESSAGES
            else:
                self.main.append(identity)
                messages += kind in MESSAGES
                if self.session is None and isinstance(value.get("sessionId"), str):
                    self.session = value["sessionId"]
        self.sidechain_only = not messages and sidechain > 0
        if self.session is None:
            self.session = next(
                (
                    e.value["sessionId"]
                    for e in self.entries
                    if isinstance(e.value, dict) and isinstance(e.value.get("sessionId"), str)
                ),
                None,
            )

    def up(self, identity: str) -> str | None:
        """The event before ``identity`` in the chain, through progress lines as the CLI
        bridges them."""
        parent = self.parent.get(identity)
        seen = 0
        while isinstance(parent, str) and parent in self.progress and seen <= len(self.progress):
            parent = self.parent.get(parent)
            seen += 1
        return parent if isinstance(parent, str) else None

    def value_of(self, identity: str) -> dict[str, Any]:
        value = self.entries[self.position[identity]].value
        assert isinstance(value, dict)
        return value

    def branches(self) -> dict[int, str]:
        """The entries of the session's messages on an abandoned branch, and why."""
        parents: set[str] = set()
        forked = False
        for identity in self.main:
            parent = self.up(identity)
            if parent is not None and parent in parents:
                forked = True
                break
            if parent is not None:
                parents.add(parent)
        if not forked:
            return {}
        live = self.live()
        off = [i for i in self.main if i not in live and self.value_of(i).get("type") in MESSAGES]
        if not off:
            return {}
        off = self.rejoined(live, off)
        anchors = self.anchors(live, off)
        forks = {fork for fork, _ in anchors.values()}
        children: dict[str, list[str]] = {}
        for identity in self.main:
            parent = self.up(identity)
            if parent in forks and identity in live:
                children.setdefault(parent, []).append(identity)
        return {
            self.position[identity]: self.why(fork, head, children.get(fork, []))
            for identity, (fork, head) in anchors.items()
        }

    def live(self) -> set[str]:
        """The chain ``claude --resume`` loads: from the last event of the session back to
        its root, across compact boundaries."""
        live: set[str] = set()
        current: str | None = self.main[-1]
        while current is not None and current in self.position and current not in live:
            live.add(current)
            following = self.up(current)
            value = self.value_of(current)
            if following is None and value.get("subtype") == "compact_boundary":
                logical = value.get("logicalParentUuid")
                following = logical if isinstance(logical, str) else None
            current = following
        return live

    def rejoined(self, live: set[str], off: list[str]) -> list[str]:
        """``off`` less what the CLI joins back to the chain: the other lines of a response
        on it, and the results of its calls."""
        responses: set[str] = set()
        calls: set[str] = set()
        for identity in live:
            value = self.value_of(identity)
            message = value.get("message")
            if value.get("type") != "assistant" or not isinstance(message, dict):
                continue
            if isinstance(message.get("id"), str):
                responses.add(message["id"])
            calls.update(_ids(message, "tool_use", "id"))
        still: list[str] = []
        for identity in off:
            value = self.value_of(identity)
            message = value.get("message")
            if isinstance(message, dict) and (
                _text(message.get("id")) in responses
                or not calls.isdisjoint(_ids(message, "tool_result", "tool_use_id"))
            ):
                live.add(identity)
            else:
                still.append(identity)
        return still

    def anchors(self, live: set[str], off: list[str]) -> dict[str, tuple[str, str]]:
        """For each event of ``off`` whose chain meets the live one: where it meets it (the
        fork) and the first event of its branch."""
        found: dict[str, tuple[str, str] | None] = {}
        for start in off:
            path: list[str] = []
            walked: set[str] = set()
            current: str | None = start
            result: tuple[str, str] | None = None
            while current is not None:
                if current in found:
                    result = found[current]
                    break
                parent = self.up(current)
                path.append(current)
                walked.add(current)
                if parent is None or parent not in self.position or parent in walked:
                    break
                if parent in live:
                    result = (parent, current)
                    break
                current = parent
            for identity in path:
                found[identity] = result
        return {i: anchor for i in off if (anchor := found.get(i)) is not None}

    def why(self, fork: str, head: str, children: list[str]) -> str:
        after = self.position[head]
        later = [c for c in children if self.position[c] > after]
        chosen = next(iter(later or children), None)
        if chosen is None:
            where = self.entries[self.position[fork]].where
            return f"on a branch the session left after {where}"
        value = self.value_of(chosen)
        where = self.entries[self.position[chosen]].where
        message = value.get("message")
        prompt = value.get("type") == "user" and (
            not isinstance(message, dict)
            or not _ids(message, "tool_result", "tool_use_id")
            or isinstance(message.get("content"), str)
        )
        if prompt:
            return f"on a branch the session left when the user re-asked at {where}"
        return f"on a branch the session left for the one going on at {where}"

    def root_of(self, identity: str) -> str:
        """The first event of the sidechain ``identity`` is on (a 1.x subagent run)."""
        path: list[str] = []
        current = identity
        while True:
            if current in self.roots:
                root = self.roots[current]
                break
            path.append(current)
            parent = self.parent.get(current)
            if (
                not isinstance(parent, str)
                or parent not in self.position
                or parent in path
                or self.value_of(parent).get("isSidechain") is not True
            ):
                root = current
                break
            current = parent
        for walked in path:
            self.roots[walked] = root
        return root

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
        elif index in self.repeats:
            first = self.entries[self.repeats[index]].where
            self.skip(
                entry,
                f"a repeat of {first} (the same uuid), which Claude Code reads as one event",
                number,
            )
        elif kind in MESSAGES:
            self.message(index, entry, value, kind, number)
        elif kind in BOOKKEEPING:
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
            if isinstance(leaf, str) and leaf in self.position:
                self.summaries.append((leaf, value["summary"]))

    def message(
        self, index: int, entry: Entry, value: dict[str, Any], kind: str, number: int
    ) -> None:
        if not self.well_formed(entry, value):
            return
        sidechain = value.get("isSidechain") is True and not self.sidechain_only
        if index in self.abandoned and not sidechain:
            self.skip(entry, self.abandoned[index], number)
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
        key = f"agent {agent}" if isinstance(agent, str) else f"root {self.root_of(value['uuid'])}"
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
        leaf = self.main[-1] if self.main else None
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
        if self.sidechain_only:
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


def _ids(message: Mapping[str, Any], kind: str, key: str) -> set[str]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else ()
    return {
        block[key]
        for block in blocks
        if isinstance(block, dict) and block.get("type") == kind and isinstance(block.get(key), str)
    }


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


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


# Writing the session back.


def write_native(messages: Sequence[Message], metadata: Mapping[str, Any]) -> str:
    """The conversation as a Claude Code session file's text (JSONL, ending with a
    newline), healed calls answered in the CLI's own events."""
    kept = namespace(metadata, SPACE)
    if not kept:
        raise InvalidInput(
            [
                Problem(
                    "conversation",
                    "was not read from a Claude Code session (it keeps no claude_code "
                    "metadata), and Claude Code resumes no session without its events",
                )
            ]
        )
    writer = _Writer(kept, messages)
    for index, message in enumerate(messages):
        writer.message(index, message)
    writer.close()
    return writer.text()


@dataclass
class _Healing:
    """An assistant turn read from the file, its results, and the results made since."""

    lines: list[tuple[int, dict[str, Any]]]
    results: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    new: list[tuple[int, Message]] = field(default_factory=list)


@dataclass
class _Placed:
    number: int
    order: int
    line: dict[str, Any]
    new: bool = False
    to_leaf: bool = False
    healed: str | None = None
    """On a healed turn's new lines: the uuid of the turn's last line."""


class _Writer:
    def __init__(self, kept: Mapping[str, Any], messages: Sequence[Message]) -> None:
        session = kept.get("sessionId")
        self.session = session if isinstance(session, str) else ""
        self.subagent = isinstance(kept.get("subagent_of"), dict)
        self.placed: list[_Placed] = []
        self.high = -1
        self.turn: _Healing | None = None
        self.template: dict[str, Any] = {}
        self.prompt_id: str | None = None
        self.reparent: dict[str, str | None] = {}
        """New parents of the lines of a healed turn (by uuid)."""
        self.rechain: dict[str, str] = {}
        """The last line of a healed turn, for what pointed into it (by uuid)."""
        self.sourced = any(
            "sourceToolAssistantUUID" in line
            for message in messages
            if message.role == "tool"
            for line in _lines(namespace(message, SPACE).get("lines"))
        )

    def place(self, number: int, line: dict[str, Any], *, new: bool = False) -> _Placed:
        placed = _Placed(number, len(self.placed), line, new)
        self.placed.append(placed)
        return placed

    def original(self, lines: object, numbers: object) -> list[tuple[int, dict[str, Any]]]:
        at = numbers if isinstance(numbers, list) else []
        found: list[tuple[int, dict[str, Any]]] = []
        for index, line in enumerate(lines if isinstance(lines, list) else ()):
            if not isinstance(line, dict):
                continue
            number = at[index] if index < len(at) else None
            if not isinstance(number, int) or isinstance(number, bool):
                number = self.high
            self.place(number, line)
            found.append((number, line))
        self.high = max([self.high, *(number for number, _ in found)])
        return found

    def message(self, index: int, message: Message) -> None:
        kept = namespace(message, SPACE)
        self.original(kept.get("before"), kept.get("before_at"))
        self.original(kept.get("after"), kept.get("after_at"))
        if _lines(kept.get("lines")):
            own = self.original(kept.get("lines"), kept.get("lines_at"))
            if message.role == "assistant":
                self.close()
                self.turn = _Healing(own)
            elif message.role == "tool" and self.turn is not None:
                self.turn.results.extend(own)
            else:
                self.close()
            for _, line in own:
                self.template = line
                if isinstance(line.get("promptId"), str):
                    self.prompt_id = line["promptId"]
        elif kept.get("same_event") is True:
            if message.role != "tool":
                self.close()
        elif message.role == "tool" and self.turn is not None:
            self.turn.new.append((index, message))
        else:
            self.close()
            self.append(index, message)

    def close(self) -> None:
        """Answer the healed turn in the CLI's events and straighten it (§8.2 of the
        notes): its lines, its results, then the new results, each after the one before."""
        turn, self.turn = self.turn, None
        if turn is None or not turn.new:
            return
        seen: set[int] = set()
        results = [
            (number, line)
            for number, line in sorted(turn.results, key=lambda pair: pair[0])
            if id(line) not in seen and not seen.add(id(line))  # type: ignore[func-returns-value]
        ]
        chain = [line for _, line in [*turn.lines, *results] if isinstance(line.get("uuid"), str)]
        anchor = max(number for number, _ in [*turn.lines, *results])
        for before, after in pairwise(chain):
            self.reparent[after["uuid"]] = before["uuid"]
        declaring: dict[str, dict[str, Any]] = {}
        for _, line in turn.lines:
            sent = line.get("message")
            for named in _ids(sent, "tool_use", "id") if isinstance(sent, dict) else ():
                declaring.setdefault(named, line)
        prompt_id = next(
            (line["promptId"] for _, line in results if isinstance(line.get("promptId"), str)),
            self.prompt_id,
        )
        previous: str | None = chain[-1]["uuid"] if chain else None
        made: list[_Placed] = []
        for index, message in turn.new:
            call = usable_id(message.metadata.get("tool_call_id"))
            template = declaring.get(call or "", turn.lines[-1][1])
            identity = self.identity(call if call is not None else f"message {index}")
            source = template.get("uuid") if self.sourced else None
            body = _result(message, call, identity, source if isinstance(source, str) else None)
            line = _event(template, body, prompt_id)
            line["parentUuid"] = previous
            made.append(self.place(anchor, line, new=True))
            previous = identity
        for placed in made:
            placed.healed = previous
        for line in chain:
            if previous is not None:
                self.rechain[line["uuid"]] = previous

    def append(self, index: int, message: Message) -> None:
        """A message made in the app, at the end, after the last event before it."""
        call = usable_id(message.metadata.get("tool_call_id"))
        placeholder = is_placeholder(message) and call is not None
        identity = self.identity(call if placeholder and call else f"message {index}")
        if message.role == "system":
            raise InvalidInput(
                [
                    Problem(
                        f"messages[{index}]",
                        "is a system message made in the app, which a Claude Code session "
                        "has no place for",
                    )
                ]
            )
        if message.role == "tool":
            body = _result(message, call, identity, None)
        elif message.role == "assistant":
            body = _assistant(message, identity)
        else:
            body = {
                "type": "user",
                "message": {"role": "user", "content": _user_content(message.content)},
                "uuid": identity,
                "timestamp": "",
            }
        line = _event(self.template, body, None)
        self.place(self.high, line, new=True).to_leaf = True

    def identity(self, name: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.session}:{name}"))

    def text(self) -> str:
        ordered = sorted(self.placed, key=lambda placed: (placed.number, placed.order))
        following: list[str | None] = [None] * len(ordered)
        upcoming: str | None = None
        for index in range(len(ordered) - 1, -1, -1):
            following[index] = upcoming
            stamp = ordered[index].line.get("timestamp")
            if not ordered[index].new and isinstance(stamp, str) and stamp:
                upcoming = stamp
        healed = any(placed.healed is not None for placed in ordered)
        known = {p.line.get("uuid") for p in ordered} if healed else set()
        written: list[str] = []
        leaf: str | None = None
        previous: str | None = None
        bridge: str | None = None
        """The last line of a healed turn just written, for the event after it."""
        for index, placed in enumerate(ordered):
            line = placed.line
            chained = (
                _text(line.get("type")) in CHAIN
                and isinstance(line.get("uuid"), str)
                and (self.subagent or line.get("isSidechain") is not True)
            )
            if placed.new:
                if placed.to_leaf:
                    line["parentUuid"] = leaf
                line["timestamp"] = _after(previous, following[index])
                bridge = placed.healed
            else:
                line = self.rechained(line)
                parent = line.get("parentUuid")
                if bridge is not None and chained:
                    if isinstance(parent, str) and parent not in known:
                        line = {**line, "parentUuid": bridge}
                    bridge = None
            stamp = line.get("timestamp")
            if isinstance(stamp, str) and stamp:
                previous = stamp
            if chained:
                leaf = line["uuid"]
            written.append(json_text(line) or "{}")
        return "".join(f"{text}\n" for text in written)

    def rechained(self, line: dict[str, Any]) -> dict[str, Any]:
        if not self.reparent and not self.rechain:
            return line
        identity, parent = line.get("uuid"), line.get("parentUuid")
        wanted = parent
        if isinstance(identity, str) and identity in self.reparent:
            wanted = self.reparent[identity]
        elif isinstance(parent, str) and parent in self.rechain:
            wanted = self.rechain[parent]
        return line if wanted == parent else {**line, "parentUuid": wanted}


def _lines(value: object) -> list[dict[str, Any]]:
    return [line for line in value if isinstance(line, dict)] if isinstance(value, list) else []


def _event(
    template: Mapping[str, Any], body: dict[str, Any], prompt_id: str | None
) -> dict[str, Any]:
    """A new event: ``parentUuid`` first, the envelope of ``template`` where it has it
    (before or after the body, as the file's era writes it), and ``body``."""
    line: dict[str, Any] = {"parentUuid": None}
    placed = False
    for key, value in template.items():
        if key in ENVELOPE:
            if key not in ("parentUuid", "logicalParentUuid"):
                line[key] = value
            if key == "isSidechain" and prompt_id is not None:
                line["promptId"] = prompt_id
        elif not placed:
            line.update(body)
            placed = True
    if not placed:
        line.update(body)
    if prompt_id is not None and "promptId" not in line:
        line["promptId"] = prompt_id
    return line


def _result(
    message: Message, call: str | None, identity: str, source: str | None
) -> dict[str, Any]:
    """The CLI's tool result event for ``message`` (an error for a healed placeholder)."""
    content = _user_content(message.content)
    error = True if is_placeholder(message) else message.metadata.get("is_error")
    block: dict[str, Any] = {"tool_use_id": call, "type": "tool_result", "content": content}
    if isinstance(error, bool):
        block["is_error"] = error
    body: dict[str, Any] = {
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "uuid": identity,
        "timestamp": "",
    }
    if error is True and isinstance(content, str):
        body["toolUseResult"] = f"Error: {content}"
    if source is not None:
        body["sourceToolAssistantUUID"] = source
    return body


def _assistant(message: Message, identity: str) -> dict[str, Any]:
    content = anthropic.assistant_content(message)
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return {
        "message": {
            "id": identity,
            "type": "message",
            "role": "assistant",
            "model": "<synthetic>",
            "content": blocks,
            "stop_reason": "tool_use" if declared(message) else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        },
        "type": "assistant",
        "uuid": identity,
        "timestamp": "",
    }


def _user_content(content: object) -> object:
    if content is None:
        return ""
    return content if isinstance(content, str) else anthropic.user_content(content)


def _after(previous: str | None, following: str | None) -> str:
    """A timestamp 1 ms after ``previous``, never past ``following`` (the CLI's loaders
    need one that does not go backwards)."""
    if previous is None:
        return following or "1970-01-01T00:00:00.000Z"
    start = _moment(previous)
    if start is None:
        return previous
    later = start + timedelta(milliseconds=1)
    limit = _moment(following) if following else None
    if limit is not None and later > limit:
        return previous
    return later.strftime("%Y-%m-%dT%H:%M:%S.") + f"{later.microsecond // 1000:03d}Z"


def _moment(stamp: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def native_name(metadata: Mapping[str, Any]) -> str:
    """``<sessionId>.jsonl``, as the CLI names a session's file; ``agent-<agentId>.jsonl``
    for a subagent (a 1.x subagent, which had no file, after its first event's uuid)."""
    kept = namespace(metadata, SPACE)
    if isinstance(kept.get("subagent_of"), dict):
        name = kept.get("agentId", kept.get("root"))
        return f"agent-{_safe(name)}.jsonl" if isinstance(name, str) and name else ""
    session = kept.get("sessionId")
    return f"{_safe(session)}.jsonl" if isinstance(session, str) and session else ""


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]", "-", name)


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
