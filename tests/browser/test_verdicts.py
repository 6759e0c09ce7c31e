"""Every problem, not only unanswered calls (issue 15, item 5): the summary lists each kind
of problem with a "next" link that opens the next one after the reader's place in place,
without a reload, round the end. Under the strict CSP: any console error fails the test
(tests/browser/conftest.py)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from tests.buffers import assistant, result, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_next_of_a_kind_opens_each_one_in_place_and_goes_round(
    page: Page, live_server: LiveServer
) -> None:
    filler = [user(f"question {n}") for n in range(120)]
    conversation = store(
        [user("hi"), result("ghost-1"), *filler, result("ghost-2"), assistant("c1"), result("c1")]
    )
    url = f"{live_server.url}/c/{conversation.pk}/"
    page.goto(url)
    page.evaluate("window.loadedOnce = true")
    next_orphan = page.locator("#summary a.next-of-kind[data-kind=orphan_result]")
    expect(page.locator("#summary")).to_contain_text("2 orphan results")
    expect(page.locator("#summary .badge-ok")).to_have_count(0)

    next_orphan.click()
    expect(page.locator("#m-1")).to_be_focused()
    expect(page.locator("#m-1")).to_have_class(re.compile(r"\bis-target\b"))

    next_orphan.click()  # beyond the loaded window: opened there by htmx
    expect(page.locator("#m-122")).to_be_focused()
    expect(page).to_have_url(re.compile(r"#m-122$"))

    next_orphan.click()  # round the end, back to the first
    expect(page.locator("#m-1")).to_be_focused()
    assert page.evaluate("window.loadedOnce === true")
