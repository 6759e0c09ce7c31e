"""Full-text search (issue 15, item 1): which words find which messages, what of a message
is text, the index kept by every write, snippets that stay escaped, searches that never
show what the caller may not see, and a fixed number of SQL queries. Run on SQLite (FTS5)
and PostgreSQL (tsvector and GIN): both must answer alike."""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from buffers import search, services
from buffers.models import Conversation, Message
from tests.buffers import assistant, placeholder, result, signed_in, store, user

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


def hits(conversation: Conversation, query: str) -> list[int]:
    """The indexes of the conversation's messages that the query finds, in buffer order."""
    return search.hit_indexes(conversation, search.terms(query))


def found(query: str) -> set[str]:
    """The titles of the conversations that the query finds (title, source or a message),
    the same whether the words are rare (the matching ids are collected first) or common
    (each conversation is checked as the list reaches it, past the cap or when the
    sample of recent conversations says so)."""

    def titles(cap: int | None = None, common_share: float | None = None) -> set[str]:
        matching = search.matching_conversations(
            search.terms(query), cap=cap, common_share=common_share
        )
        titles = Conversation.objects.filter(matching.condition).values_list("title", flat=True)
        return set(titles)

    rare = titles(common_share=2)  # never common by the sample
    assert titles() == rare
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search.listing, "SCAN_FROM", 0)
        assert titles(common_share=2) == rare, "the ids found by walking the list (SQLite)"
    assert titles(cap=-1, common_share=2) == rare, "as a word past the cap"
    # a share of none of the sample is common
    assert titles(common_share=0) == rare, "as the sample finds common"
    return rare


def index_rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM buffers_messagesearch")
        count: int = cursor.fetchone()[0]
    return count


def api_search(client: Client, conversation: Conversation, **query: Any) -> dict[str, Any]:
    answer = client.get(f"/api/conversations/{conversation.pk}/search", query)
    assert answer.status_code == 200, answer.content
    body: dict[str, Any] = answer.json()
    return body


def api_list(client: Client, query: str) -> dict[str, dict[str, Any] | None]:
    """Each conversation the API's list finds, by title, with its match."""
    answer = client.get("/api/conversations", {"q": query})
    assert answer.status_code == 200, answer.content
    return {c["title"]: c["match"] for c in answer.json()["conversations"]}


def listed(client: Client, query: str) -> list[str]:
    """The titles the list page shows for a search."""
    html = client.get("/", {"q": query}).text
    return re.findall(r'<td><a href="/c/\d+/">([^<]+)</a>', html)


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "metadata": {"tool_calls": [{"id": call_id, "name": name, "args": arguments}]},
    }


# Which words find which messages.


def test_a_word_of_two_letters_or_more_finds_the_words_it_begins_and_no_other() -> None:
    conversation = store(
        [
            user("the weather in Paris"),
            user("we were there"),
            user("a weathervane"),
            user("feather"),
        ]
    )

    assert hits(conversation, "weath") == [0, 2]
    assert hits(conversation, "we") == [0, 1, 2]
    assert hits(conversation, "weathervane") == [2]
    assert hits(conversation, "eather") == []  # not inside a word
    assert hits(conversation, "weathervanes") == []


def test_a_word_of_one_letter_finds_only_itself() -> None:
    conversation = store([user("plan b"), user("bravo"), user("a b c")])

    assert hits(conversation, "b") == [0, 2]


def test_every_word_of_a_query_must_be_in_the_message_in_any_order() -> None:
    conversation = store([user("the weather in Paris"), user("Paris in spring"), user("weather")])

    assert hits(conversation, "paris weather") == [0]
    assert hits(conversation, "weather paris london") == []


def test_case_does_not_matter() -> None:
    conversation = store([user("The Weather Report"), user("WEATHERMAN on air")])

    assert hits(conversation, "WEATHER") == [0, 1]
    assert hits(conversation, "weatherman") == [1]
    assert hits(conversation, "rEpOrT") == [0]


def test_punctuation_and_underscores_only_separate_words() -> None:
    conversation = store(
        [
            user("/usr/bin/python3 failed: exit-code=2"),
            user("read_file(path='notes.md')"),
            user("e-mail me at ada@example.org"),
        ]
    )

    assert hits(conversation, "python3") == [0]
    assert hits(conversation, "bin") == [0]
    assert hits(conversation, "usr/bin/python3") == [0]
    assert hits(conversation, "exit code") == [0]
    assert hits(conversation, "read_file") == [1]
    assert hits(conversation, "file") == [1]
    assert hits(conversation, "notes.md") == [1]
    assert hits(conversation, "example.org") == [2]
    assert hits(conversation, "email") == []  # "e-mail" is two words


def test_words_in_any_script_are_found_by_their_own_letters() -> None:
    conversation = store(
        [
            user("Die Größe der Datei"),
            user("Привет, мир"),
            user("東京タワー にいます"),
            user("un café crème"),
            user("straße 42b"),
        ]
    )

    assert hits(conversation, "GRÖ") == [0]
    assert hits(conversation, "größe") == [0]
    assert hits(conversation, "ПРИВЕТ") == [1]
    assert hits(conversation, "мир") == [1]
    assert hits(conversation, "東京") == [2]
    assert hits(conversation, "café") == [3]
    assert hits(conversation, "crè") == [3]
    assert hits(conversation, "42b") == [4]
    assert hits(conversation, "stra") == [4]


def test_text_written_without_spaces_is_found_by_the_start_of_each_run() -> None:
    """A known limit (README, decisions.md): a run of letters is one word, so Japanese,
    Chinese or Thai text is found by the start of a run, not by a word inside it."""
    conversation = store([user("東京タワーに行きます"), user("สวัสดีครับ")])

    assert hits(conversation, "東京") == [0]
    assert hits(conversation, "สวัสดี") == [1]
    assert hits(conversation, "タワー") == []  # inside the run: not found
    assert hits(conversation, "ครับ") == []


def test_a_word_with_combining_marks_is_one_word_however_it_is_composed(client: Client) -> None:
    conversation = store(
        [
            user("हिन्दी पाठ"),  # Devanagari: its vowel signs are combining marks
            user("ह न द"),  # the letters of that word, apart
            user(unicodedata.normalize("NFD", "un café naïve")),  # as macOS writes names
        ]
    )

    assert hits(conversation, "हिन्दी") == [0]
    assert hits(conversation, "café") == [2]
    answer = client.get(f"/c/{conversation.pk}/search", {"q": "हिन्दी"}, headers=HX)
    assert "1 of 1" in answer.text


def test_the_list_finds_a_word_with_combining_marks_in_a_message() -> None:
    store([user("हिन्दी पाठ")], title="in a message")
    store([user("ह न द")], title="its letters apart")
    store([user(unicodedata.normalize("NFD", "un café"))], title="decomposed")

    assert found("हिन्दी") == {"in a message"}
    assert found("हि") == {"in a message"}, "a prefix, ending in a mark"
    assert found("café") == {"decomposed"}
    assert found(unicodedata.normalize("NFD", "café")) == {"decomposed"}


def test_a_snippet_marks_a_decomposed_word_found_by_its_composed_spelling() -> None:
    conversation = store([user(unicodedata.normalize("NFD", "le café est fermé"))])

    (hit,) = search.first_hits([conversation.pk], search.terms("café")).values()

    assert "<mark>café</mark>" in hit.snippet.html


def test_a_snippet_marks_a_word_with_a_dotted_capital_i_found_by_its_own_spelling() -> None:
    # Python lowers 'İ' to 'i' and a combining dot, which no case-blind match takes back.
    conversation = store([user("Trip to İstanbul today")])

    (hit,) = search.first_hits([conversation.pk], search.terms("İstanbul")).values()

    assert "<mark>İstanbul</mark>" in hit.snippet.html


def test_a_dotted_capital_i_is_found_by_a_plain_i(client: Client) -> None:
    """Python lowers 'İ' to 'i' and a combining dot above: "İstanbul" was indexed as
    "i̇stanbul", which "istanbul" typed does not begin. Words hold a plain 'i' for it."""
    conversation = store([user("Trip to İSTANBUL and İzmir")], title="trip")
    store([user("nothing here")], title="İstanbul notes")

    for typed in ("istanbul", "ISTANBUL", "İstanbul", "izmir"):
        assert hits(conversation, typed) == [0], typed
    assert found("istanbul") == {"trip", "İstanbul notes"}
    assert found("İstanbul") == {"trip", "İstanbul notes"}
    (hit,) = search.first_hits([conversation.pk], search.terms("istanbul izmir")).values()
    assert "<mark>İSTANBUL</mark> and <mark>İzmir</mark>" in hit.snippet.html
    assert api_search(client, conversation, q="istanbul")["count"] == 1


def test_a_word_with_a_soft_hyphen_is_one_word(client: Client) -> None:
    """A soft hyphen (U+00AD) only says where a word may break at a line's end, and is not
    shown: "Zwei\u00adtausend" is the word "zweitausend", in text and in a query."""
    conversation = store([user("im Jahr Zwei\u00adtausend")], title="Jahr\u00adtausend")

    assert hits(conversation, "zweitausend") == [0]
    assert hits(conversation, "zwei\u00adtausend") == [0]
    assert hits(conversation, "tausend") == []
    assert found("jahrtausend") == {"Jahr\u00adtausend"}
    (hit,) = search.first_hits([conversation.pk], search.terms("zweitausend")).values()
    assert "<mark>Zweitausend</mark>" in hit.snippet.html


def test_words_that_are_operators_in_a_query_language_are_only_words() -> None:
    conversation = store([user("this AND that"), user("NOT near OR far"), user("plain")])

    assert hits(conversation, "and") == [0]
    assert hits(conversation, "NOT NEAR") == [1]
    assert hits(conversation, "or") == [1]
    assert hits(conversation, "this AND that") == [0]
    assert hits(conversation, "plain OR this") == []  # OR is a word that must be there too


def test_control_characters_in_a_query_only_separate_words(client: Client) -> None:
    conversation = store([user("the weather report")], title="forecast")

    for query in ("\x1bweather\x07", "weather\r\n\treport", "\x7fweath\x1b"):
        assert hits(conversation, query) == [0], repr(query)
        assert api_search(client, conversation, q=query)["count"] == 1, repr(query)
        assert list(api_list(client, query)) == ["forecast"], repr(query)
        assert listed(client, query) == ["forecast"], repr(query)
        answer = client.get(f"/c/{conversation.pk}/search", {"q": query}, headers=HX)
        assert answer.status_code == 200
        assert "1 of 1" in answer.text


@pytest.mark.parametrize("query", ["***", '"', "'", "-+.,;:()^*~!?", "“”", "_", "\x1b*\x07"])
def test_a_query_of_only_punctuation_finds_nothing_and_errs_nothing(
    client: Client, query: str
) -> None:
    conversation = store([user('the *** weather: "quoted" (it\'s -+.,;:()^*~!?) “” _')])

    assert hits(conversation, query) == []
    assert found(query) == set()
    assert api_search(client, conversation, q=query) == {
        "count": 0,
        "offset": 0,
        "limit": 100,
        "hits": [],
    }
    assert api_list(client, query) == {}
    assert listed(client, query) == []
    answer = client.get(f"/c/{conversation.pk}/search", {"q": query}, headers=HX)
    assert answer.status_code == 200
    assert answer["HX-Reswap"] == "none"


def test_a_query_reads_its_first_200_characters_and_8_words() -> None:
    conversation = store([user("one two three four five six seven eight nine")])

    assert search.terms("x" * 199 + " weather") == ["x" * 199]
    assert search.terms("one two three four five six seven eight nine ten") == [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
    ]
    assert hits(conversation, "one two three four five six seven eight zzz") == [0]


# What of a message is text.


def test_the_text_of_a_message_is_its_content_its_text_parts_and_its_tool_calls() -> None:
    conversation = store(
        [
            user("a plain string"),
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look at this pelican"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/heron.png"}},
                ],
                "metadata": {},
            },
            tool_call("call_zebra", "get_forecast", {"city": "Oslo"}),
            {
                "role": "assistant",
                "content": None,
                "metadata": {
                    "tool_calls": [
                        {
                            "id": "call_yak",
                            "type": "function",
                            "function": {
                                "name": "lookup_stock",
                                "arguments": '{"ticker": "ACME"}',
                            },
                        }
                    ]
                },
            },
            result("call_zebra", "sunny in Oslo"),
            {
                "role": "tool",
                "content": [{"type": "text", "text": "rainfall 3 mm"}],
                "metadata": {"tool_call_id": "call_yak"},
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_walrus",
                        "content": [{"type": "text", "text": "quarterly numbers"}],
                    }
                ],
                "metadata": {},
            },
        ]
    )

    assert hits(conversation, "plain string") == [0]
    assert hits(conversation, "pelican") == [1]
    assert hits(conversation, "get_forecast") == [2]
    assert hits(conversation, "oslo") == [2, 4]
    assert hits(conversation, "lookup stock") == [3]
    assert hits(conversation, "acme") == [3]
    assert hits(conversation, "rainfall") == [5]
    assert hits(conversation, "quarterly") == [6]


def test_a_tool_calls_arguments_are_read_as_json_their_escapes_as_the_characters_they_are() -> None:
    """Arguments come as a value or, OpenAI's way, as JSON text: both are read as JSON, so a
    newline written "\\n" and a letter written "\\u00fc" in that text are a line break and
    "ü", not the letters "n" and "u00fc" glued to the next word. The keys stay words, as
    the page shows them."""
    conversation = store(
        [
            user("write the script"),
            tool_call("call_1", "write_file", {"content": "import os\nprint(os.getcwd())"}),
            {
                "role": "assistant",
                "content": None,
                "metadata": {
                    "tool_calls": [
                        {
                            "id": "call_2",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": '{"city": "Z\\u00fcrich",\n "note": "first\\nsecond"}',
                            },
                        }
                    ]
                },
            },
            tool_call("call_3", "count", {"limit": 12345, "deep": [{"tag": "émigré"}]}),
            tool_call("call_4", "shell", "not json: ls\\nwc"),
        ]
    )

    assert hits(conversation, "print") == [1]
    assert hits(conversation, "getcwd") == [1]
    assert hits(conversation, "second") == [2]
    assert hits(conversation, "zürich") == [2]
    assert hits(conversation, "nprint") == []
    assert hits(conversation, "u00fcrich") == []
    assert hits(conversation, "city note") == [2], "the keys are words"
    assert hits(conversation, "12345 émigré deep tag") == [3]
    assert hits(conversation, "nwc") == [4], "text that is not JSON is read as it is"
    (hit,) = search.first_hits([conversation.pk], search.terms("zürich")).values()
    assert "city: <mark>Zürich</mark>" in hit.snippet.html


def test_ids_types_images_signatures_and_metadata_are_not_text() -> None:
    conversation = store(
        [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "https://example.com/heron.png"}},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/jpeg", "data": "R0lGOD"},
                    },
                    {"type": "text", "text": "see above"},
                ],
                "metadata": {"model": "gpt-zeta", "trace": "otter"},
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "pondering", "signature": "sigvalue"},
                    {
                        "type": "tool_use",
                        "id": "toolu_walrus",
                        "name": "get_time",
                        "input": {},
                        "cache_control": {"type": "ephemeral"},
                    },
                ],
                "metadata": {"tool_calls": [{"id": "call_zebra", "name": "get_date"}]},
            },
            result("call_zebra", "today"),
        ]
    )

    assert hits(conversation, "pondering") == [1]
    assert hits(conversation, "get_date") == [1]
    for not_text in (
        "heron",
        "example",
        "image",
        "ivborw0k",
        "base64",
        "jpeg",
        "r0lgod",
        "gpt zeta",
        "otter",
        "sigvalue",
        "toolu_walrus",
        "zebra",
        "ephemeral",
        "thinking",
        "tool_use",
        "text",
        "function",
    ):
        assert hits(conversation, not_text) == [], not_text


def test_a_tool_results_text_under_data_or_source_and_a_text_saying_data_colon_are_found() -> None:
    """``data`` and ``source`` hold a media part's bytes, and a data: URI is bytes too; but a
    REST answer holds its records under ``data``, a record may name its ``source``, and a
    line of text (server-sent events) may begin with "data:"."""
    conversation = store(
        [
            user("find news"),
            assistant("c1"),
            {
                "role": "tool",
                "content": {"data": [{"title": "Pelican landing", "source": "reuters"}]},
                "metadata": {"tool_call_id": "c1"},
            },
            {"role": "user", "content": [{"type": "text", "text": "data: revenue in Portugal"}]},
        ]
    )

    assert hits(conversation, "pelican") == [2]
    assert hits(conversation, "reuters") == [2]
    assert hits(conversation, "portugal") == [3]


# The index follows every write.


def test_an_import_is_searchable_at_once() -> None:
    conversation = store([user("first"), user("the zeppelin lands")], title="airships")

    assert hits(conversation, "zeppelin") == [1]
    assert found("zeppelin") == {"airships"}


def test_messages_appended_through_the_api_are_searchable(client: Client) -> None:
    conversation = store([user("go")])

    answer = client.post(
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [user("a brand new kumquat")]},
        content_type="application/json",
    )

    assert answer.status_code == 200, answer.content
    assert api_search(client, conversation, q="kumquat")["hits"] == [
        {"index": 1, "role": "user", "snippet": "a brand new kumquat"}
    ]


def test_placeholders_a_heal_inserts_are_searchable_and_later_messages_move_with_them() -> None:
    conversation = store([user("go"), assistant("c1"), user("after the crash")])

    services.heal_conversation(conversation_id=conversation.pk, via="tests")

    assert hits(conversation, "interrupted") == [2]
    assert hits(conversation, "crash") == [3]


def test_a_placeholder_replaced_by_a_late_result_is_searched_by_the_result(
    client: Client,
) -> None:
    conversation = store([user("go"), assistant("c1"), placeholder("c1"), user("more")])
    assert hits(conversation, "interrupted") == [2]

    answer = client.post(
        f"/api/conversations/{conversation.pk}/messages",
        {"messages": [result("c1", "the late marmalade")]},
        content_type="application/json",
    )

    assert answer.status_code == 200, answer.content
    assert answer.json()["replaced"], "the result replaced the placeholder"
    assert hits(conversation, "interrupted") == []
    assert hits(conversation, "marmalade") == [2]


def test_an_admin_edit_is_searched_by_its_new_text_only(admin_client: Client) -> None:
    conversation = store([user("go"), user("the old wording")])
    message = Message.objects.get(conversation=conversation, content="the old wording")

    answer = admin_client.post(
        f"/admin/buffers/message/{message.pk}/change/",
        {"role": "user", "content": '"the fresh phrasing"', "metadata": "{}", "reason": "typo"},
    )

    assert answer.status_code == 302, answer.content
    assert hits(conversation, "old wording") == []
    assert hits(conversation, "fresh phrasing") == [1]


def test_an_admin_delete_takes_the_message_out_of_the_index(admin_client: Client) -> None:
    conversation = store([user("the doomed line"), user("the surviving line")])
    message = Message.objects.get(conversation=conversation, content="the doomed line")
    before = index_rows()

    answer = admin_client.post(f"/admin/buffers/message/{message.pk}/delete/", {"post": "yes"})

    assert answer.status_code == 302
    assert hits(conversation, "doomed") == []
    assert hits(conversation, "surviving") == [0]
    assert index_rows() == before - 1


def test_a_deleted_conversation_leaves_nothing_in_the_index() -> None:
    kept = store([user("a shared word")], title="kept")
    gone = store([user("a shared word"), user("another line")], title="gone")
    assert index_rows() == 3

    gone.delete()

    assert found("shared") == {"kept"}
    assert found("gone") == set()
    assert index_rows() == 1
    assert hits(kept, "shared") == [0]


@pytest.mark.parametrize("fields", [None, ["title"]], ids=["saved", "saved-title-only"])
def test_a_renamed_conversation_is_found_by_its_new_title_only(fields: list[str] | None) -> None:
    conversation = store([user("hello")], title="draft name", source="notes.jsonl")

    conversation.title = "final report"
    conversation.save(update_fields=fields)

    assert found("draft") == set()
    assert found("final report") == {"final report"}
    assert found("notes jsonl") == {"final report"}
    assert found("final notes") == {"final report"}  # title and source together


def test_titles_and_sources_are_read_as_words_as_messages_are() -> None:
    store([user("hello")], title="Über den GRÖSSENWAHN", source="東京_export-v2.jsonl")

    assert found("über grössen") == {"Über den GRÖSSENWAHN"}
    assert found("ÜBER") == {"Über den GRÖSSENWAHN"}
    assert found("東京 export v2") == {"Über den GRÖSSENWAHN"}
    assert found("xport") == set()


@pytest.mark.parametrize(
    "title",
    [
        "İstanbul",  # Python lowers 'İ' to 'i' and a combining dot
        "ΟΔΟΣ",  # PostgreSQL lowered a final capital sigma to the middle form
        "x² fit",  # PostgreSQL dropped '²'
        "हिन्दी notes",  # PostgreSQL read the virama as punctuation
        unicodedata.normalize("NFD", "un café"),
    ],
)
def test_a_title_is_found_by_its_own_text_as_a_message_is(title: str) -> None:
    store([user("nothing here")], title=title)
    store([user(title)], title="in a message")

    assert found(title) == {title, "in a message"}


def test_a_greek_word_is_one_word_whichever_sigma_its_lowering_ends_in() -> None:
    """Python lowers a capital sigma by what follows it: "ΟΔΟΣ.COM" to "οδοσ.com" (a
    letter after the dot), "ΟΔΟΣ" alone to "οδος". SQLite's tokenizer folds the two sigmas
    together; PostgreSQL compares the words as made."""
    store([user("ΟΔΟΣ.COM")], title="a domain")
    store([user("nothing here")], title="ΟΔΟΣ.COM")
    store([user("η οδος")], title="typed small")

    assert found("ΟΔΟΣ") == {"a domain", "ΟΔΟΣ.COM", "typed small"}
    assert found("οδοσ") == {"a domain", "ΟΔΟΣ.COM", "typed small"}


@pytest.mark.parametrize(
    ("written", "typed"),
    [
        ("5 µs", "μs"),  # the micro sign and the Greek small mu
        ("5 μs", "µs"),
        ("\u017ftop", "stop"),  # a long s
        ("ϐeta", "βeta"),  # a curled beta
        ("ϑeta", "θeta"),
        ("ϕi", "φi"),
    ],
)
def test_a_letter_and_the_letter_sqlite_folds_it_to_are_one_letter(
    client: Client, written: str, typed: str
) -> None:
    """SQLite's tokenizer folds a few letters into others as it folds case (the micro sign
    into mu, a long s into s, Greek symbol forms into letters): there the index found one
    spelling by the other, where a conversation was checked by itself it did not, nor
    did PostgreSQL. Words hold the folded letter on both databases."""
    conversation = store([user(f"took {written}")], title="timings")
    store([user("nothing here")], title=f"runs in {written}")

    assert found(typed) == {"timings", f"runs in {written}"}
    assert found(written) == {"timings", f"runs in {written}"}
    assert hits(conversation, typed) == [0]
    assert listed(client, typed) == listed(client, written)
    assert api_search(client, conversation, q=typed)["count"] == 1


def test_a_long_message_is_searchable_far_into_its_text() -> None:
    conversation = store([user("word " * 30_000 + "needle " + "word " * 10_000)])

    assert hits(conversation, "needle") == [0]


# Snippets.


def test_a_snippet_shows_the_text_around_the_first_match_with_each_match_marked() -> None:
    text = "filler " * 200 + "the needle is here, needles everywhere " + "tail " * 200

    found_at = search.snippet(text, ["needle"])

    assert found_at.text.startswith("…filler filler ")  # from a word, with some before
    assert found_at.text.endswith(" tail…")
    assert "the needle is here, needles everywhere" in found_at.text
    assert len(found_at.text) <= search.SNIPPET_CHARS + 45
    assert "<mark>needle</mark> is here, <mark>needles</mark>" in found_at.html


def test_a_snippet_that_begins_inside_a_word_does_not_mark_the_cut_piece() -> None:
    """The snippet begins 53 characters before the match, here inside "xxxxxxxxxxweather":
    its tail "weather" is not a word of the text, and is not marked as one."""
    text = "xxxxxxxxxxweather/" + "-" * 44 + "/weather/report"

    cut = search.snippet(text, search.terms("weather"))

    assert [piece for piece, marked in cut.pieces if marked] == ["weather"]
    assert cut.text == "…weather/" + "-" * 44 + "/weather/report"
    assert cut.html.endswith("-/<mark>weather</mark>/report")


def test_a_snippet_that_ends_inside_a_word_does_not_mark_the_cut_piece() -> None:
    """From the review: the snippet's end, cut inside "xyz…", made its "x" look whole."""
    text = "x " + "-" * 157 + "xyz" + "-" * 40

    cut = search.snippet(text, search.terms("x"))

    assert [piece for piece, marked in cut.pieces if marked] == ["x"]


def test_a_listed_snippet_of_a_decomposed_word_with_a_soft_hyphen_marks_the_word(
    client: Client,
) -> None:
    """From the review: the snippet composed its text before dropping the soft hyphen, as
    words and queries do not, and so marked nothing."""
    store([user("un cafe\u00ad\u0301 noir")], title="menu")

    assert "<mark>café</mark>" in client.get("/", {"q": "café"}).text


def test_a_call_whose_arguments_escape_a_character_no_database_stores_is_listed(
    client: Client,
) -> None:
    """From the review: read as JSON, arguments escaping a lone surrogate or U+0000 put the
    character itself into the words and the snippet, and the list page was a 500."""
    arguments = '{"q": "weather \\ud800 report \\u0000 today"}'
    store([tool_call("c1", "search", arguments)], title="odd")

    page = client.get("/", {"q": "weather"})

    match = api_list(client, "weather")["odd"]
    assert page.status_code == 200
    assert match is not None
    assert "\ufffd report" in match["snippet"]


def test_a_snippet_escapes_the_text_and_marks_only_the_matches(client: Client) -> None:
    hostile = "<script>alert('weather')</script> <b onmouseover=x>weather</b> & <mark>"
    conversation = store([user(hostile)], title="hostile")

    html = client.get("/", {"q": "weather"}).text
    [snippet] = re.findall(r'<p class="snippet">(.*?)</p>', html, re.DOTALL)

    assert "<script>" not in html.split('<section id="conversation-table"')[1]
    assert "&lt;script&gt;alert(&#x27;<mark>weather</mark>&#x27;)&lt;/script&gt;" in snippet
    assert "&lt;b onmouseover=x&gt;<mark>weather</mark>&lt;/b&gt; &amp; &lt;mark&gt;" in snippet
    assert snippet.count("<mark>") == 2
    assert api_list(client, "weather")["hostile"] == {
        "index": 0,
        "role": "user",
        "snippet": hostile,
    }
    assert api_search(client, conversation, q="weather")["hits"][0]["snippet"] == hostile


def test_the_list_shows_a_snippet_of_the_first_hit_linking_to_it(client: Client) -> None:
    conversation = store(
        [user("hello"), assistant("c1", content="the zeppelin landed"), user("zeppelin again")],
        title="weekly sync",
    )
    store([user("nothing here")], title="zeppelin notes")  # found by its title only

    html = client.get("/", {"q": "Zeppelin"}).text
    link = f'href="/c/{conversation.pk}/?at=1&amp;q=Zeppelin#m-1"'

    assert listed(client, "Zeppelin") == ["zeppelin notes", "weekly sync"]
    assert html.count('<p class="snippet">') == 1
    assert f"<a {link}>message 1</a> (assistant): the <mark>zeppelin</mark> landed" in html
    opened = client.get(f"/c/{conversation.pk}/", {"at": "1", "q": "Zeppelin"}).text
    assert 'id="m-1"' in opened
    assert 'data-hit="1"' in opened
    assert "1 of 2" in opened


@pytest.mark.parametrize("common", [False, True], ids=["rare", "common"])
def test_the_list_s_first_hit_is_the_first_in_the_buffer_not_the_first_written(
    client: Client, monkeypatch: pytest.MonkeyPatch, common: bool
) -> None:
    """A heal writes its placeholder after the messages it comes before: the first hit in
    the buffer is then not the first written, and the list links the one the page opens
    with, whether its words are collected (rare) or each conversation is checked (common)."""
    conversation = store(
        [user("go"), assistant("c1"), user("the call was interrupted, no result came")],
        title="healed",
    )
    services.heal_conversation(conversation_id=conversation.pk, via="tests")
    monkeypatch.setattr(search.listing, "COMMON_SHARE", 2)  # never common by the sample
    if common:
        monkeypatch.setattr(search.listing, "MATCH_CAP", -1)  # every conversation checked

    assert hits(conversation, "interrupted result") == [2, 3]
    match = api_list(client, "interrupted result")["healed"]
    assert match is not None
    assert match["index"] == 2
    html = client.get("/", {"q": "interrupted result"}).text
    assert f'href="/c/{conversation.pk}/?at=2&amp;q=interrupted%20result#m-2"' in html


def test_a_query_s_quotes_and_ampersands_stay_escaped_in_the_snippet_link(client: Client) -> None:
    conversation = store([user("fish & chips")], title="dinner")

    html = client.get("/", {"q": 'fish "&<'}).text

    assert f'href="/c/{conversation.pk}/?at=0&amp;q=fish%20%22%26%3C#m-0"' in html
    assert "matching “fish &quot;&amp;&lt;”" in html


# Access: a search shows only what the caller may see.


@pytest.fixture
def other() -> User:
    return User.objects.create_user("other")


def test_a_search_never_shows_conversations_or_snippets_the_caller_may_not_see(
    client: Client, other: User
) -> None:
    store([user("my zeppelin")], title="mine")
    theirs = store([user("their secret zeppelin")], owner=other, title="theirs")
    store([user("nobody's zeppelin")], owner=None, title="ownerless")

    assert listed(client, "zeppelin") == ["mine"]
    assert "secret" not in client.get("/", {"q": "zeppelin"}).text
    assert listed(client, "theirs") == []
    assert api_list(client, "zeppelin") == {
        "mine": {"index": 0, "role": "user", "snippet": "my zeppelin"}
    }
    assert client.get("/api/conversations", {"q": "secret"}).json()["total"] == 0
    assert (
        client.get(f"/api/conversations/{theirs.pk}/search", {"q": "zeppelin"}).status_code == 404
    )
    assert client.get(f"/c/{theirs.pk}/search", {"q": "zeppelin"}, headers=HX).status_code == 404
    assert client.get(f"/c/{theirs.pk}/", {"q": "zeppelin", "at": "0"}).status_code == 404
    assert listed(signed_in(other), "zeppelin") == ["theirs"]


def test_a_conversation_shared_with_the_caller_is_found_with_its_snippet(
    client: Client, other: User
) -> None:
    theirs = store([user("their shared zeppelin")], owner=other, title="theirs")

    theirs.viewers.add(User.objects.get(username="tester"))

    assert listed(client, "zeppelin") == ["theirs"]
    assert api_list(client, "zeppelin")["theirs"] == {
        "index": 0,
        "role": "user",
        "snippet": "their shared zeppelin",
    }
    assert api_search(client, theirs, q="zeppelin")["count"] == 1


def test_signed_out_a_search_finds_nothing() -> None:
    store([user("my zeppelin")], title="mine")
    anonymous = Client()

    assert "mine" not in anonymous.get("/", {"q": "zeppelin"}, follow=True).text
    assert anonymous.get("/api/conversations", {"q": "zeppelin"}).status_code == 401


# Searching inside a conversation (the page's search field).


@pytest.fixture
def needles() -> Conversation:
    """200 messages; "needle" in messages 2, 120 and 190."""
    messages = [user(f"hay {n}") for n in range(200)]
    for n in (2, 120, 190):
        messages[n] = user(f"a needle at {n}")
    return store(messages)


def searched(
    client: Client, conversation: Conversation, **params: Any
) -> tuple[int | None, str, Any]:
    """The hit an htmx search opened (its index, or None), the count it says, the answer."""
    answer = client.get(f"/c/{conversation.pk}/search", params, headers=HX)
    assert answer.status_code == 200
    [hit] = re.findall(r'data-hit="(\d*)"', answer.text)
    [count] = re.findall(r'<span class="search-count"[^>]*>([^<]*)</span>', answer.text)
    return (int(hit) if hit else None), count, answer


def test_enter_opens_the_first_hit_and_says_which_of_how_many(
    client: Client, needles: Conversation
) -> None:
    hit, count, answer = searched(client, needles, q="needle")

    assert (hit, count) == (2, "1 of 3")
    assert answer["HX-Push-Url"] == f"/c/{needles.pk}/?q=needle&at=2#m-2"
    assert 'id="m-2"' in answer.text
    assert '<span id="search-state" hx-swap-oob="innerHTML">' in answer.text
    assert '<input type="hidden" name="searched" value="needle">' in answer.text
    assert '<input type="hidden" name="from" value="2">' in answer.text
    assert 'data-words="needle"' in answer.text


def test_next_and_previous_go_round_the_hits_and_open_the_window_there(
    client: Client, needles: Conversation
) -> None:
    def go(current: int, direction: str = "next") -> tuple[int | None, str]:
        hit, count, answer = searched(
            client, needles, q="needle", searched="needle", go=direction, **{"from": current}
        )
        assert f'id="m-{hit}"' in answer.text
        return hit, count

    assert go(2) == (120, "2 of 3")
    assert go(120) == (190, "3 of 3")
    assert go(190) == (2, "1 of 3")
    assert go(2, "previous") == (190, "3 of 3")
    assert go(190, "previous") == (120, "2 of 3")
    assert go(121) == (190, "3 of 3")  # from between two hits: the next one
    assert go(121, "previous") == (120, "2 of 3")


def test_the_window_opened_at_a_hit_far_down_holds_it_and_not_the_start(
    client: Client, needles: Conversation
) -> None:
    _, _, answer = searched(client, needles, q="needle", searched="needle", **{"from": 2})

    assert 'id="m-120"' in answer.text
    assert 'id="m-2"' not in answer.text
    assert 'id="m-0"' not in answer.text


def test_a_new_query_starts_again_at_its_first_hit(client: Client, needles: Conversation) -> None:
    hit, count, _ = searched(client, needles, q="needle 190", searched="needle", **{"from": 2})

    assert (hit, count) == (190, "1 of 1")


def test_a_search_that_finds_nothing_changes_only_the_count(
    client: Client, needles: Conversation
) -> None:
    hit, count, answer = searched(client, needles, q="haystack")

    assert (hit, count) == (None, "No message matches")
    assert answer["HX-Reswap"] == "none"
    assert "HX-Push-Url" not in answer
    assert 'id="m-' not in answer.text


def test_without_javascript_the_search_opens_the_page_at_the_hit(
    client: Client, needles: Conversation
) -> None:
    answer = client.get(
        f"/c/{needles.pk}/search", {"q": "needle", "searched": "needle", "from": "2", "go": "next"}
    )
    nothing = client.get(f"/c/{needles.pk}/search", {"q": "haystack"})
    empty = client.get(f"/c/{needles.pk}/search", {"q": ""})

    assert answer.status_code == 302
    assert answer["Location"] == f"/c/{needles.pk}/?q=needle&at=120#m-120"
    page = client.get(answer["Location"]).text
    assert 'id="m-120"' in page
    assert "2 of 3" in page
    assert nothing["Location"] == f"/c/{needles.pk}/?q=haystack"
    assert "No message matches" in client.get(nothing["Location"]).text
    assert empty["Location"] == f"/c/{needles.pk}/"


def test_the_page_opened_with_a_query_but_not_at_a_hit_says_how_many_match(
    client: Client, needles: Conversation
) -> None:
    page = client.get(f"/c/{needles.pk}/", {"q": "needle", "at": "5"}).text

    assert "3 messages match" in page
    assert 'data-hit=""' in page


# The storage API.


def test_the_api_list_searches_and_gives_each_conversation_its_match_or_none(
    client: Client,
) -> None:
    store([user("hello"), user("the zeppelin")], title="by a message")
    store([user("hello")], title="zeppelin by its title")
    store([user("hello")], title="other", source="zeppelin.jsonl")
    store([user("hello")], title="not found")

    page = client.get("/api/conversations", {"q": "zeppelin"}).json()

    assert page["total"] == 3
    assert {c["title"]: c["match"] for c in page["conversations"]} == {
        "by a message": {"index": 1, "role": "user", "snippet": "the zeppelin"},
        "zeppelin by its title": None,
        "other": None,
    }
    unsearched = client.get("/api/conversations").json()["conversations"]
    assert [c["match"] for c in unsearched] == [None] * 4


def test_the_api_search_pages_through_the_hits_in_buffer_order(
    client: Client, needles: Conversation
) -> None:
    first = api_search(client, needles, q="needle", limit=2)
    second = api_search(client, needles, q="needle", offset=2, limit=2)
    beyond = api_search(client, needles, q="needle", offset=3)

    assert first == {
        "count": 3,
        "offset": 0,
        "limit": 2,
        "hits": [
            {"index": 2, "role": "user", "snippet": "a needle at 2"},
            {"index": 120, "role": "user", "snippet": "a needle at 120"},
        ],
    }
    assert second["hits"] == [{"index": 190, "role": "user", "snippet": "a needle at 190"}]
    assert (beyond["count"], beyond["hits"]) == (3, [])
    assert api_search(client, needles, q="")["count"] == 0
    farthest = api_search(client, needles, q="needle", offset=2**63 - 1, limit=100)
    assert (farthest["count"], farthest["hits"]) == (3, []), "past SQLite's integers: no 500"


def test_the_api_refuses_a_query_longer_than_200_characters(
    client: Client, needles: Conversation
) -> None:
    answer = client.get(f"/api/conversations/{needles.pk}/search", {"q": "x" * 201})

    assert answer.status_code == 422
    assert api_search(client, needles, q="needle " + "x" * 193)["count"] == 0


# A fixed number of queries, whatever the numbers of conversations and hits.


def test_the_list_search_costs_a_fixed_number_of_queries(client: Client) -> None:
    counts = []
    for total in (3, 60):
        while Conversation.objects.count() < total:
            store([user("hay"), user("a needle")], title="x")
        with CaptureQueriesContext(connection) as queries:
            answer = client.get("/", {"q": "needle"})
        assert answer.text.count('<p class="snippet">') == min(total, 50)
        counts.append(len(queries.captured_queries))

    # session, user, the matching conversations' ids, count, the page, each one's first
    # hit, those messages
    assert counts == [7, 7]


def test_the_api_list_search_costs_a_fixed_number_of_queries(client: Client) -> None:
    counts = []
    for total in (3, 60):
        while Conversation.objects.count() < total:
            store([user("hay"), user("a needle")], title="x")
        with CaptureQueriesContext(connection) as queries:
            page = client.get("/api/conversations", {"q": "needle", "limit": "50"}).json()
        assert sum(c["match"] is not None for c in page["conversations"]) == min(total, 50)
        counts.append(len(queries.captured_queries))

    # session, user, the matching conversations' ids, the page, each one's first hit,
    # those messages, the total
    assert counts == [7, 7]


def test_the_search_in_a_conversation_costs_a_fixed_number_of_queries(client: Client) -> None:
    few = store([user(f"needle {n}" if n % 50 == 0 else "hay") for n in range(300)])
    many = store([user(f"needle {n}") for n in range(300)])
    counts = []
    for conversation in (few, many):
        with CaptureQueriesContext(connection) as queries:
            hit, _, _ = searched(
                client, conversation, q="needle", searched="needle", **{"from": 100}
            )
        assert hit in (101, 150)
        counts.append(len(queries.captured_queries))

    # session, user, conversation, the hit's place (count, next, number: one aggregate),
    # unanswered calls, the window's messages
    assert counts == [6, 6]


def test_the_api_search_costs_a_fixed_number_of_queries(client: Client) -> None:
    few = store([user(f"needle {n}" if n % 50 == 0 else "hay") for n in range(300)])
    many = store([user(f"needle {n}") for n in range(300)])
    counts = []
    for conversation in (few, many):
        with CaptureQueriesContext(connection) as queries:
            api_search(client, conversation, q="needle")
        counts.append(len(queries.captured_queries))

    # session, user, conversation, the page's hits (numbered, with the count), their messages
    assert counts == [5, 5]


def test_the_list_search_is_the_same_page_whether_its_word_is_rare_or_common(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(12):
        store([user("hay"), user(f"needle {n}" if n % 3 else "straw")], title=f"run {n}")
    store([user("hay")], title="needle in the title")
    monkeypatch.setattr(search.listing, "COMMON_SHARE", 2)  # never common by the sample
    rare = listed(client, "needle")

    monkeypatch.setattr(search.listing, "MATCH_CAP", 2)
    common = listed(client, "needle")

    assert common == rare
    assert len(rare) == 9
    assert "needle in the title" in rare


@pytest.mark.parametrize("query", ["needle", "needl"])
def test_the_list_shows_the_same_first_hits_whether_its_word_is_rare_or_common(
    client: Client, monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    """A common word's conversations are checked one by one, and on SQLite their first hits
    are then read message by message, not through the index: the same hits all the same.
    "needle" is common as it is; "needl" only as the prefix of other words."""
    for n in range(5):
        store(
            [user("hay"), user(f"needles {n}"), user(f"a needle again {n}")],
            title=f"run {n}",
        )
    store([user("hay")], title="needle in the title")

    def by_rows(queries: CaptureQueriesContext) -> bool:
        return any("instr(" in q["sql"] and "LIMIT 1)" in q["sql"] for q in queries)

    def snippets() -> tuple[list[str], dict[str, Any], tuple[bool, bool]]:
        """The list page's snippets, the API's matches, and whether each read its first
        hits message by message (SQLite's ``instr``; PostgreSQL reads them alike)."""
        with CaptureQueriesContext(connection) as page:
            html = client.get("/", {"q": query}).text
        with CaptureQueriesContext(connection) as listed:
            api = api_list(client, query)
        found = re.findall(r'<p class="snippet">(.*?)</p>', html, re.DOTALL)
        return found, api, (by_rows(page), by_rows(listed))

    monkeypatch.setattr(search.listing, "COMMON_SHARE", 2)  # never common by the sample
    rare, rare_api, rare_by_rows = snippets()
    monkeypatch.setattr(search.listing, "MATCH_CAP", 2)
    common, common_api, common_by_rows = snippets()

    assert (common, common_api) == (rare, rare_api)
    assert [re.sub(r"<[^>]+>", "", s).strip() for s in rare] == [
        f"message 1 (user): needles {n}" for n in reversed(range(5))
    ]
    assert rare_api["needle in the title"] is None
    assert rare_by_rows == (False, False)
    sqlite = connection.vendor == "sqlite"
    assert common_by_rows == (sqlite, sqlite)


def test_a_word_that_one_in_ten_recent_conversations_holds_is_common(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample is the most recently updated conversations, those short enough to read
    (``SAMPLE_LONGEST``), while they hold ``SAMPLE_ROWS`` messages: a word one in ten of
    them holds is checked conversation by conversation, any other has its ids collected;
    the list is the same."""
    monkeypatch.setattr(search.listing, "DENSE_SAMPLE", 10)
    store([user("hay"), user("a needle")], title="the needle")
    for n in range(9):
        store([user("hay")], title=f"hay {n}")

    def common() -> bool:
        return search.matching_conversations(search.terms("needle")).per_conversation

    assert common(), "one of the ten most recent holds it"
    assert listed(client, "needle") == ["the needle"]
    monkeypatch.setattr(search.listing, "SAMPLE_ROWS", 9)
    assert not common(), "the nine most recent hold the nine messages the sample reads"
    monkeypatch.setattr(search.listing, "SAMPLE_ROWS", 11)
    monkeypatch.setattr(search.listing, "SAMPLE_LONGEST", 1)
    assert not common(), "its one conversation is too long for the sample"
    monkeypatch.setattr(search.listing, "SAMPLE_LONGEST", 2)
    store([user("hay")], title="newer hay")
    assert not common(), "it is no longer among the ten most recent"
    assert listed(client, "needle") == ["the needle"]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's plans only")
def test_sqlite_walks_the_list_for_many_ids_of_a_word_the_sample_finds_often(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Collected ids are found one by one by key, then sorted, unless there are so many, of
    a word the sample finds so often, that walking the list in its order finds a page
    sooner (``SCAN_FROM``): the same conversations either way."""
    for n in range(30):
        store([user("a needle" if n % 15 == 0 else "hay")], title=f"run {n}")
    newest_first = Conversation.objects.order_by("-updated_at", "-id")

    def plan() -> str:
        matching = search.matching_conversations(search.terms("needle"))
        assert not matching.per_conversation, "2 of the 30 sampled: not common"
        page = newest_first.filter(matching.condition)[:50]
        assert [c.title for c in page] == ["run 15", "run 0"]
        return page.all().explain()

    monkeypatch.setattr(search.listing, "SCAN_FROM", 0.2)  # 2 ids x 2/30 of the sample: 0.13
    assert "USING INTEGER PRIMARY KEY" in plan()
    monkeypatch.setattr(search.listing, "SCAN_FROM", 0.1)
    assert "SCAN buffers_conversation USING INDEX conversation_recent" in plan()
    assert listed(client, "needle") == ["run 15", "run 0"]
    monkeypatch.setattr(search.listing, "SAMPLE_FEWEST", 31)
    assert "USING INTEGER PRIMARY KEY" in plan(), "30 sampled are too few to say a share"
    monkeypatch.setattr(search.listing, "SAMPLE_FEWEST", 10)

    def walked(url: str) -> bool:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return any("+buffers_conversation.id IN" in q["sql"] for q in queries.captured_queries)

    assert walked("/?q=needle")
    assert walked("/api/conversations?q=needle")
    # A filter leaves the sample's share behind: none unanswered, the walk would read all.
    assert not walked("/?q=needle&show=unanswered")
    assert not walked("/?q=needle&show=healed")
    assert not walked("/api/conversations?q=needle&unanswered=true")
    assert not walked("/api/conversations?q=needle&sendable=false")


def test_a_sample_of_fewer_than_ten_conversations_finds_nothing_common(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five long conversations make the whole sample when each is long: one of them holding
    a word is no share to walk the list by; and an empty sample finds the word all the
    same (its ids)."""
    for n in range(9):
        store([user("a needle"), user("hay")], title=f"run {n}")

    def common() -> bool:
        return search.matching_conversations(search.terms("needle")).per_conversation

    assert not common(), "all nine hold it, but nine are too few"
    store([user("a needle")], title="run 9")
    assert common(), "ten hold it"
    monkeypatch.setattr(search.listing, "SAMPLE_LONGEST", 0)
    assert not common(), "none is short enough to sample"
    assert len(listed(client, "needle")) == 10


def test_the_api_list_counts_a_few_pages_on_and_says_when_there_are_more(
    client: Client,
) -> None:
    for n in range(8):
        store([user(f"needle {n}")], title=f"run {n}")

    short = client.get("/api/conversations", {"q": "needle", "limit": "1"}).json()
    whole = client.get("/api/conversations", {"q": "needle", "limit": "2"}).json()
    later = client.get("/api/conversations", {"q": "needle", "limit": "1", "offset": "3"}).json()

    assert (short["total"], short["total_exact"]) == (5, False)
    assert (whole["total"], whole["total_exact"]) == (8, True)
    assert (later["total"], later["total_exact"]) == (8, True)


def test_each_step_inside_a_conversation_is_the_one_the_list_of_hits_gives(
    needles: Conversation,
) -> None:
    words = search.terms("needle")
    every = search.hit_indexes(needles, words)
    assert every == [2, 120, 190]

    for current in (None, 0, 1, 2, 3, 120, 150, 190, 199, 10**6):
        after = bisect_right(every, -1 if current is None else current)
        index = every[after % len(every)]
        assert search.step(needles, words, current, backwards=False) == search.Found(
            3, index, every.index(index) + 1
        ), current
        before = bisect_left(every, 10**9 if current is None else current)
        index = every[before - 1]
        assert search.step(needles, words, current, backwards=True) == search.Found(
            3, index, every.index(index) + 1
        ), current
    assert search.found_at(needles, words, 120) == search.Found(3, 120, 2)
    assert search.found_at(needles, words, 121) == search.Found(3)
    assert search.step(needles, search.terms("haystack"), 5, backwards=False) == search.Found(0)


def test_postgresql_search_indexes_keep_short_pending_lists() -> None:
    """A search reads all of a GIN index's pending list (a full one, 4 MB, cost a rare
    word 7 ms where the index took 0.05): the messages' index merges its list at 256 kB,
    and the titles' index, written once per conversation, keeps none (migration 0011)."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's GIN indexes only")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relname IN "
            "('message_search_document', 'conversation_search_words')"
        )
        options = dict(cursor.fetchall())
    assert options == {
        "message_search_document": ["gin_pending_list_limit=256"],
        "conversation_search_words": ["fastupdate=off"],
    }
