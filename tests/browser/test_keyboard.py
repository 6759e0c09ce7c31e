"""Reading by keyboard (issue 15, item 4): j / k move between messages, u to the next
problem, Escape leaves a field, ? shows the keys; a deep link's target is highlighted and
one past the end says so. In a real browser under the strict CSP: any console error fails
the test (tests/browser/conftest.py)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from tests.browser.holding import hold, wait_until_held
from tests.buffers import assistant, result, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def mark_page(page: Page) -> None:
    """Tag this document, so that a test can tell a swap from a reload."""
    page.evaluate("window.loadedOnce = true")


def still_same_page(page: Page) -> bool:
    return bool(page.evaluate("window.loadedOnce === true"))


def focused_id(page: Page) -> str:
    return str(page.evaluate("document.activeElement ? document.activeElement.id : ''"))


def test_j_and_k_move_the_focus_between_messages_and_the_hash_follows(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store([user(f"message {n}") for n in range(10)])
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    mark_page(page)

    page.keyboard.press("j")
    expect(page.locator("#m-0")).to_be_focused()
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("#m-2")).to_be_focused()
    expect(page.locator("#m-2")).to_have_class(re.compile(r"\bis-target\b"))
    expect(page).to_have_url(f"{url}#m-2")
    page.keyboard.press("k")
    expect(page.locator("#m-1")).to_be_focused()
    expect(page).to_have_url(f"{url}#m-1")
    expect(page.locator("#m-1")).to_be_in_viewport()
    expect(page.locator("#messages .is-target")).to_have_count(1)
    assert page.locator("#m-1").get_attribute("tabindex") == "-1"
    # The hash is replaced, not pushed: Back leaves the conversation, not message by message.
    assert page.evaluate("history.length") == 2
    assert still_same_page(page)


def test_j_and_k_load_the_next_and_the_previous_page_at_the_window_s_ends(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store([user(f"message {n}") for n in range(200)])
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=100#m-95")
    mark_page(page)
    expect(page.locator("#m-94")).to_have_count(0)  # the window starts at 95

    page.keyboard.press("k")
    expect(page.locator("#m-94")).to_be_focused()
    expect(page.locator("#m-94")).to_contain_text("message 94")

    # The window's last message, focused without scrolling the next page into view (which
    # would load it by itself): j asks for it.
    page.evaluate("""() => {
        const last = document.getElementById("m-144");
        last.tabIndex = -1;
        last.focus({preventScroll: true});
    }""")
    expect(page.locator("#m-145")).to_have_count(0)
    page.keyboard.press("j")
    expect(page.locator("#m-145")).to_be_focused()
    assert still_same_page(page)


def test_keys_are_ignored_while_typing_and_escape_leaves_the_field(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store([user(f"message {n}") for n in range(5)])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    field = page.get_by_label("Your turn")

    field.click()
    page.keyboard.type("jku?")
    expect(field).to_have_value("jku?")
    expect(field).to_be_focused()
    expect(page.locator("#keys")).not_to_be_visible()
    expect(page.locator("#messages .is-target")).to_have_count(0)

    page.keyboard.press("Escape")
    expect(field).not_to_be_focused()
    page.keyboard.press("j")
    assert focused_id(page).startswith("m-")
    expect(field).to_have_value("jku?")


def test_u_goes_to_the_next_problem_loaded_or_not_without_a_reload(
    page: Page, live_server: LiveServer
) -> None:
    messages = [user(f"message {n}") for n in range(200)]
    messages[10] = assistant("c10")  # an unanswered call
    messages[20] = result("nobody-asked")  # an orphan result: another kind of problem
    messages[150] = assistant("c150")  # unanswered, far outside the first window
    conversation = store(messages)
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    mark_page(page)

    page.keyboard.press("u")
    expect(page.locator("#m-10")).to_be_focused()
    page.keyboard.press("u")
    expect(page.locator("#m-20")).to_be_focused()
    expect(page.locator("#m-150")).to_have_count(0)

    page.keyboard.press("u")
    expect(page.locator("#m-150")).to_be_focused()
    expect(page.locator("#m-150")).to_contain_text("unanswered call c150")
    expect(page.locator("#m-150")).to_have_class(re.compile(r"\bis-target\b"))
    expect(page).to_have_url(f"{url}?at=150#m-150")
    assert still_same_page(page)

    page.keyboard.press("u")
    expect(page.locator("#jump-notice")).to_have_text("No problem after message 150.")
    expect(page.locator("#m-150")).to_be_focused()


def test_u_stops_at_every_kind_of_problem_the_summary_counts_loaded_or_not(
    page: Page, live_server: LiveServer
) -> None:
    """An empty turn shows no badge of its own, and an orphan result far outside the window
    is not on the page: the summary counts both, and u goes to each."""
    messages = [user(f"message {n}") for n in range(200)]
    messages[30] = {"role": "assistant", "content": ""}  # an empty turn Anthropic refuses
    messages[120] = result("nobody-asked")  # an orphan result, far outside the first window
    conversation = store(messages)
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    mark_page(page)
    expect(page.locator("#summary")).to_contain_text("1 empty turn")
    expect(page.locator("#summary")).to_contain_text("1 orphan result")
    expect(page.locator("#m-120")).to_have_count(0)

    page.keyboard.press("u")
    expect(page.locator("#m-30")).to_be_focused()
    page.keyboard.press("u")
    expect(page.locator("#m-120")).to_be_focused()
    expect(page).to_have_url(f"{url}?at=120#m-120")
    page.keyboard.press("u")
    expect(page.locator("#jump-notice")).to_have_text("No problem after message 120.")
    expect(page.locator("#m-120")).to_be_focused()
    assert still_same_page(page)


def test_a_next_problem_link_outside_the_window_opens_it_in_place(
    page: Page, live_server: LiveServer
) -> None:
    messages = [user(f"message {n}") for n in range(200)]
    messages[10] = assistant("c10")
    messages[150] = assistant("c150")
    conversation = store(messages)
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    mark_page(page)

    page.locator("#m-10").get_by_role("link", name="next problem").click()

    expect(page.locator("#m-150")).to_be_focused()
    expect(page.locator("#m-150")).to_be_in_viewport()
    assert "at=150" in page.url
    assert still_same_page(page)


def test_the_question_mark_shows_the_keys(page: Page, live_server: LiveServer) -> None:
    conversation = store([user("hello")])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    dialog = page.get_by_role("dialog", name="Keys")

    page.keyboard.press("?")
    expect(dialog).to_be_visible()
    for words in ("next message", "previous message", "next unanswered call", "search"):
        expect(dialog).to_contain_text(words)
    page.keyboard.press("Escape")
    expect(dialog).not_to_be_visible()

    page.get_by_role("button", name="Keys").click()
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).not_to_be_visible()


def test_a_deep_link_target_and_the_focused_message_are_highlighted(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store([user(f"message {n}") for n in range(8)])
    page.goto(f"{live_server.url}/c/{conversation.pk}/#m-5")

    target = page.locator("#m-5")
    expect(target).to_have_class(re.compile(r"\bis-target\b"))
    assert target.evaluate("e => getComputedStyle(e).boxShadow") != "none"
    assert page.locator("#m-4").evaluate("e => getComputedStyle(e).boxShadow") == "none"

    page.keyboard.press("j")  # the keys start from the target
    expect(page.locator("#m-6")).to_be_focused()
    assert page.locator("#m-6").evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
    expect(page.locator("#messages .is-target")).to_have_count(1)


@pytest.mark.parametrize("address", ["#m-999", "?at=999#m-999", "?at=999"])
def test_a_message_past_the_end_says_there_is_no_such_message(
    page: Page, live_server: LiveServer, address: str
) -> None:
    conversation = store([user(f"message {n}") for n in range(5)])
    page.goto(f"{live_server.url}/c/{conversation.pk}/{address}")

    expect(page.locator("#jump-notice")).to_have_text(
        "There is no message 999: this conversation has 5 messages."
    )
    expect(page.locator("#jump-notice")).to_have_attribute("role", "status")
    expect(page.locator("#m-4")).to_be_attached()


def test_back_after_an_address_opened_a_message_elsewhere_shows_the_message_it_names(
    page: Page, live_server: LiveServer
) -> None:
    """Typed into the address bar: #m-N of a loaded message, then of one far off, whose
    window opens in place (the address then names that window). Back names the first
    message again, and shows it, though no hashchange comes (the query changed too)."""
    conversation = store([user(f"message {n}") for n in range(300)])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    mark_page(page)
    near = page.locator("#messages .message").first.get_attribute("id")
    assert near is not None
    far = "m-150"
    expect(page.locator(f"#{far}")).to_have_count(0)

    page.evaluate(f"window.location.hash = '#{near}'")
    page.evaluate(f"window.location.hash = '#{far}'")
    expect(page.locator(f"#{far}")).to_be_focused()
    expect(page.locator(f"#{near}")).to_have_count(0)

    page.go_back()

    expect(page).to_have_url(re.compile(f"#{near}$"))
    expect(page.locator(f"#{near}")).to_be_in_viewport()
    expect(page.locator(f"#{near}")).to_have_class(re.compile(r"\bis-target\b"))
    assert still_same_page(page)


def test_back_to_the_address_the_page_opened_at_shows_its_window_again(
    page: Page, live_server: LiveServer
) -> None:
    """#m-N of a far message typed into the address bar opens its window in place; Back to
    the address the page opened at (no #m-N) shows the window that address names, as a
    reload of it would, not the far one."""
    conversation = store([user(f"message {n}") for n in range(300)])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    mark_page(page)
    first = page.locator("#messages .message").first.get_attribute("id")
    assert first is not None

    page.evaluate("window.location.hash = '#m-150'")
    expect(page.locator("#m-150")).to_be_focused()
    expect(page.locator(f"#{first}")).to_have_count(0)

    page.go_back()

    expect(page).to_have_url(f"{live_server.url}/c/{conversation.pk}/")
    expect(page.locator(f"#{first}")).to_be_attached()
    expect(page.locator("#m-150")).to_have_count(0)
    assert still_same_page(page)


def test_a_key_s_load_dropped_while_a_search_is_on_its_way_leaves_the_keys_working(
    page: Page, live_server: LiveServer
) -> None:
    """htmx drops the page k asks for while a search is on its way, and says nothing of
    it: the keys waited for that load's end, and did nothing until a reload."""
    messages = [user(f"message {n}") for n in range(300)]
    messages[10] = user("a needle")
    messages[150] = user("another needle")
    conversation = store(messages)
    held = hold(page, r"/search\?")
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=100#m-100")
    field = page.locator("#conversation-search-q")
    field.fill("needle")
    field.press("Enter")
    wait_until_held(page, held)

    page.keyboard.press("Escape")
    page.evaluate("flowdrop.goTo(document.querySelector('#messages article'))")
    page.keyboard.press("k")  # its page is dropped: the search is on its way
    held[0].continue_()

    expect(page.locator("#search-state .search-count")).to_have_text("1 of 2")
    expect(page.locator("#m-10")).to_have_class(re.compile(r"\bsearch-hit\b"))  # marked after
    page.keyboard.press("Escape")
    page.evaluate("flowdrop.goTo(document.getElementById('m-10'))")
    page.keyboard.press("j")
    expect(page.locator("#m-11")).to_be_focused()


def test_k_from_the_first_row_of_the_tail_goes_to_the_message_just_above_it(
    page: Page, live_server: LiveServer
) -> None:
    """After a write mid-buffer the page shows the window, a gap, and the tail. The gap's
    "Load more" loads the page after the window: k from the tail took it, and landed on
    that page's last row, 150 messages above."""
    messages = [user(f"message {n}") for n in range(300)]
    messages[60] = assistant("c60")
    conversation = store(messages)
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=58#m-60")
    page.get_by_label("Your turn").fill("Still there?")
    page.get_by_role("button", name="Send user turn").click()
    expect(page.locator("#m-301")).to_be_in_viewport()
    expect(page.locator("#m-300")).to_have_count(0)  # the gap: 104 to 300

    page.keyboard.press("Escape")
    page.evaluate("flowdrop.goTo(document.getElementById('m-301'))")
    page.keyboard.press("k")

    expect(page.locator("#m-300")).to_be_focused()
    expect(page.locator("#m-300")).to_contain_text("message 299")
    expect(page.locator("#m-300")).to_be_in_viewport()
    page.keyboard.press("k")
    expect(page.locator("#m-299")).to_be_focused()


def test_back_after_a_link_opened_a_message_outside_the_window_returns_to_the_window_left(
    page: Page, live_server: LiveServer
) -> None:
    """A link to a loaded message adds an entry to the history (the browser's own jump);
    one to a message outside the window replaced the entry, so Back left the conversation."""
    messages = [user(f"message {n}") for n in range(200)]
    messages[10] = assistant("c10")
    messages[150] = assistant("c150")
    conversation = store(messages)
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(f"{live_server.url}/")
    page.goto(url)
    mark_page(page)

    page.locator("#m-10").get_by_role("link", name="next problem").click()
    expect(page.locator("#m-150")).to_be_focused()
    expect(page).to_have_url(f"{url}?at=150#m-150")

    page.go_back()

    expect(page).to_have_url(url)
    expect(page.locator("#m-10")).to_be_attached()
    expect(page.locator("#m-150")).to_have_count(0)
    assert still_same_page(page)
    page.go_forward()
    expect(page.locator("#m-150")).to_be_in_viewport()
    expect(page).to_have_url(f"{url}?at=150#m-150")


def test_after_a_write_put_a_row_in_above_the_reader_the_keys_go_on_from_the_same_message(
    page: Page, live_server: LiveServer
) -> None:
    """Healing put a placeholder in before the message the reader was at: it is one
    further down now, and the keys, the address and the highlight follow it."""
    conversation = store(
        [
            user("start"),
            user("more"),
            assistant("c1"),
            *(user(f"message {n}") for n in range(3, 13)),
        ]
    )
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(f"{url}#m-8")
    page.keyboard.press("j")
    expect(page.locator("#m-9")).to_be_focused()
    expect(page.locator("#m-9")).to_contain_text("message 9")

    page.get_by_label("Your turn").fill("Go on")
    page.get_by_role("button", name="Send user turn").click()
    expect(page.locator("#report")).to_contain_text("Healed")

    expect(page).to_have_url(f"{url}#m-10")
    expect(page.locator("#m-10")).to_have_class(re.compile(r"\bis-target\b"))
    expect(page.locator("#messages .is-target")).to_have_count(1)
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    expect(page.locator("#m-11")).to_be_focused()
    expect(page.locator("#m-11")).to_contain_text("message 10")
