#!/usr/bin/env python
"""The inspector's pages: server time and SQL queries, small against large, side by side.

    make bench                                   # SQLite
    DATABASE_URL=postgres://... make bench       # PostgreSQL
    BENCH_SCALE=0.1 .venv/bin/python benchmarks/pages.py   # a quick run: a tenth the size

The conversation page (with its stored verdicts) of a 100-message and a 100,000-message
conversation, and the server process's peak memory serving it; the reasons behind the
verdicts, read on demand; the list with 100 and with
100,000 conversations; search (issue 15): the list's over 1,000 and over 100,000
conversations holding 1,000,000 messages, and inside a conversation of 100 and of 100,000
messages. Each rendered through Django's full stack (middleware, views, templates), each
part on its own scratch database. Medians; read the ratios. BENCH_SCALE scales the large
sizes (not the small ones).
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdrop_web.settings")

import django  # noqa: E402

django.setup()

from append import store, transcript  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management.color import no_style  # noqa: E402
from django.db import connection, models  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from buffers import healing, services  # noqa: E402
from buffers.models import Block, Conversation, DeclaredCall, Message  # noqa: E402

RUNS = 25
BUDGET_S = 10.0
"""A view slower than this in all stops at 3 runs or more (the 100,000-message sendability)."""
SCALE = float(os.environ.get("BENCH_SCALE", "1"))
LONG = round(100_000 * SCALE)
MANY = round(100_000 * SCALE)
FEW = 1_000
PER_CONVERSATION = 10
HX = {"HX-Request": "true"}
VIEWS = 5


def measure(client: Client, url: str, headers: dict[str, str] | None = None) -> tuple[float, int]:
    """The median time to answer ``url``, and its query count."""
    times = []
    queries = 0
    for run in range(RUNS):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = client.get(url, headers=headers)
            times.append(time.perf_counter() - start)
        assert response.status_code == 200, url
        queries = len(captured.captured_queries)
        if run >= 2 and sum(times) > BUDGET_S:
            break
    return statistics.median(times) * 1000, queries


def compare(
    label: str,
    client: Client,
    small: tuple[str, str],
    large: tuple[str, str],
    *,
    target_ms: float | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    (small_name, small_url), (large_name, large_url) = small, large
    small_ms, small_q = measure(client, small_url, headers)
    large_ms, large_q = measure(client, large_url, headers)
    report(label, (small_name, small_ms, small_q), (large_name, large_ms, large_q), target_ms)


def report(
    label: str,
    small: tuple[str, float, int],
    large: tuple[str, float, int],
    target_ms: float | None = None,
    *,
    like_pages: bool = True,
) -> None:
    """Print the two figures and their ratio, judged by the target: at most 1.5x, the
    same query count, and the large one within ``target_ms``. ``like_pages`` False: the
    large page shows more rows than the small one can hold, so the ratio measures the
    rows, not the data's size (docs/decisions.md, "Like pages"): printed, not judged."""
    (small_name, small_ms, small_q), (large_name, large_ms, large_q) = small, large
    ratio = large_ms / small_ms
    ok = small_q == large_q and (target_ms is None or large_ms <= target_ms)
    target = (
        "ratio (target <= 1.5, same query count"
        if like_pages
        else "(unlike pages: same query count"
    )
    ok = ok and (ratio <= 1.5 or not like_pages)
    print(label)
    print(f"  {small_name:<52} {small_ms:>8.2f} ms  {small_q} queries")
    print(f"  {large_name:<52} {large_ms:>8.2f} ms  {large_q} queries")
    target += f", large <= {target_ms:g} ms)" if target_ms else ")"
    verdict = "meets target" if ok else "MISSES target"
    print(f"  {target:<52} {ratio:>8.2f}x  {verdict}\n")


def more_conversations(total: int) -> None:
    """Conversations for the list: rows with counters, no messages (the list reads none)."""
    missing = total - Conversation.objects.count()
    Conversation.objects.bulk_create(
        [
            Conversation(title=f"run {n}", source="bench", unanswered_count=n % 3)
            for n in range(missing)
        ],
        batch_size=5_000,
    )


def staff_client() -> Client:
    """Staff see every conversation (buffers.access), as an operator browsing crashes would."""
    client = Client()
    user, _ = User.objects.get_or_create(username="bench", defaults={"is_staff": True})
    client.force_login(user)
    return client


def pages() -> None:
    client = staff_client()
    short = store(transcript(100, dangling_at=50), "short")
    long = store(transcript(LONG, dangling_at=LONG // 2), "long")
    compare(
        "The conversation page with its stored verdicts (first window of 50 messages)",
        client,
        ("100-message conversation", f"/c/{short.pk}/"),
        (f"{LONG:,}-message conversation", f"/c/{long.pk}/"),
    )
    compare(
        "The conversation page opened at the unanswered call (deep link)",
        client,
        ("100-message conversation, at message 50", f"/c/{short.pk}/?at=50"),
        (f"{LONG:,}-message conversation, at {LONG // 2:,}", f"/c/{long.pk}/?at={LONG // 2}"),
    )
    print(
        "(The reasons, message by message, are read from the whole buffer when a reader asks\n"
        " for them: a click, never a page view. Not a page's cost; shown for what it is.)"
    )
    compare(
        "The reasons behind the verdicts, on demand (htmx)",
        client,
        ("100-message conversation", f"/c/{short.pk}/sendability"),
        (f"{LONG:,}-message conversation", f"/c/{long.pk}/sendability"),
        headers=HX,
    )
    peak_memory(short, long)
    more_conversations(100)
    list_small = measure(client, "/?show=unanswered&sort=messages")
    more_conversations(MANY)
    list_large = measure(client, "/?show=unanswered&sort=messages")
    report(
        "The conversation list (filtered to unanswered, sorted by messages)",
        ("100 conversations", *list_small),
        (f"{MANY:,} conversations", *list_large),
    )


def peak_memory(short: Conversation, long: Conversation) -> None:
    """The server process's peak memory while it serves the conversation page, small
    first, then large: measured in a fresh process (as a server worker is) on this scratch
    database, so that building the data here does not count."""
    views = [(f"{c.message_count:,} messages: the page", f"/c/{c.pk}/") for c in (short, long)]
    command = [sys.executable, __file__, "--serve", connection.settings_dict["NAME"]]
    command += [page for _, page in views]
    child = subprocess.run(command, capture_output=True, text=True, check=True)
    figures = json.loads(child.stdout.splitlines()[-1])
    print(f"Server peak memory: a fresh process serving each page {VIEWS} times")
    print(f"  {'after start-up and one request':<52} {figures['start_rss']:>8.1f} MB peak RSS")
    for (name, _), (rss, traced) in zip(views, figures["views"], strict=True):
        print(f"  {name:<52} {rss:>8.1f} MB peak RSS, {traced:.1f} MB tracemalloc peak")
    grown = figures["views"][1][0] - figures["views"][0][0]
    print(f"  {'growth from small to large (target: flat)':<52} {grown:>8.1f} MB\n")


def serve(database: str, urls: list[str]) -> None:
    """The ``--serve`` child of ``peak_memory``: each URL served ``VIEWS`` times; the
    process's peak RSS (VmHWM, monotonic) after each, then, with tracemalloc on, the peak
    of Python allocations while serving each once."""
    connection.settings_dict["NAME"] = database
    setup_test_environment()
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    client.get("/")

    def rss_mb() -> float:
        """The peak resident set of this process: Linux's VmHWM. (getrusage's ru_maxrss
        would do elsewhere, but on Linux it keeps the parent's peak across fork and exec.)"""
        status = Path("/proc/self/status")
        if status.exists():
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    start_rss = rss_mb()
    rss = []
    for url in urls:
        for _ in range(VIEWS):
            assert client.get(url).status_code == 200
        rss.append(rss_mb())
    tracemalloc.start()
    traced = []
    for url in urls:
        tracemalloc.reset_peak()
        client.get(url)
        traced.append(tracemalloc.get_traced_memory()[1] / 2**20)
    tracemalloc.stop()
    views = [[r, t] for r, t in zip(rss, traced, strict=True)]
    print(json.dumps({"start_rss": start_rss, "views": views}))


# Search (issue 15, item 1).


def planted(length: int, words: dict[int, str]) -> list[healing.Message]:
    """``transcript(length)`` with the user turn at each of these indexes (multiples of 4)
    saying something else."""
    messages = transcript(length)
    for index, text in words.items():
        [messages[index]] = healing.parse_messages([{"role": "user", "content": text}])
    return messages


def search_in_a_conversation() -> None:
    client = staff_client()
    rare = {4: "the quokka smiled"}
    short = store(planted(100, {**rare, 48: "a quokka again", 96: "quokka, last"}), "short")
    spots = [LONG // 10 // 4 * 4, LONG // 2 // 4 * 4, LONG * 9 // 10 // 4 * 4]
    long = store(planted(LONG, {spot: f"the quokka at {spot}" for spot in spots}), "long")
    for query, about in (
        ("quokka", "3 hits"),
        ("report", "half the messages: 50 and 50,000 hits"),
    ):
        compare(
            f"Search inside a conversation, next hit opened (htmx): {query!r}, {about}",
            client,
            ("100-message conversation", f"/c/{short.pk}/search?q={query}"),
            (f"{LONG:,}-message conversation", f"/c/{long.pk}/search?q={query}"),
            target_ms=50,
            headers=HX,
        )
    compare(
        "Search inside a conversation, the API's first page of hits: 'quokka'",
        client,
        ("100-message conversation", f"/api/conversations/{short.pk}/search?q=quokka"),
        (f"{LONG:,}-message conversation", f"/api/conversations/{long.pk}/search?q=quokka"),
        target_ms=50,
    )


def search_the_list() -> None:
    """1,000 conversations of 10 messages through the import service, then copies of them
    made by the database (``copy_conversations``) up to 100,000 holding 1,000,000 messages.
    In both: one message of one conversation says "quokka" (it is not copied), one message
    of every hundredth conversation says "zeppelin", of every twentieth "airship", and
    "report" is in every one. "airship" fills the first page at both sizes (50 of 1,000
    match), so its ratio compares like pages, as "zeppelin"'s cannot (10 rows against 50)."""
    client = staff_client()
    words: dict[int, dict[int, str]] = {n: {} for n in range(FEW)}
    for n in range(0, FEW, 20):
        words[n][8] = "The airship is late."
    for n in range(0, FEW, 100):
        words[n][0] = "When does the zeppelin leave?"
    words[1][4] = "the quokka smiled"
    template = services.import_conversations(
        [
            services.ConversationIn(messages=planted(PER_CONVERSATION, words[n]), title=f"run {n}")
            for n in range(FEW)
        ],
        via="bench",
    )
    queries = {
        "quokka": "1 conversation matches",
        "zeppelin": "1% of conversations match",
        "airship": "5% of conversations match: a full first page at both sizes",
        "report": "every conversation matches",
    }
    small = {q: measure(client, f"/?q={q}") for q in queries}
    small_api = measure(client, "/api/conversations?q=zeppelin")
    # Like pages: the small list holds 10 that say "zeppelin", so both show 10.
    small_api_ten = measure(client, "/api/conversations?q=zeppelin&limit=10")
    unique = template[1].pk
    copies = math.ceil((MANY - FEW) / (FEW - 1))
    print(f"(copying {FEW - 1:,} conversations {copies:,} times)", flush=True)
    started = time.perf_counter()
    copy_conversations(template[0].pk, template[-1].pk, unique, copies)
    took = time.perf_counter() - started
    total = Conversation.objects.count()
    messages = Message.objects.count()
    print(f"({total:,} conversations holding {messages:,} messages; copies took {took:.1f} s)")
    print(
        f"(the {FEW:,} conversations hold {FEW // 100} that say 'zeppelin': the small list "
        "shows that many rows, the large a full page; its ratios compare unlike pages)\n"
    )
    for query, about in queries.items():
        report(
            f"The list searched for {query!r}: {about} (first page of 50, with snippets)",
            (f"{FEW:,} conversations, {FEW * PER_CONVERSATION:,} messages", *small[query]),
            (f"{total:,} conversations, {messages:,} messages", *measure(client, f"/?q={query}")),
            target_ms=100,
            like_pages=query != "zeppelin",
        )
    report(
        "The API's list searched for 'zeppelin' (first page of 100, with matches)",
        (f"{FEW:,} conversations, {FEW * PER_CONVERSATION:,} messages", *small_api),
        (
            f"{total:,} conversations, {messages:,} messages",
            *measure(client, "/api/conversations?q=zeppelin"),
        ),
        target_ms=100,
        like_pages=False,
    )
    report(
        "The API's list searched for 'zeppelin', first page of 10 (like pages: both hold 10)",
        (f"{FEW:,} conversations, {FEW * PER_CONVERSATION:,} messages", *small_api_ten),
        (
            f"{total:,} conversations, {messages:,} messages",
            *measure(client, "/api/conversations?q=zeppelin&limit=10"),
        ),
        target_ms=100,
    )


def copy_conversations(first: int, last: int, leave_out: int, copies: int) -> None:
    """``copies`` copies of conversations ``first``..``last`` (but ``leave_out``) with their
    blocks, messages, declared calls and search index rows, made by the database in one
    statement a table: what the import service wrote, at a fraction of its cost. Each copy's
    ids are the original's plus a multiple of the table's highest id, its times the
    original's plus as many days."""
    spans: dict[type[models.Model], int] = {}
    for model in (Conversation, Block, Message, DeclaredCall):
        spans[model] = model.objects.aggregate(top=models.Max("pk"))["top"] or 0
    repeat = "WITH RECURSIVE copy(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM copy WHERE n < %s) "
    within = f"BETWEEN {first} AND {last} AND {{}} <> {leave_out}"
    # Each copy a day after the one before, as a list grows: the most recent conversations
    # (the search's sample) are then a run of different ones, as in a real list.
    if connection.vendor == "postgresql":
        later = "{} + copy.n * interval '1 day'"
    else:
        later = "strftime('%Y-%m-%d %H:%M:%f', {}, '+' || copy.n || ' days')"
    with connection.cursor() as cursor:
        for model in (Conversation, Block, Message, DeclaredCall):
            columns, values = [], []
            for field in model._meta.concrete_fields:
                assert field.column
                columns.append(field.column)
                target = field.related_model if field.is_relation else None
                if field.primary_key:
                    values.append(f"{field.column} + copy.n * {spans[model]}")
                elif target in spans:
                    values.append(f"{field.column} + copy.n * {spans[target]}")
                elif model is Conversation and field.column == "key":
                    values.append("'copy' || copy.n || '-' || key")
                elif model is Conversation and field.column in ("created_at", "updated_at"):
                    values.append(later.format(field.column))
                else:
                    values.append(field.column)
            conversation = "id" if model is Conversation else "conversation_id"
            cursor.execute(
                f"{repeat}INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
                f"SELECT {', '.join(values)} FROM {model._meta.db_table}, copy "
                f"WHERE {conversation} {within.format(conversation)}",
                [copies],
            )
        offsets = f"copy.n * {spans[Message]}, conversation_id + copy.n * {spans[Conversation]}"
        if connection.vendor == "postgresql":
            cursor.execute(
                f"{repeat}INSERT INTO buffers_messagesearch (message_id, conversation_id, "
                f"block_id, document) SELECT message_id + {offsets}, "
                f"block_id + copy.n * {spans[Block]}, document FROM buffers_messagesearch, copy "
                f"WHERE conversation_id {within.format('conversation_id')}",
                [copies],
            )
            for sql in connection.ops.sequence_reset_sql(
                no_style(), [Conversation, Block, Message, DeclaredCall]
            ):
                cursor.execute(sql)
            cursor.execute("ANALYZE")
        else:
            low, high = (
                Message.objects.filter(conversation_id__gte=first, conversation_id__lte=last)
                .aggregate(low=models.Min("pk"), high=models.Max("pk"))
                .values()
            )
            cursor.execute(
                f"{repeat}INSERT INTO buffers_messagesearch (rowid, conversation_id, body) "
                f"SELECT buffers_messagesearch.rowid + {offsets}, body FROM "
                f"buffers_messagesearch, copy WHERE buffers_messagesearch.rowid "
                f"BETWEEN {low} AND {high} AND conversation_id <> {leave_out}",
                [copies],
            )
            cursor.execute("ANALYZE")


@contextmanager
def scratch_database() -> Iterator[None]:
    """A database of its own, created and destroyed here as the test database is, named
    for this process so that it never takes (or drops) a test run's database."""
    old_name = connection.settings_dict["NAME"]
    if connection.vendor == "postgresql":
        connection.settings_dict["TEST"]["NAME"] = f"bench_pages_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


def main(parts: list[str]) -> None:
    print(
        f"FlowDrop Web pages on {connection.vendor}, median of {RUNS} (of 3 or more when "
        f"they take over {BUDGET_S:g} s), scale {SCALE:g}\n"
    )
    known: dict[str, Any] = {
        "pages": pages,
        "search-conversation": search_in_a_conversation,
        "search-list": search_the_list,
    }
    for name in parts or list(known):
        with scratch_database():
            known[name]()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], sys.argv[3:])
    else:
        setup_test_environment()
        main(sys.argv[1:])
