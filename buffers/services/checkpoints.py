"""SQLite: the write-ahead log of a long import copied into the database file by a thread
of its own once the import has committed, not by its commit (``copied_apart``)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager

from django.db import connection

log = logging.getLogger("buffers")

_copies: list[threading.Thread] = []
_copies_lock = threading.Lock()


@contextmanager
def copied_apart(long: bool) -> Iterator[None]:
    """Around one long write (``long``) on SQLite: its commit leaves the write-ahead log as
    it is, and a thread copies the log into the database file once the write has
    committed (a checkpoint); a write that fails starts none.

    SQLite writes a transaction to the log, and the connection that commits one past
    1,000 pages of log copies the whole log into the database file before its commit
    returns, and syncs both files (``wal_autocheckpoint``). For an import of 100,000
    messages that is 150 MB: 0.45 to 0.55 s of its commit, 0.37 s of them waiting for
    the disk. SQLite's documentation suggests just this for such a commit: turn the
    automatic checkpoint off and run it "in a separate thread". The thread's connection
    copies what no reader still needs (a passive checkpoint), and neither waits for nor
    blocks readers and writers meanwhile. The commit is as durable as before: with
    ``synchronous=NORMAL`` (settings.py) a commit in WAL mode is durable once a
    checkpoint has synced the log, whoever runs it. A process that ends before its
    thread has copied (a worker killed) leaves the log to the next checkpoint, as a
    crash does.

    Not on PostgreSQL, not for a database in memory (another connection opens another
    one), nor inside a transaction the caller holds (the commit is the caller's). One
    copy at a time: a long write first waits for the last one, so that its process runs
    no thread of this module when it copies itself (``bulk.Aside``)."""
    database = str(connection.settings_dict["NAME"])
    in_memory = database == ":memory:" or "mode=memory" in database  # as Django tells it
    if not long or connection.vendor != "sqlite" or connection.in_atomic_block or in_memory:
        yield
        return
    wait_for_copies()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        (pages,) = cursor.fetchone()
        cursor.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")
    copy = threading.Thread(target=_copy_log, args=(database,), name="flowdrop-wal-copy")
    with _copies_lock:
        _copies.append(copy)
    copy.start()


def wait_for_copies() -> None:
    """Until every copy started here has ended."""
    with _copies_lock:
        copies = list(_copies)
    for copy in copies:
        copy.join()
        with _copies_lock:
            if copy in _copies:
                _copies.remove(copy)


def _copy_log(database: str) -> None:
    try:
        with closing(sqlite3.connect(database)) as copying:
            copying.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as error:  # the next commit past 1,000 pages of log copies it
        log.warning("the write-ahead log of %s was not copied into it: %s", database, error)
