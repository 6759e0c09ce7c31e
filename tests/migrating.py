"""Migrating a test's database as ``manage.py migrate`` does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from buffers.triggers import drop_sqlite_cascades, keep_sqlite_triggers


def migrate(executor: MigrationExecutor, targets: list[Any]) -> None:
    """``executor.migrate(targets)`` between the app's ``pre_migrate`` and ``post_migrate``
    receivers: on SQLite, the triggers that name other tables are dropped before (a
    rebuilt table cannot be renamed into place while one names it) and made again after."""
    drop_sqlite_cascades()
    executor.migrate(targets)
    keep_sqlite_triggers()


@contextmanager
def migrated_back_to(target: str) -> Iterator[None]:
    """The app migrated back to ``target`` for the block, then forward to its latest
    migration, whatever the block raised: the rest of the session runs on today's schema."""
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("buffers")
    try:
        migrate(executor, [("buffers", target)])
        yield
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        migrate(executor, latest)
