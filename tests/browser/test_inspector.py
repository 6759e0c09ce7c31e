"""The inspector in a real browser, under the real CSP, against a live server. Every test
fails on any console error or CSP violation (tests/browser/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Dialog, Page, expect
from pytest_django.live_server_helper import LiveServer

from buffers import services
from buffers.models import Conversation
from buffers.transcripts import read_transcript_file
from tests.buffers import acting_user, assistant, placeholder, store, user
from tests.test_inspector import heal_elsewhere

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEMO = Path(__file__).resolve().parents[2] / "buffers" / "demo"


def demo_crash() -> Conversation:
    [conversation] = services.import_conversations(
        read_transcript_file(DEMO / "weather-crash.json").conversations,
        via="tests",
        owner=acting_user(),
    )
    return conversation


def crashed_at_244() -> Conversation:
    """400 messages, "message 0" to "message 399"; the call declared at 244 was never
    answered."""
    messages = [user(f"message {n}") for n in range(400)]
    messages[244] = assistant("c244")
    return store(messages)


def mark_page(page: Page) -> None:
    """Tag this document, so that a test can tell a swap from a reload."""
    page.evaluate("window.loadedOnce = true")


def still_same_page(page: Page) -> bool:
    return bool(page.evaluate("window.loadedOnce === true"))


@pytest.mark.rule("MEM-3")
def test_a_user_turn_heals_the_demo_crash_in_place_without_a_reload(
    page: Page, live_server: LiveServer
) -> None:
    conversation = demo_crash()
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    expect(page.locator("#m-2")).to_contain_text("unanswered call call_rome")
    expect(page.locator("#summary")).to_contain_text("1 unanswered call")
    mark_page(page)

    page.get_by_label("Your turn").fill("Are you still there?")
    page.get_by_role("button", name="Send user turn").click()

    placeholder_row = page.locator("#m-3")
    expect(placeholder_row).to_contain_text("synthetic: healed placeholder")
    expect(placeholder_row).to_contain_text("just inserted")
    expect(placeholder_row).to_contain_text("Answers call call_rome, declared at message 2")
    expect(page.locator("#m-4")).to_contain_text("call_paris")  # the buffer carried on after it
    expect(page.locator("#m-7")).to_contain_text("Are you still there?")
    expect(page.locator("#summary")).to_contain_text("no unanswered calls")
    expect(page.locator("#report")).to_contain_text("Healed 1 call: call_rome after message 2.")
    assert page.url == url
    assert still_same_page(page)
    expect(page.get_by_label("Your turn")).to_be_focused()
    expect(page.get_by_label("Your turn")).to_have_value("")


@pytest.mark.rule("MEM-10")
def test_the_qa_panel_replaces_a_placeholder_in_place(page: Page, live_server: LiveServer) -> None:
    conversation = store([user("go"), assistant("c1"), placeholder("c1"), user("and?")])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    mark_page(page)

    page.get_by_text("QA panel").click()
    page.get_by_label("Answers call id").fill("c1")
    page.get_by_label("Result").fill("Found 3 cats")
    page.get_by_role("button", name="Append tool result").click()

    replaced = page.locator("#m-2")
    expect(replaced).to_contain_text("Found 3 cats")
    expect(replaced).to_contain_text("just replaced")
    expect(replaced).not_to_contain_text("synthetic")
    expect(page.locator("article.message")).to_have_count(4)
    expect(page.locator("#report")).to_contain_text("in place (MEM-10)")
    assert still_same_page(page)


@pytest.mark.rule("MEM-16")
def test_a_blank_turn_is_refused_in_place(page: Page, live_server: LiveServer) -> None:
    conversation = demo_crash()
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    page.get_by_label("Your turn").fill("   ")
    page.get_by_role("button", name="Send user turn").click()

    expect(page.get_by_role("alert")).to_contain_text("not only whitespace")
    expect(page.get_by_label("Your turn")).to_be_focused()
    expect(page.locator("article.message")).to_have_count(6)


def test_hostile_transcript_content_is_shown_as_text_and_runs_nothing(
    page: Page, live_server: LiveServer
) -> None:
    hostile = [
        "<script>window.pwned = 1</script>",
        '<img src=x onerror="window.pwned = 2">',
        '<a href="javascript:window.pwned=3">click me</a>',
    ]
    conversation = store([user(text) for text in hostile], title="<b>bold?</b>")
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    for index, text in enumerate(hostile):
        expect(page.locator(f"#m-{index} .text")).to_have_text(text)
    expect(page.locator("h1")).to_have_text("<b>bold?</b>")
    assert page.locator("#messages img, #messages script, a[href^='javascript']").count() == 0
    assert page.evaluate("window.pwned === undefined")
    assert dialogs == []


def test_a_deep_link_into_a_long_buffer_opens_there_and_more_loads_on_scroll(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store([user(f"message {n}") for n in range(400)])

    page.goto(f"{live_server.url}/c/{conversation.pk}/#m-300")

    expect(page.locator("#m-300")).to_contain_text("message 300")
    assert "at=300" in page.url
    expect(page.locator("#m-0")).to_have_count(0)  # the rest of the buffer was not loaded
    page.locator(".load-later").scroll_into_view_if_needed()
    expect(page.locator("#m-350")).to_contain_text("message 350")


def test_more_loaded_after_a_heal_from_elsewhere_shows_no_message_twice_and_offers_a_reopen(
    page: Page, live_server: LiveServer
) -> None:
    conversation = crashed_at_244()
    page.goto(f"{live_server.url}/c/{conversation.pk}/#m-300")
    expect(page.locator("#m-300")).to_contain_text("message 300")
    heal_elsewhere(conversation)  # every message from 245 on moves down one

    page.locator(".load-later").scroll_into_view_if_needed()

    expect(page.get_by_role("status").filter(has_text="have moved")).to_be_visible()
    texts = page.locator("#messages article .text").all_inner_texts()
    assert len(texts) == len(set(texts))
    page.get_by_role("link", name="Show the conversation as it is now, from message 345").click()
    expect(page.locator("#m-345")).to_contain_text("message 344")
    expect(page.locator("#m-245")).to_have_count(0)  # a window around 345 only


def test_earlier_messages_after_a_heal_from_elsewhere_reopen_the_page_with_their_new_numbers(
    page: Page, live_server: LiveServer
) -> None:
    conversation = crashed_at_244()
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=300#m-300")
    heal_elsewhere(conversation)  # m295 to m399 move down one: the page's numbers are stale

    page.get_by_role("link", name="Load earlier messages").click()
    page.get_by_role("link", name="Show the conversation as it is now, from message 296").click()

    expect(page.locator("#m-296")).to_contain_text("message 295")
    expect(page.locator("#m-300")).to_contain_text("message 299")  # every number is new


def test_the_list_filter_swaps_the_table_and_pushes_the_url(
    page: Page, live_server: LiveServer
) -> None:
    store([assistant("c1")], title="crashed run")
    store([user()], title="quiet run")
    page.goto(f"{live_server.url}/")
    mark_page(page)

    page.get_by_label("Show").select_option("unanswered")

    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody")).to_contain_text("crashed run")
    expect(page).to_have_url(f"{live_server.url}/?show=unanswered&q=&sort=updated")
    assert still_same_page(page)
    page.reload()
    expect(page.locator("tbody tr")).to_have_count(1)


def test_going_back_after_a_filter_restores_the_list_without_errors(
    page: Page, live_server: LiveServer
) -> None:
    store([assistant("c1")], title="crashed run")
    store([user()], title="quiet run")
    page.goto(f"{live_server.url}/")
    page.get_by_label("Show").select_option("unanswered")
    expect(page.locator("tbody tr")).to_have_count(1)

    page.go_back()

    expect(page.locator("tbody tr")).to_have_count(2)


@pytest.mark.rule("MEM-3")
def test_a_turn_sent_mid_buffer_shows_the_placeholder_and_brings_the_turn_into_view(
    page: Page, live_server: LiveServer
) -> None:
    conversation = crashed_at_244()
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=240#m-244")

    page.get_by_label("Your turn").fill("Still there?")
    page.get_by_role("button", name="Send user turn").click()

    expect(page.locator("#m-245")).to_contain_text("synthetic: healed placeholder")
    expect(page.locator("#m-401")).to_contain_text("Still there?")
    expect(page.locator("#m-401")).to_be_in_viewport()
    expect(page.get_by_label("Your turn")).to_be_focused()


def test_the_gap_above_a_tail_loads_on_a_click_and_keeps_the_rows_in_order(
    page: Page, live_server: LiveServer
) -> None:
    messages = [user(f"message {n}") for n in range(120)]
    messages[60] = assistant("c60")
    conversation = store(messages)
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=58#m-60")
    page.get_by_label("Your turn").fill("Still there?")
    page.get_by_role("button", name="Send user turn").click()
    expect(page.locator("#m-121")).to_be_in_viewport()

    page.get_by_role("link", name="Load more messages (104 to 120 not shown)").click()

    expect(page.locator("#m-120")).to_be_attached()
    expect(page.get_by_role("link", name="Load more messages")).to_have_count(0)
    ids = page.locator("#messages article").evaluate_all("rows => rows.map(r => r.id)")
    assert ids == [f"m-{n}" for n in range(53, 122)]

    page.get_by_label("Your turn").fill("And now?")
    page.get_by_role("button", name="Send user turn").click()
    expect(page.locator("#m-122")).to_contain_text("And now?")
    ids = page.locator("#messages article").evaluate_all("rows => rows.map(r => r.id)")
    assert ids == [f"m-{n}" for n in range(53, 123)]


def test_a_double_clicked_send_appends_the_turn_once_and_logs_no_error(
    page: Page, live_server: LiveServer
) -> None:
    """The second click used to abort the first request (hx-sync replace), which htmx logs
    as a console error; the button is disabled while its write is on its way."""
    conversation = store([user("hello")])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    posts: list[str] = []
    page.on("request", lambda sent: posts.append(sent.url) if sent.method == "POST" else None)

    page.get_by_label("Your turn").fill("Only once")
    page.get_by_role("button", name="Send user turn").dblclick()

    expect(page.locator("#m-1")).to_contain_text("Only once")
    expect(page.get_by_label("Your turn")).to_have_value("")
    expect(page.get_by_role("button", name="Send user turn")).to_be_enabled()
    expect(page.locator("article.message")).to_have_count(2)
    page.evaluate("0")  # a second request, had one gone, has been reported by now
    assert len(posts) == 1
    expect(page.get_by_role("alert")).to_have_count(0)
    conversation.refresh_from_db()
    assert conversation.message_count == 2


def test_back_across_a_write_shows_the_buffer_as_it_is_now_and_takes_the_next_turn(
    page: Page, live_server: LiveServer
) -> None:
    """Back to the address before a search showed htmx's copy of the page from before the
    write that followed: the call unanswered again, and a form holding the key that write
    had spent, so that the next turn was refused."""
    conversation = store(
        [user("start"), assistant("c1", content="calling"), user("a needle"), user("end")]
    )
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    field = page.locator("#conversation-search-q")
    field.fill("needle")
    field.press("Enter")
    expect(page.locator("#search-state .search-count")).to_have_text("1 of 1")
    page.get_by_label("Your turn").fill("one")
    page.get_by_role("button", name="Send user turn").click()
    expect(page.locator("#report")).to_contain_text("Healed")

    page.go_back()

    expect(page).to_have_url(url)
    expect(page.locator("#summary")).to_contain_text("no unanswered calls")
    expect(page.locator("#m-5")).to_contain_text("one")
    page.get_by_label("Your turn").fill("two")
    page.get_by_role("button", name="Send user turn").click()
    expect(page.locator("#m-6")).to_contain_text("two")
    expect(page.locator("#report")).to_contain_text("Appended")


def test_a_form_whose_key_was_spent_says_to_reload(
    page: Page, live_server: LiveServer, console_errors: list[str]
) -> None:
    """A form that holds the key of a write already made (a page kept from before it) is
    refused with a 422: the report says to reload, not only that the server could not."""
    conversation = store([user("hello")])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    spent = page.locator("#user-form-key").input_value()
    page.get_by_label("Your turn").fill("one")
    page.get_by_role("button", name="Send user turn").click()
    expect(page.locator("#m-1")).to_contain_text("one")

    page.locator("#user-form-key").evaluate("(input, key) => { input.value = key; }", spent)
    page.get_by_label("Your turn").fill("two")
    page.get_by_role("button", name="Send user turn").click()

    expect(page.locator("#report")).to_have_text(
        "This page is out of date: its form was sent before. Reload the page and try again;"
        " nothing was written."
    )
    expect(page.locator("#m-2")).to_have_count(0)
    assert any("422" in error for error in console_errors)
    console_errors.clear()
