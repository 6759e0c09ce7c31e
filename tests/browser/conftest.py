"""Playwright against Debian's chromium, and a page that fails its test on any console error."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import BrowserContext, ConsoleMessage, Page
from playwright.sync_api import Error as PageError
from pytest_django.live_server_helper import LiveServer

from tests.buffers import signed_in
from tests.chromium import find_chromium

# Playwright's sync API runs an asyncio loop in the main thread, and Django refuses ORM calls
# from inside one (test database creation and flush included). Set before the database is.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Debian's chromium, not a Playwright download (`playwright install` is never run),
    found as `make test` finds it (tests.conftest stops the run when there is none)."""
    chromium, _ = find_chromium()
    return {**browser_type_launch_args, "executable_path": chromium, "args": CHROMIUM_ARGS}


@pytest.fixture(autouse=True)
def signed_in_browser(
    request: pytest.FixtureRequest,
    context: BrowserContext,
    live_server: LiveServer,
    transactional_db: None,
) -> None:
    """The browser holds the acting user's session (tests.buffers.acting_user), who owns
    what ``store`` stores; a test marked ``anonymous`` starts signed out."""
    if request.node.get_closest_marker("anonymous"):
        return
    cookie = signed_in().cookies[settings.SESSION_COOKIE_NAME]
    context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": live_server.url}]
    )


@pytest.fixture(autouse=True)
def console_errors(page: Page) -> Iterator[list[str]]:
    """Every console error and uncaught page error (a CSP violation, a 404, a script that
    throws) the test's page reports. Any left at the end fails the test: none is ignored.

    A test that provokes one on purpose asserts it and removes it from the list.
    """
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(f"console: {message.text} ({message.location.get('url', '')})")

    def on_page_error(error: PageError) -> None:
        errors.append(f"pageerror: {error.message}")

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    yield errors
    if not page.is_closed():
        page.evaluate("0")  # one round trip, so events already sent are dispatched
    if errors:
        pytest.fail("the page reported errors:\n" + "\n".join(errors), pytrace=False)
