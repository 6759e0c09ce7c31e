"""Backing up and restoring with Django's own commands: ``dumpdata`` writes every stored
conversation, ``loaddata`` brings them back searchable, on SQLite and on PostgreSQL alike,
so that a dump of one database loads into the other (moving from the embedded SQLite to
PostgreSQL). The full-text index of message text is made from the messages, in a form
each database has its own of: it is never dumped, and ``loaddata`` makes it again for
the messages it loads (docs/decisions.md, "Backups: dumpdata and loaddata")."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core import serializers
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections, transaction

from buffers import search
from buffers.models import Block, Conversation, Message
from tests.buffers import assistant, result, store, user

# Emptying a PostgreSQL database (TRUNCATE) needs no transaction open around the test.
pytestmark = pytest.mark.django_db(transaction=True)


def dumped(*labels: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command("dumpdata", *labels, stdout=out)
    objects: list[dict[str, Any]] = json.loads(out.getvalue())
    return objects


def index_rows() -> list[tuple[int, int]]:
    """The index's rows as (message id, conversation id)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT message_id, conversation_id FROM buffers_messagesearch")
        else:
            cursor.execute("SELECT rowid, conversation_id FROM buffers_messagesearch")
        return sorted((int(pk), int(c)) for pk, c in cursor.fetchall())


def finds(query: str) -> set[str]:
    """The titles of the conversations the list's search finds by ``query``."""
    matching = search.matching_conversations(search.terms(query))
    return set(Conversation.objects.filter(matching.condition).values_list("title", flat=True))


def hits(title: str, query: str) -> list[int]:
    conversation = Conversation.objects.get(title=title)
    return search.hit_indexes(conversation, search.terms(query))


def crashed_runs() -> None:
    store(
        [user("where is the quokka?"), assistant("c1"), result("c1", "the quokka is asleep")],
        title="quokka hunt",
    )
    store([user("when does the zeppelin leave?"), assistant("c2")], title="zeppelin")


def emptied() -> None:
    """Every table emptied, nothing made again (no content types or permissions): the
    state a restore starts from."""
    call_command("flush", interactive=False, inhibit_post_migrate=True, verbosity=0)
    assert not Message.objects.exists()
    assert index_rows() == []


def load(path: Path) -> str:
    out = StringIO()
    call_command("loaddata", str(path), stdout=out)
    return out.getvalue()


def test_a_dump_of_the_whole_database_holds_every_conversation_and_not_the_search_index() -> None:
    crashed_runs()
    models = {entry["model"] for entry in dumped()}
    assert {"buffers.conversation", "buffers.message", "buffers.block"} <= models
    assert "buffers.messagesearch" not in models
    assert len([e for e in dumped("buffers") if e["model"] == "buffers.message"]) == 5


def test_the_search_index_asked_for_by_name_is_refused_saying_why() -> None:
    with pytest.raises(CommandError, match=r"made from the messages.*loaddata makes it again"):
        dumped("buffers.MessageSearch")
    with pytest.raises(CommandError, match="made from the messages"):
        dumped("buffers.messagesearch")


def test_a_dump_loaded_into_an_emptied_database_is_found_by_the_words_of_its_messages(
    tmp_path: Path,
) -> None:
    crashed_runs()
    before = index_rows()
    quokka_hits = hits("quokka hunt", "quokka")
    assert finds("quokka") == {"quokka hunt"}
    assert quokka_hits == [0, 2]
    dump = tmp_path / "backup.json"
    dump.write_text(json.dumps(dumped()))
    emptied()

    said = load(dump)

    assert index_rows() == before
    assert finds("quokka") == {"quokka hunt"}
    assert finds("zeppelin") == {"zeppelin"}
    assert hits("quokka hunt", "quokka") == quokka_hits
    assert "Indexed the words of 5 messages for search" in said


def test_a_dump_that_holds_index_rows_loads_and_its_messages_are_indexed_again(
    tmp_path: Path,
) -> None:
    """A dump written before the index was left out (by PostgreSQL, whose index rows the
    ORM could read) holds index rows: they are not loaded, whatever they say, on either
    database; the messages' own words are."""
    crashed_runs()
    before = index_rows()
    objects = dumped()
    message = next(e for e in objects if e["model"] == "buffers.message")
    objects.append(
        {
            "model": "buffers.messagesearch",
            "pk": 10**6,  # no message of the dump: indexing what was loaded would not undo it
            "fields": {
                "conversation": message["fields"]["conversation"],
                "document": "'wombat':1",
                "block": message["fields"]["block"],
            },
        }
    )
    dump = tmp_path / "older.json"
    dump.write_text(json.dumps(objects))
    emptied()

    load(dump)

    assert index_rows() == before
    assert finds("wombat") == set()
    assert finds("quokka") == {"quokka hunt"}


def test_messages_loaded_over_stored_ones_are_found_by_their_new_words(tmp_path: Path) -> None:
    crashed_runs()
    objects = dumped("buffers.message")
    first = next(e for e in objects if e["fields"]["content"] == "where is the quokka?")
    first["fields"]["content"] = "where is the wombat?"
    dump = tmp_path / "edited.json"
    dump.write_text(json.dumps([first]))

    load(dump)

    assert hits("quokka hunt", "wombat") == [0]
    assert hits("quokka hunt", "quokka") == [2]
    assert finds("zeppelin") == {"zeppelin"}, "the other messages stay indexed"


def test_a_dump_taken_while_the_app_writes_holds_the_database_as_it_was_at_one_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each table is read in turn: a conversation imported once the blocks are read, and
    before the messages are, must not leave its messages in the dump without it."""
    crashed_runs()
    serialize = serializers.serialize

    def written_meanwhile() -> None:
        try:
            store([user("written during the dump"), assistant("c9")], title="meanwhile")
        finally:
            connections.close_all()

    def serialized_while_the_app_writes(format: str, objects: Iterable[Any], **options: Any) -> Any:
        def objects_read() -> Iterator[Any]:
            written = False
            for each in objects:
                if isinstance(each, Block) and not written:
                    writer = threading.Thread(target=written_meanwhile)
                    writer.start()
                    writer.join()
                    written = True
                yield each

        return serialize(format, objects_read(), **options)

    monkeypatch.setattr(serializers, "serialize", serialized_while_the_app_writes)
    objects = dumped()

    assert Conversation.objects.filter(title="meanwhile").exists()
    kept = {(e["model"], e["pk"]) for e in objects}
    for entry in objects:
        if entry["model"] in ("buffers.message", "buffers.block"):
            conversation = entry["fields"]["conversation"]
            assert ("buffers.conversation", conversation) in kept, entry
    assert "written during the dump" not in json.dumps(objects)


def test_a_dump_that_fails_midway_leaves_the_connection_to_the_writes_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dump read through a server-side cursor (PostgreSQL) that stops on an error must
    not leave that cursor to be closed later, inside the next transaction, aborting it."""
    crashed_runs()
    serialize = serializers.serialize

    def failing(format: str, objects: Iterable[Any], **options: Any) -> Any:
        def objects_read() -> Iterator[Any]:
            for each in objects:
                if isinstance(each, Message):
                    raise RuntimeError("the disk is full")
                yield each

        return serialize(format, objects_read(), **options)

    monkeypatch.setattr(serializers, "serialize", failing)
    with pytest.raises(CommandError, match="the disk is full") as failed:
        dumped()
    monkeypatch.undo()

    with transaction.atomic():
        store([user("after the failed dump")], title="after")
        del failed  # what the dump left behind goes now, inside this transaction
        gc.collect()
        store([user("and another")], title="another")

    assert set(Conversation.objects.values_list("title", flat=True)) >= {"after", "another"}


def test_a_dump_inside_a_transaction_of_the_caller_s_is_read_in_it() -> None:
    crashed_runs()
    transaction.set_autocommit(False)
    try:
        store([user("not yet committed")], title="pending")
        assert "pending" in {e["fields"].get("title") for e in dumped("buffers.Conversation")}
        transaction.commit()
    finally:
        transaction.set_autocommit(True)
    assert Conversation.objects.filter(title="pending").exists()
