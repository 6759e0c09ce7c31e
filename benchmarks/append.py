#!/usr/bin/env python
"""Append, heal, read and import costs of stored buffers, side by side in one run.

    make bench                                   # SQLite
    DATABASE_URL=postgres://... make bench       # PostgreSQL

Runs on a scratch database (created and destroyed here, like the test database).
Prints medians and ratios; the machines this runs on are noisy, so read the ratios.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdrop_web.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from buffers import healing, selectors, services  # noqa: E402
from buffers.models import Conversation  # noqa: E402
from buffers.transcripts import read_transcript_file  # noqa: E402

LONG = 100_000
SHORT = 100


def transcript(length: int, *, dangling_at: int | None = None) -> list[healing.Message]:
    """A plausible agent transcript: user, a call, its result, an answer, over and over."""
    raw: list[dict[str, Any]] = []
    n = 0
    while len(raw) < length:
        raw += [
            {"role": "user", "content": f"Question {n}: what does the report say about item {n}?"},
            {
                "role": "assistant",
                "content": "",
                "metadata": {
                    "tool_calls": [
                        {"tool_call_id": f"f{n}", "name": "search", "args": {"q": f"item {n}"}}
                    ]
                },
            },
            {
                "role": "tool",
                "content": f"Item {n}: " + "lorem ipsum dolor sit amet " * 8,
                "metadata": {"tool_call_id": f"f{n}"},
            },
            {
                "role": "assistant",
                "content": f"The report says item {n} is on track.",
                "metadata": {},
            },
        ]
        n += 1
    raw = raw[:length]
    if dangling_at is not None:
        raw.insert(dangling_at, _turn("crashed"))
        raw = raw[:length]
    return healing.parse_messages(raw)


def _turn(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"tool_call_id": call_id, "name": "x"}],
    }


USER_TURN = healing.parse_messages([{"role": "user", "content": "Are you still there?"}])


def timed(work: Callable[[], Any]) -> tuple[float, int]:
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        work()
        elapsed = time.perf_counter() - start
    return elapsed, len(queries.captured_queries)


def cpu_timed(work: Callable[[], Any]) -> float:
    """The CPU time this process spends on ``work`` (not the database's, on PostgreSQL; nor
    the waits of a busy machine), measured apart from ``timed`` (no query capture)."""
    start = time.process_time()
    work()
    return time.process_time() - start


def store(messages: list[healing.Message], title: str) -> Conversation:
    [conversation] = services.import_conversations(
        [services.ConversationIn(messages=messages, title=title)], via="bench"
    )
    return conversation


def import_file(path: Path) -> tuple[Conversation, float]:
    """What ``import_transcripts`` does with a file: read, validate, store. Timed whole."""
    start = time.perf_counter()
    [conversation] = services.import_conversations(
        read_transcript_file(path).conversations, via="bench"
    )
    return conversation, time.perf_counter() - start


def append(conversation: Conversation, batch: list[healing.Message]) -> healing.AppendReport:
    return services.append_messages(conversation_id=conversation.pk, messages=batch, via="bench")


def read_page(conversation: Conversation, offset: int) -> list[Any]:
    return list(selectors.messages_page(conversation, offset=offset, limit=50))


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


class NaiveBuffer:
    """The buffer as the original keeps it: one JSON value, read whole, planned, written back."""

    def __init__(self, messages: list[healing.Message]) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE TABLE IF NOT EXISTS bench_naive (id INTEGER PRIMARY KEY, body TEXT)"
            )
            cursor.execute("DELETE FROM bench_naive")
            cursor.execute(
                "INSERT INTO bench_naive (id, body) VALUES (1, %s)",
                [json.dumps([m.as_stored() for m in messages])],
            )

    def append(self, batch: list[healing.Message]) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT body FROM bench_naive WHERE id = 1")
            messages = healing.parse_messages(json.loads(cursor.fetchone()[0]))
            plan = healing.plan_append(healing.facts_from_messages(messages), batch)
            body = json.dumps([m.as_stored() for m in healing.apply_plan(messages, plan)])
            cursor.execute("UPDATE bench_naive SET body = %s WHERE id = 1", [body])


def row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<58} {value:>14}  {note}")


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def main() -> None:
    print(f"FlowDrop Web append benchmark on {connection.vendor}, block size "
          f"{django.conf.settings.FLOWDROP_BUFFER_BLOCK_SIZE}")  # fmt: skip
    print("(setting up: importing the transcripts takes a while)\n")
    runs = 15

    # One user turn that heals one call declared just before it, at two lengths.
    short = store(transcript(SHORT), "short")
    long = store(transcript(LONG), "long")
    heal_end: dict[str, list[float]] = {"short": [], "long": []}
    heal_cpu: dict[str, list[float]] = {"short": [], "long": []}
    queries: dict[str, int] = {}
    for run in range(runs):
        for name, conversation in (("short", short), ("long", long)):
            append(conversation, healing.parse_messages([_turn(f"{name}{run}")]))
            elapsed, count = timed(partial(append, conversation, USER_TURN))
            heal_end[name].append(elapsed)
            queries[name] = count
            append(conversation, healing.parse_messages([_turn(f"{name}{run}cpu")]))
            heal_cpu[name].append(cpu_timed(partial(append, conversation, USER_TURN)))
    short_ms, long_ms = median_ms(heal_end["short"]), median_ms(heal_end["long"])
    short_cpu, long_cpu = median_ms(heal_cpu["short"]), median_ms(heal_cpu["long"])

    # The same append done the naive way, at both lengths.
    naive_samples: dict[str, list[float]] = {"short": [], "long": []}
    for name, length, repeat in (("short", SHORT, runs), ("long", LONG, 5)):
        naive = NaiveBuffer(transcript(length))
        for run in range(repeat):
            naive.append(healing.parse_messages([_turn(f"naive{run}")]))
            naive_samples[name].append(timed(partial(naive.append, USER_TURN))[0])
    naive_short, naive_long = median_ms(naive_samples["short"]), median_ms(naive_samples["long"])

    # A crash at message 50,000 of 100,000, followed by more turns: heal mid-buffer.
    imports: list[float] = []
    heal_mid: list[float] = []
    mid_queries = 0
    crashed_file = Path(tempfile.mkdtemp()) / "crashed.json"
    crashed_file.write_text(
        json.dumps(
            {
                "title": "crashed at 50,000",
                "messages": [m.as_stored() for m in transcript(LONG, dangling_at=LONG // 2)],
            }
        )
    )
    for _ in range(5):
        crashed, took = import_file(crashed_file)
        imports.append(took)
        elapsed, mid_queries = timed(partial(append, crashed, USER_TURN))
        heal_mid.append(elapsed)
        page = list(selectors.messages_page(crashed, offset=LONG // 2 + 1, limit=1))
        assert page[0].is_placeholder, "the placeholder must sit right after the crashed turn"

    # Reading 50 messages by position, at the start and at the end.
    reads: dict[int, list[float]] = {0: [], LONG - 50: []}
    read_queries = 0
    for _ in range(60):
        for offset in reads:
            elapsed, read_queries = timed(partial(read_page, long, offset))
            reads[offset].append(elapsed)
    read_start, read_end = median_ms(reads[0]), median_ms(reads[LONG - 50])

    print(f"User turn that heals one call (median of {runs})")
    row(f"{SHORT:,}-message conversation", f"{short_ms:.2f} ms", f"{queries['short']} queries")
    row(f"{LONG:,}-message conversation", f"{long_ms:.2f} ms", f"{queries['long']} queries")
    ratio = long_ms / short_ms
    row("ratio long / short (target <= 1.5, same query count)", f"{ratio:.2f}x",
        verdict(ratio <= 1.5 and queries["short"] == queries["long"]))  # fmt: skip
    row(f"{SHORT:,}-message, CPU time in process", f"{short_cpu:.2f} ms")
    row(f"{LONG:,}-message, CPU time in process", f"{long_cpu:.2f} ms")
    worst = max(queries.values())
    row("at most 6 queries and 2 ms in process (issue 16)", f"{worst} queries",
        verdict(worst <= 6 and max(short_cpu, long_cpu) <= 2))  # fmt: skip
    print("\nThe same append the naive way (whole buffer as one JSON value, planned, rewritten)")
    row(f"naive, {SHORT:,} messages", f"{naive_short:.2f} ms")
    row(f"naive, {LONG:,} messages (median of 5)", f"{naive_long:.1f} ms")
    speedup = naive_long / long_ms
    row("naive / ours at 100,000 (target >= 100)", f"{speedup:.0f}x", verdict(speedup >= 100))
    print("\nHeal of a call declared at message 50,000 of 100,000 (median of 5)")
    mid_ms = median_ms(heal_mid)
    row("user turn healing mid-buffer (target < 250 ms)", f"{mid_ms:.2f} ms",
        f"{mid_queries} queries; {verdict(mid_ms < 250)}")  # fmt: skip
    print("\nReading 50 messages by position (median of 60)")
    row("offset 0", f"{read_start:.3f} ms", f"{read_queries} query")
    row(f"offset {LONG - 50:,}", f"{read_end:.3f} ms", f"{read_queries} query")
    read_ratio = read_end / read_start
    row("ratio (target <= 1.5)", f"{read_ratio:.2f}x", verdict(read_ratio <= 1.5))
    print("\nImporting a 100,000-message transcript file (median of 5)")
    import_s = statistics.median(imports)
    size_mb = crashed_file.stat().st_size / 1e6
    row(f"read, validate and store {size_mb:.0f} MB of JSON (target < 5 s)", f"{import_s:.2f} s",
        verdict(import_s < 5))  # fmt: skip


if __name__ == "__main__":
    old_name = connection.settings_dict["NAME"]
    if connection.vendor == "postgresql":  # a scratch database of this process's own
        connection.settings_dict["TEST"]["NAME"] = f"test_{old_name}_bench_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        main()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
