"""Room to read and every page everywhere (issue 15, items 7 and 8): the pinned composer and
the QA panel leave the messages in view, "Load earlier" keeps the reader's place; every page
fits a 390 px screen, has a dark mode and is axe-core clean (no serious or critical
violation). In a real browser under the strict CSP: any console error fails the test
(tests/browser/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe  # type: ignore[import-untyped]
from django.contrib.auth.models import User
from playwright.sync_api import FloatRect, Page, ViewportSize, expect
from pytest_django.live_server_helper import LiveServer

from buffers import healing, services
from buffers.models import Conversation
from tests.buffers import TESTER, acting_user, assistant, placeholder, result, store, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP: ViewportSize = {"width": 1280, "height": 800}
NARROW_LAPTOP: ViewportSize = {"width": 1000, "height": 800}  # too narrow for the QA panel beside
WIDE: ViewportSize = {"width": 1600, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 800}


def box(page: Page, selector: str) -> FloatRect:
    found = page.locator(selector).bounding_box()
    assert found is not None, f"{selector} is not shown"
    return found


def messy() -> Conversation:
    """A conversation with a bit of everything: calls answered and not, a healed
    placeholder, a duplicate and an orphan result; then a user turn that healed one call,
    so that its history has a heal to show."""
    conversation = store(
        [
            user("Find me the weather in **Rome** and Paris."),
            assistant("c1", "c2", "c3", content="Looking both up."),
            result("c1", '{"city": "Rome", "sky": "clear"}'),
            result("c1", "again"),
            placeholder("c2"),
            result("nobody-asked"),
            user("Are you still there?"),
            assistant("c4"),
        ],
        title="messy run",
        source="tests/messy.json",
    )
    services.append_messages(
        conversation=conversation,
        messages=healing.parse_messages([user("And now?")], appendable=True),
        via="tests",
    )
    conversation.refresh_from_db()
    return conversation


# ------------------------------------------------------------------------------------------
# Room to read


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_the_pinned_composer_takes_at_most_a_quarter_of_the_screen(
    page: Page, live_server: LiveServer, viewport: ViewportSize
) -> None:
    conversation = store([user(f"message {n}") for n in range(60)])
    page.set_viewport_size(viewport)
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    composer = box(page, ".composer")
    assert composer["height"] <= 200, composer
    assert composer["y"] + composer["height"] == pytest.approx(800, abs=1)  # pinned at the foot


def test_the_open_qa_panel_covers_at_most_40_percent_below_the_messages(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store([user(f"message {n}") for n in range(60)])
    page.set_viewport_size(NARROW_LAPTOP)
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    page.get_by_text("QA panel").click()
    expect(page.get_by_label("Answers call id")).to_be_attached()
    composer = box(page, ".composer")
    assert composer["height"] <= 0.4 * 800, composer
    # What the composer covers, a scroll to a message keeps clear of.
    pinned = page.evaluate(
        "getComputedStyle(document.documentElement).getPropertyValue('--pinned-bottom')"
    )
    assert pinned == f"{composer['height']:.0f}px"


def test_on_a_wide_screen_the_open_qa_panel_goes_beside_the_messages(
    page: Page, live_server: LiveServer
) -> None:
    conversation = store([user(f"message {n}") for n in range(60)])
    page.set_viewport_size(WIDE)
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    page.get_by_text("QA panel").click()
    composer = box(page, ".composer")
    messages = box(page, "#messages")
    assert composer["x"] >= messages["x"] + messages["width"], (composer, messages)
    assert messages["width"] >= 700  # the messages keep a comfortable column
    page.mouse.wheel(0, 2000)
    expect(page.get_by_role("button", name="Append tool result")).to_be_in_viewport()


@pytest.mark.parametrize("viewport", [NARROW_LAPTOP, WIDE], ids=["below", "beside"])
def test_after_a_qa_write_the_touched_message_and_its_report_are_in_view(
    page: Page, live_server: LiveServer, viewport: ViewportSize
) -> None:
    messages = [user(f"message {n}") for n in range(60)]
    messages[29] = assistant("c29")
    messages[30] = placeholder("c29")
    conversation = store(messages)
    page.set_viewport_size(viewport)
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=10#m-10")

    page.get_by_text("QA panel").click()
    page.get_by_label("Answers call id").fill("c29")
    page.get_by_label("Result").fill("Found 3 cats")
    page.get_by_role("button", name="Append tool result").click()

    replaced = page.locator("#m-30")
    expect(replaced).to_contain_text("just replaced")
    expect(page.locator("#report")).to_contain_text("in place (MEM-10)")
    expect(page.locator("#report")).to_be_in_viewport()
    expect(replaced).to_be_in_viewport()
    touched = box(page, "#m-30")
    composer = box(page, ".composer")
    beside = composer["x"] >= touched["x"] + touched["width"]
    assert beside or touched["y"] + min(touched["height"], 60) <= composer["y"], (touched, composer)


def test_load_earlier_keeps_the_readers_place(page: Page, live_server: LiveServer) -> None:
    conversation = store([user(f"message {n} " + "words " * 40) for n in range(200)])
    page.goto(f"{live_server.url}/c/{conversation.pk}/?at=100#m-100")
    expect(page.locator("#m-94")).to_have_count(0)  # the window starts at 95
    # The reader scrolls up until the link shows near the top, reading message 95 below it.
    page.evaluate(
        "window.scrollBy(0, document.querySelector('.load-earlier')"
        ".getBoundingClientRect().top - 120)"
    )
    before = box(page, "#m-95")["y"]

    page.get_by_role("link", name="Load earlier messages").click()

    expect(page.locator("#m-45")).to_be_attached()
    after = box(page, "#m-95")["y"]
    assert after == pytest.approx(before, abs=2)


# ------------------------------------------------------------------------------------------
# Every page: 390 px, dark, axe


def staff() -> None:
    User.objects.filter(username=TESTER).update(is_staff=True, is_superuser=True)


def pages() -> dict[str, Callable[[], str]]:
    """Each page, as the address to open once its data is stored."""

    def conversation() -> str:
        return f"/c/{messy().pk}/"

    def history() -> str:
        return f"/c/{messy().pk}/history"

    def sendability() -> str:
        return f"/c/{messy().pk}/sendability"

    def listing() -> str:
        messy()
        store([user("hello"), assistant("c9")], title="a crashed run with a long title " * 3)
        store([user("fine")], title="a quiet run")
        return "/"

    def admin_index() -> str:
        staff()
        return "/admin/"

    def admin_conversation() -> str:
        staff()
        return f"/admin/buffers/conversation/{messy().pk}/change/"

    def admin_conversations() -> str:
        staff()
        messy()
        store([user("a runtime's log")], title="imported", source="")  # as logs are: no source
        return "/admin/buffers/conversation/"

    return {
        "list": listing,
        "conversation": conversation,
        "sendability": sendability,
        "import": lambda: "/import",
        "history": history,
        "login": lambda: "/accounts/login/",
        "admin-login": lambda: "/admin/login/",
        "admin-index": admin_index,
        "admin-conversation": admin_conversation,
        "admin-conversations": admin_conversations,
    }


PAGES = list(pages())


def open_page(page: Page, live_server: LiveServer, name: str) -> None:
    address = pages()[name]()
    if name.endswith("login"):
        page.context.clear_cookies()  # the sign-in page as a visitor sees it
    acting_user()  # exists for every page
    page.goto(f"{live_server.url}{address}")
    page.wait_for_load_state("networkidle")  # htmx's loads (the verdicts) have landed


@pytest.mark.parametrize("name", PAGES)
def test_every_page_fits_a_390_px_screen(page: Page, live_server: LiveServer, name: str) -> None:
    page.set_viewport_size(PHONE)
    open_page(page, live_server, name)
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= 390, f"{name} scrolls sideways: {width} px"


UNBROKEN = "https://example.com/runs/" + "0123456789abcdef" * 16
"""A title or source of one word (a URL, a path, an id), as the first prompt or the file name
of an imported log may give: it must wrap, not widen the page."""


@pytest.mark.parametrize(
    "path", ["/", "/?q=hello", "/c/{pk}/", "/c/{pk}/history", "/c/{pk}/sendability"]
)
@pytest.mark.parametrize("screen", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_a_title_or_source_of_one_long_word_wraps_on_every_page(
    page: Page, live_server: LiveServer, path: str, screen: ViewportSize
) -> None:
    conversation = store([user("hello"), assistant("c1")], title=UNBROKEN, source=UNBROKEN)
    page.set_viewport_size(screen)
    page.goto(f"{live_server.url}{path.format(pk=conversation.pk)}")
    page.wait_for_load_state("networkidle")

    expect(page.get_by_text(UNBROKEN).first).to_be_visible()
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= screen["width"], f"{path} scrolls sideways: {width} px"


@pytest.mark.parametrize(
    "path",
    ["/admin/buffers/conversation/{pk}/change/", "/admin/buffers/conversation/{pk}/history/"],
)
@pytest.mark.parametrize("screen", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_a_title_of_one_long_word_wraps_in_the_admin(
    page: Page, live_server: LiveServer, path: str, screen: ViewportSize
) -> None:
    staff()
    conversation = store([user("hello"), assistant("c1")], title=UNBROKEN)
    page.set_viewport_size(screen)
    page.goto(f"{live_server.url}{path.format(pk=conversation.pk)}")

    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= screen["width"], f"{path} scrolls sideways: {width} px"


LONG_CALL_ID = "run_shell_command__run_shell_command_1784560852846_0" * 3
"""A call id of one word, longer than a phone is wide (Gemini CLI's are 30 to 60 characters)."""


@pytest.mark.parametrize("path", ["/c/{pk}/sendability", "/c/{pk}/"])
@pytest.mark.parametrize("screen", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_a_long_call_id_wraps_in_the_verdicts(
    page: Page, live_server: LiveServer, path: str, screen: ViewportSize
) -> None:
    conversation = store([user("hello"), assistant(LONG_CALL_ID), user("and?")])
    page.set_viewport_size(screen)
    page.goto(f"{live_server.url}{path.format(pk=conversation.pk)}")
    page.wait_for_load_state("networkidle")
    for why in page.locator("details.why, .sendability details").all():
        why.evaluate("d => { d.open = true; }")

    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= screen["width"], f"{path} scrolls sideways: {width} px"


def test_the_list_is_stacked_rows_on_a_phone(page: Page, live_server: LiveServer) -> None:
    page.set_viewport_size(PHONE)
    open_page(page, live_server, "list")
    first = page.locator("table.conversations tbody tr").first
    expect(first.locator("td").nth(2)).to_have_attribute("data-label", "Messages")
    assert first.locator("td").nth(2).evaluate("e => getComputedStyle(e).display") == "block"
    assert "Messages" in first.locator("td").nth(2).evaluate(
        "e => getComputedStyle(e, '::before').content"
    )


def luminance(rgb: str) -> float:
    red, green, blue = (int(part) for part in rgb[rgb.index("(") + 1 : -1].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@pytest.mark.parametrize("name", PAGES)
def test_every_page_has_a_dark_mode(page: Page, live_server: LiveServer, name: str) -> None:
    page.emulate_media(color_scheme="dark")
    open_page(page, live_server, name)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    ink = page.evaluate("getComputedStyle(document.body).color")
    assert luminance(background) < 0.2, f"{name}: background {background}"
    assert luminance(ink) > 0.7, f"{name}: text {ink}"
    if not name.startswith("admin"):
        main = page.evaluate("getComputedStyle(document.querySelector('main')).color")
        assert luminance(main) > 0.7


@pytest.mark.parametrize(("system", "theme"), [("dark", "light"), ("light", "dark")])
def test_the_admins_messages_follow_its_theme_switch_not_the_system(
    page: Page, live_server: LiveServer, system: Any, theme: str
) -> None:
    """The admin's conversation page shows the buffer with our colours, which follow the
    admin's own theme switch (stored by the admin in localStorage) over the system's."""
    page.emulate_media(color_scheme=system)
    open_page(page, live_server, "admin-conversation")
    page.evaluate(f"localStorage.setItem('theme', '{theme}')")
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", theme)
    paper = page.locator(".message").first.evaluate("e => getComputedStyle(e).backgroundColor")
    if theme == "light":
        assert luminance(paper) > 0.9, paper
    else:
        assert luminance(paper) < 0.2, paper


def serious_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it stands (it runs under the
    strict CSP as it is: no bypass)."""
    found: list[dict[str, Any]] = Axe().run(page).response["violations"]
    return [
        {
            "rule": violation["id"],
            "impact": violation["impact"],
            "where": [node["target"] for node in violation["nodes"][:5]],
            "why": violation["nodes"][0].get("failureSummary", ""),
        }
        for violation in found
        if violation["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", PAGES)
def test_every_page_is_axe_clean(
    page: Page, live_server: LiveServer, name: str, scheme: Any
) -> None:
    page.emulate_media(color_scheme=scheme)
    open_page(page, live_server, name)
    if name == "conversation":
        # Open what folds, so that axe sees it too: the calls, the raw JSON, the QA panel.
        page.locator("#messages details, #qa").evaluate_all(
            "all => all.forEach(d => d.open = true)"
        )
    assert serious_violations(page) == []


def test_the_admin_says_flowdrop_web(page: Page, live_server: LiveServer) -> None:
    open_page(page, live_server, "admin-index")
    expect(page.locator("#site-name")).to_have_text("FlowDrop Web")
    expect(page).to_have_title("Site administration | FlowDrop Web admin")
    expect(page.get_by_text("Django administration")).to_have_count(0)


def test_the_sign_in_page_styles_every_box(page: Page, live_server: LiveServer) -> None:
    open_page(page, live_server, "login")
    username, password = page.get_by_label("Username"), page.get_by_label("Password")
    style = "e => [getComputedStyle(e).borderRadius, getComputedStyle(e).paddingLeft]"
    assert password.evaluate(style) == username.evaluate(style)
    assert password.evaluate("e => e.getBoundingClientRect().width") == pytest.approx(
        username.evaluate("e => e.getBoundingClientRect().width")
    )
    assert password.evaluate(style) != ["0px", "1px"]  # not the browser's bare box
