"""Full-text search in a real browser (issue 15, item 1): "/" to the field, Enter and
Shift+Enter through hits the first window never loaded, each opened in place with the count
and the hit highlighted; the list finds a conversation by a word only a message holds, and
its snippet lands on that message. Under the strict CSP: any console error fails the test
(tests/browser/conftest.py)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from tests.browser.holding import hold, wait_until_held
from tests.buffers import assistant, result, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def haystack(length: int, needles: dict[int, str]) -> list[dict[str, object]]:
    return [user(needles.get(n, f"hay bale {n}")) for n in range(length)]


def mark_page(page: Page) -> None:
    """Tag this document, so that a test can tell a swap from a reload."""
    page.evaluate("window.loadedOnce = true")


def still_same_page(page: Page) -> bool:
    return bool(page.evaluate("window.loadedOnce === true"))


def test_enter_and_shift_enter_go_through_the_hits_of_the_whole_conversation(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store(
        haystack(300, {120: "a needle here", 200: "another Needle", 280: "needles, last"})
    )
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    mark_page(page)
    expect(page.locator("#m-120")).to_have_count(0)  # outside the first window
    field = page.locator("#conversation-search-q")
    count = page.locator("#search-state .search-count")

    page.keyboard.press("/")
    expect(field).to_be_focused()
    page.keyboard.type("needle")
    page.keyboard.press("Enter")

    expect(count).to_have_text("1 of 3")
    hit = page.locator("#m-120")
    expect(hit).to_have_class(re.compile(r"\bsearch-hit\b"))
    expect(hit).to_be_in_viewport()
    expect(hit.locator("mark.search-word:visible")).to_have_text(["needle"])
    expect(page).to_have_url(f"{url}?q=needle&at=120#m-120")

    page.keyboard.press("Enter")
    expect(count).to_have_text("2 of 3")
    expect(page.locator("#m-200")).to_have_class(re.compile(r"\bsearch-hit\b"))
    expect(page.locator("#m-200")).to_be_in_viewport()
    expect(page.locator("#m-200 mark.search-word:visible")).to_have_text(["Needle"])
    expect(page.locator(".search-hit")).to_have_count(1)
    expect(page).to_have_url(f"{url}?q=needle&at=200#m-200")

    page.keyboard.press("Enter")
    expect(count).to_have_text("3 of 3")
    expect(page.locator("#m-280 mark.search-word:visible")).to_have_text(["needles"])

    page.keyboard.press("Enter")  # round the end, as a browser's find goes
    expect(count).to_have_text("1 of 3")
    expect(page).to_have_url(f"{url}?q=needle&at=120#m-120")

    page.keyboard.press("Shift+Enter")
    expect(count).to_have_text("3 of 3")
    expect(page.locator("#m-280")).to_have_class(re.compile(r"\bsearch-hit\b"))
    expect(page.locator("#m-280")).to_be_in_viewport()
    expect(page).to_have_url(f"{url}?q=needle&at=280#m-280")
    page.keyboard.press("Shift+Enter")
    expect(count).to_have_text("2 of 3")
    expect(page).to_have_url(f"{url}?q=needle&at=200#m-200")

    expect(field).to_be_focused()
    assert still_same_page(page)


def test_back_to_an_earlier_hit_keeps_the_search_to_go_on_from(
    page: Page, live_server: LiveServer
) -> None:
    """Back and Forward show the page htmx kept: its search field held the query as first
    served (none), so Enter then searched for nothing and the search was lost."""
    conversation = store(
        haystack(300, {120: "a needle here", 200: "another Needle", 280: "needles, last"})
    )
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    field = page.locator("#conversation-search-q")
    count = page.locator("#search-state .search-count")
    field.fill("needle")
    field.press("Enter")
    expect(count).to_have_text("1 of 3")
    field.press("Enter")
    expect(count).to_have_text("2 of 3")

    page.go_back()

    expect(page).to_have_url(f"{url}?q=needle&at=120#m-120")
    expect(count).to_have_text("1 of 3")
    expect(field).to_have_value("needle")
    field.press("Enter")
    expect(count).to_have_text("2 of 3")


def test_after_a_search_j_and_k_go_on_from_the_hit(page: Page, live_server: LiveServer) -> None:
    """The hit is where the reader is: the next message is the one after it, not the first
    of the messages shown above it."""
    conversation = store(haystack(300, {120: "a needle here"}))
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    field = page.locator("#conversation-search-q")
    field.fill("needle")
    field.press("Enter")
    expect(page.locator("#m-120")).to_have_class(re.compile(r"\bsearch-hit\b"))

    page.keyboard.press("Escape")
    page.keyboard.press("j")

    expect(page.locator("#m-121")).to_be_focused()
    page.keyboard.press("k")
    page.keyboard.press("k")
    expect(page.locator("#m-119")).to_be_focused()


def test_a_hit_deep_in_a_long_message_or_in_a_call_s_arguments_is_unfolded_and_in_view(
    page: Page, live_server: LiveServer
) -> None:
    long_text = "\n\n".join(f"Paragraph {n} of the report." for n in range(300))
    call = {
        "role": "assistant",
        "content": "calling",
        "metadata": {"tool_calls": [{"id": "c1", "name": "lookup", "args": {"city": "Reykjavik"}}]},
    }
    conversation = store(
        [
            user("hello"),
            user(long_text.replace("Paragraph 290 ", "Paragraph 290 walrus ")),
            call,
            result("c1", "cold"),
        ]
    )
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    field = page.locator("#conversation-search-q")

    field.fill("walrus")
    field.press("Enter")

    expect(page.locator("#search-state .search-count")).to_have_text("1 of 1")
    word = page.locator("#m-1 mark.search-word:visible")
    expect(word).to_have_text(["walrus"])
    expect(word).to_be_in_viewport()

    field.fill("reykjavik")
    field.press("Enter")

    word = page.locator("#m-2 mark.search-word:visible")
    expect(word).to_have_text(["Reykjavik"])
    expect(word).to_be_in_viewport()

    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=1&q=walrus#m-1")  # a snippet's link

    word = page.locator("#m-1 mark.search-word:visible")
    expect(word).to_have_text(["walrus"])
    expect(word).to_be_in_viewport()


def test_a_search_that_finds_nothing_says_so_and_highlights_nothing(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store(haystack(300, {120: "a needle here"}))
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    mark_page(page)
    field = page.locator("#conversation-search-q")
    field.fill("needle")
    field.press("Enter")
    expect(page.locator("#m-120")).to_have_class(re.compile(r"\bsearch-hit\b"))

    field.fill("unicorn")
    field.press("Enter")

    expect(page.locator("#search-state .search-count")).to_have_text("No message matches")
    expect(page.locator(".search-hit")).to_have_count(0)
    expect(page.locator("mark.search-word")).to_have_count(0)
    assert still_same_page(page)


def test_the_list_finds_a_conversation_by_a_word_only_a_message_holds_and_lands_on_it(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store(haystack(300, {250: "the zeppelin landed at noon"}), title="airship log")
    store(haystack(10, {}), title="barn inventory")
    page.goto(f"{live_server.url}/")
    expect(page.locator("table.conversations tbody tr")).to_have_count(2)

    page.keyboard.press("/")
    expect(page.get_by_label("Search titles, sources and messages")).to_be_focused()
    page.keyboard.type("zeppel")

    rows = page.locator("table.conversations tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.locator("td").first).to_contain_text("airship log")
    snippet = rows.locator(".snippet")
    expect(snippet).to_have_text("message 250 (user): the zeppelin landed at noon")
    expect(snippet.locator("mark")).to_have_text(["zeppelin"])
    expect(page).to_have_url(f"{live_server.url}/?show=all&q=zeppel&sort=updated")

    snippet.get_by_role("link", name="message 250").click()

    expect(page).to_have_url(f"{live_server.url}/c/{conversation.pk}/?at=250&q=zeppel#m-250")
    target = page.locator("#m-250")
    expect(target).to_be_in_viewport()
    expect(target).to_have_class(re.compile(r"\bsearch-hit\b"))
    expect(target.locator("mark.search-word:visible")).to_have_text(["zeppelin"])
    expect(page.locator("#search-state .search-count")).to_have_text("1 of 1")
    expect(page.locator("#conversation-search-q")).to_have_value("zeppel")


def test_a_word_with_combining_marks_is_marked_whole_however_the_page_spells_it(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store(
        [
            user("हिन्दी पाठ"),
            user(unicodedata.normalize("NFD", "un café")),
            user("Trip to İstanbul"),
        ]
    )
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    field = page.locator("#conversation-search-q")

    field.fill("हिन्दी")
    field.press("Enter")

    expect(page.locator("#search-state .search-count")).to_have_text("1 of 1")
    expect(page.locator("#m-0 mark.search-word:visible")).to_have_text(["हिन्दी"])

    field.fill("café")
    field.press("Enter")

    expect(page.locator("#search-state .search-count")).to_have_text("1 of 1")
    spelled = unicodedata.normalize("NFD", "café")
    expect(page.locator("#m-1 mark.search-word:visible")).to_have_text([spelled])

    for typed in ("İstanbul", "istanbul"):  # words hold 'İ' as a plain 'i'
        field.fill(typed)
        field.press("Enter")

        expect(page.locator("#search-state .search-count")).to_have_text("1 of 1")
        expect(page.locator("#m-2 mark.search-word:visible")).to_have_text(["İstanbul"])


def test_a_hit_on_a_tools_name_marks_the_name_in_its_call_and_only_there(
    page: Page, live_server: LiveServer
) -> None:
    call = {"tool_call_id": "c1", "name": "frobnicate_call", "args": {"n": 1}}
    turn = {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}}
    conversation = store([user("go"), turn, result("c1")])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    field = page.locator("#conversation-search-q")

    field.fill("frobnicate")
    field.press("Enter")

    expect(page.locator("#search-state .search-count")).to_have_text("1 of 1")
    expect(page.locator("#m-1 mark.search-word:visible")).to_have_text(["frobnicate"])

    field.fill("call")  # in the name, and the page's own "Call" before it
    field.press("Enter")

    expect(page.locator("#search-state .search-count")).to_have_text("1 of 1")
    expect(page.locator("#m-1 mark.search-word:visible")).to_have_text(["call"])


def test_a_search_sent_while_a_key_s_load_is_on_its_way_waits_for_it_and_the_keys_go_on(
    page: Page, live_server: LiveServer
) -> None:
    """The search used to abort the load j started (a console error), and j and k then
    did nothing until a reload: the load's end never came."""
    conversation = store(haystack(300, {10: "a needle", 150: "another needle"}))
    held = hold(page, r"/messages\?")
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    page.locator("#m-49").evaluate("m => { m.tabIndex = -1; m.focus({preventScroll: true}); }")
    page.keyboard.press("j")
    wait_until_held(page, held)

    field = page.locator("#conversation-search-q")
    field.fill("needle")
    field.press("Enter")
    held[0].continue_()

    expect(page.locator("#search-state .search-count")).to_have_text("1 of 2")
    expect(page.locator("#m-10")).to_have_class(re.compile(r"\bsearch-hit\b"))
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    expect(page.locator("#m-11")).to_be_focused()


def test_after_a_write_put_a_row_in_above_the_hit_the_search_goes_on_from_the_same_hit(
    page: Page, live_server: LiveServer
) -> None:
    """Healing put a placeholder in before the hit: the hit is one further down now, and
    Enter goes on to the next one, not to the same hit again."""
    conversation = store(
        [
            user("start"),
            user("more"),
            assistant("c1"),
            *(user("a needle" if n in (6, 9) else f"turn {n}") for n in range(3, 13)),
        ]
    )
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    field = page.locator("#conversation-search-q")
    count = page.locator("#search-state .search-count")
    field.fill("needle")
    field.press("Enter")
    expect(count).to_have_text("1 of 2")
    expect(page.locator("#m-6")).to_have_class(re.compile(r"\bsearch-hit\b"))

    page.get_by_label("Your turn").fill("Go on")
    page.get_by_role("button", name="Send user turn").click()
    expect(page.locator("#report")).to_contain_text("Healed")

    expect(page.locator("#m-7")).to_have_class(re.compile(r"\bsearch-hit\b"))
    expect(page.locator("#m-7 mark.search-word:visible")).to_have_text(["needle"])
    expect(page.locator(".search-hit")).to_have_count(1)
    field.press("Enter")
    expect(count).to_have_text("2 of 2")
    expect(page.locator("#m-10")).to_have_class(re.compile(r"\bsearch-hit\b"))
