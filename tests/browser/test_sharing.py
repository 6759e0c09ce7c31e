"""Sharing from the inspector (issue 15, item 10), in a real browser under the strict CSP:
the owner adds and removes viewers in the "Shared with" panel, swapped in place by htmx,
with no reload. Any console error fails the test (tests/browser/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe  # type: ignore[import-untyped]
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from buffers.models import Conversation
from tests.buffers import acting_user, assistant, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def mark_page(page: Page) -> None:
    """Tag this document, so that a test can tell a swap from a reload."""
    page.evaluate("window.loadedOnce = true")


def still_same_page(page: Page) -> bool:
    return bool(page.evaluate("window.loadedOnce === true"))


def serious_violations(page: Page) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = Axe().run(page, context="#sharing").response["violations"]
    return [
        {"rule": v["id"], "where": [n["target"] for n in v["nodes"][:5]]}
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


@pytest.fixture
def conversation() -> Conversation:
    User.objects.create_user("bob")
    return store([user("go"), assistant("c1")], title="shared run")


def test_the_owner_adds_and_removes_a_viewer_in_place(
    page: Page, live_server: LiveServer, conversation: Conversation
) -> None:
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    mark_page(page)
    panel = page.get_by_role("region", name="Shared with")
    expect(panel).to_contain_text("No one by name: only you can see it.")

    panel.get_by_label("their username").fill("bob")
    panel.get_by_role("button", name="Share", exact=True).click()

    expect(panel.locator("#sharing-said")).to_have_text(
        "Shared with bob: they may view it, never drive it."
    )
    expect(panel.locator(".viewer")).to_have_text(["bob"])
    assert list(conversation.viewers.values_list("username", flat=True)) == ["bob"]

    panel.get_by_role("button", name="Stop sharing with bob").click()

    expect(panel.locator("#sharing-said")).to_have_text("bob can no longer view it.")
    expect(panel.locator(".viewer")).to_have_count(0)
    expect(panel.get_by_label("their username")).to_be_focused()  # not lost with the button
    assert not conversation.viewers.exists()
    assert still_same_page(page)


def test_an_unknown_username_is_told_in_the_panel_with_the_field_kept(
    page: Page, live_server: LiveServer, conversation: Conversation
) -> None:
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    mark_page(page)
    field = page.get_by_label("their username")

    field.fill("nobody-here")
    field.press("Enter")

    said = page.locator("#sharing-said")
    expect(said).to_have_text("No one here has the username 'nobody-here'.")
    expect(page.get_by_label("their username")).to_have_value("nobody-here")
    expect(page.get_by_label("their username")).to_have_attribute("aria-invalid", "true")
    assert not conversation.viewers.exists()
    assert still_same_page(page)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_panel_is_axe_clean_with_viewers_and_with_an_error(
    page: Page, live_server: LiveServer, conversation: Conversation, scheme: Any
) -> None:
    page.emulate_media(color_scheme=scheme)
    conversation.viewers.add(User.objects.get(username="bob"))
    page.goto(f"{live_server.url}/c/{conversation.pk}/")
    page.wait_for_load_state("networkidle")
    assert serious_violations(page) == []

    page.get_by_label("their username").fill("tester")
    page.get_by_role("button", name="Share", exact=True).click()
    expect(page.locator("#sharing-said")).to_contain_text("tester owns this conversation")

    assert serious_violations(page) == []


def test_a_viewer_sees_no_panel(page: Page, live_server: LiveServer) -> None:
    owner = User.objects.create_user("alice")
    conversation = store([user("go")], owner=owner, title="alice's run")
    conversation.viewers.add(acting_user())

    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    expect(page.get_by_role("heading", name="alice's run")).to_be_visible()
    expect(page.locator("#sharing")).to_have_count(0)
