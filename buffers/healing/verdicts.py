"""What a buffer's summary says, and how a write changes it without reading the buffer.

A ``Tally`` holds each provider's number of rejections (``sendability``: accepted when it
is 0) and the number of each kind of problem: every kind of ``analysis`` finding, and the
rejections that are problems of a message of their own (``REJECTION_PROBLEMS``): an
``empty_turn`` (a message some provider refuses as an empty turn) and a ``refused_part``
(a message holding a part some provider does not take). ``tally`` computes it
over a whole buffer; the rest of this module computes what one write changes, from the
little the write touches (docs/decisions.md, "Stored verdicts"):

- Rejections of OpenAI Chat, Anthropic and Gemini, and empty turns, depend on a message's
  turn (a user or assistant message, its "head", and what follows up to the next head) and
  the turn before it. A change inside one turn can change what is said of that turn and
  of the next one, nothing else. So ``region_counts`` checks a window that starts one head
  earlier and ends one message after the second head following the change, and counts
  only the rejections at indexes of the changed turns: once on the window as it was, once
  as it is, the difference is the change.
- OpenAI Responses pairs calls and outputs by id over the whole buffer, so its rejections
  for an id depend only on where the id's owner (first declaration) and its results are:
  ``responses_by_id``. Calls and results without a usable id count per message.
  The client calls the Responses reader keeps whole (``sendability.CLIENT_CALLS``) are in
  no id index: a write that holds one (``holds_kept_call``) is counted whole.
- The analysis's findings on a message depend on the message and its ids' facts (who owns
  the id, where its first result is, where the owner's run of results ends).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from . import sendability
from .analysis import FINDING_LABELS, analyze_window, call_facts
from .facts import BufferIndex
from .ids import declared_calls, result_call_id
from .messages import Message

PROBLEM_LABELS: dict[str, str] = {
    **FINDING_LABELS,
    "empty_turn": "empty turn",
    "refused_part": "message holding a part some provider does not take",
}
"""Every kind of problem a tally counts, in the order the summary lists them."""
PROBLEM_PLURALS: dict[str, str] = {
    "unanswered_call": "unanswered calls",
    "healed_placeholder": "healed placeholders",
    "orphan_result": "orphan results",
    "duplicate_result": "duplicate results",
    "redeclared_id": "re-declared ids",
    "non_adjacent_result": "results not adjacent to their calls",
    "unusable_id": "unusable ids",
    "empty_turn": "empty turns",
    "refused_part": "messages holding parts some provider does not take",
}

WINDOWED = ("openai-chat", "anthropic", "gemini")
"""The providers whose rejections a window around a change decides."""
EMPTY_TURN_PROVIDERS = ("anthropic", "gemini")
REJECTION_PROBLEMS: dict[str, tuple[str, ...]] = {
    "empty_turn": EMPTY_TURN_PROVIDERS,
    "refused_part": WINDOWED,
}
"""Rejections that are also problems, by reason: the messages some of these providers
refuse for it, each counted once. A part OpenAI Responses refuses, OpenAI Chat or
Anthropic refuses too (tests/test_exports_sdk.py checks it for every part it knows), so
the windowed providers' verdicts say which messages hold one."""


@dataclass(frozen=True)
class Tally:
    """Rejections per provider (every provider, 0 when it accepts) and problems per kind
    (only the kinds present)."""

    rejections: Mapping[str, int] = field(
        default_factory=lambda: dict.fromkeys(sendability.PROVIDERS, 0)
    )
    problems: Mapping[str, int] = field(default_factory=dict)

    @property
    def sendable(self) -> bool:
        return not any(self.rejections.values())

    @property
    def rejected_by(self) -> list[str]:
        return [p for p in sendability.PROVIDERS if self.rejections.get(p, 0)]

    def plus(self, delta: Mapping[str, int], problems: Mapping[str, int]) -> Tally:
        """This tally changed by ``delta`` rejections per provider and ``problems`` per kind."""
        rejections = {p: self.rejections.get(p, 0) + delta.get(p, 0) for p in sendability.PROVIDERS}
        counts = Counter(self.problems)
        counts.update(problems)
        if any(n < 0 for n in (*rejections.values(), *counts.values())):
            raise ValueError(f"a tally cannot go below zero: {rejections}, {dict(counts)}")
        return Tally(rejections, _ordered(counts))

    @classmethod
    def from_stored(cls, rejections: Mapping[str, int], problems: Mapping[str, int]) -> Tally:
        return cls(
            {p: int(rejections.get(p, 0)) for p in sendability.PROVIDERS},
            _ordered(Counter({k: int(n) for k, n in problems.items()})),
        )


def _ordered(counts: Counter[str]) -> dict[str, int]:
    return {kind: counts[kind] for kind in PROBLEM_LABELS if counts[kind] > 0}


def tally(messages: Sequence[Message], index: BufferIndex | None = None) -> Tally:
    """The tally of a whole buffer; ``index``, its ``index_buffer`` when the caller has it."""
    verdicts = sendability.check_all(messages)
    # ``analyze``'s findings, without the rest of its analysis (an index of the buffer more).
    findings = analyze_window(messages, 0, call_facts(messages, index))
    problems: Counter[str] = Counter(finding.kind for finding in findings)
    for reason, providers in REJECTION_PROBLEMS.items():
        problems[reason] = len(rejected_messages((verdicts[p] for p in providers), reason))
    return Tally(
        {p: len(verdict.rejections) for p, verdict in verdicts.items()},
        _ordered(problems),
    )


def rejected_messages(verdicts: Iterable[sendability.Verdict], reason: str) -> set[int]:
    """The indexes of the messages these verdicts reject for ``reason``."""
    return {r.index for v in verdicts for r in v.rejections if r.reason == reason}


def is_head(message: Message) -> bool:
    """A message that starts a turn for every provider: a user or assistant message that is
    sent (not a kept Responses item only the Responses exporter writes)."""
    return message.role in ("user", "assistant") and not sendability.left_out(message)


def region_counts(
    window: Sequence[Message], start: int, ranges: Sequence[tuple[int, int]]
) -> Counter[str]:
    """The rejections of OpenAI Chat, Anthropic and Gemini, and the empty turns, at the
    indexes of ``ranges`` (each ``[first, end)``), checking only ``window`` (messages
    ``start ..`` of a buffer). Exact when the window starts at a head (or the buffer's
    start) before the head that starts each range, and runs one message past the head
    that ends it (or to the buffer's end)."""

    def counted(index: int) -> bool:
        return any(first <= index < end for first, end in ranges)

    counts: Counter[str] = Counter()
    verdicts = {provider: sendability.check(window, provider) for provider in WINDOWED}
    for provider, verdict in verdicts.items():
        counts[provider] = sum(1 for r in verdict.rejections if counted(r.index + start))
    for reason, providers in REJECTION_PROBLEMS.items():
        rejected = rejected_messages((verdicts[p] for p in providers), reason)
        counts[reason] = sum(1 for index in rejected if counted(index + start))
    return counts


def responses_by_id(owner: float | None, results: Iterable[float]) -> int:
    """OpenAI Responses' rejections for one id: each result with no declaration before it,
    and the declared call when no result comes after it. Positions need only be in order."""
    results = list(results)
    unexpected = sum(1 for at in results if owner is None or at < owner)
    unanswered = owner is not None and not any(at > owner for at in results)
    return unexpected + int(unanswered)


def responses_without_id(messages: Iterable[Message]) -> int:
    """OpenAI Responses' rejections of calls and results that have no usable id."""
    return sum(
        sum(1 for _, cid in declared_calls(m) if cid is None)
        + int(m.role == "tool" and result_call_id(m) is None)
        for m in messages
    )


def responses_refused_parts(messages: Iterable[Message]) -> int:
    """OpenAI Responses' rejections of messages holding a part it does not take (one each):
    they depend on the message alone."""
    return sum(
        1
        for m in messages
        if not sendability.left_out(m) and sendability.refused_part(m, "openai-responses")
    )


def holds_kept_call(messages: Iterable[Message]) -> bool:
    """Whether one of ``messages`` is a client call or output the Responses reader kept
    whole (``sendability.kept_call``): OpenAI Responses pairs them by ``call_id`` over the
    whole buffer, and no index holds where they are, so what a write of one changes is
    counted from the whole buffer (rare: only a Responses body holds them)."""
    return any(sendability.kept_call(m) is not None for m in messages)
