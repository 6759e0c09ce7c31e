"""The conversation list in a real browser, under the real CSP, against a live server."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Dialog, Page, expect
from pytest_django.live_server_helper import LiveServer

from buffers import views
from buffers.models import Conversation
from tests.buffers import assistant, placeholder, result, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

INJECTED = "<img src=x onerror=alert(1)>"


def crashed(title: str, *open_calls: str) -> Conversation:
    return store([user("go"), assistant(*open_calls)], title=title, source="agent.jsonl")


def open_list(page: Page, live_server: LiveServer, query: str = "") -> dict[str, str]:
    """Load the list page; return its response headers."""
    response = page.goto(f"{live_server.url}/{query}")
    assert response is not None
    assert response.status == 200
    return response.headers


def test_the_list_shows_the_stored_conversations_newest_first(
    page: Page, live_server: LiveServer
) -> None:
    store([user("hi"), assistant("a"), result("a")], title="answered run", source="runtime")
    crashed("crashed run", "c1", "c2")
    store([user("go"), assistant("h"), placeholder("h"), user("on")], title="healed run")

    open_list(page, live_server)

    expect(page).to_have_title("Conversations · FlowDrop Web")
    rows = page.locator("table.conversations tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.locator("td:first-child")).to_have_text(
        ["healed run", "crashed run", "answered run"]
    )
    crashed_row = page.get_by_role("row").filter(has_text="crashed run")
    expect(crashed_row.locator("td")).to_have_text(
        [
            "crashed run",
            "agent.jsonl",
            "2",
            "2 unanswered",
            "0",
            "refused by OpenAI, OpenAI Responses, Anthropic, Gemini",
            re.compile(r"\d{4}-\d\d-\d\d"),
        ]
    )
    expect(page.get_by_role("row").filter(has_text="healed run")).to_contain_text("1 healed")


def test_the_unanswered_badge_says_how_many_in_words(page: Page, live_server: LiveServer) -> None:
    crashed("one open", "c1")
    crashed("three open", "c1", "c2", "c3")

    open_list(page, live_server)

    badges = page.locator(".badge-unanswered")
    expect(badges).to_have_text(["3 unanswered", "1 unanswered"])
    expect(badges.first).to_be_visible()


def test_an_empty_store_says_how_to_import(page: Page, live_server: LiveServer) -> None:
    open_list(page, live_server)

    expect(page.get_by_text("No conversations stored yet")).to_be_visible()
    expect(page.locator("table")).to_have_count(0)


def test_the_pager_walks_to_the_older_conversations(page: Page, live_server: LiveServer) -> None:
    for n in range(views.PAGE_SIZE + 1):
        store([user("hi")], title=f"run {n}")
    open_list(page, live_server)

    page.get_by_role("link", name="Next").click()

    expect(page).to_have_url(re.compile(r"\?page=2$"))
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody td").first).to_have_text("run 0")
    expect(page.get_by_text("Page 2 of 2")).to_be_visible()


# htmx under the strict CSP.


def test_htmx_loads_under_the_strict_csp(
    page: Page, live_server: LiveServer, console_errors: list[str]
) -> None:
    crashed("crashed run", "c1")

    headers = open_list(page, live_server)

    policy = headers["content-security-policy"]
    assert "'nonce-" in policy
    assert "'unsafe-inline'" not in policy
    assert "'unsafe-eval'" not in policy
    page.wait_for_function("typeof htmx !== 'undefined'")
    assert page.evaluate("typeof htmx !== 'undefined'") is True
    assert page.evaluate("htmx.version").startswith("2.")
    # The page's htmx-config took: no eval, no script from swapped content, no injected style.
    config = page.evaluate(
        "({eval: htmx.config.allowEval, scripts: htmx.config.allowScriptTags,"
        " styles: htmx.config.includeIndicatorStyles, self: htmx.config.selfRequestsOnly})"
    )
    assert config == {"eval": False, "scripts": False, "styles": False, "self": True}
    assert page.locator("style").count() == 0
    page.wait_for_load_state("networkidle")
    assert console_errors == []


def test_the_browser_enforces_the_csp(
    page: Page, live_server: LiveServer, console_errors: list[str]
) -> None:
    """An inline script slipped into the page does not run, and the violation is reported."""
    open_list(page, live_server)
    page.evaluate(
        "() => { window.violations = [];"
        " document.addEventListener('securitypolicyviolation',"
        " e => window.violations.push(e.violatedDirective)); }"
    )

    page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.pwned = true'; document.body.append(s); }"
    )

    page.wait_for_function("window.violations.length > 0")
    assert page.evaluate("window.pwned") is None
    assert page.evaluate("window.violations") == ["script-src-elem"]
    page.evaluate("0")
    assert len(console_errors) == 1
    assert "Content Security Policy" in console_errors[0]
    console_errors.clear()  # provoked on purpose, and proven above


def test_every_script_on_the_page_carries_the_responses_nonce(
    page: Page, live_server: LiveServer
) -> None:
    headers = open_list(page, live_server)

    nonce = re.search(r"'nonce-([^']+)'", headers["content-security-policy"])
    assert nonce is not None
    # Browsers hide the nonce attribute from the DOM; the .nonce property keeps it.
    scripts = page.evaluate(
        "Array.from(document.scripts, s => ({src: s.getAttribute('src'), nonce: s.nonce}))"
    )
    assert scripts == [
        {"src": "/static/django_htmx/htmx-2.min.js", "nonce": nonce.group(1)},
        {"src": "/static/buffers/app.js", "nonce": nonce.group(1)},
        {"src": "/static/buffers/reading.js", "nonce": nonce.group(1)},
        {"src": "/static/buffers/search.js", "nonce": nonce.group(1)},
    ]
    inline_without_nonce = page.locator("script:not([src])").evaluate_all(
        "scripts => scripts.filter(s => !s.nonce).length"
    )
    assert inline_without_nonce == 0


# Untrusted titles are text.


def test_an_injected_title_is_shown_as_text_and_runs_nothing(
    page: Page, live_server: LiveServer
) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    crashed(INJECTED, "c1")
    store([user("hi")], title="plain", source=INJECTED)

    open_list(page, live_server)
    page.wait_for_load_state("networkidle")

    expect(page.get_by_role("cell", name=INJECTED, exact=True)).to_have_count(2)
    expect(page.locator("tbody tr").last.locator("td").first).to_have_text(INJECTED)
    expect(page.locator("img")).to_have_count(0)
    assert dialogs == []
