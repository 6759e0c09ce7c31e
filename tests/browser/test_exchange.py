"""Transcripts in and out through a real browser, under the real CSP, against a live server:
the upload page (several files in one go, all or none, with its progress bar), the
sendability section of a conversation, and the export links. Every test fails on any
console error or CSP violation (tests/browser/conftest.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import FilePayload, Page, expect
from pytest_django.live_server_helper import LiveServer

from buffers import healing, services
from buffers.healing import formats
from buffers.models import Conversation
from buffers.transcripts import read_transcript
from tests.buffers import acting_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CALL = {"type": "function", "function": {"name": "weather", "arguments": '{"city": "Rome"}'}}

# A run that crashed after its tool_use: no tool_result came back.
ANTHROPIC_CRASH: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 512,
    "system": "You are terse.",
    "messages": [
        {"role": "user", "content": "Weather in Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_rome", "name": "weather", "input": {"c": "Rome"}},
            ],
        },
    ],
}

# Gemini names no call ids: the reader gives the call one (gemini-<turn>-<ordinal>).
GEMINI_CRASH: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "Weather in Oslo?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"c": "Oslo"}}}]},
    ]
}

# Two OpenAI Chat bodies, one a line: a quiet run and a crashed one.
OPENAI_CHAT_RUNS: list[dict[str, Any]] = [
    {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    },
    {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "2 + 2?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_sum", **CALL}]},
        ],
    },
]

# An OpenAI Chat run that declared c1 and c2; c1's result came back, then the loop died.
OPENAI_CHAT_CRASH: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Rome and Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", **CALL}, {"id": "c2", **CALL}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
    ],
}


def as_json(document: object) -> bytes:
    return json.dumps(document).encode()


def as_jsonl(documents: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(document) + "\n" for document in documents).encode()


def transcript(name: str, body: bytes) -> FilePayload:
    return {"name": name, "mimeType": "application/json", "buffer": body}


def imported(document: object, name: str = "x.json") -> Conversation:
    [conversation] = services.import_conversations(
        read_transcript(as_json(document), name=name).conversations,
        via="tests",
        owner=acting_user(),
    )
    return conversation


def user_turn(conversation: Conversation, text: str) -> None:
    services.append_messages(
        conversation_id=conversation.pk,
        messages=healing.parse_messages([{"role": "user", "content": text}], appendable=True),
        via="tests",
    )


def mark_page(page: Page) -> None:
    """Tag this document, so that a test can tell a swap from a reload."""
    page.evaluate("window.loadedOnce = true")


def still_same_page(page: Page) -> bool:
    return bool(page.evaluate("window.loadedOnce === true"))


def test_several_transcripts_in_different_formats_import_in_place_and_link_to_their_calls(
    page: Page, live_server: LiveServer
) -> None:
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Import transcripts").click()
    expect(page).to_have_url(f"{live_server.url}/import")
    mark_page(page)

    page.get_by_label("Transcript files").set_input_files(
        [
            transcript("anthropic run.json", as_json(ANTHROPIC_CRASH)),
            transcript("gemini run.json", as_json(GEMINI_CRASH)),
            transcript("chat runs.jsonl", as_jsonl(OPENAI_CHAT_RUNS)),
        ]
    )
    page.get_by_role("button", name="Import").click()

    result = page.locator("#upload-result")
    expect(result).to_contain_text("Imported 4 conversations:")
    rows = result.locator("tbody tr")
    expect(rows).to_have_count(4)
    expected = [
        ("anthropic run", "anthropic", "3", "1 unanswered"),
        ("gemini run", "gemini", "2", "1 unanswered"),
        ("chat runs line 1", "openai-chat", "2", "0"),
        ("chat runs line 2", "openai-chat", "2", "1 unanswered"),
    ]
    for row, (title, kind, count, unanswered) in zip(rows.all(), expected, strict=True):
        cells = [title, formats.label(kind), count, unanswered]
        expect(row.locator("td")).to_have_text(cells)
    expect(result).to_contain_text("read as Anthropic Messages")
    assert page.url == f"{live_server.url}/import"
    assert still_same_page(page)
    stored = Conversation.objects.order_by("pk").values_list("title", "source_format")
    assert [(title, kind) for title, kind, *_ in expected] == list(stored)

    result.get_by_role("link", name="anthropic run").click()

    anthropic_run = Conversation.objects.get(title="anthropic run")
    expect(page).to_have_url(f"{live_server.url}/c/{anthropic_run.pk}/")
    expect(page.locator("#summary")).to_contain_text("1 unanswered call")
    call_turn = page.locator("#m-2")  # #0 is the row made from the "system" field
    expect(call_turn).to_have_class(re.compile(r"\bhas-unanswered\b"))
    expect(call_turn).to_contain_text("unanswered call toolu_rome")


def test_one_bad_file_imports_nothing_and_each_bad_file_is_named_with_its_place(
    page: Page, live_server: LiveServer
) -> None:
    page.goto(f"{live_server.url}/import")
    mark_page(page)

    page.get_by_label("Transcript files").set_input_files(
        [
            transcript("good.json", as_json(ANTHROPIC_CRASH)),
            transcript("broken.jsonl", as_jsonl(OPENAI_CHAT_RUNS[:1]) + b'{"messages": [\n'),
            transcript(
                "latin1.json",
                '{"messages": [{"role": "user", "content": "café"}]}'.encode("latin-1"),
            ),
        ]
    )
    page.get_by_role("button", name="Import").click()

    result = page.locator("#upload-result")
    expect(result).to_contain_text("Nothing was imported.")
    problems = result.locator("ul.problems li")
    expect(problems).to_have_count(2)
    expect(problems.nth(0)).to_contain_text("broken.jsonl: line 2, column 15: is not JSON")
    expect(problems.nth(1)).to_contain_text("latin1.json: is not UTF-8 text (byte 46)")
    expect(result.locator("table")).to_have_count(0)
    expect(page.locator("#upload-status")).to_have_text("")
    assert still_same_page(page)
    assert Conversation.objects.count() == 0


def test_a_large_upload_shows_its_progress_while_it_is_sent(
    page: Page, live_server: LiveServer
) -> None:
    text = "lorem ipsum " * 200_000  # 2.4 MB in one tool result
    messages = [
        *OPENAI_CHAT_CRASH["messages"][:3],
        {"role": "tool", "tool_call_id": "c1", "content": text},
    ]
    body = as_json({**OPENAI_CHAT_CRASH, "messages": messages})
    page.goto(f"{live_server.url}/import")
    # On localhost the whole body is sent at once and the browser reports only 100%: at
    # 4 MB/s (DevTools throttling) the upload takes over half a second, in steps.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 4 << 20},
    )
    # What the page showed each time htmx reported progress: this listener is added after
    # app.js's, so it sees what app.js made of the event.
    page.evaluate(
        """() => {
        window.progressSeen = [];
        window.statusAtLoadEnd = [];
        document.body.addEventListener("htmx:xhr:loadend", () => {
            window.statusAtLoadEnd.push(document.getElementById("upload-status").textContent);
        });
        document.body.addEventListener("htmx:xhr:progress", (event) => {
            const bar = document.getElementById("upload-progress");
            window.progressSeen.push({
                computable: event.detail.lengthComputable,
                loaded: event.detail.loaded,
                total: event.detail.total,
                barShown: !bar.hidden,
                barValue: bar.value,
                status: document.getElementById("upload-status").textContent,
                buttonDisabled: document.querySelector(".upload-form button").disabled,
            });
        });
    }"""
    )

    page.get_by_label("Transcript files").set_input_files([transcript("big.json", body)])
    page.get_by_role("button", name="Import").click()

    expect(page.locator("#upload-result")).to_contain_text("Imported 1 conversation:")
    seen: list[dict[str, Any]] = page.evaluate("window.progressSeen")
    upload = [event for event in seen if event["total"] > len(body)]  # not the answer's
    percents = [round(100 * event["loaded"] / event["total"]) for event in upload]
    assert any(percent < 100 for percent in percents), f"no progress before the end: {seen}"
    assert percents == sorted(percents)
    assert percents[-1] == 100
    for event, percent in zip(upload, percents, strict=True):
        assert event["computable"]
        assert event["barShown"]
        assert event["barValue"] == percent
        assert event["status"] == f"Sending… {percent}%"
        assert event["buttonDisabled"]
    # Once the body is sent (the upload's loadend, the first), the server is importing.
    assert page.evaluate("window.statusAtLoadEnd")[0] == "Importing…"
    expect(page.locator("#upload-progress")).to_be_hidden()
    expect(page.locator("#upload-status")).to_have_text("")
    expect(page.get_by_role("button", name="Import")).to_be_enabled()
    assert Conversation.objects.get().message_count == 4


def test_the_sendability_section_shows_the_stored_verdicts_explains_on_demand_and_updates_in_place(
    page: Page, live_server: LiveServer
) -> None:
    conversation = imported(OPENAI_CHAT_CRASH)
    response = page.goto(f"{live_server.url}/c/{conversation.pk}/")
    assert response is not None
    assert "OpenAI would reject this history: 1 rejection." in response.text()  # stored
    mark_page(page)

    section = page.get_by_role("region", name="Sendability")
    expect(section.locator("li.rejected")).to_have_count(4)
    section.get_by_role("link", name="Why, message by message").click()
    expect(section).to_contain_text(
        "OpenAI would reject this: call c2 at message 2 has no result directly after its turn"
    )
    section.locator("li.rejected").first.get_by_text("Message by message").click()
    expect(section.get_by_role("link", name="message 2").first).to_have_attribute(
        "href", f"/c/{conversation.pk}/?at=2#m-2"
    )

    page.get_by_label("Your turn").fill("Still there?")
    page.get_by_role("button", name="Send user turn").click()

    expect(page.locator("#m-3")).to_contain_text("synthetic: healed placeholder")
    expect(section).to_contain_text("OpenAI would accept this history.")
    expect(section.locator("li.accepted")).to_have_count(4)
    expect(section).not_to_contain_text("would reject")
    assert still_same_page(page)


def test_a_runtime_file_that_cannot_be_written_back_opens_a_page_saying_why(
    page: Page, live_server: LiveServer, console_errors: list[str]
) -> None:
    """When the writer refuses (a 2025 Codex rollout), the conversation's page says why and
    offers no download; the download's address, kept from before, answers with a page
    with the reason, not a failed download."""
    legacy = Path(__file__).resolve().parent.parent / "fixtures" / "codex" / "legacy.jsonl"
    [conversation] = services.import_conversations(
        read_transcript(legacy.read_bytes(), name="legacy.jsonl").conversations,
        via="tests",
        owner=acting_user(),
    )
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    expect(page.locator(".native-export")).to_contain_text(
        "Not written back as a Codex CLI rollout: was read from a 2025 Codex rollout"
    )
    expect(page.get_by_role("link", name=re.compile(r"Download as .*Codex.*healed"))).to_have_count(
        0
    )

    page.goto(f"{live_server.url}/c/{conversation.pk}/export/codex")

    expect(page.get_by_role("heading", level=1)).to_contain_text("cannot be written as")
    expect(page.locator("main")).to_contain_text("not written back in that layout")
    # the browser reports the page's status (422), which is the point: nothing else
    assert [e for e in console_errors if "status of 422" not in e] == []
    console_errors.clear()


def test_the_anthropic_export_link_downloads_the_healed_buffer_in_anthropic_shape(
    page: Page, live_server: LiveServer
) -> None:
    conversation = imported(ANTHROPIC_CRASH, name="rome.json")
    user_turn(conversation, "Still there?")
    page.goto(f"{live_server.url}/c/{conversation.pk}/")

    exports = page.get_by_role("navigation", name="Export")
    with page.expect_download() as download_info:
        exports.get_by_role("link", name="Anthropic Messages").click()
    download = download_info.value

    assert download.failure() is None
    assert download.suggested_filename == f"rome-{conversation.pk}-anthropic.json"
    document = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert document["model"] == "claude-sonnet-4-5"  # the fields it came with go back
    assert document["system"] == "You are terse."
    assert [message["role"] for message in document["messages"]] == ["user", "assistant", "user"]
    call_turn, answers = document["messages"][1:]
    assert [block["type"] for block in call_turn["content"]] == ["text", "tool_use"]
    [result, turn] = answers["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_rome"
    assert turn == {"type": "text", "text": "Still there?"}
    assert page.url == f"{live_server.url}/c/{conversation.pk}/"  # a download, not a visit
