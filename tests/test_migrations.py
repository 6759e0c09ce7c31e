"""Migrations on a database that holds conversations: the stored verdicts' backfill gives
what the service keeps, and the schema goes back to before search and forward again with
the index working (SQLite rebuilds tables and drops their triggers on the way)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLite
from django.db.migrations.executor import MigrationExecutor
from django.db.models.signals import pre_migrate

from buffers import search, services
from buffers.models import Block, Conversation, DeclaredCall, Message
from buffers.triggers import (
    APPEND_TRIGGER,
    APPEND_VIEW,
    CASCADES,
    SEARCH,
    TITLES_AS_WRITTEN,
    drop_sqlite_cascades,
    keep_sqlite_triggers,
)
from tests.buffers import (
    acting_user,
    assistant,
    parse,
    placeholder,
    result,
    signed_in,
    store,
    user,
)
from tests.integrity import assert_consistent
from tests.migrating import migrated_back_to

backfill = importlib.import_module("buffers.migrations.0009_stored_verdicts")
kept_blocks_again = importlib.import_module("buffers.migrations.0014_verdicts_of_kept_blocks")
refused_parts_again = importlib.import_module("buffers.migrations.0015_verdicts_of_refused_parts")
counted_again = importlib.import_module("buffers.migrations.0022_verdicts_counted_again")
blank_text_again = importlib.import_module("buffers.migrations.0025_verdicts_of_blank_text")


@pytest.mark.django_db
def test_the_verdicts_backfill_gives_each_conversation_what_a_fresh_check_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stored = [
        store([user("go"), assistant("c1", "c2"), result("c2")], title="open call"),
        store([user("go"), assistant("c1"), result("c1"), result("c1"), result("c9")]),
        store([user("go"), assistant("c1"), placeholder("c1"), user("on")], title="healed"),
        store([], title="empty"),
    ]
    Conversation.objects.update(rejections={}, problem_counts={}, sendable=True)

    monkeypatch.setattr(backfill, "BATCH", 2)  # several statements, as a big database makes
    backfill.compute_tallies(apps, None)

    for conversation in stored:
        assert_consistent(conversation)
    assert not Conversation.objects.get(title="open call").sendable


@pytest.mark.django_db
def test_0014_tallies_again_the_conversations_that_keep_blocks_for_a_provider() -> None:
    """Their verdicts changed with the rule (a turn of server tool blocks only is sent to
    Anthropic whole; one of thinking only is refused wherever it stands); others are not
    read (one left stale here shows it)."""

    def kept(space: str, *blocks: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "metadata": {space: {"layout": [*blocks]}}}

    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    searched = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    thinking = {"type": "thinking", "thinking": "Two tables.", "signature": "c2ln"}
    searching = store([user("search"), kept("anthropic", search, searched), user("ok")])
    thinking_only = store([user("plan"), kept("anthropic", thinking)])
    thought = store([user("plan"), kept("gemini", {"text": "Two.", "thought": True}), user("ok")])
    plain = store([user("go"), assistant("c1")], title="plain")
    Conversation.objects.update(rejections={}, problem_counts={}, sendable=True)

    kept_blocks_again.tally_again(apps, None)

    for conversation in (searching, thinking_only, thought):
        assert_consistent(conversation)
    assert Conversation.objects.get(pk=searching.pk).rejections["anthropic"] == 0
    assert Conversation.objects.get(pk=thinking_only.pk).rejections["anthropic"] == 1
    assert Conversation.objects.get(pk=plain.pk).rejections == {}, "not read"


@pytest.mark.django_db
def test_0015_tallies_again_the_conversations_whose_content_names_a_providers_part() -> None:
    """Their verdicts changed with the rule (a part in one provider's shape is refused by
    the others); one whose text names such a part is read for nothing; others are not read
    (one left stale here shows it)."""
    file = {"fileData": {"mimeType": "image/png", "fileUri": "https://x/files/1"}}
    pictured = store([user("draw"), {"role": "user", "content": [{"text": "here"}, file]}])
    snake = {"file_data": {"mime_type": "image/png", "file_uri": "https://x/files/1"}}
    snake_cased = store([user("draw"), {"role": "user", "content": [snake]}])
    refusal = {"type": "refusal", "refusal": "No."}
    refused = store([user("draw"), {"role": "user", "content": [refusal]}])
    mentioned = store([{"role": "user", "content": [{"text": "image"}]}, assistant(content="ok")])
    plain = store([user("go"), assistant("c1")], title="plain")
    Conversation.objects.update(rejections={}, problem_counts={}, sendable=True)

    refused_parts_again.tally_again(apps, None)

    for conversation in (pictured, snake_cased, refused, mentioned):
        assert_consistent(conversation)
    for conversation in (pictured, snake_cased, refused):
        assert Conversation.objects.get(pk=conversation.pk).problem_counts == {"refused_part": 1}
    assert Conversation.objects.get(pk=plain.pk).rejections == {}, "not read"


@pytest.mark.django_db
def test_0022_tallies_again_the_conversations_holding_a_list_of_parts() -> None:
    """A text part without its text, and an inline OpenAI file without its filename, were
    judged accepted when 0015 ran; conversations of plain text are not read again (one
    left stale here shows it)."""
    textless = store([user("q"), {"role": "user", "content": [{"type": "text", "text": None}]}])
    file = {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0="}}
    unnamed = store([{"role": "user", "content": [{"type": "text", "text": "read"}, file]}])
    plain = store([user("go"), assistant("c1")], title="plain")
    Conversation.objects.update(rejections={}, problem_counts={}, sendable=True)

    counted_again.tally_again(apps, None)

    for conversation in (textless, unnamed):
        assert_consistent(conversation)
        assert not Conversation.objects.get(pk=conversation.pk).sendable
    assert Conversation.objects.get(pk=plain.pk).rejections == {}, "not read"


@pytest.mark.django_db
def test_0025_tallies_again_the_conversations_holding_blank_text() -> None:
    """A user or assistant message of whitespace only, or holding an empty text block, was
    judged accepted by Anthropic when the tally was stored; conversations whose texts all
    hold a word are not read again (one left stale here shows it)."""
    blank_block = {"type": "text", "text": " \n"}
    blank = [
        store([user(" "), assistant(content="hi")]),
        store([user("hi"), assistant(content="\n\t")]),
        store([user("hi"), {"role": "user", "content": [blank_block]}]),
        store([{"role": "user", "content": [{"type": "text", "text": ""}, {"text": "hi"}]}]),
        store([user("go"), {"role": "assistant", "content": "\u3000"}, user("?")]),
    ]
    plain = store([user("go"), assistant("c1")], title="plain")
    Conversation.objects.update(rejections={}, problem_counts={}, sendable=True)

    blank_text_again.tally_again(apps, None)

    for conversation in blank:
        assert_consistent(conversation)
        assert Conversation.objects.get(pk=conversation.pk).tally.rejected_by == ["anthropic"]
    assert Conversation.objects.get(pk=plain.pk).rejections == {}, "not read"


@pytest.mark.django_db
def test_0022_tallies_again_the_conversations_naming_a_kept_client_call() -> None:
    """An unanswered custom_tool_call, or an output of one answering nothing, kept whole
    from a Responses body, was judged accepted when the tally was stored; conversations
    naming no such item are not read again (one left stale here shows it)."""

    def kept(item: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "metadata": {"responses_item": item}}

    call = {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch", "input": ""}
    output = {"type": "custom_tool_call_output", "call_id": "call_9", "output": "Done!"}
    unanswered = store([user("patch it"), kept(call), user("well?")])
    orphan = store([user("patch it"), kept(output)])
    answered = store([user("patch it"), kept(call), kept(output | {"call_id": "call_1"})])
    plain = store([user("go"), assistant("c1")], title="plain")
    Conversation.objects.update(rejections={}, problem_counts={}, sendable=True)

    counted_again.tally_again(apps, None)

    for conversation in (unanswered, orphan, answered):
        assert_consistent(conversation)
    for conversation in (unanswered, orphan):
        assert Conversation.objects.get(pk=conversation.pk).tally.rejected_by == [
            "openai-responses"
        ]
    assert Conversation.objects.get(pk=answered.pk).sendable
    assert Conversation.objects.get(pk=plain.pk).rejections == {}, "not read"


@pytest.mark.django_db
def test_0022_tallies_again_the_conversations_naming_a_thinking_block() -> None:
    """A thinking block without its signature in content was judged accepted by Anthropic,
    and a last turn of such thinking only refused (it is written as an empty final turn);
    conversations naming no thinking are not read again (one left stale here shows it)."""
    unsigned = {"type": "thinking", "thinking": "Two steps."}
    in_content = store([user("plan"), {"role": "user", "content": [unsigned]}])
    last = {"role": "assistant", "content": None, "metadata": {"anthropic": {"layout": [unsigned]}}}
    thought_last = store([user("plan"), last])
    plain = store([user("go"), assistant("c1")], title="plain")
    Conversation.objects.update(rejections={"anthropic": 1}, problem_counts={}, sendable=True)
    Conversation.objects.filter(pk=in_content.pk).update(rejections={})

    counted_again.tally_again(apps, None)

    for conversation in (in_content, thought_last):
        assert_consistent(conversation)
    assert Conversation.objects.get(pk=in_content.pk).tally.rejections["anthropic"] == 1
    assert Conversation.objects.get(pk=thought_last.pk).tally.rejections["anthropic"] == 0
    assert Conversation.objects.get(pk=plain.pk).rejections == {"anthropic": 1}, "not read"


@pytest.mark.django_db(transaction=True)
def test_the_schema_goes_back_before_search_and_forward_with_the_index_working() -> None:
    with migrated_back_to("0005_traced_messages"):
        pass

    store([user("the zeppelin left at noon")], title="airship log", owner=acting_user())
    page = signed_in().get("/", {"q": "zeppelin"})
    assert "airship log" in page.text
    assert "airship log" in signed_in().get("/", {"q": "airship"}).text


_REPEATED_INDEXES = {
    "buffers_block": "buffers_block_conversation_id_e85f20ac",
    "buffers_declaredcall": "buffers_declaredcall_conversation_id_9c41667f",
    "buffers_message": "buffers_message_block_id_aff07fb0",
}


def _index_names(table: str) -> set[str]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return {name for name, facts in found.items() if facts["index"]}


def _message_table_checks_json() -> bool:
    """SQLite: whether the message table's SQL holds a JSON_VALID check."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'buffers_message'")
        (sql,) = cursor.fetchone()
    return "JSON_VALID" in sql


@pytest.mark.django_db(transaction=True)
def test_migration_0013_drops_the_repeated_indexes_and_keeps_every_row_both_ways() -> None:
    """0013 drops the foreign keys' own indexes that a unique constraint starts with, and
    on SQLite the messages' JSON_VALID checks; the rows, the search index and the
    integrity checks hold after it, back before it, and forward again."""
    kept = store(
        [user("the zeppelin left"), assistant("c1", "c2"), result("c1"), user("on")],
        title="airship log",
        owner=acting_user(),
    )
    stored_rows = list(kept.messages.values_list("id", "content", "metadata"))

    def holds(*, schema_of_today: bool = True) -> None:
        assert list(kept.messages.values_list("id", "content", "metadata")) == stored_rows
        assert _search_rows([pk for pk, _, _ in stored_rows]) == len(stored_rows)
        if schema_of_today:  # today's models read columns that 0012 has not
            assert_consistent(kept)
            assert "airship log" in signed_in().get("/", {"q": "zeppelin"}).text

    for table, index in _REPEATED_INDEXES.items():
        assert index not in _index_names(table)
    assert connection.vendor != "sqlite" or not _message_table_checks_json()
    holds()

    with migrated_back_to("0012_conversation_keys_without_constraints"):
        for table, index in _REPEATED_INDEXES.items():
            assert index in _index_names(table)
        assert connection.vendor != "sqlite" or _message_table_checks_json()
        holds(schema_of_today=False)
    for table, index in _REPEATED_INDEXES.items():
        assert index not in _index_names(table)
    assert connection.vendor != "sqlite" or not _message_table_checks_json()
    holds()
    # A delete goes through the cascades and, on SQLite, the search index's trigger.
    assert _search_rows([pk for pk, _, _ in stored_rows]) > 0
    kept.delete()
    assert _search_rows([pk for pk, _, _ in stored_rows]) == 0


def _search_rows(message_ids: list[int]) -> int:
    column = "rowid" if connection.vendor == "sqlite" else "message_id"
    marks = ", ".join(["%s"] * len(message_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM buffers_messagesearch WHERE {column} IN ({marks})",
            message_ids,
        )
        (count,) = cursor.fetchone()
    return int(count)


def _cascade_triggers() -> set[str]:
    """The cascades, and the append's trigger (``buffers_append_write``), which names every
    table an append writes: made and dropped with them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' "
            "AND (name LIKE %s OR name = 'buffers_append_write')",
            ["%_forget_with_%"],
        )
        return {name for (name,) in cursor.fetchall()}


def test_the_triggers_are_sql_that_every_sqlite_django_runs_on_reads() -> None:
    """post_migrate makes the triggers on whatever SQLite the server's Python has, and
    Django runs on SQLite from 3.37 on (Ubuntu 22.04's, say). A trigger SQLite cannot
    parse fails there to be made, and every ``manage.py migrate`` with it; the JSON
    operators ``->`` and ``->>`` came in SQLite 3.38.0 (``json_extract`` reads the same)."""
    made = [*SEARCH, *TITLES_AS_WRITTEN, *CASCADES.values(), APPEND_VIEW, APPEND_TRIGGER]

    oldest = SQLite.features_class.minimum_database_version
    assert oldest is not None
    assert oldest < (3, 38)
    assert [sql for sql in made if "->" in sql] == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite drops a rebuilt table's triggers")
def test_the_cascade_triggers_outlast_a_rebuild_of_their_tables_and_only_without_foreign_keys() -> (
    None
):
    """0016's triggers delete a block's messages and a message's declared calls. A later
    migration that rebuilds those tables would be refused while they stand (each names
    another's table): pre_migrate drops them, post_migrate makes them again. Back before
    0016 the foreign keys cascade, and no trigger is made beside them; back before the
    app, none is made at all. The append's trigger goes with them."""
    made = {*CASCADES, "buffers_append_write"}
    assert _cascade_triggers() == made
    drop_sqlite_cascades()  # what pre_migrate does before `manage.py migrate`
    with connection.schema_editor() as editor:  # what a later migration's rebuild does
        for model in (Block, Message, DeclaredCall):
            editor._remake_table(model)  # type: ignore[attr-defined]  # SQLite's editor
    keep_sqlite_triggers()  # and post_migrate after it
    assert _cascade_triggers() == made

    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("buffers")
    try:
        for target in ("0015_verdicts_of_refused_parts", None):
            drop_sqlite_cascades()
            executor.migrate([("buffers", target)])
            keep_sqlite_triggers()
            assert _cascade_triggers() == set()
            executor = MigrationExecutor(connection)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        drop_sqlite_cascades()
        executor.migrate(latest)
        keep_sqlite_triggers()
    assert _cascade_triggers() == made
    gone = store([user(), assistant("c1"), result("c1")], title="gone")
    gone.delete()
    assert not Message.objects.filter(conversation_id=gone.pk).exists()
    assert not DeclaredCall.objects.filter(conversation_id=gone.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_0017_indexes_every_message_again_so_a_word_keeps_its_combining_marks() -> None:
    """Before 0017 a mark split a word: "हिन्दी" was indexed as its letters "ह न द" (on
    SQLite by the FTS5 table's tokenizer too, whatever words it was given)."""
    hindi = store([user("हिन्दी पाठ")], title="hindi", owner=acting_user())
    store([user("ह न द")], title="apart", owner=acting_user())
    (pk,) = Message.objects.filter(conversation=hindi).values_list("pk", flat=True)
    # Its words as the index held them then, back there:
    with migrated_back_to("0016_messages_without_constraints"), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("UPDATE buffers_messagesearch SET body = %s WHERE rowid = %s",
                           ["ह न द पठ", pk])  # fmt: skip
        else:
            cursor.execute("UPDATE buffers_messagesearch SET document = %s::tsvector "
                           "WHERE message_id = %s", ["ह न द पठ", pk])  # fmt: skip

    page = signed_in().get("/", {"q": "हिन्दी"}).text
    assert "hindi" in page
    assert "apart" not in page


@pytest.mark.django_db(transaction=True)
def test_0018_gives_every_conversation_its_titles_words_both_ways() -> None:
    """Back before 0018 the database splits titles itself; forward again, each
    conversation's words are made from its title and source, and the index reads them."""
    store([user("hello")], title="İstanbul trip", source="log.jsonl", owner=acting_user())
    store([user("hello")], title="ΟΔΟΣ", owner=acting_user())
    # A title written while the database split them, back there:
    with migrated_back_to("0017_search_words_with_marks"), connection.cursor() as cursor:
        cursor.execute("UPDATE buffers_conversation SET title = %s WHERE title = %s",
                       ["x² fit", "ΟΔΟΣ"])  # fmt: skip

    for conversation in Conversation.objects.all():
        assert_consistent(conversation)
    assert "İstanbul trip" in signed_in().get("/", {"q": "İstanbul"}).text
    assert "İstanbul trip" in signed_in().get("/", {"q": "log jsonl"}).text
    assert "x² fit" in signed_in().get("/", {"q": "x²"}).text
    renamed = Conversation.objects.get(title="x² fit")
    renamed.title = "ΟΔΟΣ"
    renamed.save()
    assert "ΟΔΟΣ" in signed_in().get("/", {"q": "οδος"}).text


@pytest.mark.django_db(transaction=True)
def test_0019_indexes_again_the_words_that_held_a_letter_sqlite_folds() -> None:
    """Before 0019 the words kept the micro sign (and the other letters SQLite's tokenizer
    folds into another): indexed again, a message and a title written with it are found
    by either spelling on both databases."""
    store([user("took 5 µs")], title="timings", owner=acting_user())
    store([user("nothing here")], title="runs in µs", owner=acting_user())
    # The words as they were made then, back there:
    with migrated_back_to("0018_titles_searched_by_their_words"), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("UPDATE buffers_messagesearch SET body = %s", ["took 5 µs"])
            cursor.execute("UPDATE buffers_conversationsearch SET words = %s "
                           "WHERE words LIKE %s", ["runs in µs", "runs%"])  # fmt: skip
        else:
            cursor.execute("UPDATE buffers_messagesearch SET document = %s::tsvector",
                           ["took 5 µs"])  # fmt: skip
        cursor.execute("UPDATE buffers_conversation SET search_words = %s "
                       "WHERE title = %s", ["runs in µs", "runs in µs"])  # fmt: skip

    for conversation in Conversation.objects.all():
        assert_consistent(conversation)
    for typed in ("µs", "μs"):
        page = signed_in().get("/", {"q": typed}).text
        assert "timings" in page
        assert "runs in µs" in page


@pytest.mark.django_db(transaction=True)
def test_0021_indexes_again_the_text_under_data_and_source_and_after_data_colon() -> None:
    """Before 0021 a tool result's records under ``data`` and a text beginning "data:" were
    left out of the words: indexed again, they are found on both databases."""
    records = {"data": [{"title": "Pelican landing"}]}
    conversation = store(
        [
            {"role": "tool", "content": records, "metadata": {"tool_call_id": "c1"}},
            {"role": "user", "content": [{"type": "text", "text": "data: revenue in Portugal"}]},
            user("an unrelated message"),
        ],
        owner=acting_user(),
    )
    with migrated_back_to("0020_placeholders_indexed"), connection.cursor() as cursor:
        if connection.vendor == "sqlite":  # the words as they were made then
            cursor.execute("UPDATE buffers_messagesearch SET body = ''")
        else:
            cursor.execute("UPDATE buffers_messagesearch SET document = ''::tsvector")

    assert search.hit_indexes(conversation, search.terms("pelican")) == [0]
    assert search.hit_indexes(conversation, search.terms("portugal")) == [1]
    assert search.hit_indexes(conversation, search.terms("unrelated")) == [], (
        "left as it was: only what held data or source is indexed again"
    )


@pytest.mark.django_db(transaction=True)
def test_0023_indexes_again_the_tool_calls_whose_arguments_were_split_as_json_text() -> None:
    """Before 0023 a call's arguments were split as their JSON text, so a word after a line
    break was glued to the escape's "n": indexed again, it is found on both databases."""
    conversation = store(
        [
            user("write the script"),
            {
                "role": "assistant",
                "content": None,
                "metadata": {
                    "tool_calls": [
                        {"id": "c1", "name": "write_file", "args": {"text": "import os\nprint()"}}
                    ]
                },
            },
            user("an unrelated message"),
        ],
        owner=acting_user(),
    )
    with migrated_back_to("0022_verdicts_counted_again"), connection.cursor() as cursor:
        old = "write_file text import os nprint"  # the words as they were made then
        if connection.vendor == "sqlite":
            cursor.execute("UPDATE buffers_messagesearch SET body = %s", [old])
        else:
            cursor.execute("UPDATE buffers_messagesearch SET document = %s::tsvector", [old])

    assert search.hit_indexes(conversation, search.terms("print")) == [1]
    assert search.hit_indexes(conversation, search.terms("nprint")) == [0, 2], (
        "left as they were: only the messages holding tool calls are indexed again"
    )


@pytest.mark.django_db(transaction=True)
def test_0024_indexes_again_the_words_that_held_a_dotted_capital_i() -> None:
    """Before 0024 "İstanbul" was indexed as "i̇stanbul" (Python's lowering: 'i' and a
    combining dot): indexed again, a message and a title are found by "istanbul"."""
    conversation = store(
        [user("Trip to İstanbul"), user("an unrelated message")], title="trip", owner=acting_user()
    )
    store([user("nothing here")], title="İstanbul notes", owner=acting_user())
    trip, unrelated = Message.objects.filter(conversation=conversation).order_by("pk")
    # The words as they were made then, back there (the other message's made up, as a
    # message left as it is shows them):
    with migrated_back_to("0023_tool_call_arguments_read_as_json"), connection.cursor() as c:
        old = "trip to i\u0307stanbul"
        if connection.vendor == "sqlite":
            c.execute("UPDATE buffers_messagesearch SET body = %s WHERE rowid = %s", [old, trip.pk])
            c.execute("UPDATE buffers_messagesearch SET body = 'kept' WHERE rowid = %s",
                      [unrelated.pk])  # fmt: skip
            c.execute("UPDATE buffers_conversationsearch SET words = %s WHERE words LIKE %s",
                      ["i\u0307stanbul notes", "%notes%"])  # fmt: skip
        else:
            c.execute("UPDATE buffers_messagesearch SET document = %s::tsvector "
                      "WHERE message_id = %s", [old, trip.pk])  # fmt: skip
            c.execute("UPDATE buffers_messagesearch SET document = 'kept'::tsvector "
                      "WHERE message_id = %s", [unrelated.pk])  # fmt: skip
        c.execute("UPDATE buffers_conversation SET search_words = %s WHERE title = %s",
                  ["i\u0307stanbul notes", "İstanbul notes"])  # fmt: skip

    for stored in Conversation.objects.all():
        assert_consistent(stored)
    assert search.hit_indexes(conversation, search.terms("istanbul")) == [0]
    page = signed_in().get("/", {"q": "istanbul"}).text
    assert "İstanbul notes" in page
    assert search.hit_indexes(conversation, search.terms("kept")) == [1], (
        "left as it was: only what held the dotted i is indexed again"
    )


@pytest.mark.django_db(transaction=True)
def test_0024_indexes_again_the_text_that_held_a_soft_hyphen() -> None:
    """Before 0024 a soft hyphen split its word: indexed again, a message (its text, or a
    call's arguments as JSON text escaping it) and a title are found by the word whole."""
    escaped = '{"note": "Jahr\\u00adhundert"}'  # the arguments' text holds the escape
    conversation = store(
        [
            user("im Jahr Zwei\u00adtausend"),
            {
                "role": "assistant",
                "content": None,
                "metadata": {"tool_calls": [{"id": "c1", "name": "note", "arguments": escaped}]},
            },
            user("an unrelated message"),
        ],
        title="years",
        owner=acting_user(),
    )
    store([user("nothing here")], title="Jahr\u00adtausend", owner=acting_user())
    with migrated_back_to("0023_tool_call_arguments_read_as_json"), connection.cursor() as c:
        old = "zwei tausend jahr hundert kept"  # the words as they were made then
        if connection.vendor == "sqlite":
            c.execute("UPDATE buffers_messagesearch SET body = %s", [old])
            c.execute("UPDATE buffers_conversationsearch SET words = %s WHERE words LIKE %s",
                      ["jahr tausend", "%tausend%"])  # fmt: skip
        else:
            c.execute("UPDATE buffers_messagesearch SET document = %s::tsvector", [old])
        c.execute("UPDATE buffers_conversation SET search_words = %s WHERE title = %s",
                  ["jahr tausend", "Jahr\u00adtausend"])  # fmt: skip

    for stored in Conversation.objects.all():
        assert_consistent(stored)
    assert search.hit_indexes(conversation, search.terms("zweitausend")) == [0]
    assert search.hit_indexes(conversation, search.terms("jahrhundert")) == [1]
    assert search.hit_indexes(conversation, search.terms("kept")) == [2], (
        "left as it was: only what held a soft hyphen is indexed again"
    )
    assert "Jahr\u00adtausend" in signed_in().get("/", {"q": "jahrtausend"}).text


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's triggers")
def test_a_migrate_with_nothing_to_apply_leaves_the_append_and_the_cascades_standing() -> None:
    """``manage.py migrate`` sends pre_migrate even when it has nothing to apply (a deploy
    runs it every time, beside the workers still serving). Nothing is rebuilt then, so
    nothing is dropped: the workers' appends (the view) and deletes (the cascades) go on
    working while it runs. A migrate that applies migrations drops them, and its
    post_migrate makes them again, the append's as the code now writes it."""
    seen: list[set[str]] = []

    def during(**_: Any) -> None:  # after the app's own receiver, connected first
        seen.append(_cascade_triggers())

    pre_migrate.connect(during, weak=False)
    try:
        call_command("migrate", verbosity=0)
    finally:
        pre_migrate.disconnect(during)
    made = {*CASCADES, "buffers_append_write"}
    assert seen
    assert all(standing == made for standing in seen)
    conversation = store([user("go"), assistant("c1")], title="kept")
    services.append_messages(conversation=conversation, messages=parse([result("c1")]), via="t")
    assert_consistent(conversation)

    with connection.cursor() as cursor:  # an older release's trigger, left by a migrate
        cursor.execute("DROP TRIGGER buffers_append_write")
        cursor.execute(
            "CREATE TRIGGER buffers_append_write INSTEAD OF INSERT ON buffers_append "
            "BEGIN SELECT RAISE(ABORT, 'old'); END"
        )
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'buffers_append_write'")
        (sql,) = cursor.fetchone()
    assert "'old'" not in sql
    services.append_messages(conversation=conversation, messages=parse([user("more")]), via="t")
    assert_consistent(conversation)
