"""What the inspector shows of a buffer: a window of messages made readable, with what the
pure core's analysis finds on each. No rule is decided here; this only arranges."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, TypeGuard

from . import healing, rendering, selectors
from .healing import sendability
from .models import Conversation, DeclaredCall

PAGE = 50
"""Messages a page of the conversation view loads at a time."""
CONTEXT = 5
"""Messages shown before a deep-linked one."""
OPEN_CALLS_LISTED = 200
"""The most unanswered calls the summary links to, in buffer order."""
FOLD_LINES = 30
"""A message whose text would take more lines than this (about a screen) shows its head
and a "Show all" button; the rest is in the page, folded by a CSS class."""
RAW_IN_PAGE = 10_000
"""The longest raw JSON (characters) a page holds; a longer one is loaded on demand."""
FOLD_WIDTH = 100
"""The characters a line of message text holds, for counting the lines it takes."""
JSON_LINES = 24
"""The most lines a JSON part takes on the page: it scrolls in a bounded box (reading.css)."""
MARKDOWN_ROLES = ("user", "assistant")
"""Whose text reads as markdown; tool results and system text stay text."""


@dataclass(frozen=True)
class Part:
    kind: str  # "markdown", "text" or "json"
    text: str
    html: str = ""
    """The sanitized markup of a markdown part (rendering.markdown); empty for the others."""


@dataclass(frozen=True)
class Fact:
    """One item of a message's facts line: its words, and for a time the stamp as written."""

    text: str
    title: str = ""
    datetime: str = ""
    """An ISO 8601 stamp for <time datetime>, on the time only."""


@dataclass(frozen=True)
class CallView:
    ordinal: int
    call_id: str | None
    name: str
    arguments: str | None
    result_index: int | None


@dataclass(frozen=True)
class Refused:
    """A problem of a message that a provider's refusal names: its label, and the first
    provider's sentence."""

    label: str
    detail: str


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
    facts: list[Fact] = field(default_factory=list)
    """What the source knew of the message (metadata.facts): time, model, usage..."""
    size: int = 0
    """The bytes (UTF-8) of the message's text, all parts."""
    folded: bool = False
    """Whether the text is longer than a screen: shown folded, with "Show all"."""
    refused: list[Refused] = field(default_factory=list)
    """What some provider refuses in the message itself (an empty turn, a part it does not
    take), as the summary counts it."""
    row_id: int | None = None
    """Its stored row, so that what the page asks of it later is asked of this message."""

    @property
    def raw_in_page(self) -> bool:
        """Whether the page holds the raw JSON; a longer one (which holds the text again,
        and a runtime's log lines too) is asked for when opened or copied."""
        return len(self.raw) <= RAW_IN_PAGE

    @property
    def raw_size(self) -> int:
        return len(self.raw.encode())

    @property
    def has_markdown(self) -> bool:
        return any(part.kind == "markdown" for part in self.parts)

    @property
    def has_text(self) -> bool:
        return any(part.text.strip() for part in self.parts)

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


MAX_SWAP = 300
"""The most messages the answer to a write re-renders: the rows the reader has loaded, up to
this many, ending where the loaded window ends."""


@dataclass
class Window:
    """Messages ``start`` to ``end`` of a conversation's buffer, ready to show; and, when the
    reader's own write landed far below the window, the ``tail`` of the buffer from ``stop``
    (loading more stops there, so no row is ever shown twice)."""

    conversation: Conversation
    start: int
    end: int
    messages: list[MessageView] = field(default_factory=list)
    stop: int = -1
    tail: list[MessageView] = field(default_factory=list)
    inserted: list[int] = field(default_factory=list)
    """The indexes of the rows the write just made put in, on the page or not (reading.js
    moves each loaded message's state past them)."""
    shown_tail_row: int | None = None
    """The row id of the tail's first message, when the page shows a tail this window
    does not hold (a page loaded towards it)."""

    def __post_init__(self) -> None:
        if self.stop < 0:
            self.stop = self.conversation.message_count

    @property
    def has_earlier(self) -> bool:
        return self.start > 0

    @property
    def has_later(self) -> bool:
        return self.end < self.stop

    @property
    def earlier_start(self) -> int:
        return max(0, self.start - PAGE)

    @property
    def later_end(self) -> int:
        return min(self.stop, self.end + PAGE)

    @property
    def first_row(self) -> int | str:
        """The row id of the first message shown ("" for none): "Load earlier" names it,
        and ``last_row`` "Load more", so that the view sees a write that moved them."""
        return (self.messages[0].row_id or "") if self.messages else ""

    @property
    def last_row(self) -> int | str:
        return (self.messages[-1].row_id or "") if self.messages else ""

    @property
    def tail_row(self) -> int | str:
        """The row id of the first message of the tail the page shows below ("" for none):
        "Load more" names it too, as a write in the gap above it moves it."""
        if self.tail:
            return self.tail[0].row_id or ""
        return self.shown_tail_row or ""

    @property
    def has_tail(self) -> bool:
        return self.stop < self.conversation.message_count

    def __contains__(self, index: int) -> bool:
        return self.start <= index < self.end or self.stop <= index


@dataclass(frozen=True)
class Branch:
    """Where a history traced over OTLP branched (services.ingest): the conversation on the
    other side, by id, the message there it parts at, and (for the one it came from) its
    title when it branched."""

    conversation: int
    at: int
    title: str = ""


@dataclass(frozen=True)
class Branches:
    branched_from: Branch | None
    branches: list[Branch]


def branches(conversation: Conversation) -> Branches:
    """The branches ``metadata.otel`` names. Metadata is the transcript's own (an imported
    file may hold any ``otel`` value): an entry of another shape is left out."""
    otel = conversation.metadata.get("otel") if isinstance(conversation.metadata, dict) else None
    otel = otel if isinstance(otel, dict) else {}
    listed = otel.get("branches")
    found = [_branch(entry) for entry in listed] if isinstance(listed, list) else []
    return Branches(_branch(otel.get("branched_from")), [b for b in found if b is not None])


def _branch(entry: Any) -> Branch | None:
    if not isinstance(entry, dict):
        return None
    conversation, at, title = entry.get("conversation"), entry.get("at"), entry.get("title")
    if not (_is_index(conversation) and _is_index(at)):
        return None
    return Branch(conversation, at, title if isinstance(title, str) else "")


def _is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def start_at(conversation: Conversation, at: int | None) -> int:
    """Where a window opened at message ``at`` starts: a few messages before it, and never so
    near the end that the page would be short (``at`` past the end opens the last page)."""
    if at is None:
        return 0
    last_page = max(0, conversation.message_count - PAGE)
    return max(0, min(at - CONTEXT, last_page))


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
    stop: int | None = None,
    just: Mapping[int, str] | None = None,
    problems: Sequence[OpenCall] = (),
) -> Window:
    """Messages ``start`` to ``end`` (and the tail from ``stop``, when given), each with the
    findings of the pure core's analysis of those messages: from the index, so the cost
    does not grow with the buffer."""
    count = conversation.message_count
    stop = count if stop is None else max(0, min(stop, count))
    start = max(0, min(start, stop))
    end = max(start, min(end, stop))
    if end >= stop:  # the window reaches the tail: one contiguous run
        end, stop = count, count
    views = _views(conversation, start, end, just or {}, problems)
    tail = _views(conversation, stop, count, just or {}, problems) if stop < count else []
    inserted = sorted(index for index, how in (just or {}).items() if how == "inserted")
    return Window(conversation, start, end, views, stop, tail, inserted)


def page(
    conversation: Conversation,
    start: int,
    end: int,
    stop: int | None,
    problems: Sequence[OpenCall],
    tail_row: int | None = None,
) -> Window:
    """A page of messages to add to a window as the reader scrolls; it never runs past
    ``stop``, where a tail the page already shows begins (its first row ``tail_row``)."""
    count = conversation.message_count
    stop = count if stop is None else max(0, min(stop, count))
    start = max(0, min(start, stop))
    end = max(start, min(end, stop))
    views = _views(conversation, start, end, {}, problems)
    return Window(conversation, start, end, views, stop, shown_tail_row=tail_row)


def _views(
    conversation: Conversation,
    start: int,
    end: int,
    just: Mapping[int, str],
    problems: Sequence[OpenCall],
) -> list[MessageView]:
    if end <= start:
        return []
    rows = list(selectors.messages_page(conversation, offset=start, limit=end - start))
    messages = [row.as_core() for row in rows]
    facts = selectors.window_facts(conversation, messages)
    by_index: dict[int, list[healing.Finding]] = {}
    for finding in healing.analyze_window(messages, start, facts):
        by_index.setdefault(finding.index, []).append(finding)
    refused = selectors.rejected_for(conversation, start, end)
    problem_indexes = sorted({p.declared_at for p in problems})
    return [
        _view(
            index,
            message,
            facts,
            by_index.get(index, []),
            just.get(index),
            _next_after(problem_indexes, index),
            [
                Refused(healing.verdicts.PROBLEM_LABELS[kind], sentence)
                for kind, sentence in refused.get(index, {}).items()
            ],
            row.pk,
        )
        for (index, message), row in zip(enumerate(messages, start=start), rows, strict=True)
    ]


def after_write(
    conversation: Conversation,
    report: healing.AppendReport,
    *,
    start: int,
    end: int,
    stop: int | None,
    old_count: int,
    problems: Sequence[OpenCall] = (),
) -> Window:
    """The window the reader had loaded (``start`` to ``end``, and a tail from ``stop``), as it
    stands after a write: moved by the rows inserted above it, stretched over placeholders
    healed right after its last row, and with the rows the write appended at the end of the
    buffer as its tail when the window did not reach that far. At most MAX_SWAP rows."""
    marks = just_written(report)
    inserted = sorted(index for index, how in marks.items() if how == "inserted")
    end = min(end, old_count)
    if stop is not None and not end < stop <= old_count:  # no tail a page could have shown
        stop = None
    new_start = shifted(start, inserted)
    new_end = shifted(end, inserted)
    for healed in report.healed:
        if new_start <= healed.declared_at < new_end:
            new_end = max(new_end, healed.index + 1)
    new_stop: int | None
    if stop is not None:  # a tail was shown: it keeps its place and takes the new rows
        new_stop = shifted(stop, inserted)
    elif end >= old_count:  # the window reached the end: it runs on to the new end
        new_end, new_stop = conversation.message_count, None
    else:  # the rows appended at the end become a tail
        new_stop = shifted(old_count, inserted)
    new_start = max(new_start, new_end - MAX_SWAP)
    if new_stop is not None:  # a tail longer than that begins further on: the rest loads
        new_stop = max(new_stop, conversation.message_count - MAX_SWAP)
    return window(conversation, new_start, new_end, stop=new_stop, just=marks, problems=problems)


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
    refused: list[Refused],
    row_id: int | None = None,
) -> MessageView:
    answers = healing.result_call_id(message)
    parts = list(_parts(message.content, message.role))
    return MessageView(
        index=index,
        role=message.role,
        parts=parts,
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
        raw=raw_json(message),
        just=just,
        next_problem=next_problem if any(f.kind == "unanswered_call" for f in findings) else None,
        facts=message_facts(message.metadata.get("facts")),
        size=sum(len(part.text.encode()) for part in parts),
        folded=sum(_lines(part) for part in parts) > FOLD_LINES,
        refused=refused,
        row_id=row_id,
    )


def raw_json(message: healing.Message) -> str:
    """The message as stored, as JSON for a person to read (the page's "Raw JSON")."""
    return json.dumps(message.as_stored(), indent=2, ensure_ascii=False)


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
    """JSON, indented; a string holding JSON (OpenAI's arguments) is read first, and shown
    as it is when it is not JSON, or nested deeper than Python reads and writes."""
    if not isinstance(value, str):
        return json.dumps(value, indent=2, ensure_ascii=False)
    indented = _indented_json(value)
    return value if indented is None else indented


def _indented_json(text: str) -> str | None:
    """``text`` read as JSON and written indented; None when it is not JSON or is nested
    past Python's recursion limit (a string may hold any depth: only stored structure is
    bounded)."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return None


def _parts(content: Any, role: str = "") -> Iterable[Part]:
    """Content as something to read: a user's or assistant's text as markdown, other text as
    text (a tool result holding a JSON object or array as indented JSON); structured parts
    as their text when they are text parts, as indented JSON otherwise."""
    if content is None:
        return
    items = [content] if isinstance(content, str) else content
    for item in items if isinstance(items, list) else [items]:
        if isinstance(item, str):
            yield _text(item, role)
        elif (
            isinstance(item, dict)
            and item.get("type") == "text"
            and isinstance(item.get("text"), str)
        ):
            yield _text(item["text"], role)
        else:
            yield Part("json", json.dumps(item, indent=2, ensure_ascii=False))


def _text(text: str, role: str) -> Part:
    if role in MARKDOWN_ROLES and text.strip() and rendering.renders(text):
        return Part("markdown", text, rendering.markdown(text))
    if role == "tool" and text.lstrip()[:1] in ("{", "["):
        indented = _indented_json(text)
        if indented is not None:  # an object or an array, by its first character
            return Part("json", indented)
    return Part("text", text)


def _lines(part: Part) -> int:
    """About how many lines a part takes on the page, wrapped at FOLD_WIDTH."""
    lines = sum(max(1, math.ceil(len(line) / FOLD_WIDTH)) for line in part.text.split("\n"))
    return min(lines, JSON_LINES) if part.kind == "json" else lines


def message_facts(facts: Any) -> list[Fact]:
    """A message's facts line ("2026-02-23 14:05 · gpt-5-codex · 1,204 in / 88 out tokens ·
    1.2 s · stop") from its metadata.facts (formats.common.FACTS); a value of the wrong type
    is left out, and no facts make an empty line."""
    if not isinstance(facts, dict):
        return []
    line = []
    if isinstance(time := facts.get("time"), str) and time:
        line.append(_time(time))
    if isinstance(model := facts.get("model"), str) and model:
        line.append(Fact(_short(model)))
    if usage := _usage(facts.get("usage")):
        line.append(usage)
    if (latency := _number(facts.get("latency_ms"))) is not None:
        line.append(Fact(_latency(latency)))
    if isinstance(reason := facts.get("finish_reason"), str) and reason:
        line.append(Fact(_short(reason)))
    return line


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _time(stamp: str) -> Fact:
    """A time as minutes, in UTC when the stamp says its offset; a date alone as the date
    (not as its midnight); as written when unreadable."""
    written = stamp.strip()
    with contextlib.suppress(ValueError):
        day = date.fromisoformat(written)
        return Fact(day.isoformat(), datetime=day.isoformat())
    try:
        moment = datetime.fromisoformat(written)
    except ValueError:
        return Fact(_short(stamp, 40))
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(UTC)
        except OverflowError:  # year 1 or 9999, past the calendar's end once in UTC
            return Fact(_short(stamp, 40))
        seconds = f"{moment:%Y-%m-%d %H:%M:%S} UTC"
    else:
        seconds = f"{moment:%Y-%m-%d %H:%M:%S}"
    return Fact(f"{moment:%Y-%m-%d %H:%M}", seconds, moment.isoformat())


def _usage(usage: Any) -> Fact | None:
    """ "1,204 in (1,000 cached) / 88 out (40 reasoning) tokens"; the total alone when the
    source gave no input or output count."""
    if not isinstance(usage, dict):
        return None
    counts = {
        key: int(value)
        for key in ("input", "output", "cached", "reasoning", "total")
        if (value := _number(usage.get(key))) is not None
    }
    if not counts:
        return None
    sides = []
    if "input" in counts:
        cached = f" ({counts['cached']:,} cached)" if "cached" in counts else ""
        sides.append(f"{counts['input']:,} in{cached}")
    if "output" in counts:
        reasoning = f" ({counts['reasoning']:,} reasoning)" if "reasoning" in counts else ""
        sides.append(f"{counts['output']:,} out{reasoning}")
    if not sides:
        if "total" not in counts:
            return None
        sides.append(f"{counts['total']:,}")
    title = ", ".join(f"{key} {value:,}" for key, value in counts.items())
    return Fact(" / ".join(sides) + " tokens", f"Tokens: {title}")


def _latency(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 10_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms / 1000:.0f} s"


def report_sentences(report: healing.AppendReport, kind: str) -> list[str]:
    """What an append did, in words: "healed 2 calls: c1 after message 0, c4 after message 7".
    The write is done, so every position is one in the buffer as it now is."""
    if report.refusal:
        return [f"Nothing was read or written: the buffer's scope refused ({report.refusal})."]
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
        what = "the tool result" if dropped.tool_call_id else "the assistant turn"
        if dropped.tool_call_id:
            what += f" for {dropped.tool_call_id}"
        if len(report.outcomes) > 1:
            what += f" (message {dropped.batch_index} of the batch)"
        sentences.append(f"Dropped {what}: {dropped.explanation}.")
    appended = [o.index for o in report.outcomes if o.action == "appended"]
    if appended:
        sentences.append(f"Appended the {kind} message as message {appended[0]}.")
    sentences += [orphan_warning(orphan) for orphan in report.orphans]
    if not report.appended_any:
        sentences.append("Nothing new was appended.")
    return sentences


def orphan_warning(orphan: healing.Orphan) -> str:
    """An appended result no call declares: which providers will refuse the history."""
    refusing = _and([sendability.PROVIDER_NAMES[p] for p in sendability.PAIRS_BY_ID])
    return (
        f"Warning: no call declares {orphan.tool_call_id}, so the result at message "
        f"{orphan.index} answers nothing: {refusing} will refuse this history, and Gemini "
        "too unless a call turn right before it still awaits a response."
    )


def preview_sentences(report: healing.AppendReport, kind: str = "user") -> list[str]:
    """What appending a turn would do now, nothing written, as phrases that follow "A user
    turn now would". Positions are those of the buffer as it is now; the one place that
    counts after healing (where the turn would land) says so."""
    if report.refusal:
        return [f"write nothing: the buffer's scope refuses it ({report.refusal})."]
    phrases = []
    healed = len(report.healed)
    if report.healed:
        calls = _and([f"{h.tool_call_id} right after {_turn_today(h)}" for h in report.healed])
        noun = "call" if healed == 1 else "calls"
        phrases.append(
            f"first heal {healed} unanswered {noun} with a placeholder: {calls} "
            "(numbered as the buffer is now);"
        )
    appended = [o.index for o in report.outcomes if o.action == "appended"]
    if appended:
        where = f"as message {appended[0]}"
        if healed:
            now = report.count - healed - report.appended
            where += f", counted after healing (the buffer holds {now} now)"
        phrases.append(f"{'then ' if healed else ''}append the {kind} turn at the end, {where}.")
    return phrases


def heal_plan_sentences(report: healing.AppendReport) -> list[str]:
    """An admin heal plan, nothing written: where each placeholder goes, by today's
    numbering, and which message it becomes once healed."""
    return [
        f"a placeholder for call {h.tool_call_id} right after the turn at {_turn_today(h)} "
        f"(numbered as the buffer is now); once healed, it is message {h.index}"
        for h in report.healed
    ]


def _turn_today(healed: healing.Healed) -> str:
    """The turn whose call is healed, by its place in the buffer as it is now."""
    if healed.declared_before is not None:
        return f"message {healed.declared_before}"
    return f"the new turn that declares it (message {healed.declared_at} once written)"


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


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
