"""What the lines of a Claude Code session are (``claude_code`` reads them, ``claude_code_chain``
follows their chain, ``claude_code_writer`` writes them back): the types of line the CLI
writes, the envelope every event carries, the blocks of the Anthropic message a user or
assistant event holds, and the two kinds of line outside the messages that change what the
model is sent: a queued prompt, and a rewind checkpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SPACE = "claude_code"
"""The metadata key of what the reader keeps for the writer (per message, per conversation)."""
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
        # Since 2.1.3xx (read in the strings of the 2.1.332 bundle); a file-history-delta
        # line carries neither a sessionId nor a uuid.
        "bridge-session",
        "file-history-delta",
        "tools-used",
        "cost-state",
        "ended-by-model",
        "continued-in",
        "relocated",
        "frame-link",
        "memory-mode",
        "session-owner",
        "history-suppression",
        "derived-from",
        "fork-context-ref",
        "api-request",
        "resume-head-vouch",
    }
)
"""Line types the CLI writes that are never a message: kept in place for writing back."""
BOOKKEEPING_PREFIXES = ("api-request-",)
"""The families of such types (``api-request-start``...)."""
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


def is_bookkeeping(kind: str) -> bool:
    return kind in BOOKKEEPING or kind.startswith(BOOKKEEPING_PREFIXES)


def queued_prompt(value: Mapping[str, Any]) -> str | list[Any] | None:
    """What the user typed while Claude was responding, from a ``queued_command``
    attachment that the CLI sends the model as a user message (``commandMode`` "prompt"):
    a non-empty string, or a list of content blocks (text with a pasted image) none of
    which is a tool block. None for any other line."""
    attachment = value.get("attachment")
    if (
        value.get("type") != "attachment"
        or not isinstance(attachment, dict)
        or attachment.get("type") != "queued_command"
        or attachment.get("commandMode") != "prompt"
    ):
        return None
    prompt = attachment.get("prompt")
    if isinstance(prompt, str):
        return prompt or None
    if not isinstance(prompt, list) or not prompt:
        return None
    for block in prompt:
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str) or kind in ("tool_use", "tool_result"):
            return None
    return prompt


def rewound_to(value: Mapping[str, Any]) -> str | None:
    """The event a rewind checkpoint (a ``last-prompt`` line with ``rewound: true``) says
    the session resumes from, its ``leafUuid``; None for any other line."""
    if value.get("type") != "last-prompt" or value.get("rewound") is not True:
        return None
    return text_or_none(value.get("leafUuid"))


def block_ids(message: Mapping[str, Any], kind: str, key: str) -> set[str]:
    """The ``key`` of each block of type ``kind`` in a message's content (the ids of its
    ``tool_use`` blocks, the ``tool_use_id`` of its ``tool_result`` blocks)."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else ()
    return {
        block[key]
        for block in blocks
        if isinstance(block, dict) and block.get("type") == kind and isinstance(block.get(key), str)
    }


def text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
