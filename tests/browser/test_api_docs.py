"""The storage API's interactive docs render in a real browser, from local files only."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Request, expect
from pytest_django.live_server_helper import LiveServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_list_every_operation_and_load_nothing_from_elsewhere(
    page: Page, live_server: LiveServer
) -> None:
    requested: list[str] = []

    def record(request: Request) -> None:
        requested.append(request.url)

    page.on("request", record)
    page.goto(f"{live_server.url}/api/docs")

    operations = page.locator(".opblock-summary-path")
    expect(operations).to_have_count(9)
    expect(page.get_by_text("FlowDrop Web storage API")).to_be_visible()
    assert all(url.startswith(live_server.url) for url in requested), requested
