"""Whether a stored buffer would be accepted as history by a provider, and if not, why,
message by message.

Each provider is checked against the rules it documents for pairing calls with results
(shared/providers.md, section 2), in one pass over the buffer. Indexes are the
buffer's own, from 0, as the inspector numbers its messages ("message 3" is ``#3``).

What is checked, and what is not:

- A call or a result without a usable id (A9) is a rejection wherever pairing is by
  id (OpenAI, OpenAI Responses, Anthropic): an exporter cannot pair it. Gemini pairs a
  turn's responses with its calls by position, so it is checked by counts only.
- System messages are history for OpenAI Chat, so one between a turn and its results
  separates them. OpenAI Responses, Anthropic and Gemini take instructions out of
  band: the exporter lifts system messages out, so they neither count as a turn nor
  separate one from its results.
- A row that keeps an OpenAI Responses item other formats have no place for
  (``reasoning``...) and declares no call is left out by the OpenAI Chat, Anthropic and
  Gemini exporters, so it is not checked for them either: it separates nothing.
- An empty buffer is acceptable history: the request adds the new turn to it.
- Empty turns: Gemini refuses a content whose ``parts`` is empty, and Anthropic a
  message whose content is empty, except a final assistant turn (the one the model is
  asked to continue). A user or assistant message with no content and no call is
  written as such a turn, unless it joins the tool results before it (a user message
  does, into their turn), or its exporter writes blocks it keeps for that provider:
  an assistant turn's ``metadata.<provider>.layout`` holds blocks other formats have no
  place for (Anthropic server tool blocks, ``server_tool_use`` and its
  ``web_search_tool_result``; Gemini thought parts), which the Anthropic and Gemini
  exporters write in place and the others leave out.
- Thinking-only turns: Anthropic refuses an assistant message whose last block is
  ``thinking`` or ``redacted_thinking`` ("messages.N: The final block in an assistant
  message cannot be `thinking`", tailcallhq/forgecode #2107, #3071), wherever it stands,
  the final turn included. So an assistant turn whose kept blocks are all thinking, with
  no content and no call, is refused as an empty turn even when it is the last. A
  thinking block without its signature is left out by the Anthropic exporter, so the
  turn is judged without it (one of such thinking only is an empty turn). (One
  whose text comes before a last thinking block is not checked: Claude Code writes
  thinking first, so only a response cut off mid-way makes one.)
- Parts that are not text (an image, a document, audio): each exporter writes another
  provider's media in its own shape where it takes them, by the role of the message that
  holds them (``formats.media``); a part that cannot be written so, or one of the
  provider's own in a role its API does not take it in, is a rejection, once per
  message (``refused_part``). A part of no known family is not judged. Gemini puts a
  tool result's content inside its ``functionResponse.response`` (any JSON), so a tool
  row's parts are not judged for it.
- OpenAI Responses pairs the client calls its reader keeps whole (``CLIENT_CALLS``:
  ``custom_tool_call``...) with their own kind of output by ``call_id``, as function
  calls; healing and the analysis do not see them (they are no declared call).
- Not checked: alternation of user and assistant turns; Anthropic's own images in an
  assistant message; a provider's own part field by field (an unknown media type).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from .formats import media
from .formats.anthropic import unsigned_thinking
from .formats.common import joins_results, namespace, text_of
from .ids import declared_calls, result_call_id, usable_id
from .messages import Message


class Read(NamedTuple):
    """A message as the checks see it: its index in the buffer, and what the id reader
    (``ids``) finds in it, read once for every provider's check."""

    at: int
    message: Message
    calls: list[tuple[int, str | None]]
    """``declared_calls``: each call an assistant turn declares, with its id or None."""
    result: str | None
    """``result_call_id``: the call a tool result answers."""
    left_out: bool
    """``left_out``: a kept Responses item that only the Responses exporter writes."""
    has_part_to_judge: bool
    """Whether its content holds a part that is not text in any spelling
    (``media.part_family``): only such a part can be refused (``refused_part``), so a
    message without one is read for it once, not once per provider."""


Indexed = Iterable[Read]
"""The messages a provider is sent, read as it goes (a generator over a long buffer
costs less than a list of it)."""

PROVIDERS: tuple[str, ...] = ("openai-chat", "openai-responses", "anthropic", "gemini")

PROVIDER_NAMES: dict[str, str] = {
    "openai-chat": "OpenAI",
    "openai-responses": "OpenAI Responses",
    "anthropic": "Anthropic",
    "gemini": "Gemini",
}

PAIRS_BY_ID: tuple[str, ...] = ("openai-chat", "openai-responses", "anthropic")
"""The providers that pair a result with its call by id: they refuse a tool result that no
call before it declares (an orphan), wherever it stands. Gemini pairs by position: it
refuses one unless a call turn right before it still awaits a response."""

RejectionReason = Literal[
    "unanswered_call",
    "call_without_id",
    "result_without_id",
    "unexpected_result",
    "duplicate_result",
    "text_before_results",
    "response_count",
    "call_turn_order",
    "empty_turn",
    "refused_part",
]


@dataclass(frozen=True)
class Rejection:
    """One reason a provider would refuse the buffer: at which message, for which call."""

    index: int
    call_id: str | None
    reason: RejectionReason
    sentence: str


@dataclass(frozen=True)
class Verdict:
    provider: str
    rejections: tuple[Rejection, ...]

    @property
    def accepted(self) -> bool:
        return not self.rejections

    @property
    def name(self) -> str:
        return PROVIDER_NAMES[self.provider]

    @property
    def summary(self) -> str:
        if self.accepted:
            return f"{self.name} would accept this history"
        first, *more = self.rejections
        rest = f" (and {len(more)} more)" if more else ""
        return f"{self.name} would reject this: {first.sentence}{rest}"


def check(messages: Sequence[Message], provider: str, start: int = 0) -> Verdict:
    """The verdict of one provider (one of ``PROVIDERS``) on a stored buffer; on a stretch
    of one from its message ``start``, which its rejections then number from."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}: one of {', '.join(PROVIDERS)}")
    return _check(_read(messages, start), provider)


def check_all(messages: Sequence[Message]) -> dict[str, Verdict]:
    """Every provider's verdict, each message read once for all four."""
    read = list(_read(messages))
    return {provider: _check(read, provider) for provider in PROVIDERS}


def _read(messages: Sequence[Message], start: int = 0) -> Iterator[Read]:
    for index, message in enumerate(messages, start):
        calls = declared_calls(message)
        yield Read(
            index,
            message,
            calls,
            result_call_id(message),
            not calls and isinstance(message.metadata.get("responses_item"), dict),
            _has_part_to_judge(message.content),
        )


def _has_part_to_judge(content: object) -> bool:
    return isinstance(content, list) and any(media.part_family(p) is not None for p in content)


def _check(read: Iterable[Read], provider: str) -> Verdict:
    refused: list[Rejection] = []
    if provider == "openai-responses":
        found = _results_after_calls(_refused_parts(read, provider, refused)) + refused
    else:
        sent = _refused_parts((seen for seen in read if not seen.left_out), provider, refused)
        if provider == "openai-chat":
            found = _adjacent_results(sent, lift_system=False, results_first=False)
        elif provider == "anthropic":
            empty: list[Rejection] = []
            watched = _empty_turns(_empty_text_blocks(sent, empty), "anthropic", empty)
            found = _adjacent_results(watched, lift_system=True, results_first=True) + empty
        else:
            empty = []
            found = _gemini_turns(_empty_turns(sent, "gemini", empty)) + empty
        found += refused
    return Verdict(provider, tuple(sorted(found, key=lambda r: r.index)))


def left_out(message: Message) -> bool:
    """A kept Responses item with no call, which only the Responses exporter writes."""
    return isinstance(message.metadata.get("responses_item"), dict) and not declared_calls(message)


_NEW_TURN_MARKER = {"anthropic": "new_message", "gemini": "new_turn"}
"""The marker each format's reader puts on a user row that starts a turn of its own right
after tool results (``formats.anthropic.NEW_MESSAGE``, ``formats.gemini.NEW_TURN``)."""


def _empty_turns(messages: Indexed, provider: str, found: list[Rejection]) -> Indexed:
    """``messages`` as they go, adding to ``found`` each user or assistant message the
    provider's exporter would write as an empty turn (for Anthropic, also one of blank
    text only, ``_blank``, wherever it stands); for Anthropic, a final assistant
    turn may be empty, so an empty assistant turn counts only once another follows, but
    one of thinking blocks only counts wherever it is. ``found`` is complete once the
    messages are consumed to the end, as every check does."""
    previous: Message | None = None
    pending: Rejection | None = None
    for seen in messages:
        yield seen
        index, message = seen.at, seen.message
        if message.role == "system":
            continue
        if pending is not None:
            found.append(pending)
            pending = None
        empty = not _has_content(message.content)
        blank = not empty and provider == "anthropic" and _blank(message.content)
        if (
            (empty or blank)
            and message.role in ("user", "assistant")
            and not seen.calls
            and not joins_results(message, previous, provider, _NEW_TURN_MARKER[provider])
        ):
            kept = [block.get("type") for block in _kept_blocks(message, provider)]
            if blank:
                if not kept:  # beside kept blocks, blank text is not judged
                    found.append(
                        Rejection(
                            index,
                            None,
                            "empty_turn",
                            f"the {message.role} message at message {index} holds only "
                            "blank text, and Anthropic refuses a message whose text is all "
                            "whitespace",
                        )
                    )
            elif provider == "anthropic" and kept and THINKING.issuperset(kept):
                found.append(
                    Rejection(
                        index,
                        None,
                        "empty_turn",
                        f"the assistant message at message {index} holds only thinking, and "
                        "Anthropic refuses an assistant message whose last block is thinking",
                    )
                )
            elif not kept and provider == "anthropic" and message.role == "assistant":
                pending = _empty(index, message, provider)
            elif not kept:
                found.append(_empty(index, message, provider))
        previous = message


def _blank(content: object) -> bool:
    """Whether ``content`` is text of whitespace only, as one string or in text parts
    that all are (a message holding an empty one is ``_empty_text_blocks``', once)."""
    if isinstance(content, str):
        return content.isspace()
    if not isinstance(content, list) or not content:
        return False
    return all((text := text_of(part)) is not None and text.isspace() for part in content)


def _empty_text_blocks(messages: Indexed, found: list[Rejection]) -> Indexed:
    """``messages`` as they go, adding to ``found`` each user or assistant message holding
    a text part with no text, which Anthropic refuses wherever it stands ("text content
    blocks must be non-empty"), even beside other text; complete once consumed."""
    for seen in messages:
        yield seen
        message = seen.message
        if (
            message.role in ("user", "assistant")
            and isinstance(message.content, list)
            and any(text_of(part) == "" for part in message.content)
        ):
            found.append(
                Rejection(
                    seen.at,
                    None,
                    "refused_part",
                    f"the {message.role} message at message {seen.at} holds an empty text "
                    "block, which Anthropic refuses",
                )
            )


def _refused_parts(messages: Indexed, provider: str, found: list[Rejection]) -> Indexed:
    """``messages`` as they go, adding to ``found`` each message holding a part that
    ``provider`` does not take as its exporter writes it (``media.taken``); complete once
    consumed. A kept Responses item is written as it was kept, not from its content."""
    for seen in messages:
        yield seen
        part = (
            refused_part(seen.message, provider)
            if seen.has_part_to_judge and not seen.left_out
            else None
        )
        if part is not None:
            found.append(_refused(seen, provider, *part))


def _refused(seen: Read, provider: str, family: str, name: str) -> Rejection:
    where = f"the {seen.message.role} message at message {seen.at}"
    taker = PROVIDER_NAMES[provider]
    if family == "none":
        why = " in no provider's shape (a part of that type holds other keys), which none takes"
    elif family == "textless":
        why = " whose text is missing or not a string, which no provider takes"
    elif family in (provider, "openai"):
        why = f", which {taker} takes in no {seen.message.role} message"
    else:
        why = (
            f" in the shape of {_FAMILY_NAMES.get(family, family)}, which {taker} does not "
            "take there, "
            f"and which cannot be written as one of {taker}'s parts there"
        )
    return Rejection(seen.at, None, "refused_part", f"{where} holds {name}{why}")


_FAMILY_NAMES = {**PROVIDER_NAMES, "otel": "OpenTelemetry"}


def refused_part(message: Message, provider: str) -> tuple[str, str] | None:
    """The first part of ``message`` that ``provider`` does not take as its exporter writes
    it (``media.taken``): the part's family and its name; None when there is none."""
    content = message.content
    if not isinstance(content, list) or (provider == "gemini" and message.role == "tool"):
        return None
    for part in content:
        if not media.taken(part, provider, message.role):  # it has a family, then
            return media.part_family(part)
    return None


THINKING = frozenset({"thinking", "redacted_thinking"})
"""The Anthropic block types of a model's reasoning."""


def _empty(index: int, message: Message, provider: str) -> Rejection:
    return Rejection(
        index,
        None,
        "empty_turn",
        f"the {message.role} message at message {index} is empty, and "
        + (
            "Gemini refuses a content whose parts are empty"
            if provider == "gemini"
            else "Anthropic refuses a message with empty content (but a final assistant turn)"
        ),
    )


def _has_content(content: object) -> bool:
    return bool(content) if isinstance(content, str | list) else content is not None


def _kept_blocks(message: Message, provider: str) -> list[dict[str, object]]:
    """The blocks an assistant turn keeps in its ``layout`` for ``provider`` (Anthropic
    server tool and thinking blocks, Gemini thought parts), which that provider's exporter
    writes in place: ``formats.common.arrange``; but a thinking block without its
    signature, which the Anthropic exporter leaves out."""
    order = namespace(message, provider).get("layout") if message.role == "assistant" else None
    if not isinstance(order, list):
        return []
    return [
        block
        for block in order
        if isinstance(block, dict) and not (provider == "anthropic" and unsigned_thinking(block))
    ]


def _unusable_calls(index: int, calls: list[tuple[int, str | None]]) -> list[Rejection]:
    return [
        Rejection(
            index,
            None,
            "call_without_id",
            f"the turn at message {index} declares a call without a usable id "
            f"(tool_calls[{ordinal}])",
        )
        for ordinal, cid in calls
        if cid is None
    ]


def _no_usable_id(index: int, what: str) -> Rejection:
    return Rejection(
        index,
        None,
        "result_without_id",
        f"the {what} at message {index} has no usable tool_call_id",
    )


def _adjacent_results(
    messages: Indexed, *, lift_system: bool, results_first: bool
) -> list[Rejection]:
    """OpenAI Chat and Anthropic: every call of a turn is answered by the tool results
    right after it (the run of tool messages, which the Anthropic exporter sends as the
    next user message), each such result answers a call of that turn, once.

    With ``results_first`` (Anthropic), a result that follows user text after its call's
    turn is named as such: the exporter would put text before the results.
    """
    found: list[Rejection] = []
    turn: int | None = None
    """The turn whose results the current run of tool messages may hold."""
    answered: dict[str, int | None] = {}
    interrupted: tuple[int, set[str]] | None = None
    """A user message that came right after a call turn, and that turn's calls."""
    where = "in the message right after its turn" if results_first else "directly after its turn"

    def end_run() -> None:
        found.extend(
            Rejection(
                turn, cid, "unanswered_call", f"call {cid} at message {turn} has no result {where}"
            )
            for cid, at in answered.items()
            if at is None and turn is not None
        )

    for index, message, calls, cid, _, _ in messages:
        if message.role == "system" and lift_system:
            continue
        if message.role != "tool":
            interrupted = None
            if answered:  # the run of the turn before ends here
                end_run()
                unanswered = {cid for cid, at in answered.items() if at is None}
                if unanswered and message.role == "user":
                    interrupted = (index, unanswered)
                answered = {}
            turn = None
            if calls:
                found.extend(_unusable_calls(index, calls))
                turn = index
                answered = {cid: None for _, cid in calls if cid is not None}
            continue
        if cid is None:
            found.append(_no_usable_id(index, "tool result"))
        elif cid in answered and (first := answered[cid]) is not None:
            found.append(
                Rejection(
                    index,
                    cid,
                    "duplicate_result",
                    f"the tool result at message {index} answers {cid} again "
                    f"(already answered at message {first})",
                )
            )
        elif cid in answered:
            answered[cid] = index
        elif results_first and interrupted is not None and cid in interrupted[1]:
            found.append(
                Rejection(
                    index,
                    cid,
                    "text_before_results",
                    f"the tool result at message {index} comes after the user text at message "
                    f"{interrupted[0]}, where results must come first",
                )
            )
        else:
            found.append(
                Rejection(
                    index,
                    cid,
                    "unexpected_result",
                    f"the tool result at message {index} answers no call in the turn before it",
                )
            )
    end_run()
    return found


CLIENT_CALLS: dict[str, str] = {
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}
"""The Responses items of a call the client runs, other than ``function_call``, each with
the item of its output: kept whole by the Responses reader (``responses_item``), they pair
on ``call_id`` as function calls do, each kind with its own kind of output."""
_OUTPUTS = {output: call for call, output in CLIENT_CALLS.items()}


class KeptCall(NamedTuple):
    """A kept Responses item that is a client call or its output (``CLIENT_CALLS``)."""

    kind: str
    """The call's item type (an output's call's)."""
    is_output: bool
    call_id: str | None


def kept_call(message: Message) -> KeptCall | None:
    """The client call or output a kept Responses item is, with its ``call_id`` (None when
    it has no usable one; a ``local_shell_call_output`` names its call by ``id``, as the
    SDK's types spell it); None for any other message."""
    item = message.metadata.get("responses_item")
    kind = item.get("type") if isinstance(item, dict) else None
    if not isinstance(item, dict) or not isinstance(kind, str):
        return None
    if kind in CLIENT_CALLS:
        return KeptCall(kind, False, usable_id(item.get("call_id")))
    if kind in _OUTPUTS:
        cid = usable_id(item.get("call_id"))
        if cid is None and kind == "local_shell_call_output":
            cid = usable_id(item.get("id"))
        return KeptCall(_OUTPUTS[kind], True, cid)
    return None


def _results_after_calls(messages: Indexed) -> list[Rejection]:
    """OpenAI Responses: every function call has an output somewhere after it, and every
    output a call somewhere before it. The first declaration of an id owns it (A4). The
    same for the client calls kept whole (``CLIENT_CALLS``), each kind apart."""
    found: list[Rejection] = []
    calls: dict[str, tuple[int, bool]] = {}
    kept_calls: dict[tuple[str, str], tuple[int, bool]] = {}
    for index, message, declared, result, _, _ in messages:
        if (kept := kept_call(message)) is not None:
            _pair_kept(index, kept, kept_calls, found)
        if message.role == "assistant":
            found.extend(_unusable_calls(index, declared))
            for _, cid in declared:
                if cid is not None and cid not in calls:
                    calls[cid] = (index, False)
        elif message.role == "tool":
            cid = result
            if cid is None:
                found.append(_no_usable_id(index, "tool output"))
            elif cid in calls:
                calls[cid] = (calls[cid][0], True)
            else:
                found.append(
                    Rejection(
                        index,
                        cid,
                        "unexpected_result",
                        f"the tool output at message {index} answers no call before it",
                    )
                )
    found.extend(
        Rejection(
            turn, cid, "unanswered_call", f"call {cid} at message {turn} has no output after it"
        )
        for cid, (turn, has_output) in calls.items()
        if not has_output
    )
    found.extend(
        Rejection(
            turn,
            cid,
            "unanswered_call",
            f"the {kind} {cid} at message {turn} has no {CLIENT_CALLS[kind]} after it",
        )
        for (kind, cid), (turn, has_output) in kept_calls.items()
        if not has_output
    )
    return found


def _pair_kept(
    index: int,
    kept: KeptCall,
    calls: dict[tuple[str, str], tuple[int, bool]],
    found: list[Rejection],
) -> None:
    """``_results_after_calls`` for a kept client call or output."""
    kind, is_output, cid = kept
    name = CLIENT_CALLS[kind] if is_output else kind
    if cid is None:
        reason: RejectionReason = "result_without_id" if is_output else "call_without_id"
        found.append(
            Rejection(index, None, reason, f"the {name} at message {index} has no usable call_id")
        )
    elif not is_output:
        calls.setdefault((kind, cid), (index, False))
    elif (kind, cid) in calls:
        calls[kind, cid] = (calls[kind, cid][0], True)
    else:
        found.append(
            Rejection(
                index,
                cid,
                "unexpected_result",
                f"the {name} at message {index} answers no {kind} before it",
            )
        )


def _gemini_turns(messages: Indexed) -> list[Rejection]:
    """Gemini: a function call turn comes right after a user turn or a function response
    turn (so not first), and the response turn right after it (the run of tool messages)
    holds as many responses as it made calls. Responses pair by position, not by id."""
    found: list[Rejection] = []
    previous: Literal["user", "model", "responses"] | None = None
    pending: tuple[int, int] | None = None
    """The call turn whose responses are being counted, and how many calls it made."""
    responses = 0

    def end_responses() -> None:
        if pending is None or responses == pending[1]:
            return
        turn, made = pending
        found.append(
            Rejection(
                turn,
                None,
                "response_count",
                f"the call turn at message {turn} makes {_count(made, 'call')} but is "
                f"followed by {_count(responses, 'function response')}",
            )
        )

    for index, message, calls, result, _, _ in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            if pending is None:
                found.append(
                    Rejection(
                        index,
                        result,
                        "unexpected_result",
                        f"the function response at message {index} follows no function call turn",
                    )
                )
            responses += 1
            previous = "responses"
            continue
        end_responses()
        pending = None
        if calls:
            if previous not in ("user", "responses"):
                found.append(
                    Rejection(
                        index,
                        None,
                        "call_turn_order",
                        f"the call turn at message {index} does not come right after a user "
                        "turn or a function response",
                    )
                )
            pending = (index, len(calls))
            responses = 0
        previous = "user" if message.role == "user" else "model"
    end_responses()
    return found


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
