#!/usr/bin/env python
"""The storage API over real HTTP: appends per second and page fetch times.

    make bench                                   # SQLite
    DATABASE_URL=postgres://... make bench       # PostgreSQL

Starts a real server process (Django's threaded runserver, DEBUG off) on a scratch
database made here and removed afterwards, then drives it from client threads.
Prints medians and ratios: these machines are noisy, so read the ratios.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 4
APPENDS_PER_CLIENT = 50
RUNS = 3
LONG = 100_000


@contextmanager
def scratch_database() -> Iterator[str]:
    """A DATABASE_URL for a database of our own, on the server DATABASE_URL names (or SQLite)."""
    given = os.environ.get("DATABASE_URL", "")
    if not given.startswith("postgres"):
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/bench.sqlite3"
        return
    import psycopg

    url = urllib.parse.urlsplit(given)
    name = f"flowdrop_apibench_{os.getpid()}"
    admin = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


HEADERS: dict[str, str] = {}
"""The API token's header, once the server is up."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def server(database_url: str) -> Iterator[str]:
    env = {**os.environ, "DATABASE_URL": database_url, "FLOWDROP_DEBUG": "0"}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True)
    # A user and a token through the real commands; the server is then called with it.
    subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", "bench", "--email", "b@x.invalid"],
        env={**env, "DJANGO_SUPERUSER_PASSWORD": secrets.token_urlsafe()},
        check=True,
        stdout=subprocess.DEVNULL,
    )
    made = subprocess.run(
        [*manage, "api_token", "create", "bench"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    HEADERS["Authorization"] = f"Bearer {made.stdout.strip()}"
    port = free_port()
    process = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/api/openapi.json", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)


def call(url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json", **HEADERS})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def create(base: str, messages: list[dict[str, Any]]) -> int:
    conversation_id: int = call(f"{base}/api/conversations", {"messages": messages})["id"]
    return conversation_id


def appends_per_second(base: str, conversation_ids: list[int]) -> float:
    """Client threads each appending a call and then the user turn that heals it."""
    start = threading.Barrier(CLIENTS + 1)

    def client(number: int) -> None:
        url = f"{base}/api/conversations/{conversation_ids[number]}/messages"
        start.wait()
        for n in range(APPENDS_PER_CLIENT // 2):
            call_id = f"t{number}-{n}-{time.monotonic_ns()}"
            turn = {"role": "assistant", "content": "", "tool_calls": [{"id": call_id}]}
            call(url, {"messages": [turn]})
            call(url, {"messages": [{"role": "user", "content": f"{number}/{n}"}]})

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return CLIENTS * APPENDS_PER_CLIENT / (time.perf_counter() - began)


def page_ms(base: str, conversation_id: int, offset: int) -> float:
    url = f"{base}/api/conversations/{conversation_id}/messages?offset={offset}&limit=50"
    began = time.perf_counter()
    page = call(url)
    elapsed = time.perf_counter() - began
    assert len(page["messages"]) == 50
    return elapsed * 1000


def long_transcript() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(LONG // 4):
        messages += [
            {"role": "user", "content": f"Question {n}"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": f"f{n}", "name": "s"}]},
            {"role": "tool", "tool_call_id": f"f{n}", "content": "lorem ipsum dolor " * 10},
            {"role": "assistant", "content": f"Answer {n}"},
        ]
    return messages


def main() -> None:
    vendor = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    print(f"FlowDrop Web storage API over HTTP on {vendor}: {CLIENTS} client threads, "
          f"{APPENDS_PER_CLIENT} appends each, median of {RUNS} runs\n")  # fmt: skip
    with scratch_database() as database_url, server(database_url) as base:
        one, many = [], []
        for _ in range(RUNS):
            shared = create(base, [{"role": "user", "content": "start"}])
            one.append(appends_per_second(base, [shared] * CLIENTS))
            separate = [
                create(base, [{"role": "user", "content": "start"}]) for _ in range(CLIENTS)
            ]
            many.append(appends_per_second(base, separate))
        print("Appends per second (each client: a call, then the user turn that heals it)")
        print(f"  {'to one conversation':<46} {statistics.median(one):>8.0f} /s")
        print(f"  {'to one conversation per client':<46} {statistics.median(many):>8.0f} /s")

        began = time.perf_counter()
        long = create(base, long_transcript())
        print(f"\nStoring a {LONG:,}-message transcript in one POST: "
              f"{time.perf_counter() - began:.2f} s")  # fmt: skip
        first, last = [], []
        for _ in range(40):
            first.append(page_ms(base, long, 0))
            last.append(page_ms(base, long, LONG - 50))
        ratio = statistics.median(last) / statistics.median(first)
        print("\nFetching 50 messages of that conversation (median of 40)")
        print(f"  {'first page':<46} {statistics.median(first):>8.2f} ms")
        print(f"  {'last page (offset 99,950)':<46} {statistics.median(last):>8.2f} ms")
        verdict = "meets target" if ratio <= 1.5 else "MISSES target"
        print(f"  {'ratio last / first (target <= 1.5)':<46} {ratio:>8.2f}x  {verdict}")


if __name__ == "__main__":
    main()
