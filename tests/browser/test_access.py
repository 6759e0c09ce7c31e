"""Who may see and drive a conversation, in a real browser under the real CSP."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from playwright.sync_api import BrowserContext, Page, expect
from pytest_django.live_server_helper import LiveServer

from tests.buffers import assistant, signed_in, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.anonymous
@pytest.mark.rule("MEM-9")
def test_an_anonymous_visitor_is_sent_to_sign_in_and_then_back(
    page: Page, live_server: LiveServer, django_user_model: Any
) -> None:
    owner = django_user_model.objects.create_user("alice", password="correct horse battery")
    conversation = store([user("go"), assistant("c1")], owner=owner, title="alice's run")

    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    expect(page).to_have_url(f"{live_server.url}/accounts/login/?next=/c/{conversation.pk}/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_text("alice's run")).to_have_count(0)
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{live_server.url}/c/{conversation.pk}/")
    expect(page.get_by_role("heading", name="alice's run")).to_be_visible()
    expect(page.get_by_label("Your turn")).to_be_visible()


@pytest.mark.anonymous
@pytest.mark.rule("MEM-9")
def test_a_viewer_sees_the_conversation_but_no_form_to_send_it_a_turn(
    page: Page, context: BrowserContext, live_server: LiveServer, django_user_model: Any
) -> None:
    owner = django_user_model.objects.create_user("alice")
    viewer = django_user_model.objects.create_user("bob")
    conversation = store([user("go"), assistant("c1")], owner=owner, title="shared run")
    conversation.viewers.add(viewer)
    cookie = signed_in(viewer).cookies[settings.SESSION_COOKIE_NAME]
    context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": live_server.url}]
    )

    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    expect(page.get_by_role("heading", name="shared run")).to_be_visible()
    expect(page.locator("#m-1")).to_contain_text("unanswered call c1")
    expect(page.get_by_text("Signed in as bob")).to_be_visible()
    expect(page.get_by_label("Your turn")).to_have_count(0)
    expect(page.get_by_role("button", name="Send user turn")).to_have_count(0)
    expect(page.get_by_text("Only its owner (alice) can send it a turn.")).to_be_visible()


def test_signing_out_ends_the_session(page: Page, live_server: LiveServer) -> None:
    page.goto(f"{live_server.url}/")
    page.get_by_role("button", name="Sign out").click()

    expect(page).to_have_url(f"{live_server.url}/accounts/login/")
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(f"{live_server.url}/accounts/login/?next=/")


@pytest.mark.anonymous
def test_the_link_make_run_prints_signs_a_new_user_in_to_the_demo_they_can_drive(
    page: Page, live_server: LiveServer
) -> None:
    out = StringIO()
    with override_settings(DEBUG=True):
        call_command("local_signin", address=live_server.url[7:], owner="newcomer", stdout=out)
        link = next(line for line in out.getvalue().splitlines() if line.startswith("Sign in: "))

        page.goto(link.removeprefix("Sign in: "))

        expect(page).to_have_url(f"{live_server.url}/")
        expect(page.get_by_text("Signed in as newcomer")).to_be_visible()
        page.get_by_role("link", name="Weather agent crashed between two parallel calls").click()
        page.get_by_label("Your turn").fill("Still there?")
        page.get_by_role("button", name="Send user turn").click()
        expect(page.locator("#report")).to_contain_text("Healed 1 call: call_rome after message 2.")
        expect(page.locator("#summary")).to_contain_text("no unanswered calls")
