"""How a statement's plan finds rows of buffers_message, for tests that a read stays in
the rows it needs whatever the table holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection


def plan_lines(sql: str, params: Sequence[Any] = ()) -> list[str]:
    """The lines of ``sql``'s plan: SQLite's EXPLAIN QUERY PLAN details, or PostgreSQL's
    EXPLAIN with joins by nested loop and by index, as a large table makes them worth it
    (not as a test's few rows do)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            return [str(row[-1]) for row in cursor.fetchall()]
        for setting in ("enable_seqscan", "enable_hashjoin", "enable_mergejoin"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN " + sql, params)
        return [row[0] for row in cursor.fetchall()]


def message_scan(sql: str, params: Sequence[Any] = ()) -> str:
    """How the plan of ``sql`` finds rows of buffers_message (named, or aliased ``m``):
    SQLite's SEARCH lines, or PostgreSQL's index conditions on slots."""
    lines = plan_lines(sql, params)
    if connection.vendor == "sqlite":
        return " ".join(d for d in lines if "buffers_message " in f"{d} " or " m " in f" {d} ")
    return " ".join(line for line in lines if "Cond" in line and "slot" in line)


def assert_message_rows_found_by_slot(sql: str, params: Sequence[Any] = ()) -> None:
    """The plan of ``sql`` finds its message rows by their block and a range of slots
    (the unique index on both), not all of a block's or a conversation's rows filtered."""
    scan = message_scan(sql, params)
    if connection.vendor == "sqlite":
        assert "(block_id=? AND slot>? AND slot<?)" in scan, scan
    else:
        assert "(slot >=" in scan, scan
        assert "(slot <" in scan, scan
