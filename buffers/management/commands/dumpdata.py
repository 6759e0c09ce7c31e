"""Django's ``dumpdata``, reading the whole database as it was at one moment, and without
the full-text index of message text, which is made from the messages, in a form of each
database's own (an FTS5 table on SQLite, a ``tsvector`` on PostgreSQL): ``loaddata``
makes it again from the messages it loads, on either."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from django.core.management.base import CommandError
from django.core.management.commands import dumpdata
from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

SEARCH_INDEX = "buffers.MessageSearch"


class Command(dumpdata.Command):
    help = (
        f"{dumpdata.Command.help} The database is read as it was at one moment; the search "
        f"index of message text ({SEARCH_INDEX}) is left out: loaddata makes it again from "
        "the messages it loads."
    )

    def handle(self, *app_labels: str, **options: Any) -> None:
        if any(label.lower() == SEARCH_INDEX.lower() for label in app_labels):
            raise CommandError(
                f"{SEARCH_INDEX} is the search index of message text, made from the "
                "messages: it is not dumped, and loaddata makes it again from the "
                "messages it loads."
            )
        options["exclude"] = [*options["exclude"], SEARCH_INDEX]
        with _one_moment(connections[options["database"]]):
            super().handle(*app_labels, **options)


@contextmanager
def _one_moment(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """Every table read as of one moment, so that a dump taken while the app writes holds
    each message's conversation: one read-only transaction (PostgreSQL: one snapshot for
    all its statements; SQLite: a deferred BEGIN, which takes no write lock, so the app's
    writes go on, and reads as of its first read). Begun by hand: Django's would take
    SQLite's write lock (``transaction_mode`` IMMEDIATE) for the whole dump. Within a
    transaction of the caller's, the dump reads in that one, as it sees the database."""
    connection.ensure_connection()
    if connection.in_atomic_block or not connection.get_autocommit():
        yield
        return
    begin = {
        "postgresql": "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        "sqlite": "BEGIN DEFERRED",
    }.get(connection.vendor, "BEGIN")
    with connection.cursor() as cursor:
        cursor.execute(begin)
    try:
        yield
    except BaseException:
        if connection.vendor == "postgresql":
            # The dump's server-side cursor, which Django would close when its reader is
            # collected, in whatever transaction is open then (and abort it, the cursor
            # being gone with this one): the connection goes, and the cursor with it.
            connection.close()
        else:
            with suppress(DatabaseError), connection.cursor() as cursor:
                cursor.execute("ROLLBACK")  # unless the connection is what failed
        raise
    with connection.cursor() as cursor:
        cursor.execute("ROLLBACK")  # it wrote nothing
