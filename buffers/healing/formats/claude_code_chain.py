"""The parentUuid chain of a Claude Code session's events: the first of the reader's two
passes (``claude_code``), which says which events an abandoned branch holds and which
sidechain run each subagent event belongs to.

Branches: a rewind (the user re-asks from an earlier point) writes the new prompt with
the earlier parent, and the old branch stays in the file. The conversation is what
``claude --resume`` sends: the chain from its leaf back to its root, through
``progress`` lines as the CLI bridges them, and across a compact boundary to its
``logicalParentUuid``; plus what the CLI joins back to it, the other lines of a
response on it and the results of its calls (2.1.x chains parallel results to their
own tool_use line). The leaf is the last event (in file order), unless a rewind
checkpoint follows it: since 2.1.3xx, ``/rewind`` writes a ``last-prompt`` line with
``rewound: true`` whose ``leafUuid`` is the event the session now resumes from (and
``cutUuid`` the first one it dropped), before anything is typed again. An event (or a
queued prompt, which the model is sent too) that is not on the chain, but whose own
chain meets it, is on an abandoned branch: skipped, named ("on a branch the session
left when the user re-asked at line 7", "... when the user rewound it to line 2").
Events whose chain never meets it (a broken chain, an older history the 1.0.x
compaction left as a separate root) are read: nothing shows they were abandoned.

A 1.x file holds its subagents' events in it, ``isSidechain: true`` and no ``agentId``:
each run is the chain of sidechain events back to its first (``root_of``).
"""

from __future__ import annotations

from typing import Any

from .claude_code_events import CHAIN, MESSAGES, block_ids, queued_prompt, rewound_to, text_or_none
from .source import Entry


class Chain:
    """Every chain event of a session's lines by uuid, its parent, and what follows from
    them: the session's id, whether the file is a subagent's own, the events of abandoned
    branches."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self.position: dict[str, int] = {}
        """Each uuid's first event (its entry index)."""
        self.repeats: dict[int, int] = {}
        """The entries that repeat an earlier event's uuid, and that event's entry."""
        self.parent: dict[str, Any] = {}
        self.progress: set[str] = set()
        self.main: list[str] = []
        """The uuids of the session's own chain events (not sidechain, not progress)."""
        self.session: str | None = None
        self.sidechain_only = False
        """Whether the file is a subagent's own: sidechain messages only."""
        self.roots: dict[str, str] = {}
        self.rewound: str | None = None
        """The event a rewind checkpoint after the last event resumes from."""
        self.index()
        self.leaf: str | None = self.main[-1] if self.main else None
        """The event ``claude --resume`` continues from."""
        if self.rewound is not None:
            self.leaf = self.rewound
        self.abandoned = self.branches()
        """The entries of the session's messages on an abandoned branch, and why."""

    def index(self) -> None:
        messages = sidechain = 0
        checkpoint: str | None = None
        for index, entry in enumerate(self.entries):
            value = entry.value
            if not isinstance(value, dict):
                continue
            kind = value.get("type")
            identity = value.get("uuid")
            if (leaf := rewound_to(value)) is not None:
                checkpoint = leaf
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
                checkpoint = None
                messages += kind in MESSAGES
                if self.session is None and isinstance(value.get("sessionId"), str):
                    self.session = value["sessionId"]
        self.sidechain_only = not messages and sidechain > 0
        if checkpoint in self.main:
            self.rewound = checkpoint
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
        forked = self.rewound is not None
        for identity in self.main:
            if forked:
                break
            parent = self.up(identity)
            if parent is not None and parent in parents:
                forked = True
            elif parent is not None:
                parents.add(parent)
        if not forked:
            return {}
        live = self.live()
        off = [i for i in self.main if i not in live and self.sent(self.value_of(i))]
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

    @staticmethod
    def sent(value: dict[str, Any]) -> bool:
        """An event the model is sent: a message, or a queued prompt."""
        return value.get("type") in MESSAGES or queued_prompt(value) is not None

    def live(self) -> set[str]:
        """The chain ``claude --resume`` loads: from the leaf back to the root, across
        compact boundaries."""
        live: set[str] = set()
        current: str | None = self.leaf
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
            calls.update(block_ids(message, "tool_use", "id"))
        still: list[str] = []
        for identity in off:
            value = self.value_of(identity)
            message = value.get("message")
            if isinstance(message, dict) and (
                text_or_none(message.get("id")) in responses
                or not calls.isdisjoint(block_ids(message, "tool_result", "tool_use_id"))
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
            if self.rewound is not None and fork == self.leaf:
                return f"on a branch the session left when the user rewound it to {where}"
            return f"on a branch the session left after {where}"
        value = self.value_of(chosen)
        where = self.entries[self.position[chosen]].where
        message = value.get("message")
        prompt = value.get("type") == "user" and (
            not isinstance(message, dict)
            or not block_ids(message, "tool_result", "tool_use_id")
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
