"""What the inspector shows of a buffer: a window of messages made readable, with what the
pure core's analysis finds on each. No rule is decided here; this only arranges."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import healing, selectors
from .models import Conversation, DeclaredCall

PAGE = 50
"""Messages a page of the conversation view loads at a time."""
CONTEXT = 5
"""Messages shown before a deep-linked one."""
OPEN_CALLS_LISTED = 200
"""The most unanswered calls the summary links to, in buffer order."""


@dataclass(frozen=True)
class Part:
    kind: str  # "text" or "json"
    text: str


@dataclass(frozen=True)
class CallView:
    ordinal: int
    call_id: str | None
    name: str
    arguments: str | None
    result_index: int | None


@dataclass(frozen=True)
class MessageView:
    index: int
    role: str
    parts: list[Part]
    calls: list[CallView]
    answers: str | None
    answers_index: int | None
    placeholder: bool
    findings: list[healing.Finding]
    raw: str
    just: str | None = None
    """"inserted" or "replaced" when the write the page just made did that here."""
    next_problem: int | None = None

    @property
    def unanswered(self) -> list[str]:
        return [f.tool_call_id or "" for f in self.findings if f.kind == "unanswered_call"]

    @property
    def other_findings(self) -> list[healing.Finding]:
        return [f for f in self.findings if f.kind not in ("unanswered_call", "healed_placeholder")]


@dataclass(frozen=True)
class OpenCall:
    call_id: str
    declared_at: int


@dataclass
class Window:
    """Messages ``start`` to ``end`` of a conversation's buffer, ready to show."""

    conversation: Conversation
    start: int
    end: int
    messages: list[MessageView] = field(default_factory=list)

    @property
    def has_earlier(self) -> bool:
        return self.start > 0

    @property
    def has_later(self) -> bool:
        return self.end < self.conversation.message_count

    @property
    def earlier_start(self) -> int:
        return max(0, self.start - PAGE)

    @property
    def later_end(self) -> int:
        return min(self.conversation.message_count, self.end + PAGE)


def open_calls(conversation: Conversation) -> list[OpenCall]:
    """The unanswered calls, in buffer order, from the index: the summary's links."""
    rows = (
        DeclaredCall.objects.filter(conversation=conversation, answered=False)
        .order_by("message__block__start", "message__slot", "ordinal")
        .values_list("call_id", "message__block__start", "message__slot")[:OPEN_CALLS_LISTED]
    )
    return [OpenCall(call_id, start + slot) for call_id, start, slot in rows]


def window(
    conversation: Conversation,
    start: int,
    end: int,
    *,
    just: Mapping[int, str] | None = None,
    problems: Sequence[OpenCall] = (),
) -> Window:
    """Messages ``start`` to ``end``, each with the findings of the pure core's analysis of
    that window (from the index: the cost does not grow with the buffer)."""
    start = max(0, min(start, conversation.message_count))
    end = max(start, min(end, conversation.message_count))
    rows = list(selectors.messages_page(conversation, offset=start, limit=max(end - start, 1)))
    messages = [row.as_core() for row in rows][: end - start]
    facts = selectors.window_facts(conversation, messages)
    findings = healing.analyze_window(messages, start, facts)
    by_index: dict[int, list[healing.Finding]] = {}
    for finding in findings:
        by_index.setdefault(finding.index, []).append(finding)
    problem_indexes = sorted({p.declared_at for p in problems})
    views = [
        _view(
            index,
            message,
            facts,
            by_index.get(index, []),
            (just or {}).get(index),
            _next_after(problem_indexes, index),
        )
        for index, message in enumerate(messages, start=start)
    ]
    return Window(conversation, start, end, views)


def _next_after(indexes: Sequence[int], index: int) -> int | None:
    later = [i for i in indexes if i > index]
    return later[0] if later else None


def _view(
    index: int,
    message: healing.Message,
    facts: Mapping[str, healing.CallFacts],
    findings: list[healing.Finding],
    just: str | None,
    next_problem: int | None,
) -> MessageView:
    answers = healing.result_call_id(message)
    return MessageView(
        index=index,
        role=message.role,
        parts=list(_parts(message.content)),
        calls=[
            _call(ordinal, call, call_id, facts)
            for (ordinal, call_id), call in zip(
                healing.declared_calls(message), _tool_calls(message), strict=True
            )
        ],
        answers=answers,
        answers_index=facts[answers].owner if answers and answers in facts else None,
        placeholder=healing.is_placeholder(message),
        findings=findings,
        raw=json.dumps(message.as_stored(), indent=2, ensure_ascii=False),
        just=just,
        next_problem=next_problem if any(f.kind == "unanswered_call" for f in findings) else None,
    )


def _tool_calls(message: healing.Message) -> list[Any]:
    calls = message.metadata.get("tool_calls")
    return calls if message.role == "assistant" and isinstance(calls, list) else []


def _call(
    ordinal: int, call: Any, call_id: str | None, facts: Mapping[str, healing.CallFacts]
) -> CallView:
    call = call if isinstance(call, dict) else {}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = call.get("name") or function.get("name") or "(unnamed tool)"
    arguments = next(
        (call[key] for key in ("args", "arguments", "input") if key in call),
        function.get("arguments"),
    )
    return CallView(
        ordinal=ordinal,
        call_id=call_id,
        name=str(name),
        arguments=None if arguments is None else _pretty(arguments),
        result_index=facts[call_id].first_result if call_id and call_id in facts else None,
    )


def _pretty(value: Any) -> str:
    """JSON, indented; a string holding JSON (OpenAI's arguments) is read first."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, indent=2, ensure_ascii=False)


def _parts(content: Any) -> Iterable[Part]:
    """Content as something to read: text as text; structured parts as their text when they
    are text parts, as indented JSON otherwise. Never as markup."""
    if content is None:
        return
    if isinstance(content, str):
        yield Part("text", content)
        return
    for item in content if isinstance(content, list) else [content]:
        if (
            isinstance(item, dict)
            and item.get("type") == "text"
            and isinstance(item.get("text"), str)
        ):
            yield Part("text", item["text"])
        elif isinstance(item, str):
            yield Part("text", item)
        else:
            yield Part("json", json.dumps(item, indent=2, ensure_ascii=False))


def report_sentences(report: healing.AppendReport, kind: str) -> list[str]:
    """What an append did, in words: "healed 2 calls: c1 after message 0, c4 after message 7"."""
    sentences = []
    if report.healed:
        calls = ", ".join(f"{h.tool_call_id} after message {h.declared_at}" for h in report.healed)
        noun = "call" if len(report.healed) == 1 else "calls"
        sentences.append(f"Healed {len(report.healed)} {noun}: {calls}.")
    for replaced in report.replaced:
        sentences.append(
            f"Replaced the placeholder for {replaced.tool_call_id} at message {replaced.index} "
            "in place (MEM-10)."
        )
    for dropped in report.dropped:
        sentences.append(
            f"Dropped message {dropped.batch_index} of the batch: {dropped.explanation}."
        )
    appended = [o.index for o in report.outcomes if o.action == "appended"]
    if appended:
        sentences.append(f"Appended the {kind} message at index {appended[0]}.")
    if not report.appended_any:
        sentences.append("Nothing new was appended.")
    return sentences


def just_written(report: healing.AppendReport) -> dict[int, str]:
    """Which indexes an append wrote, and how: for marking them on the page."""
    marks = {h.index: "inserted" for h in report.healed}
    marks.update(
        {
            o.index: "inserted"
            for o in report.outcomes
            if o.action == "appended" and o.index is not None
        }
    )
    marks.update({r.index: "replaced" for r in report.replaced})
    return marks


def shifted(bound: int, written: Iterable[int]) -> int:
    """Where a window bound moves when rows are inserted at ``written`` (resulting indexes)."""
    for index in sorted(written):
        if index < bound:
            bound += 1
    return bound
