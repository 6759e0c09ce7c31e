"""Reading long and formatted messages in a real browser, under the real CSP: folding, markdown,
"as text", the copy buttons. Every test fails on any console error or CSP violation
(tests/browser/conftest.py)."""

from __future__ import annotations

import json
import re
from importlib.resources import files

import pytest
from playwright.sync_api import BrowserContext, Page, ViewportSize, expect
from pytest_django.live_server_helper import LiveServer

from buffers.models import Conversation
from tests.buffers import assistant, result, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREEN: ViewportSize = {"width": 1280, "height": 800}
AXE = files("axe_playwright_python").joinpath("axe.min.js")
"""axe-core, as axe-playwright-python ships it."""
LONG = "".join(f"Line {n} of a long tool result, with some words to read.\n" for n in range(900))
MARKDOWN = (
    "Here is **the fix**:\n\n```python\nprint('<b>hi</b>')\n```\n\nSee [docs](https://example.com)."
)
FACTS = {
    "time": "2026-02-23T14:05:00Z",
    "model": "gpt-5-codex",
    "usage": {"input": 1204, "output": 88},
    "latency_ms": 1200,
    "finish_reason": "stop",
}


def reading() -> Conversation:
    turn = {"role": "assistant", "content": MARKDOWN, "metadata": {"facts": FACTS}}
    return store(
        [user("Fix *it*, please"), turn, assistant("c1"), result("c1", LONG), user("thanks")]
    )


def open_reading(page: Page, live_server: LiveServer) -> Conversation:
    conversation = reading()
    page.set_viewport_size(SCREEN)
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    return conversation


def height(page: Page, selector: str) -> float:
    box = page.locator(selector).bounding_box()
    assert box is not None
    return float(box["height"])


def test_a_50_kb_message_is_folded_to_a_screen_and_show_all_reveals_it(
    page: Page, live_server: LiveServer
) -> None:
    assert len(LONG) > 50_000
    open_reading(page, live_server)

    content = page.locator("#m-3 .content")
    assert height(page, "#m-3") <= SCREEN["height"]
    assert content.evaluate("e => e.scrollHeight > 10 * e.clientHeight")  # all of it is there
    show_all = page.locator("#m-3").get_by_role("button", name="Show all (50 KB)")
    expect(show_all).to_have_attribute("aria-expanded", "false")

    show_all.click()

    expect(content).to_have_class("content")
    assert height(page, "#m-3") > 10 * SCREEN["height"]
    assert content.evaluate("e => e.scrollHeight === e.clientHeight")
    fold = page.locator("#m-3").get_by_role("button", name="Fold")
    expect(fold).to_have_attribute("aria-expanded", "true")

    fold.click()

    assert height(page, "#m-3") <= SCREEN["height"]
    expect(page.locator("#m-3")).to_be_in_viewport()


def test_markdown_renders_with_its_code_block_and_reads_as_text_on_demand(
    page: Page, live_server: LiveServer
) -> None:
    open_reading(page, live_server)
    answer = page.locator("#m-1")

    expect(answer.locator(".md strong")).to_have_text("the fix")
    expect(answer.locator(".md pre > code")).to_have_text("print('<b>hi</b>')\n")
    expect(answer.locator(".md a")).to_have_attribute("rel", "nofollow noopener noreferrer")
    expect(answer.locator(".part-md > .text")).to_be_hidden()
    expect(page.locator("b")).to_have_count(0)  # the code's <b> is text

    as_text = answer.get_by_role("button", name="As text")
    as_text.click()

    expect(as_text).to_have_attribute("aria-pressed", "true")
    expect(answer.locator(".md")).to_be_hidden()
    expect(answer.locator(".part-md > .text")).to_be_visible()
    expect(answer.locator(".part-md > .text")).to_contain_text("Here is **the fix**:")
    expect(page.locator("#m-0 .md em")).to_be_visible()  # only that message changed

    as_text.click()

    expect(as_text).to_have_attribute("aria-pressed", "false")
    expect(answer.locator(".md strong")).to_be_visible()


def test_the_facts_line_sits_under_the_role(page: Page, live_server: LiveServer) -> None:
    open_reading(page, live_server)

    expect(page.locator("#m-1 .facts")).to_have_text(
        "2026-02-23 14:05 · gpt-5-codex · 1,204 in / 88 out tokens · 1.2 s · stop"
    )
    expect(page.locator("#m-0 .facts")).to_have_count(0)


def test_copy_buttons_put_the_text_and_the_stored_json_on_the_clipboard(
    page: Page, context: BrowserContext, live_server: LiveServer
) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    open_reading(page, live_server)
    answer = page.locator("#m-1")

    copy_text = answer.locator("button.copy[data-copy=text]")
    copy_text.click()

    expect(copy_text).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == MARKDOWN

    copy_json = answer.locator("button.copy[data-copy=json]")
    copy_json.click()

    expect(copy_json).to_have_text("Copied")
    copied = json.loads(page.evaluate("navigator.clipboard.readText()"))
    assert copied == {"role": "assistant", "content": MARKDOWN, "metadata": {"facts": FACTS}}
    expect(copy_text).to_have_text("Copy text")  # the word comes back

    folded = page.locator("#m-3 button.copy[data-copy=text]")
    folded.click()  # a folded message: all of it
    expect(folded).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == LONG

    long_json = page.locator("#m-3 button.copy[data-copy=json]")
    long_json.click()  # its JSON is not in the page: asked for, then copied
    expect(long_json).to_have_text("Copied")
    copied = json.loads(page.evaluate("navigator.clipboard.readText()"))
    assert copied == {"role": "tool", "content": LONG, "metadata": {"tool_call_id": "c1"}}


def test_a_long_message_raw_json_is_loaded_when_opened(page: Page, live_server: LiveServer) -> None:
    open_reading(page, live_server)
    raw = page.locator("#m-3 details.raw")
    expect(raw.locator("pre")).to_have_text("")

    raw.locator("summary").click()

    expect(raw.locator("pre")).to_contain_text('"tool_call_id": "c1"')
    shown = json.loads(raw.locator("pre").text_content() or "")
    assert shown["content"] == LONG


def test_messages_swapped_in_by_htmx_have_working_buttons(
    page: Page, live_server: LiveServer
) -> None:
    open_reading(page, live_server)

    page.get_by_label("Your turn").fill("**Bold** move")
    page.get_by_role("button", name="Send user turn").click()

    sent = page.locator("#m-5")
    expect(sent.locator(".md strong")).to_have_text("Bold")
    sent.get_by_role("button", name="As text").click()
    expect(sent.locator(".part-md > .text")).to_have_text("**Bold** move")


def test_a_write_keeps_how_the_reader_left_each_message_where_rows_came_in_before_it(
    page: Page, live_server: LiveServer
) -> None:
    """A user turn redraws the loaded messages, and healing puts a row in before those
    the reader opened: each still shows as it was left, at its new index."""
    turn = {"role": "assistant", "content": MARKDOWN, "metadata": {"facts": FACTS}}
    conversation = store([user("go"), assistant("lost"), turn, assistant("c1"), result("c1", LONG)])
    page.set_viewport_size(SCREEN)
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    page.locator("#m-2").get_by_role("button", name="As text").click()
    page.locator("#m-3 .calls summary").click()
    page.locator("#m-4").get_by_role("button", name="Show all (50 KB)").click()

    page.get_by_label("Your turn").fill("still there?")
    page.get_by_role("button", name="Send user turn").click()

    expect(page.locator("#m-2.just-inserted")).to_have_count(1)  # the healed placeholder
    expect(page.locator("#m-3").get_by_role("button", name="As text")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(page.locator("#m-3")).to_have_class(re.compile(r"\bas-text\b"))
    expect(page.locator("#m-4 .calls details")).to_have_attribute("open", "")
    expect(page.locator("#m-5").get_by_role("button", name="Fold")).to_have_attribute(
        "aria-expanded", "true"
    )
    expect(page.locator("#m-5 .content")).not_to_have_class(re.compile("is-folded"))
    expect(page.locator("#m-6")).not_to_have_class(re.compile(r"\bas-text\b"))


def test_a_page_of_formatted_messages_is_axe_clean(page: Page, live_server: LiveServer) -> None:
    open_reading(page, live_server)
    page.locator("#m-1").get_by_role("button", name="As text").click()

    page.evaluate(AXE.read_text())
    violations = page.evaluate("axe.run('#messages').then(results => results.violations)")

    serious = [
        (v["id"], [n["target"] for n in v["nodes"]])
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == []


WIDE_TABLE = (
    "| " + " | ".join(f"column {n}" for n in range(24)) + " |\n"
    "|" + "---|" * 24 + "\n"
    "| " + " | ".join(f"value {n}" for n in range(24)) + " |\n"
)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_wide_markdown_table_scrolls_in_its_own_box_not_the_page_on_a_phone(
    page: Page, live_server: LiveServer, scheme: str
) -> None:
    """A table of many columns (a data dump an agent formatted) cannot shrink to a phone's
    width: it scrolls sideways inside the message, by mouse, touch or keyboard, and the page
    does not."""
    conversation = store([user("Show the results"), assistant(content=WIDE_TABLE)])
    page.emulate_media(color_scheme="dark" if scheme == "dark" else "light")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    table = page.locator("#m-1 .md table")
    expect(table.locator("th")).to_have_count(24)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    scroller = page.locator("#m-1 .md .md-table")
    assert scroller.evaluate("e => e.scrollWidth > e.clientWidth")  # all of it, scrolled to
    scroller.focus()
    page.keyboard.press("ArrowRight")
    expect(scroller).to_be_focused()
    for _ in range(20):  # a key's scroll may be smooth: a moment to get there
        if scroller.evaluate("e => e.scrollLeft") > 0:
            break
        page.wait_for_timeout(50)
    assert scroller.evaluate("e => e.scrollLeft") > 0

    page.evaluate(AXE.read_text())
    violations = page.evaluate("axe.run('#messages').then(results => results.violations)")
    serious = [v["id"] for v in violations if v["impact"] in ("serious", "critical")]
    assert serious == []


def test_a_write_keeps_each_message_as_left_when_healing_put_a_row_in_before_the_window(
    page: Page, live_server: LiveServer
) -> None:
    """The reader opened the buffer further on (?at=): the row healing puts in for the
    unanswered call near the start is not on the page, but every loaded message moved on
    one index all the same; each keeps how it was left, not its neighbour's."""
    turns = [
        {"role": "assistant", "content": f"Turn {n}: **bold**", "metadata": {}} for n in range(120)
    ]
    conversation = store([user("go"), assistant("lost"), *turns])
    page.set_viewport_size(SCREEN)
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=100#m-100")
    page.locator("#m-100").get_by_role("button", name="As text").click()
    expect(page.locator("#m-2")).to_have_count(0)  # the row healing writes is not loaded

    page.get_by_label("Your turn").fill("still there?")
    page.get_by_role("button", name="Send user turn").click()

    expect(page.locator("#m-123.just-inserted")).to_have_count(1)  # the turn sent
    expect(page.locator("#m-101 .content")).to_contain_text("Turn 98")
    expect(page.locator("#m-101")).to_have_class(re.compile(r"\bas-text\b"))
    expect(page.locator("#m-100")).not_to_have_class(re.compile(r"\bas-text\b"))


def test_a_right_to_left_message_reads_right_to_left_and_a_left_to_right_one_left_to_right(
    page: Page, live_server: LiveServer
) -> None:
    """Each message's text takes the direction of its own first strong letter: Hebrew
    reads from the right, its question mark at the left end of the line, not the right."""
    conversation = store([user("מה שלומך היום?"), user("How are you?")])
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    def direction(selector: str) -> str:
        return str(page.locator(selector).evaluate("e => getComputedStyle(e).direction"))

    assert direction("#m-0 .md") == "rtl"
    assert direction("#m-0 .part-md > .text") == "rtl"  # "As text"
    assert direction("#m-1 .md") == "ltr"
    assert direction("#m-1 .part-md > .text") == "ltr"
    where = page.locator("#m-0 .md p").evaluate(
        """p => {
            const text = p.firstChild;
            const left = (at) => {
                const range = document.createRange();
                range.setStart(text, at);
                range.setEnd(text, at + 1);
                return range.getBoundingClientRect().left;
            };
            return {first: left(0), question: left(text.data.indexOf("?"))};
        }"""
    )
    assert where["question"] < where["first"]  # the "?" ends the sentence: at its left
