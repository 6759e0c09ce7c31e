"""The conversation list page, through the real HTTP stack: routing, middleware, templates."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from pytest_django import DjangoAssertNumQueries

from buffers import views
from buffers.models import Conversation
from tests.buffers import assistant, placeholder, result, store, user

pytestmark = pytest.mark.django_db

HTMX_SCRIPT = "/static/django_htmx/htmx-2.min.js"
APP_SCRIPT = "/static/buffers/app.js"
OUR_SCRIPTS = [APP_SCRIPT, "/static/buffers/reading.js", "/static/buffers/search.js"]


class Page(HTMLParser):
    """What a rendered page holds: its <script> tags, and the text of each table row."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.tags: list[str] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "script":
            self.scripts.append(dict(attrs))
        elif tag == "tr":
            self.rows.append([])
        elif tag in {"td", "th"}:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in {"td", "th"} and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def body_rows(client: Client, url: str = "/") -> list[list[str]]:
    """The body rows of the conversation table: title, source, the three counts, updated."""
    response = client.get(url)
    assert response.status_code == 200
    return Page(response.text).rows[1:]


def crashed(title: str, *, open_calls: int, source: str = "tests") -> Conversation:
    """A crashed transcript: the last assistant turn declared ``open_calls`` calls, no results."""
    ids = [f"{title}-call-{n}" for n in range(open_calls)]
    return store([user("go"), assistant(*ids)], title=title, source=source)


def many(count: int, prefix: str = "conversation") -> list[Conversation]:
    return [store([user("hi")], title=f"{prefix} {n}") for n in range(count)]


# What the list shows.


def test_an_empty_store_says_how_to_import(client: Client) -> None:
    response = client.get("/")

    assert response.status_code == 200
    assert "No conversations stored yet" in response.text
    assert "import_transcripts" in response.text


def test_the_list_answers_htmx_its_table_and_a_history_restore_the_whole_page(
    client: Client,
) -> None:
    """The list's search and pager push their URL: going back to one that htmx no longer
    holds, htmx asks again (``HX-History-Restore-Request``) and puts the answer in place of
    the body, which must then be the page. Each answer varies by ``HX-Request``, so that no
    cache gives a visit the table alone."""
    crashed("airship log", open_calls=1)
    table = client.get("/", {"q": "airship"}, headers={"HX-Request": "true"})
    restored = client.get(
        "/",
        {"q": "airship"},
        headers={"HX-Request": "true", "HX-History-Restore-Request": "true"},
    )
    page = client.get("/", {"q": "airship"})

    assert "airship log" in table.text
    assert '<header class="site-header">' not in table.text
    for whole in (restored, page):
        assert '<header class="site-header">' in whole.text
        assert "airship log" in whole.text
    for answer in (table, restored, page):
        assert {"HX-Request", "HX-History-Restore-Request"} <= set(answer["Vary"].split(", "))


def test_the_list_shows_title_source_and_the_three_counts_newest_first(client: Client) -> None:
    store(
        [user("hello"), assistant("a"), result("a"), user("thanks")],
        title="answered",
        source="runtime-a",
    )
    crashed("crashed", open_calls=2, source="runtime-b.jsonl")
    store(
        [user("go"), assistant("h1", "h2"), placeholder("h1"), placeholder("h2"), user("again")],
        title="healed",
        source="runtime-c",
    )

    rows = body_rows(client)

    assert [row[:5] for row in rows] == [
        ["healed", "runtime-c", "5", "0", "2 healed"],
        ["crashed", "runtime-b.jsonl", "2", "2 unanswered", "0"],
        ["answered", "runtime-a", "4", "0", "0"],
    ]


def test_the_counts_come_from_the_conversation_counters(client: Client) -> None:
    conversation = crashed("crashed", open_calls=3)
    assert (conversation.message_count, conversation.unanswered_count) == (2, 3)
    assert body_rows(client)[0][2:5] == ["2", "3 unanswered", "0"]

    # The page reads the counters the service keeps; it does not count rows itself.
    Conversation.objects.filter(pk=conversation.pk).update(
        message_count=70, unanswered_count=8, healed_count=9
    )

    assert body_rows(client)[0][2:5] == ["70", "8 unanswered", "9 healed"]


def test_an_untitled_conversation_is_named_by_its_id(client: Client) -> None:
    conversation = store([user("hi")])

    [row] = body_rows(client)

    assert row[0] == f"Conversation {conversation.pk}"


@pytest.mark.parametrize("title", ["   ", "\u200b", "\u200d\ufeff\t"])
def test_a_title_with_nothing_to_see_is_named_by_its_id(client: Client, title: str) -> None:
    """A link of spaces or zero-width characters shows nothing to click (bug hunt)."""
    conversation = store([user("hi")], title=title)

    [row] = body_rows(client)

    assert row[0] == f"Conversation {conversation.pk}"


def test_each_row_says_when_the_conversation_was_last_updated(client: Client) -> None:
    conversation = store([user("hi")], title="dated")

    response = client.get("/")

    stamp = conversation.updated_at.isoformat()
    assert f'<time datetime="{stamp}">' in response.text


def test_the_list_costs_the_same_queries_for_3_or_30_conversations(client: Client) -> None:
    def queries_for_the_page() -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/").status_code == 200
        return [q["sql"] for q in captured.captured_queries]

    many(3, prefix="few")
    with_three = queries_for_the_page()
    many(27, prefix="more")
    with_thirty = queries_for_the_page()

    assert len(body_rows(client)) == 30
    assert len(with_thirty) == len(with_three)
    # The signed-in user (session, user), a count for the pager and one page of rows;
    # nothing per conversation.
    assert len(with_three) <= 4, with_three


def test_a_full_page_renders_in_two_queries_after_the_signed_in_users_two(
    client: Client, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    many(views.PAGE_SIZE + 1)

    with django_assert_num_queries(4):
        response = client.get("/")

    assert response.status_code == 200


# Paging.


def test_the_second_page_holds_the_oldest_conversations(client: Client) -> None:
    stored = many(views.PAGE_SIZE + 2)
    oldest_first = [c.title for c in stored]

    first = body_rows(client)
    second = body_rows(client, "/?page=2")

    assert [row[0] for row in first] == oldest_first[::-1][: views.PAGE_SIZE]
    assert [row[0] for row in second] == ["conversation 1", "conversation 0"]
    page_two = client.get("/?page=2").text
    assert "Page 2 of 2" in page_two
    assert 'href="?page=1"' in page_two
    assert "Next</a>" not in page_two


def test_a_single_page_shows_no_pager(client: Client) -> None:
    many(3)

    response = client.get("/")

    assert 'class="pager"' not in response.text


@pytest.mark.parametrize(
    ("number", "shown"),
    [
        pytest.param("abc", "Page 1 of 2", id="not-a-number"),
        pytest.param("0", "Page 2 of 2", id="zero"),
        pytest.param("-1", "Page 2 of 2", id="negative"),
        pytest.param("999", "Page 2 of 2", id="past-the-end"),
        pytest.param("", "Page 1 of 2", id="empty"),
    ],
)
def test_a_bad_page_number_falls_back_to_a_real_page(
    client: Client, number: str, shown: str
) -> None:
    many(views.PAGE_SIZE + 1)

    response = client.get("/", {"page": number})

    assert response.status_code == 200
    assert shown in response.text


def test_a_bad_page_number_on_an_empty_store_is_not_an_error(client: Client) -> None:
    response = client.get("/?page=999")

    assert response.status_code == 200
    assert "No conversations stored yet" in response.text


# Untrusted content is text, never markup.


def test_a_title_holding_markup_is_escaped(client: Client) -> None:
    store([user("hi")], title="<script>alert(1)</script>", source='"><img src=x onerror=alert(2)>')

    response = client.get("/")

    assert "<script>alert(1)</script>" not in response.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text
    assert "<img" not in response.text
    assert "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;" in response.text
    page = Page(response.text)
    assert [s.get("src") for s in page.scripts] == [HTMX_SCRIPT, *OUR_SCRIPTS]
    assert "img" not in page.tags
    [row] = page.rows[1:]
    assert row[:2] == ["<script>alert(1)</script>", '"><img src=x onerror=alert(2)>']


def test_transcript_content_never_reaches_the_list(client: Client) -> None:
    store([user("<script>alert(1)</script>"), assistant("c1", content="<b>bold</b>")], title="t")

    response = client.get("/")

    assert "alert(1)" not in response.text
    assert "<b>" not in response.text


# Security headers and the one script.


def csp_directives(header: str) -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


def test_the_page_carries_a_strict_csp_whose_nonce_is_on_the_htmx_script(client: Client) -> None:
    response = client.get("/")

    header = response.headers["Content-Security-Policy"]
    directives = csp_directives(header)
    assert "'unsafe-inline'" not in header
    assert "'unsafe-eval'" not in header
    assert directives["default-src"] == ["'self'"]
    assert directives["style-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["frame-ancestors"] == ["'none'"]
    [nonce_source] = [s for s in directives["script-src"] if s.startswith("'nonce-")]
    assert set(directives["script-src"]) == {"'self'", nonce_source}
    nonce = re.fullmatch(r"'nonce-(.+)'", nonce_source)
    assert nonce is not None

    scripts = Page(response.text).scripts
    assert scripts == [
        {"src": src, "defer": None, "nonce": nonce.group(1)} for src in [HTMX_SCRIPT, *OUR_SCRIPTS]
    ]


def test_every_response_gets_a_fresh_nonce(client: Client) -> None:
    first = client.get("/").headers["Content-Security-Policy"]
    second = client.get("/").headers["Content-Security-Policy"]

    assert csp_directives(first)["script-src"] != csp_directives(second)["script-src"]


def test_every_script_on_the_page_carries_the_nonce(client: Client) -> None:
    store([user("hi")], title="one")

    response = client.get("/")

    page = Page(response.text)
    assert page.scripts
    assert all(script.get("nonce") for script in page.scripts)
    assert all(script.get("src") for script in page.scripts), "no inline script"


def test_htmx_keeps_to_the_csp(client: Client) -> None:
    response = client.get("/")

    # htmx's indicator <style> would break style-src 'self'; eval would need 'unsafe-eval'.
    assert '"includeIndicatorStyles": false' in response.text
    assert '"allowEval": false' in response.text
    assert '"allowScriptTags": false' in response.text


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        pytest.param(HTMX_SCRIPT, "text/javascript", id="htmx"),
        pytest.param(APP_SCRIPT, "text/javascript", id="app"),
        pytest.param("/static/buffers/app.css", "text/css", id="stylesheet"),
        pytest.param("/static/buffers/favicon.svg", "image/svg+xml", id="favicon"),
    ],
)
def test_the_static_files_the_page_links_are_served(
    client: Client, path: str, content_type: str
) -> None:
    assert path in client.get("/").text

    response = client.get(path)

    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)
    assert b"".join(response.streaming_content)  # type: ignore[attr-defined]


def test_the_page_may_not_be_framed_or_sniffed(client: Client) -> None:
    response = client.get("/")

    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"


# Methods and unknown URLs.


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_list_only_answers_safe_methods(client: Client, method: str) -> None:
    response = getattr(client, method)("/")

    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, HEAD"
    assert Conversation.objects.count() == 0


def test_the_list_answers_head_without_a_body(client: Client) -> None:
    response = client.head("/")

    assert response.status_code == 200
    assert response.content == b""


def test_an_unknown_url_is_a_404_not_a_500(client: Client) -> None:
    response = client.get("/conversations/does-not-exist/")

    assert response.status_code == 404
    assert "Content-Security-Policy" in response.headers


# From the security hunt: a 400 that quoted the request's text was served as HTML.

HOSTILE = '<meta http-equiv="refresh" content="0;url=https://evil.example/">'


@pytest.mark.parametrize("method", ["next", "append"])
def test_an_unknown_kind_is_answered_as_plain_text_not_markup(client: Client, method: str) -> None:
    conversation = store([user("hi")])

    if method == "next":
        answer = client.get(f"/c/{conversation.pk}/next", {"kind": HOSTILE})
    else:
        answer = client.post(f"/c/{conversation.pk}/append", {"kind": HOSTILE})

    assert answer.status_code == 400
    assert answer["Content-Type"] == "text/plain; charset=utf-8"
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert HOSTILE in answer.content.decode()
