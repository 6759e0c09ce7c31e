"""Requests a browser test holds on their way to the server, to see what the page does
while they are (a load, a search), and then lets go on."""

from __future__ import annotations

import re

from playwright.sync_api import Page, Route


def hold(page: Page, pattern: str) -> list[Route]:
    """The page's requests whose URL matches ``pattern``, held until the test lets each go
    on (``route.continue_()``)."""
    held: list[Route] = []

    def keep(route: Route) -> None:
        held.append(route)

    page.route(re.compile(pattern), keep)
    return held


def wait_until_held(page: Page, held: list[Route], count: int = 1) -> None:
    """Until ``count`` of the page's requests reached the route that holds them (each round
    trip to the page lets Playwright hand one over)."""
    for _ in range(200):
        if len(held) >= count:
            return
        page.evaluate("0")
    raise AssertionError("the request was never made")
