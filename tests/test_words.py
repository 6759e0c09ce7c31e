"""Words (issue 15): what the reports, previews and plans say, and that their numbers are
right. A preview or a plan writes nothing, so it numbers messages as the buffer is now, and
says so wherever it counts after healing; a report after a write numbers them as the
buffer now is, after it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from buffers import healing, presenters, selectors, services
from buffers.healing import sendability
from buffers.models import Conversation
from tests.buffers import PureBuffer, StoredBuffer, assistant, result, store, user

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}

TWO_OPEN = [user("go"), assistant("c1"), user("and?"), assistant("c2")]
"""Two open calls, declared at messages 1 and 3: healing the first moves the second turn."""

ENGINES = [pytest.param(PureBuffer, id="pure"), pytest.param(StoredBuffer, id="db")]


def two_open() -> Conversation:
    return store(TWO_OPEN, title="two open calls")


def qa_append(client: Client, conversation: Conversation, **fields: str) -> str:
    data = {"kind": "tool", **{f"tool-{name}": value for name, value in fields.items()}}
    data.update({"window_start": "0", "window_end": str(conversation.message_count)})
    answer = client.post(f"/c/{conversation.pk}/append", data, headers=HX)
    assert answer.status_code == 200
    return answer.text


# The core's numbers.


@pytest.mark.parametrize("engine", ENGINES)
def test_a_healed_call_knows_its_turn_today_and_after_healing(engine: Any) -> None:
    report = engine(TWO_OPEN).append([user("still there?")])

    assert [(h.tool_call_id, h.declared_before, h.declared_at, h.index) for h in report.healed] == [
        ("c1", 1, 1, 2),
        ("c2", 3, 4, 5),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_dropped_duplicate_knows_where_its_call_is_already_answered(engine: Any) -> None:
    buffer = engine([user(), assistant("c1", "c2"), result("c2"), user("?")])

    # The user turn heals c1 first, so c2's result moves from message 2 to 3.
    report = buffer.append([user("again"), result("c2", "again")])

    [dropped] = report.dropped
    assert (dropped.tool_call_id, dropped.answered_at) == ("c2", 3)
    assert dropped.explanation == "this call is already answered at message 3 (MEM-1)"
    assert buffer.stored()[3]["content"] == "result"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_result_no_call_declares_is_reported_as_an_orphan(engine: Any) -> None:
    buffer = engine([user(), assistant("c1"), result("c1")])

    report = buffer.append([result("c9", "lost"), result("c1", "again")])

    assert [(o.index, o.tool_call_id) for o in report.orphans] == [(3, "c9")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_result_for_a_declared_call_is_no_orphan(engine: Any) -> None:
    report = engine([user(), assistant("c1")]).append([result("c1")])

    assert report.orphans == ()


@pytest.mark.parametrize(
    "before",
    [
        pytest.param([user("go")], id="after-a-user-turn"),
        pytest.param([user("go"), assistant("c1"), result("c1")], id="after-a-result"),
        pytest.param([user("go"), assistant("c1"), result("c1"), user("more")], id="after-text"),
    ],
)
def test_the_providers_said_to_refuse_an_orphan_do_refuse_it(before: list[Any]) -> None:
    """The warning's claim, checked against the verdicts themselves: each provider that
    pairs by id refuses the orphan, wherever it stands."""
    messages = healing.parse_messages([*before, result("c9", "lost")])

    for provider in sendability.PAIRS_BY_ID:
        assert any(r.call_id == "c9" for r in sendability.check(messages, provider).rejections)
    assert not sendability.check(messages, "gemini").accepted


def test_gemini_takes_an_orphan_where_a_call_turn_still_awaits_a_response() -> None:
    """The one exception the warning names: Gemini pairs responses by position."""
    messages = healing.parse_messages([user("go"), assistant("c1"), result("c9", "lost")])

    assert sendability.check(messages, "gemini").accepted
    assert not any(sendability.check(messages, p).accepted for p in sendability.PAIRS_BY_ID)


# The sentences.


def test_a_preview_numbers_by_todays_buffer_and_says_where_it_counts_after_healing() -> None:
    conversation = two_open()
    report = services.preview_append(
        conversation_id=conversation.pk, messages=healing.parse_messages([user("?")])
    )

    assert presenters.preview_sentences(report) == [
        "first heal 2 unanswered calls with a placeholder: c1 right after message 1 and c2 "
        "right after message 3 (numbered as the buffer is now);",
        "then append the user turn at the end, as message 6, counted after healing (the "
        "buffer holds 4 now).",
    ]
    assert selectors.buffer_messages(conversation)[3].role == "assistant"  # still message 3


def test_a_preview_with_nothing_to_heal_says_only_where_the_turn_goes() -> None:
    conversation = store([user("go"), assistant("c1"), result("c1")])
    report = services.preview_append(
        conversation_id=conversation.pk, messages=healing.parse_messages([user("?")])
    )

    assert presenters.preview_sentences(report) == [
        "append the user turn at the end, as message 3."
    ]


def test_an_admin_heal_plan_numbers_by_todays_buffer_and_says_what_each_becomes() -> None:
    report = services.preview_heal(conversation_id=two_open().pk)

    assert presenters.heal_plan_sentences(report) == [
        "a placeholder for call c1 right after the turn at message 1 (numbered as the buffer "
        "is now); once healed, it is message 2",
        "a placeholder for call c2 right after the turn at message 3 (numbered as the buffer "
        "is now); once healed, it is message 5",
    ]


def test_after_a_write_the_report_numbers_by_the_buffer_as_it_now_is(client: Client) -> None:
    conversation = two_open()

    report = services.append_messages(
        conversation=conversation, messages=healing.parse_messages([user("?")]), via="tests"
    )

    assert presenters.report_sentences(report, "user") == [
        "Healed 2 calls: c1 after message 1, c2 after message 4.",
        "Appended the user message as message 6.",
    ]
    assert selectors.buffer_messages(conversation)[4].role == "assistant"


# In the inspector and the admin.


def test_the_preview_in_the_page_numbers_by_todays_buffer(client: Client) -> None:
    conversation = two_open()

    html = client.get(f"/c/{conversation.pk}/preview", headers=HX).text

    assert "A user turn now would (nothing has been written):" in html
    assert "c1 right after message 1 and c2 right after message 3" in html
    assert "as message 6, counted after healing (the buffer holds 4 now)." in html


def test_an_appended_orphan_result_says_no_call_declares_it_and_who_will_refuse_it(
    client: Client,
) -> None:
    conversation = store([user("go"), assistant("c1"), result("c1")])

    html = qa_append(client, conversation, tool_call_id="c9", content="lost")

    assert "Appended the tool message as message 3." in html
    assert (
        "Warning: no call declares c9, so the result at message 3 answers nothing: OpenAI, "
        "OpenAI Responses and Anthropic will refuse this history, and Gemini too unless a "
        "call turn right before it still awaits a response." in html
    )


def test_a_result_for_a_declared_call_gets_no_warning(client: Client) -> None:
    conversation = store([user("go"), assistant("c1")])

    html = qa_append(client, conversation, tool_call_id="c1", content="found")

    assert "Appended the tool message as message 2." in html
    assert "Warning" not in html


def test_a_dropped_duplicate_result_says_where_its_call_is_already_answered(
    client: Client,
) -> None:
    conversation = store([user("go"), assistant("c1", "c2"), result("c2"), user("?")])

    html = qa_append(client, conversation, tool_call_id="c2", content="again")

    assert (
        "Dropped the tool result for c2: this call is already answered at message 2 (MEM-1)."
        in html
    )
    assert "Nothing new was appended." in html


def test_the_admin_heal_plan_numbers_by_todays_buffer(admin_client: Client) -> None:
    conversation = two_open()

    html = admin_client.post(
        "/admin/buffers/conversation/",
        {"action": "heal_unanswered_calls", "_selected_action": [conversation.pk]},
    ).text

    assert "Messages are\nnumbered as the buffer is now" in html
    assert "call c2 right after the turn at message 3 (numbered as the buffer is now); " in html
    assert "once healed, it is message 5" in html
    conversation.refresh_from_db()
    assert conversation.message_count == 4
