"""What the lines of a Claude Code session are (``claude_code`` reads them, ``claude_code_chain``
follows their chain, ``claude_code_writer`` writes them back): the types of line the CLI
writes, the envelope every event carries, and the blocks of the Anthropic message a user or
assistant event holds."""

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
    }
)
"""Line types the CLI writes that are never a message: kept in place for writing back."""
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
