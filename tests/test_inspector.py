"""The inspector's pages through Django's test client: full pages, the partials htmx swaps,
the POST/redirect/GET path without JavaScript, and what each costs in queries."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from buffers import presenters, services
from buffers.models import Conversation
from tests.buffers import acting_user, assistant, parse, placeholder, result, store, user

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


def article_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<article id="m-(\d+)"', html)]


def article(html: str, index: int) -> str:
    match = re.search(rf'<article id="m-{index}".*?</article>', html, re.DOTALL)
    assert match, f"message {index} is not on the page"
    return match.group(0)


def append(
    client: Client, conversation: Conversation, kind: str, htmx: bool = True, **fields: Any
) -> Any:
    data = {"kind": kind, **{f"{kind}-{name}": value for name, value in fields.items()}}
    data.update({"window_start": 0, "window_end": conversation.message_count})
    headers = HX if htmx else {}
    return client.post(f"/c/{conversation.pk}/append", data, headers=headers)


def crashed() -> Conversation:
    return store(
        [user("weather?"), assistant("c1", "c2"), result("c2"), user("hello?"), assistant()],
        title="crashed",
    )


# The list.


def test_the_list_filters_searches_sorts_and_pages(client: Client) -> None:
    store([assistant("c1")], title="crashed agent", source="runtime")
    store([assistant("h1"), placeholder("h1")], title="healed agent", source="runtime")
    store([user()], title="quiet", source="export.jsonl")

    def titles(query: str) -> list[str]:
        html = client.get(f"/?{query}").text
        return re.findall(r'<td><a href="/c/\d+/">([^<]+)</a></td>', html)

    assert titles("show=unanswered") == ["crashed agent"]
    assert titles("show=healed") == ["healed agent"]
    assert titles("q=export") == ["quiet"]
    assert titles("sort=title") == ["crashed agent", "healed agent", "quiet"]
    assert titles("show=nonsense&sort=nonsense&page=x") == [
        "quiet",
        "healed agent",
        "crashed agent",
    ]


def test_an_htmx_filter_change_gets_only_the_table(client: Client) -> None:
    store([assistant("c1")], title="crashed agent")

    response = client.get("/?show=unanswered", headers=HX)

    assert response.text.lstrip().startswith('<section id="conversation-table"')
    assert "<html" not in response.text
    assert "crashed agent" in response.text


def test_the_list_costs_the_same_queries_for_few_or_many_conversations(client: Client) -> None:
    counts = []
    for total in (3, 60):
        while Conversation.objects.count() < total:
            store([assistant("c1")], title="x")
        with CaptureQueriesContext(connection) as queries:
            client.get("/?show=unanswered&q=x&sort=messages")
        counts.append(len(queries.captured_queries))

    assert counts[0] == counts[1]


# The conversation page.


@pytest.mark.rule("MEM-3")
def test_the_page_shows_each_message_with_its_findings_in_words(client: Client) -> None:
    conversation = store(
        [
            assistant("c1", "c2"),
            result("c2"),
            result("c2", "again"),
            placeholder("p1"),
            result("c9", "orphan"),
            assistant("c1", "c3"),
            result("c3"),
        ]
    )

    html = client.get(f"/c/{conversation.pk}/").text

    assert article_ids(html) == [0, 1, 2, 3, 4, 5, 6]
    assert "unanswered call c1" in article(html, 0)
    assert "1 unanswered call" in html
    assert 'href="#m-1">result at message 1' in article(html, 0)
    assert 'declared at <a href="#m-0">message 0' in article(html, 1)
    assert "duplicate result: c2" in article(html, 2)
    assert "synthetic: healed placeholder" in article(html, 3)
    assert "orphan result: p1" in article(html, 3)
    assert "orphan result: c9" in article(html, 4)
    assert "re-declared id: c1" in article(html, 5)
    assert "Raw JSON" in article(html, 6)


def test_transcript_content_is_escaped_and_whitespace_kept(client: Client) -> None:
    hostile = '<script>alert(1)</script>\n  <a href="javascript:alert(2)">x</a>'
    conversation = store([user(hostile)])

    html = client.get(f"/c/{conversation.pk}/").text

    assert "<script>alert(1)" not in html
    assert 'href="javascript:' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\n  &lt;a href=" in html


@pytest.mark.parametrize(
    "otel",
    [
        {"branched_from": {"conversation": "x", "at": "<b>"}},
        {"branched_from": {"conversation": None, "at": 1}},
        {"branched_from": "yes"},
        {"branches": "ab"},
        {"branches": [{"conversation": -5, "at": 1}, {"conversation": True, "at": 1}]},
        "x",
    ],
)
def test_branches_a_transcript_s_own_metadata_names_in_another_shape_are_left_out(
    client: Client, otel: Any
) -> None:
    """``metadata.otel`` is where a history traced over OTLP names its branches; an imported
    file's metadata may hold anything there."""
    conversation = store([user("hi")], metadata={"otel": otel})

    response = client.get(f"/c/{conversation.pk}/")

    assert response.status_code == 200
    assert 'class="branch"' not in response.text


def test_branches_of_the_right_shape_are_linked(client: Client) -> None:
    otel = {
        "branched_from": {"conversation": 7, "at": 3, "title": "first <try>"},
        "branches": [{"conversation": 9, "at": 5}, {"conversation": "x", "at": 1}],
    }
    conversation = store([user("hi")], metadata={"otel": otel})

    html = client.get(f"/c/{conversation.pk}/").text

    assert '<a href="/c/7/?at=3#m-3">first &lt;try&gt;</a> at message 3' in html
    assert "At message 5, the agent went on" in html
    assert html.count('class="branch"') == 2


def test_structured_content_and_call_arguments_read_as_text_and_pretty_json(
    client: Client,
) -> None:
    turn = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Checking."}, {"type": "image_url", "url": "x"}],
        "tool_calls": [
            {"id": "c1", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
        ],
    }
    conversation = store([turn])

    html = article(client.get(f"/c/{conversation.pk}/").text, 0)

    assert '<div class="text" dir="auto">Checking.</div>' in html
    assert "&quot;type&quot;: &quot;image_url&quot;" in html
    assert "weather" in html
    assert "{\n  &quot;city&quot;: &quot;Paris&quot;\n}" in html


def test_json_text_nested_past_what_python_reads_shows_as_the_text_it_is(
    client: Client,
) -> None:
    """A tool's output or a call's arguments nested a thousand deep is stored (a string is
    no structure); the page shows it as text, never a 500 (bug hunt)."""
    deep = "[" * 1000 + "]" * 1000
    turn = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": deep}}],
    }
    conversation = store([user("q"), turn, result("c1", deep)])

    for url in (f"/c/{conversation.pk}/", f"/c/{conversation.pk}/messages?start=0"):
        answer = client.get(url)
        assert answer.status_code == 200, url
        assert deep in answer.text


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_that_leaves_the_calendar_in_utc_shows_as_written(
    client: Client, stamp: str
) -> None:
    """Read, but past year 1 or 9999 once turned to UTC: shown as written (bug hunt)."""
    conversation = store(
        [{"role": "user", "content": "hi", "metadata": {"facts": {"time": stamp}}}]
    )

    answer = client.get(f"/c/{conversation.pk}/")

    assert answer.status_code == 200
    assert stamp in answer.text


def test_a_date_without_a_time_shows_as_a_date_not_as_midnight(client: Client) -> None:
    """ "2026-12-04" says nothing of the hour: it showed as "2026-12-04 00:00" (bug hunt)."""
    conversation = store(
        [{"role": "user", "content": "hi", "metadata": {"facts": {"time": "2026-12-04"}}}]
    )

    answer = client.get(f"/c/{conversation.pk}/")

    assert '<time datetime="2026-12-04"' in answer.text
    assert ">2026-12-04</time>" in answer.text
    assert "00:00" not in answer.text


def test_a_deep_link_opens_a_window_around_the_message_without_loading_the_rest(
    client: Client, settings: Any
) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    conversation = store([user(f"m{n}") for n in range(2_000)])

    html = client.get(f"/c/{conversation.pk}/?at=1500").text

    shown = article_ids(html)
    assert shown == list(
        range(1500 - presenters.CONTEXT, 1500 - presenters.CONTEXT + presenters.PAGE)
    )
    assert "Load earlier messages" in html
    assert f"start={shown[-1] + 1}" in html  # the next page loads as the reader scrolls


def test_a_page_of_a_long_conversation_costs_what_a_short_one_does(
    client: Client, settings: Any
) -> None:
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    short = store([assistant("c1"), *[user(f"m{n}") for n in range(60)]])
    long = store([assistant("c1"), *[user(f"m{n}") for n in range(3_000)]])

    counts = []
    for conversation in (short, long):
        with CaptureQueriesContext(connection) as queries:
            client.get(f"/c/{conversation.pk}/?at=20")
        counts.append(len(queries.captured_queries))

    assert counts[0] == counts[1]


def test_the_next_page_arrives_as_a_partial_that_moves_the_window(client: Client) -> None:
    conversation = store([user(f"m{n}") for n in range(120)])

    response = client.get(
        f"/c/{conversation.pk}/messages?start=50&end=100&window_start=0&window_end=50", headers=HX
    )

    assert article_ids(response.text) == list(range(50, 100))
    assert '<div id="window-range" hidden hx-swap-oob="true">' in response.text
    assert 'name="window_end" value="100"' in response.text
    assert "start=100" in response.text
    assert "<html" not in response.text


def test_an_unknown_conversation_is_a_404(client: Client) -> None:
    assert client.get("/c/404/").status_code == 404


# Writing: the heart.


@pytest.mark.rule("MEM-3")
def test_a_user_turn_swaps_in_the_placeholder_at_its_place_and_the_new_summary(
    client: Client,
) -> None:
    conversation = crashed()

    response = append(client, conversation, "user", content="still there?")

    html = response.text
    assert article_ids(html) == [0, 1, 2, 3, 4, 5, 6]
    assert "synthetic: healed placeholder" in article(html, 2)
    assert "just inserted" in article(html, 2)
    assert "just inserted" in article(html, 6)
    assert "just inserted" not in article(html, 3)
    assert "Healed 1 call: c1 after message 1." in html
    assert '<section id="summary" class="summary" aria-label="Summary" hx-swap-oob="true">' in html
    assert "no unanswered calls" in html
    assert "<html" not in html


def test_without_javascript_a_turn_posts_redirects_and_shows_what_happened(
    client: Client,
) -> None:
    conversation = crashed()

    response = append(client, conversation, "user", htmx=False, content="still there?")

    assert response.status_code == 302
    assert response["Location"] == f"/c/{conversation.pk}/?at=6&just=2,6#m-6"
    html = client.get(response["Location"]).text
    assert "Healed 1 call: c1 after message 1." in html
    assert "just inserted" in article(html, 2)


@pytest.mark.rule("MEM-16")
@pytest.mark.parametrize("content", ["", "   \n\t "])
def test_an_empty_or_blank_turn_is_refused_in_place_and_nothing_is_written(
    client: Client, content: str
) -> None:
    conversation = crashed()

    swapped = append(client, conversation, "user", content=content)
    page = append(client, conversation, "user", htmx=False, content=content)

    assert swapped["HX-Retarget"] == "#user-form"
    assert 'role="alert"' in swapped.text
    assert "A user turn needs some text" in swapped.text
    assert page.status_code == 422
    assert "A user turn needs some text" in page.text
    conversation.refresh_from_db()
    assert conversation.message_count == 5


@pytest.mark.rule("MEM-10")
def test_the_qa_panel_replaces_a_placeholder_in_place(client: Client) -> None:
    conversation = store([assistant("c1"), placeholder("c1"), user()])

    html = append(client, conversation, "tool", tool_call_id="c1", content="Found 3 cats").text

    assert "just replaced" in article(html, 1)
    assert "Found 3 cats" in article(html, 1)
    assert "Replaced the placeholder for c1 at message 1 in place (MEM-10)." in html


@pytest.mark.rule("MEM-10")
def test_a_placeholder_replaced_outside_the_window_is_linked_from_the_report(
    client: Client,
) -> None:
    """The page shows messages 200 to 250; the placeholder the QA panel's result replaces is
    message 1: the report links to it, as a write without JavaScript opens the page there."""
    conversation = store(
        [assistant("c1"), placeholder("c1"), *(user(f"turn {n}") for n in range(250))]
    )

    html = client.post(
        f"/c/{conversation.pk}/append",
        {
            "kind": "tool",
            "tool-tool_call_id": "c1",
            "tool-content": "Found 3 cats",
            "window_start": 200,
            "window_end": 250,
        },
        headers=HX,
    ).text

    assert "Replaced the placeholder for c1 at message 1 in place (MEM-10)." in html
    assert '<a href="?at=1&amp;replaced=1#m-1">Show message 1</a>' in html
    assert 'id="m-1"' not in html


@pytest.mark.rule("MEM-10")
def test_without_javascript_a_replaced_placeholder_is_marked_replaced_not_inserted(
    client: Client,
) -> None:
    conversation = store([assistant("c1"), placeholder("c1"), user()])

    response = append(
        client, conversation, "tool", htmx=False, tool_call_id="c1", content="Found 3 cats"
    )
    html = client.get(response["Location"]).text

    assert "Replaced the placeholder for c1 at message 1 in place (MEM-10)." in html
    assert "just replaced" in article(html, 1)
    assert "just inserted" not in html


@pytest.mark.rule("MEM-2")
def test_the_qa_panel_says_when_a_turn_was_dropped_as_a_duplicate(client: Client) -> None:
    conversation = store([assistant("c1")])

    html = append(client, conversation, "assistant", call_ids="c1", name="search", content="").text

    assert "every tool call this turn declares is already declared (MEM-2)" in html
    assert "Nothing new was appended." in html


def test_the_preview_shows_the_healing_plan_and_writes_nothing(client: Client) -> None:
    conversation = crashed()

    response = client.get(f"/c/{conversation.pk}/preview", headers=HX)

    assert "A user turn now would" in response.text
    assert (
        "first heal 1 unanswered call with a placeholder: c1 right after message 1 "
        "(numbered as the buffer is now);" in response.text
    )
    assert (
        "then append the user turn at the end, as message 6, counted after healing "
        "(the buffer holds 5 now)." in response.text
    )
    conversation.refresh_from_db()
    assert conversation.message_count == 5


def test_every_post_needs_its_csrf_token() -> None:
    conversation = crashed()
    client = Client(enforce_csrf_checks=True)

    response = client.post(f"/c/{conversation.pk}/append", {"kind": "user", "user-content": "x"})

    assert response.status_code == 403


def test_the_list_counts_no_further_than_the_pages_it_can_show(client: Client) -> None:
    """Counting every row of a long list on each view would cost more than the page."""
    Conversation.objects.bulk_create(
        Conversation(title=f"run {n}", owner=acting_user()) for n in range(320)
    )

    first = client.get("/").text
    last = client.get("/?page=7").text

    assert "More than 300 conversations" in first
    assert "Page 1 of 7+" in first
    assert "320 conversations" in last
    assert "Page 7 of 7</span>" in last


# From the review of the inspector: windows that do not start at 0 or reach the end.


def long_crash(settings: Any) -> Conversation:
    """400 messages; the call declared at message 244 was never answered."""
    settings.FLOWDROP_BUFFER_BLOCK_SIZE = 64
    messages = [user(f"m{n}") for n in range(400)]
    messages[244] = assistant("c244")
    return store(messages)


def append_in_window(
    client: Client, conversation: Conversation, start: int, end: int, stop: int | str = ""
) -> str:
    data = {"kind": "user", "user-content": "still there?", "window_start": start,
            "window_end": end, "window_stop": stop}  # fmt: skip
    response = client.post(f"/c/{conversation.pk}/append", data, headers=HX)
    assert response.status_code == 200
    return response.text


@pytest.mark.rule("MEM-3")
def test_a_turn_sent_mid_buffer_shows_the_placeholder_in_place_and_the_turn_at_the_end(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    page = client.get(f"/c/{conversation.pk}/?at=200").text
    assert article_ids(page) == list(range(195, 245))

    html = append_in_window(client, conversation, 195, 245)

    shown = article_ids(html)
    assert shown == [*range(195, 246), 401]
    assert len(shown) == len(set(shown))
    assert "just inserted" in article(html, 245)
    assert "synthetic: healed placeholder" in article(html, 245)
    assert "still there?" in article(html, 401)
    assert "just inserted" in article(html, 401)
    assert "The end of the buffer:" in html
    assert "start=246&amp;end=296&amp;stop=401" in html
    assert 'name="window_stop" value="401"' in html


def test_loading_more_stops_where_the_tail_begins(client: Client, settings: Any) -> None:
    conversation = long_crash(settings)
    append_in_window(client, conversation, 195, 245)

    last = client.get(
        f"/c/{conversation.pk}/messages?start=396&end=446&stop=401"
        "&window_start=195&window_end=396&window_stop=401",
        headers=HX,
    ).text

    assert article_ids(last) == list(range(396, 401))
    assert "load-later" not in last


def test_a_second_turn_keeps_the_tail_and_moves_it_by_what_was_inserted_above(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    append_in_window(client, conversation, 195, 245)

    html = append_in_window(client, conversation, 195, 246, stop=401)

    assert article_ids(html) == [*range(195, 246), 401, 402]
    assert "just inserted" in article(html, 402)


def test_loading_earlier_messages_keeps_the_tail_a_write_showed_and_the_next_write_keeps_it(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    append_in_window(client, conversation, 195, 245)  # the turn lands at 401, shown as a tail

    earlier = client.get(
        f"/c/{conversation.pk}/messages?start=145&end=195"
        "&window_start=195&window_end=246&window_stop=401",
        headers=HX,
    ).text
    html = append_in_window(client, conversation, 145, 246, stop=401)

    assert article_ids(earlier) == list(range(145, 195))
    assert 'name="window_stop" value="401"' in earlier
    assert article_ids(html) == [*range(145, 246), 401, 402]


def loader_url(html: str, kind: str) -> str:
    """The address a page's "Load earlier" or "Load more" control asks (``kind``:
    ``earlier`` or ``later``), as htmx sends it."""
    match = re.search(rf'class="load-{kind}"[^>]*?hx-get="([^"]+)"', html, re.DOTALL)
    assert match, f"the page has no load-{kind} control"
    return match.group(1).replace("&amp;", "&")


def follow(client: Client, page: str, kind: str, start: int, end: int, stop: int | str = "") -> str:
    """What the page's load-``kind`` control answers, sent with the window's range as htmx
    includes it (``#window-range``)."""
    window = f"&window_start={start}&window_end={end}&window_stop={stop}"
    return str(client.get(loader_url(page, kind) + window, headers=HX).text)


def delete_elsewhere(conversation: Conversation, index: int) -> None:
    """An admin deletes message ``index``: every message after it moves up by one."""
    services.delete_message(conversation_id=conversation.pk, index=index, via="tests", by=None)


def heal_elsewhere(conversation: Conversation) -> None:
    """Another tab or program sends a user turn: the call at message 244 gets its
    placeholder at 245, and every message after it moves down by one."""
    services.append_messages(
        conversation_id=conversation.pk, messages=parse([user("from elsewhere")]), via="tests"
    )


def test_loading_more_after_a_heal_elsewhere_moved_the_messages_shows_none_twice(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    page = client.get(f"/c/{conversation.pk}/?at=300").text
    assert article_ids(page) == list(range(295, 345))
    heal_elsewhere(conversation)  # the page's last message, m344, is now message 345

    answer = follow(client, page, "later", 295, 345)

    assert ">m344<" not in answer
    assert article_ids(answer) == []
    assert "have moved" in answer
    assert 'href="?at=345&amp;moved=1#m-345"' in answer


def test_loading_earlier_after_a_heal_elsewhere_moved_the_messages_skips_none(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    page = client.get(f"/c/{conversation.pk}/?at=300").text
    heal_elsewhere(conversation)  # m294, just above the page's first, is now message 295

    answer = follow(client, page, "earlier", 295, 345)

    assert article_ids(answer) == []
    assert "have moved" in answer
    assert 'href="?at=296&amp;moved=1#m-296"' in answer


def test_loading_more_after_a_message_above_was_deleted_skips_none(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    page = client.get(f"/c/{conversation.pk}/?at=300").text
    delete_elsewhere(conversation, 10)

    answer = follow(client, page, "later", 295, 345)

    assert article_ids(answer) == []
    assert 'href="?at=343&amp;moved=1#m-343"' in answer


def test_loading_more_after_the_last_shown_message_was_deleted_reopens_where_it_was(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    page = client.get(f"/c/{conversation.pk}/?at=300").text
    delete_elsewhere(conversation, 344)

    answer = follow(client, page, "later", 295, 345)

    assert article_ids(answer) == []
    assert 'href="?at=344&amp;moved=1#m-344"' in answer


def test_loading_more_towards_a_tail_after_a_write_in_the_gap_above_it_shows_none_twice(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    page = append_in_window(client, conversation, 195, 245)  # shows 195..245, and 401 below
    delete_elsewhere(conversation, 300)

    answer = follow(client, page, "later", 195, 246, 401)

    assert article_ids(answer) == []  # the tail's turn, now at 400, would have come again
    assert 'href="?at=245&amp;moved=1#m-245"' in answer


def test_pages_loaded_towards_a_tail_name_its_first_row_on_to_the_next(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    page = append_in_window(client, conversation, 195, 245)
    first = follow(client, page, "later", 195, 246, 401)
    assert article_ids(first) == list(range(246, 296))
    delete_elsewhere(conversation, 350)

    second = follow(client, first, "later", 195, 296, 401)

    assert article_ids(second) == []
    assert 'href="?at=295&amp;moved=1#m-295"' in second


def test_loading_more_after_a_write_below_the_page_loads_as_before(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)
    page = client.get(f"/c/{conversation.pk}/?at=200").text
    heal_elsewhere(conversation)  # the placeholder lands at 245, right after the page

    answer = follow(client, page, "later", 195, 245)

    assert article_ids(answer) == list(range(245, 295))
    assert "synthetic: healed placeholder" in article(answer, 245)


def test_the_answer_to_a_write_re_renders_a_bounded_number_of_rows(
    client: Client, settings: Any
) -> None:
    conversation = long_crash(settings)

    html = append_in_window(client, conversation, 0, 10**12)

    assert len(article_ids(html)) <= presenters.MAX_SWAP
    assert article_ids(html)[-1] == 401


@pytest.mark.parametrize("stop", [0, 100, 195, 245, 246, 10**12])
def test_the_answer_to_a_write_is_bounded_whatever_tail_the_form_claims(
    client: Client, settings: Any, monkeypatch: pytest.MonkeyPatch, stop: int
) -> None:
    """A page shows a tail only past its window and within the buffer; any other
    ``window_stop`` (a form sent by hand) neither makes the answer render the whole buffer
    nor hides the turn just written."""
    monkeypatch.setattr(presenters, "MAX_SWAP", 60)
    conversation = long_crash(settings)

    html = append_in_window(client, conversation, 195, 245, stop=stop)

    shown = article_ids(html)
    assert len(shown) <= 2 * presenters.MAX_SWAP
    assert shown == sorted(set(shown))
    assert "still there?" in article(html, 401)


def test_a_write_empties_a_preview_that_is_no_longer_true(client: Client) -> None:
    conversation = crashed()

    html = append(client, conversation, "user", content="still there?").text

    assert '<div id="preview" class="preview" aria-live="polite" hx-swap-oob="innerHTML">' in html
    assert "A user turn now would" not in html


@pytest.mark.parametrize(
    ("query", "expected_first"),
    [("?at=99999", 350), ("?at=-1", 0), ("?at=abc", 0), ("?at=398", 350)],
)
def test_a_deep_link_past_the_end_or_nonsense_opens_a_full_page(
    client: Client, settings: Any, query: str, expected_first: int
) -> None:
    conversation = long_crash(settings)

    shown = article_ids(client.get(f"/c/{conversation.pk}/{query}").text)

    assert shown[0] == expected_first
    assert len(shown) == presenters.PAGE


def test_an_absurd_page_number_is_not_a_500(client: Client) -> None:
    assert client.get("/?page=184467440737095516").status_code == 200


def test_an_unknown_kind_of_message_is_refused(client: Client) -> None:
    conversation = crashed()

    response = client.post(f"/c/{conversation.pk}/append", {"kind": "bogus", "user-content": "x"})

    assert response.status_code == 400
    conversation.refresh_from_db()
    assert conversation.message_count == 5


def test_without_javascript_a_qa_error_opens_the_qa_panel(client: Client) -> None:
    conversation = crashed()

    response = append(client, conversation, "tool", htmx=False, tool_call_id="", content="x")

    assert response.status_code == 422
    assert '<details class="qa" id="qa" open>' in response.text
    assert 'id="id_tool-tool_call_id_error"' in response.text
