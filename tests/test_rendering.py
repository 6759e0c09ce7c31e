"""Reading a message: markdown through the sanitizer, folding, the facts line. Transcript content
is untrusted: whatever it holds, the renderer's output has no element, attribute or URL scheme
outside the allow-list of buffers/rendering.py."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import example, given
from hypothesis import strategies as st

from buffers import presenters, rendering, services
from buffers.templatetags.reading import kb
from tests.buffers import assistant, result, store, user

# The renderer on its own.


class AllowList(HTMLParser):
    """Reads rendered HTML the way a browser's tokenizer would, and notes every element,
    attribute and URL outside the allow-list."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.outside: list[str] = []
        self.tags: list[str] = []
        self.boxes = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if self.get_starttag_text() == rendering.TABLE_BOX:  # the renderer's own, exactly
            self.boxes += 1
            return
        if tag not in rendering.TAGS:
            self.outside.append(f"element <{tag}>")
        allowed = rendering.ATTRIBUTES.get(tag, frozenset()) | ({"rel"} if tag == "a" else set())
        for name, value in attrs:
            if name not in allowed:
                self.outside.append(f"attribute {name} on <{tag}>")
            elif name == "rel" and value != rendering.LINK_REL:
                self.outside.append(f"rel={value!r}")
            elif name == "href":
                scheme = urlsplit((value or "").strip()).scheme.lower()
                if scheme not in rendering.URL_SCHEMES:
                    self.outside.append(f"URL {value!r}")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.boxes:
            self.boxes -= 1
            return
        if tag not in rendering.TAGS:
            self.outside.append(f"end tag </{tag}>")

    def handle_comment(self, data: str) -> None:
        self.outside.append(f"comment {data!r}")

    def handle_decl(self, decl: str) -> None:
        self.outside.append(f"declaration {decl!r}")

    def unknown_decl(self, data: str) -> None:
        self.outside.append(f"declaration {data!r}")

    def handle_pi(self, data: str) -> None:
        self.outside.append(f"processing instruction {data!r}")


def outside_allow_list(html: str) -> list[str]:
    parser = AllowList()
    parser.feed(html)
    parser.close()
    return parser.outside


HOSTILE = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)" onclick="alert(2)">x</a>',
    "<svg onload=alert(1)><circle r=1 /></svg>",
    "<svg><a xlink:href='javascript:alert(1)'><text>x</text></a></svg>",
    "<math><mi xlink:href='javascript:alert(1)'>x</mi></math>",
    '<iframe src="javascript:alert(1)"></iframe>',
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<style>body{display:none}</style>",
    "<object data='data:text/html,<script>alert(1)</script>'></object>",
    "<embed src=javascript:alert(1)>",
    "<form action=javascript:alert(1)><button>go</button></form>",
    "<base href='javascript:/'>",
    "<meta http-equiv=refresh content='0;url=javascript:alert(1)'>",
    "<link rel=stylesheet href=//evil.example/x.css>",
    "<!-- <script>alert(1)</script> -->",
    "<![CDATA[<script>alert(1)</script>]]>",
    "<?xml version='1.0'?><x/>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&#60;script&#62;alert(1)&#60;/script&#62;",
    "&#x3C;img src=x onerror=alert(1)&#x3E;",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](  javascript:alert(1)  )",
    "[x](<javascript:alert(1)>)",
    "[x](java\tscript:alert(1))",
    "[x](java&#x09;script:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](javascript&colon;alert(1))",
    "[x](jav\u200bascript:alert(1))",
    "[x](\x00javascript:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](file:///etc/passwd)",
    "[x](//evil.example/path)",
    "[x](/admin/auth/user/)",
    "[x](#m-3)",
    '[x](http://example.com "t\\" onmouseover=\\"alert(1)")',
    '[x](http://example.com/"onmouseover="alert(1))',
    "![x](javascript:alert(1))",
    "![x](data:image/png;base64,iVBORw0KGgo=)",
    '![x" onerror="alert(1)](http://example.com/a.png)',
    "![<img src=x onerror=alert(1)>](http://example.com/a.png)",
    "[![x](http://example.com/a.png)](javascript:alert(1))",
    "[x][r]\n\n[r]: javascript:alert(1)",
    "[x][r]\n\n[r]: http://example.com 'title\" onclick=\"alert(1)'",
    "<javascript:alert(1)>",
    "<http://example.com/<script>>",
    "<data:text/html,<script>alert(1)</script>>",
    "<mailto:someone@example.com>",
    "<someone@example.com>",
    "> > > [x](javascript:alert(1))\n> <script>",
    "`` ` <script>alert(1)</script> ` ``",
    "```\n</code></pre><script>alert(1)</script>\n```",
    '```html" onclick="alert(1)\n<b>x</b>\n```',
    "*<b>*bold*</b>*",
    "***[x](javascript:alert(1))***",
    "| a | b |\n|:-|--:|\n| <script> | [x](javascript:alert(1)) |",
    "~~<s onclick=alert(1)>~~",
    "1. x\n2. <li onclick=alert(1)>",
    '<a href="http://example.com" target="_blank" rel="opener">x</a>',
    "\\<script\\>alert(1)\\</script\\>",
    "[<a href='javascript:alert(1)'>x</a>](http://example.com)",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_renders_nothing_outside_the_allow_list(text: str) -> None:
    html = rendering.markdown(text)

    assert outside_allow_list(html) == []


def test_the_allow_list_checker_sees_what_it_must_refuse() -> None:
    assert outside_allow_list('<p onclick="x">a</p>') == ["attribute onclick on <p>"]
    assert outside_allow_list("<img src=x>") == ["element <img>", "attribute src on <img>"]
    assert outside_allow_list('<a href="javascript:x" rel="nofollow noopener noreferrer">') == [
        "URL 'javascript:x'"
    ]
    assert outside_allow_list('<a href="/x" rel="nofollow noopener noreferrer">') == ["URL '/x'"]
    assert outside_allow_list("<!-- x -->") == ["comment ' x '"]
    assert outside_allow_list('<div class="md-table">x</div>') == [
        "element <div>",
        "attribute class on <div>",
        "end tag </div>",
    ]


FRAGMENTS = [
    "<", ">", "</", "/>", "<script>", "<img", "<svg", "<iframe", "<a href=", " onerror=",
    " onclick=", " style=", "'", '"', "`", "```", "~~", "*", "_", "[", "]", "(", ")", "![",
    "](", "<!--", "-->", "&", "&#", ";", "&lt;", "&#x3C;", "javascript:", "JaVaScRiPt:",
    "vbscript:", "data:", "data:text/html,", "http://", "https://", "mailto:", "//", "#",
    "\n", "\n\n", "> ", "    ", "\t", "|", "|-|", "1. ", "- ", "\\", "\x00", "\u200b",
]  # fmt: skip
markdownish = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=40).map("".join)


@given(st.text() | markdownish)
@example("[x](javascript:alert(1))")
def test_any_text_renders_nothing_outside_the_allow_list(text: str) -> None:
    html = rendering.markdown(text)

    assert outside_allow_list(html) == []


def test_markdown_reads_as_markup() -> None:
    html = rendering.markdown(
        "# Title\n\n**bold**, *em*, `code`, ~~gone~~\n\n"
        "```python\nprint('<hi>')\n```\n\n"
        "> quoted\n\n- one\n- two\n\n| a | b |\n|:-|--:|\n| 1 | 2 |\n\n"
        "[docs](https://example.com/docs) and ![a chart](https://example.com/c.png)"
    )

    assert "<h3>Title</h3>" in html  # the page's own headings stay above a message's
    assert "<strong>bold</strong>, <em>em</em>, <code>code</code>, <s>gone</s>" in html
    assert "<pre><code>print(&#x27;&lt;hi&gt;&#x27;)\n</code></pre>" in html
    assert "<blockquote>" in html
    assert "<li>one</li>" in html
    assert "<th>a</th>" in html
    assert '<div class="md-table" tabindex="0"><table>' in html  # scrolls when too wide
    assert "style" not in html  # a column's alignment would be an inline style: the CSP refuses
    assert '<a href="https://example.com/docs" rel="nofollow noopener noreferrer">docs</a>' in html
    assert (
        '<a href="https://example.com/c.png" rel="nofollow noopener noreferrer">'
        "image: a chart</a>" in html
    )
    assert "<img" not in html


def test_raw_html_is_text_with_its_quotes_escaped() -> None:
    html = rendering.markdown('<a href="javascript:alert(1)">x</a> and <b>bold</b>')

    assert html == (
        "<p>&lt;a href=&quot;javascript:alert(1)&quot;&gt;x&lt;/a&gt; and "
        "&lt;b&gt;bold&lt;/b&gt;</p>\n"
    )


def test_a_link_with_no_allowed_scheme_loses_its_href() -> None:
    html = rendering.markdown("[in this site](/admin/) [elsewhere](//evil.example/)")

    assert "href" not in html
    assert "in this site" in html
    assert "elsewhere" in html


def test_too_long_or_too_bracketed_text_is_shown_as_text() -> None:
    assert rendering.renders("x" * rendering.MAX_CHARS)
    assert not rendering.renders("x" * (rendering.MAX_CHARS + 1))
    assert not rendering.renders("[" * (rendering.MAX_BRACKETS + 1))


def test_text_of_too_many_lines_or_table_cells_is_shown_as_text() -> None:
    """From the security hunt: 20,000 characters of table rows or list items took markdown
    seconds to read (a page of them tied a worker up for 90 s); their count bounds it."""
    rows = "a|b\n-|-\n" + "|\n" * (rendering.MAX_CELLS - 2)

    assert rendering.renders("x\n" * rendering.MAX_LINES)
    assert not rendering.renders("x\n" * (rendering.MAX_LINES + 1))
    assert rendering.renders(rows)
    assert not rendering.renders(rows + "|")


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_lines_ended_by_a_carriage_return_are_counted_too(ending: str) -> None:
    """From the review: markdown ends a line at a lone carriage return as well."""
    assert rendering.renders(f"- item{ending}" * rendering.MAX_LINES)
    assert not rendering.renders(f"- item{ending}" * (rendering.MAX_LINES + 1))


# What a message's view holds.


def test_facts_read_as_one_quiet_line() -> None:
    facts = presenters.message_facts(
        {
            "time": "2026-02-23T14:05:31.250+01:00",
            "model": "gpt-5-codex",
            "usage": {"input": 1204, "output": 88, "cached": 1000, "reasoning": 40, "total": 1292},
            "latency_ms": 1234,
            "finish_reason": "stop",
        }
    )

    assert [f.text for f in facts] == [
        "2026-02-23 13:05",
        "gpt-5-codex",
        "1,204 in (1,000 cached) / 88 out (40 reasoning) tokens",
        "1.2 s",
        "stop",
    ]
    assert facts[0].datetime == "2026-02-23T13:05:31.250000+00:00"
    assert facts[0].title == "2026-02-23 13:05:31 UTC"
    assert (
        facts[2].title == "Tokens: input 1,204, output 88, cached 1,000, reasoning 40, total 1,292"
    )


@pytest.mark.parametrize(
    ("facts", "line"),
    [
        (None, []),
        ("stop", []),
        ({}, []),
        ({"time": "yesterday-ish"}, ["yesterday-ish"]),
        ({"time": "2026-02-23 14:05:59"}, ["2026-02-23 14:05"]),
        ({"usage": {"total": 5000}}, ["5,000 tokens"]),
        ({"usage": {"input": True, "output": "many", "total": -1}}, []),
        ({"latency_ms": 850}, ["850 ms"]),
        ({"latency_ms": 65_400.5}, ["65 s"]),
        ({"latency_ms": float("nan"), "model": 7, "finish_reason": ["stop"]}, []),
        ({"model": "m" * 100}, ["m" * 79 + "…"]),
    ],
)
def test_facts_of_the_wrong_shape_are_left_out(facts: object, line: list[str]) -> None:
    assert [f.text for f in presenters.message_facts(facts)] == line


# The conversation page.


def article(html: str, index: int) -> str:
    match = re.search(rf'<article id="m-{index}".*?</article>', html, re.DOTALL)
    assert match, f"message {index} is not on the page"
    return match.group(0)


def test_user_and_assistant_text_render_as_markdown_and_keep_their_text(client: Client) -> None:
    conversation = store(
        [user("Please **fix** `main.py`"), assistant(content="Done:\n\n```py\nx = 1\n```")]
    )

    html = client.get(f"/c/{conversation.pk}/").text

    asked = article(html, 0)
    rendered = '<div class="md" dir="auto"><p>Please <strong>fix</strong> <code>main.py</code></p>'
    assert rendered in asked
    assert '<div class="text" dir="auto">Please **fix** `main.py`</div>' in asked  # shown "as text"
    assert '<button type="button" class="as-text" aria-pressed="false">As text</button>' in asked
    answered = article(html, 1)
    assert "<pre><code>x = 1\n</code></pre>" in answered


def test_raw_html_in_a_message_stays_escaped_text(client: Client) -> None:
    hostile = "<script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3))"
    conversation = store([user(hostile), assistant(content=hostile)])

    html = client.get(f"/c/{conversation.pk}/").text

    for index in (0, 1):
        message = article(html, index)
        assert "<script" not in message
        assert "<img" not in message
        assert "javascript:alert(3)" in message  # as words, never as a link
        assert 'href="javascript' not in message
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in message


def test_tool_results_and_system_text_stay_text_and_json_results_are_indented(
    client: Client,
) -> None:
    conversation = store(
        [
            {"role": "system", "content": "You are **terse**.", "metadata": {}},
            assistant("c1", "c2"),
            result("c1", '{"city":"Paris","temps":[1,2]}'),
            result("c2", "**not** markdown"),
        ]
    )

    html = client.get(f"/c/{conversation.pk}/").text

    assert '<div class="text" dir="auto">You are **terse**.</div>' in article(html, 0)
    assert "<strong>" not in article(html, 0)
    assert 'class="as-text"' not in article(html, 0)
    indented = json.dumps({"city": "Paris", "temps": [1, 2]}, indent=2).replace('"', "&quot;")
    assert f'<pre class="json bounded" tabindex="0">{indented}</pre>' in article(html, 2)
    assert '<div class="text" dir="auto">**not** markdown</div>' in article(html, 3)


def test_call_arguments_and_the_raw_message_scroll_in_bounded_boxes(client: Client) -> None:
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"a":1}'}}],
    }
    conversation = store([turn])

    html = article(client.get(f"/c/{conversation.pk}/").text, 0)

    assert '<pre class="json bounded" tabindex="0">{\n  &quot;a&quot;: 1\n}</pre>' in html
    # no link inside the summary
    assert '<summary>Call <code>c1</code> · <span class="call-name">f</span></summary>' in html
    assert '<span class="badge badge-unanswered">no result</span>' in html
    assert '<summary>Raw JSON</summary><pre class="json bounded" tabindex="0">' in html
    assert '<button type="button" class="copy" data-copy="json">Copy JSON</button>' in html


def test_a_long_message_is_folded_with_its_size_on_the_button(client: Client) -> None:
    long = "A line of a long message, long enough to wrap.\n" * 1300  # 61,100 bytes
    conversation = store([user("short"), result("c1", long), user("é" * 3100)])

    html = client.get(f"/c/{conversation.pk}/").text

    short = article(html, 0)
    assert 'class="content"' in short
    assert "show-all" not in short
    folded = article(html, 1)
    assert '<div class="content is-folded" id="m-1-content">' in folded
    assert (
        '<button type="button" class="show-all" aria-expanded="false" aria-controls="m-1-content"'
        ' data-label="Show all (60 KB)">Show all (60 KB)</button>'
    ) in folded
    content = folded.split('id="m-1-content">')[1].split("</div>")[0]
    assert content.count("A line of a long message") == 1300  # all of it is in the page
    assert "Show all (6.1 KB)" in article(html, 2)  # 3,100 characters of two bytes: 31 lines


def test_a_long_message_is_sent_once_and_its_raw_json_when_asked(client: Client) -> None:
    long = "A line of a long tool result.\n" * 2000  # 60,000 bytes
    conversation = store([user("short"), result("c1", long)])

    stored = json.dumps(
        {"role": "tool", "content": long, "metadata": {"tool_call_id": "c1"}},
        indent=2,
        ensure_ascii=False,
    )

    html = client.get(f"/c/{conversation.pk}/").text

    assert html.count("A line of a long tool result.") == 2000, "its text, not its JSON too"
    raw = article(html, 1).split('<details class="raw"')[1]
    assert raw.startswith(f' data-src="/c/{conversation.pk}/m/1/json?id=')
    assert f"<summary>Raw JSON ({kb(len(stored))}, loaded when opened)</summary>" in raw
    assert kb(len(stored)) == "61 KB"
    assert '<summary>Raw JSON</summary><pre class="json bounded" tabindex="0">{' in article(
        html, 0
    ), "a short message's is in the page"

    answer = client.get(f"/c/{conversation.pk}/m/1/json")

    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/json"
    assert answer.text == stored


def test_a_long_messages_json_asked_after_a_write_moved_it_says_so_not_anothers(
    client: Client,
) -> None:
    long = "A line of a long tool result.\n" * 2000
    conversation = store([user("first"), result("c1", long), result("c2", "B" * 20_000)])
    html = client.get(f"/c/{conversation.pk}/").text
    source = article(html, 1).split('data-src="')[1].split('"')[0].replace("&amp;", "&")

    services.delete_message(conversation_id=conversation.pk, index=0, via="admin", by="staff")
    answer = client.get(source)

    assert answer.status_code == 409
    assert "no longer the one this page showed" in answer.text
    assert '"c2"' not in answer.text


def test_a_message_json_past_the_end_or_of_a_conversation_hidden_from_you_is_404(
    client: Client,
) -> None:
    conversation = store([user("mine")])
    stranger = Client()
    stranger.force_login(User.objects.create_user("stranger"))

    assert client.get(f"/c/{conversation.pk}/m/1/json").status_code == 404
    assert client.get(f"/c/{conversation.pk}/m/{2**63}/json").status_code == 404
    assert stranger.get(f"/c/{conversation.pk}/m/0/json").status_code == 404
    assert client.get(f"/c/{conversation.pk}/m/0/json").status_code == 200


def test_the_facts_line_sits_under_the_role(client: Client) -> None:
    facts = {
        "time": "2026-02-23T14:05:00Z",
        "model": "gpt-5-codex",
        "usage": {"input": 1204, "output": 88},
        "latency_ms": 1200,
        "finish_reason": "stop",
    }
    turn = {"role": "assistant", "content": "hi", "metadata": {"facts": facts}}
    conversation = store([turn, user("<b>no facts</b>")])

    html = client.get(f"/c/{conversation.pk}/").text

    assert (
        '<p class="facts"><time datetime="2026-02-23T14:05:00+00:00" title="2026-02-23 14:05:00'
        ' UTC">2026-02-23 14:05</time> · gpt-5-codex · <span title="Tokens: input 1,204, output'
        ' 88">1,204 in / 88 out tokens</span> · 1.2 s · stop</p>'
    ) in article(html, 0)
    assert 'class="facts"' not in article(html, 1)


def test_facts_are_escaped(client: Client) -> None:
    facts = {"model": "<script>alert(1)</script>", "finish_reason": '"><img src=x>'}
    conversation = store([{"role": "assistant", "content": "hi", "metadata": {"facts": facts}}])

    html = article(client.get(f"/c/{conversation.pk}/").text, 0)

    assert "&lt;script&gt;alert(1)&lt;/script&gt; · &quot;&gt;&lt;img src=x&gt;" in html
