"""Exactly-once, read back from a stored buffer after clients retried through failures:
every turn a client sent is stored once, and every declared call is answered once, right
after the turn that declared it. Used by tests/test_worker_kill.py and benchmarks/load.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from buffers import healing


@dataclass
class Findings:
    lost: list[str] = field(default_factory=list)
    """Sent (a user turn's text, or a declared call's id), and not stored."""
    duplicated: list[str] = field(default_factory=list)
    """Stored more than once: a user turn, a declaring turn, or an answer."""
    misplaced: list[str] = field(default_factory=list)
    """Calls not answered right after the turn that declared them."""

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.misplaced)


def exactly_once(
    messages: Sequence[healing.Message], *, turns: Iterable[str], calls: Iterable[str]
) -> Findings:
    """What ``messages`` (a whole buffer) says of the user ``turns`` (their texts) and the
    ``calls`` (their ids, one assistant turn declaring each) that were sent."""
    found = Findings()
    user_texts = Counter(
        m.content for m in messages if m.role == "user" and isinstance(m.content, str)
    )
    declared: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    for position, message in enumerate(messages):
        ids = healing.declared_call_ids(message)
        declared.update(ids)
        after = messages[position + 1 : position + 1 + len(ids)]
        if sorted(ids) != sorted(str(healing.result_call_id(m)) for m in after):
            found.misplaced += ids
        if (answers := healing.result_call_id(message)) is not None:
            answered[answers] += 1
    found.duplicated += [text for text, n in user_texts.items() if n > 1]
    found.duplicated += [f"call {i}" for i, n in declared.items() if n > 1]
    found.duplicated += [f"answer to {i}" for i, n in answered.items() if n > 1]
    found.lost += [text for text in turns if user_texts[text] == 0]
    found.lost += [f"call {i}" for i in calls if declared[i] == 0]
    return found
