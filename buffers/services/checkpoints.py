"""SQLite: the write-ahead log of a long import copied into the database file by a thread
of its own once the import has committed, not by its commit
(``checkpointed_after_commit``)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import cast

from django.db import connection
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper

log = logging.getLogger("buffers")

_checkpoints: list[threading.Thread] = []
_checkpoints_lock = threading.Lock()


@contextmanager
def checkpointed_after_commit() -> Iterator[None]:
    """Around one long write on SQLite: its commit leaves the write-ahead log as it is, and
    a thread copies the log into the database file once the write has committed (a
    checkpoint); a write that fails starts none.

    SQLite writes a transaction to the log, and the connection that commits one past
    1,000 pages of log copies the whole log into the database file before its commit
    returns, and syncs both files (``wal_autocheckpoint``). For an import of 100,000
    messages that is 150 MB: 0.45 to 0.55 s of its commit, 0.37 s of them waiting for
    the disk. SQLite's documentation suggests just this for such a commit: turn the
    automatic checkpoint off and run it "in a separate thread". The thread's connection
    copies what no reader still needs (a passive checkpoint), and neither waits for nor
    blocks readers and writers meanwhile. What it changes is when the write is safe from
    a power loss: with ``synchronous=NORMAL`` (settings.py) a commit in WAL mode is safe
    from one once a checkpoint has synced the log, as every short commit already is; a
    long one now is a moment after it returns, not as it returns. A process that ends
    (or is killed) loses nothing it committed: the log holds it for the next checkpoint.

    Not on PostgreSQL, not for a database in memory (another connection opens another
    one), nor inside a transaction the caller holds (the commit is the caller's). It
    first waits for the checkpoints started before, so that a long write never runs
    beside one of them: the import copies its process for ``bulk.Aside``, which it does
    only when the process runs no other thread."""
    wait_for_checkpoints()
    if (
        connection.vendor != "sqlite"
        or connection.in_atomic_block
        or cast(SQLiteDatabaseWrapper, connection).is_in_memory_db()
    ):
        yield
        return
    database = str(connection.settings_dict["NAME"])
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        (pages,) = cursor.fetchone()
        cursor.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")
    checkpoint = threading.Thread(target=_checkpoint, args=(database,), name="flowdrop-checkpoint")
    try:
        checkpoint.start()
    except RuntimeError:  # no thread left to start: the write has committed, copy it here
        _checkpoint(database)
        return
    with _checkpoints_lock:
        _checkpoints.append(checkpoint)


def wait_for_checkpoints() -> None:
    """Until every checkpoint started here has ended."""
    with _checkpoints_lock:
        started = list(_checkpoints)
    for checkpoint in started:
        checkpoint.join()
        with _checkpoints_lock:
            if checkpoint in _checkpoints:
                _checkpoints.remove(checkpoint)


def _checkpoint(database: str) -> None:
    try:
        # As Django opens it (a name may be a file: URI).
        with closing(sqlite3.connect(database, uri=True)) as checkpointing:
            checkpointing.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as error:  # the next commit past 1,000 pages of log copies it
        log.warning("the write-ahead log of %s was not copied into it: %s", database, error)
