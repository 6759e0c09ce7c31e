#!/usr/bin/env python
"""Live ingest of a 1,000-call agent conversation: each model call's span repeats the whole
history so far (the quadratic payload real agents send), and the receiver must not grow
with it beyond decoding the request.

    .venv/bin/python benchmarks/otlp.py              # SQLite
    DATABASE_URL=postgres://... .venv/bin/python benchmarks/otlp.py

For span 10 and span 1,000 of a conversation (each timed on several conversations, side by
side, on a scratch database): the SQL queries of the request, the time of the whole request
through Django's HTTP handling, the time of decoding it alone (protobuf, and reading the
span's messages), and the difference. Target: the same queries, and span 1,000's time beyond
decoding within 2x of span 10's. Then spans per second over real HTTP, against a
development server in its own process.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdrop_web.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from buffers.healing import otlp  # noqa: E402
from buffers.models import ApiToken, Conversation  # noqa: E402

CALLS = 1_000
RUNS = 3
URL = "/api/otel/v1/traces"
PROTOBUF = "application/x-protobuf"


def history(calls: int) -> list[dict[str, Any]]:
    """The messages of an agent run: a question, then call after call with its result."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": "Audit every order of 2026."}]}
    ]
    for n in range(calls):
        messages.append(
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": f"Looking at order {n}."},
                    {
                        "type": "tool_call",
                        "id": f"call_{n}",
                        "name": "lookup_order",
                        "arguments": {"order": f"A-{n:05d}", "fields": ["status", "total"]},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "tool",
                "parts": [
                    {
                        "type": "tool_call_response",
                        "id": f"call_{n}",
                        "response": {"status": "delivered", "total": 10 + n % 90},
                    }
                ],
            }
        )
    return messages


def spans(conversation: str, calls: int) -> list[bytes]:
    """Call ``n``'s span, as its exporter sends it: its input is everything before its own
    answer (2n + 1 messages), its output that answer."""
    messages = history(calls)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    for n in range(calls):
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.conversation.id": conversation,
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps(messages[: 2 * n + 1]),
            "gen_ai.output.messages": json.dumps([messages[2 * n + 1]]),
        }
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes=attributes):
            pass
    provider.shutdown()
    return [encode_spans((span,)).SerializeToString() for span in exporter.get_finished_spans()]


def decoding(body: bytes) -> float:
    start = time.perf_counter()
    for span in otlp.decode_traces(body, PROTOBUF).spans:
        otlp.model_call(span)
    return time.perf_counter() - start


def measure(client: Client, token: str) -> dict[int, list[tuple[float, float, int]]]:
    """For spans 10 and 1,000 of each run's conversation: request seconds, decoding
    seconds, queries."""
    found: dict[int, list[tuple[float, float, int]]] = {10: [], CALLS: []}
    headers = {"Authorization": f"Bearer {token}"}
    for run in range(RUNS):
        bodies = spans(f"bench-{run}", CALLS)
        for number, body in enumerate(bodies, start=1):
            if number not in found:
                answer = client.generic("POST", URL, body, PROTOBUF, headers=headers)
                assert answer.status_code == 200
                continue
            decoded = min(decoding(body) for _ in range(3))
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                answer = client.generic("POST", URL, body, PROTOBUF, headers=headers)
                seconds = time.perf_counter() - start
            assert answer.status_code == 200
            found[number].append((seconds, decoded, len(queries.captured_queries)))
        conversation = Conversation.objects.get(metadata__otel__conversation_id=f"bench-{run}")
        assert conversation.message_count == 2 * CALLS, conversation.message_count
        assert conversation.unanswered_count == 1
        print(f"  run {run + 1}: {CALLS:,} spans stored as {conversation.message_count:,} messages")
    return found


def over_http(token: str) -> float:
    """Spans per second a development server in its own process takes, one request each."""
    bodies = spans("bench-http", CALLS)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tempfile.mkdtemp()
    env = {**os.environ, "FLOWDROP_DEBUG": "0"}
    name = connection.settings_dict["NAME"]
    if connection.vendor == "sqlite":
        env["DATABASE_URL"] = f"sqlite:///{name}"
    else:  # the same server, the scratch database
        env["DATABASE_URL"] = (
            urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{name}").geturl()
        )
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runserver", "--noreload", f"127.0.0.1:{port}"],
        env=env,
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        start = time.perf_counter()
        for body in bodies:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}{URL}",
                data=body,
                headers={"Content-Type": PROTOBUF, "Authorization": f"Bearer {token}"},
            )
            with urllib.request.urlopen(request) as answer:
                assert answer.status == 200
        return len(bodies) / (time.perf_counter() - start)
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    user = User.objects.create_user("bench")
    token = ApiToken.issue(user, "bench")[1]
    client = Client(SERVER_NAME="localhost")
    print(
        f"FlowDrop Web live-ingest benchmark on {connection.vendor}: conversations of "
        f"{CALLS:,} model calls, each span repeating the history; {RUNS} runs\n"
    )
    found = measure(client, token)
    print(
        f"\n{'span':>6}{'request ms':>12}{'decode ms':>11}{'beyond ms':>11}{'payload KB':>12}"
        f"{'queries':>9}"
    )
    beyond: dict[int, float] = {}
    payload = {10: len(spans("size", 10)[-1]), CALLS: len(spans("size", CALLS)[-1])}
    for number, samples in found.items():
        request = statistics.median(s for s, _, _ in samples)
        decode = statistics.median(d for _, d, _ in samples)
        beyond[number] = statistics.median(s - d for s, d, _ in samples)
        queries = {q for _, _, q in samples}
        print(
            f"{number:>6}{request * 1e3:>12.2f}{decode * 1e3:>11.2f}{beyond[number] * 1e3:>11.2f}"
            f"{payload[number] / 1e3:>12.1f}{'/'.join(map(str, sorted(queries))):>9}"
        )
    ratio = beyond[CALLS] / beyond[10]
    verdict = "within 2x" if ratio <= 2 else "OVER 2x"
    print(f"\nspan {CALLS:,} beyond decoding / span 10 beyond decoding: {ratio:.2f} ({verdict})")
    same = {q for _, _, q in found[10]} == {q for _, _, q in found[CALLS]}
    print(f"queries the same for span 10 and span {CALLS:,}: {'yes' if same else 'NO'}")
    print(f"\nover HTTP (development server, one span a request): {over_http(token):.0f} spans/s")


if __name__ == "__main__":
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        main()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
