"""The admin tier in a real browser, under the real CSP, against a live server: an operator
logs in, heals a crashed conversation through the confirmation page, and edits one message
(MEM-15), each write read back from the repair journal. Every test fails on any console
error or CSP violation (tests/browser/conftest.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from buffers import selectors
from buffers.models import Conversation, Message
from tests.buffers import assistant, placeholder, result, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

USERNAME = "operator"
PASSWORD = "a long test password"


@pytest.fixture(autouse=True)
def fast_passwords(settings: Any) -> None:
    """The production hasher takes a second a login."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def operator() -> User:
    return User.objects.create_superuser(USERNAME, "operator@example.com", PASSWORD)


@pytest.fixture
def crashed() -> Conversation:
    return store([user("go"), assistant("c1", "c2"), result("c1")], title="crashed run")


def log_in(page: Page, live_server: LiveServer) -> None:
    """Through the admin's own login page, as an operator would."""
    page.goto(f"{live_server.url}{reverse('admin:index')}")
    expect(page).to_have_url(re.compile(re.escape(reverse("admin:login"))))
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#user-tools")).to_contain_text(USERNAME)


def open_conversation(page: Page, live_server: LiveServer, conversation: Conversation) -> None:
    page.goto(
        f"{live_server.url}{reverse('admin:buffers_conversation_change', args=[conversation.pk])}"
    )
    expect(page.get_by_role("heading", name="Repair journal")).to_be_visible()


def test_an_operator_heals_a_crashed_conversation_from_the_changelist(
    page: Page, live_server: LiveServer, operator: User, crashed: Conversation
) -> None:
    store([user("go"), assistant("a1"), result("a1")], title="answered run")
    log_in(page, live_server)

    page.get_by_role("link", name="Conversations").first.click()
    expect(page.locator("#result_list tbody tr")).to_have_count(2)
    page.locator("#changelist-filter").get_by_role("link", name="has unanswered calls").click()
    expect(page).to_have_url(re.compile(r"[?&]unanswered=yes"))
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("crashed run")

    page.get_by_label("Select this object for an action - crashed run").check()
    page.get_by_role("combobox", name="Action").select_option(label="Heal unanswered calls")
    page.get_by_role("button", name="Run").click()

    # The plan, and nothing written yet.
    expect(page.get_by_role("heading", name="Heal unanswered calls?")).to_be_visible()
    expect(page.get_by_role("heading", name="crashed run (3 messages)")).to_be_visible()
    expect(page.locator("#content li")).to_have_text(
        "a placeholder for call c2 right after the turn at message 1 (numbered as the buffer "
        "is now); once healed, it is message 2"
    )
    expect(page.locator("#content")).to_contain_text("Nothing has been written yet.")
    assert Message.objects.filter(conversation=crashed).count() == 3
    assert crashed.changes.count() == 1  # its import

    # No reason: the browser will not send the form at all...
    reason = page.get_by_label("Reason")
    heal = page.get_by_role("button", name="Heal these calls")
    page.evaluate("window.notReloaded = true")
    heal.click()
    expect(reason).to_be_focused()  # where the browser's own "fill in this field" points
    assert reason.evaluate("field => field.validity.valueMissing") is True
    assert page.evaluate("window.notReloaded === true")
    # ...and a blank one, which it would send, the server refuses.
    reason.fill("   ")
    heal.click()
    expect(page.locator(".errorlist")).to_have_text("This field is required.")
    expect(page.get_by_role("heading", name="Heal unanswered calls?")).to_be_visible()
    assert Message.objects.filter(conversation=crashed).count() == 3
    assert crashed.changes.count() == 1

    page.get_by_label("Reason").fill("agent crashed mid-call")
    page.get_by_role("button", name="Heal these calls").click()

    expect(page.locator("ul.messagelist .success")).to_have_text(
        "Healed 1 unanswered call in 1 conversation."
    )
    expect(page.locator("#result_list")).to_have_count(0)  # none unanswered now
    assert selectors.buffer_messages(crashed)[2].as_stored() == placeholder("c2")

    open_conversation(page, live_server, crashed)
    healed = page.locator("#m-2")
    expect(healed).to_contain_text("synthetic: healed placeholder")
    expect(healed).to_contain_text("Answers call c2, declared at message 1")
    expect(page.locator("#m-3")).to_contain_text("c1")  # the old result moved down one
    expect(page.locator(".admin-buffer article.message.has-unanswered")).to_have_count(0)
    entry = page.locator("table.journal tbody tr").first
    expect(entry.locator("td")).to_have_text(
        [
            re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"),
            "heal",
            "admin",
            USERNAME,
            "agent crashed mid-call",
            re.compile(r"inserted message 2 \(tool, call c2, healed placeholder\)"),
        ]
    )


@pytest.mark.rule("MEM-15")
def test_an_operator_edits_a_message_and_reads_the_old_one_back_from_the_journal(
    page: Page, live_server: LiveServer, operator: User, crashed: Conversation
) -> None:
    log_in(page, live_server)
    open_conversation(page, live_server, crashed)
    expect(page.locator("#m-2 .text")).to_have_text("result")

    page.get_by_role("link", name="Edit message 2").click()
    expect(page.locator(".field-buffer_index")).to_contain_text("2")
    content = page.get_by_label("Content")
    expect(content).to_have_value('"result"')
    content.fill('"the real forecast: sunny"')
    page.get_by_label("Reason").fill("result garbled by the proxy")
    page.get_by_role("button", name="Save", exact=True).click()

    expect(page.locator("ul.messagelist .success")).to_contain_text("was changed successfully")
    assert selectors.buffer_messages(crashed)[2].as_stored() == result(
        "c1", "the real forecast: sunny"
    )

    open_conversation(page, live_server, crashed)
    expect(page.locator("#m-2 .text")).to_have_text("the real forecast: sunny")
    entry = page.locator("table.journal tbody tr").first
    expect(entry).to_contain_text("edit")
    expect(entry).to_contain_text(USERNAME)
    expect(entry).to_contain_text("result garbled by the proxy")
    old = entry.locator("details").filter(has_text="old message")
    new = entry.locator("details").filter(has_text="new message")
    expect(old.locator("pre")).not_to_be_visible()
    old.get_by_text("old message").click()
    expect(old.locator("pre")).to_be_visible()
    expect(old.locator("pre")).to_contain_text('"content": "result"')
    expect(old.locator("pre")).to_contain_text('"tool_call_id": "c1"')
    new.get_by_text("new message").click()
    expect(new.locator("pre")).to_contain_text('"content": "the real forecast: sunny"')
