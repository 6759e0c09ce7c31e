#!/usr/bin/env python
"""The inspector's pages: server time and SQL queries, small against large, side by side.

    make bench                                   # SQLite
    DATABASE_URL=postgres://... make bench       # PostgreSQL

The conversation page of a 100-message and a 100,000-message conversation, and the list
with 100 and with 100,000 conversations, each rendered through Django's full stack
(middleware, views, templates) on a scratch database. Medians; read the ratios.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdrop_web.settings")

import django  # noqa: E402

django.setup()

from append import store, transcript  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from buffers.models import Conversation  # noqa: E402

RUNS = 25


def measure(client: Client, url: str) -> tuple[float, int]:
    """The median time to answer ``url``, and its query count."""
    times = []
    queries = 0
    for _ in range(RUNS):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - start)
        assert response.status_code == 200, url
        queries = len(captured.captured_queries)
    return statistics.median(times) * 1000, queries


def compare(label: str, client: Client, small: tuple[str, str], large: tuple[str, str]) -> None:
    (small_name, small_url), (large_name, large_url) = small, large
    small_ms, small_q = measure(client, small_url)
    large_ms, large_q = measure(client, large_url)
    ratio = large_ms / small_ms
    ok = ratio <= 1.5 and small_q == large_q
    print(label)
    print(f"  {small_name:<44} {small_ms:>8.2f} ms  {small_q} queries")
    print(f"  {large_name:<44} {large_ms:>8.2f} ms  {large_q} queries")
    verdict = "meets target" if ok else "MISSES target"
    print(f"  {'ratio (target <= 1.5, same query count)':<44} {ratio:>8.2f}x  {verdict}\n")


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


def main() -> None:
    print(f"FlowDrop Web pages on {connection.vendor}, median of {RUNS}\n")
    client = Client()
    # Staff see every conversation (buffers.access), as an operator browsing crashes would.
    client.force_login(User.objects.create_user("bench", is_staff=True))
    short = store(transcript(100, dangling_at=50), "short")
    long = store(transcript(100_000, dangling_at=50_000), "long")
    compare(
        "The conversation page (first window of 50 messages)",
        client,
        ("100-message conversation", f"/c/{short.pk}/"),
        ("100,000-message conversation", f"/c/{long.pk}/"),
    )
    compare(
        "The conversation page opened at the unanswered call (deep link)",
        client,
        ("100-message conversation, at message 50", f"/c/{short.pk}/?at=50"),
        ("100,000-message conversation, at 50,000", f"/c/{long.pk}/?at=50000"),
    )
    more_conversations(100)
    list_small = measure(client, "/?show=unanswered&sort=messages")
    more_conversations(100_000)
    list_large = measure(client, "/?show=unanswered&sort=messages")
    ratio = list_large[0] / list_small[0]
    ok = ratio <= 1.5 and list_small[1] == list_large[1]
    print("The conversation list (filtered to unanswered, sorted by messages)")
    print(f"  {'100 conversations':<44} {list_small[0]:>8.2f} ms  {list_small[1]} queries")
    print(f"  {'100,000 conversations':<44} {list_large[0]:>8.2f} ms  {list_large[1]} queries")
    verdict = "meets target" if ok else "MISSES target"
    print(f"  {'ratio (target <= 1.5, same query count)':<44} {ratio:>8.2f}x  {verdict}")


if __name__ == "__main__":
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        main()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
