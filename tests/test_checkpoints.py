"""A long import on SQLite: its commit leaves copying the write-ahead log into the database
file to a thread of its own, which copies it once the import has committed
(``services.checkpoints``)."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest
from django.db import connection

from buffers import healing, services
from buffers.services import checkpoints, imports
from tests.buffers import parse, user

pytestmark = [
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's write-ahead log only"),
    pytest.mark.django_db(transaction=True),
]


def in_the_file_alone(title: str) -> bool:
    """Whether the database file holds a conversation of this title without its log: what
    the log holds is not read (``immutable``)."""
    name = connection.settings_dict["NAME"]
    with closing(sqlite3.connect(f"file:{name}?immutable=1", uri=True)) as file_alone:
        query = "SELECT count(*) FROM buffers_conversation WHERE title = ?"
        return bool(file_alone.execute(query, [title]).fetchone()[0])


def autocheckpoint() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        return int(cursor.fetchone()[0])


def conversation(title: str, key: str | None = None) -> services.ConversationIn:
    return services.ConversationIn(messages=parse([user("a"), user("b")]), title=title, key=key)


def test_a_long_imports_log_is_copied_into_the_database_file_once_it_has_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(imports, "LOG_APART_FROM", 2)
    before = autocheckpoint()

    services.import_conversations([conversation("copied apart")], via="test")
    checkpoints.wait_for_checkpoints()

    assert in_the_file_alone("copied apart")
    assert autocheckpoint() == before  # the connection checkpoints its commits again


def test_a_short_import_leaves_its_log_to_sqlite() -> None:
    with connection.cursor() as cursor:  # a log of a few pages: SQLite leaves it be
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    services.import_conversations([conversation("short")], via="test")
    checkpoints.wait_for_checkpoints()

    assert not in_the_file_alone("short")  # far from SQLite's 1,000 pages of log


def test_a_long_import_that_fails_leaves_the_connection_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(imports, "LOG_APART_FROM", 2)
    services.import_conversations([conversation("first", key="taken")], via="test")
    checkpoints.wait_for_checkpoints()
    before = autocheckpoint()

    with pytest.raises(healing.InvalidInput, match="already stored"):
        services.import_conversations([conversation("second", key="taken")], via="test")

    assert autocheckpoint() == before
