#!/usr/bin/env python
"""Import, export and normalization of a 100,000-message transcript, in every format.

    make bench                                   # SQLite
    DATABASE_URL=postgres://... make bench       # PostgreSQL
    .venv/bin/python benchmarks/exchange.py      # this one alone

One synthetic agent transcript (a system prompt; user turns; assistant turns declaring
one to three calls with JSON arguments, their results, answers in text; a crashed tail
with a few calls unanswered) is written as a file in each format a transcript is
read as, then imported from those bytes (read, then stored), exported in each export
format, normalized (MEM-5) and checked for sendability, on a scratch database (created
and destroyed here, like the test database).

Prints, for each operation and format, the median time, the peak Python memory
(tracemalloc, taken in a run of its own since it slows the work down), the SQL queries,
and whether it is under the 5 s target.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdrop_web.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from buffers import healing, selectors, services, transcripts  # noqa: E402
from buffers.exports import DOCUMENT_FORMATS, NATIVE_FORMATS, export  # noqa: E402
from buffers.healing import formats, normalize, sendability  # noqa: E402
from buffers.models import Conversation  # noqa: E402
from buffers.services import checkpoints  # noqa: E402
from buffers.transcripts import read_transcript  # noqa: E402

# 100,000 messages of a runtime's log are larger than the upload page and the API take
# (transcripts.MAX_TRANSCRIPT_BYTES); the import itself is measured on them all the same.
transcripts.MAX_TRANSCRIPT_BYTES = 1 << 30

LENGTH = 100_000
TARGET_S = 5.0
IMPORT_RUNS = 3  # each import stores another 100,000 rows
EXPORT_RUNS = 3
FAST_RUNS = 5

TOOLS = ("search", "read_file", "run_sql")

# (label, file name, format read as): each input file a transcript is read from.
INPUTS: tuple[tuple[str, str, str], ...] = (
    ("stored", "bench.json", "stored"),
    ("stored JSONL", "bench.jsonl", "stored"),
    *((fmt, "bench.json", fmt) for fmt in formats.FORMATS),
    ("claude-code", "session.jsonl", "claude-code"),
    ("codex", "rollout.jsonl", "codex"),
)

SESSION = "6f1c2a9e-3b7d-4e51-9a0c-8d2e4f6b1a37"


def transcript(length: int) -> list[healing.Message]:
    """A plausible agent run, ``length`` messages, ending in a crash: the turn cut off at
    ``length`` may lose its results, and the last assistant turn declares three calls of
    which only the first was answered."""
    raw: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful research assistant. Cite what you read."}
    ]
    tail = 3
    n = 0
    while len(raw) < length - tail:
        raw.append(
            {"role": "user", "content": f"Question {n}: what does the report say about item {n}?"}
        )
        if n % 5 == 4:  # now and then an answer straight away, in text
            raw.append(
                {"role": "assistant", "content": f"Item {n} is in the summary; no lookup needed."}
            )
            n += 1
            continue
        filters = {"year": 2024, "tags": ["report", f"t{n % 7}"]}
        calls = [
            _call(f"call_{n}_{j}", tool, {"query": f"item {n}", "limit": 5 + j, "filters": filters})
            for j, tool in enumerate(TOOLS[: 1 + n % 3])
        ]
        raw.append(
            {
                "role": "assistant",
                "content": "Let me look that up." if n % 2 else None,
                "tool_calls": calls,
            }
        )
        raw += [
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": f"Result {j} for item {n}: " + "lorem ipsum dolor sit amet " * 4,
            }
            for j, call in enumerate(calls)
        ]
        raw.append({"role": "assistant", "content": f"The report says item {n} is on track."})
        n += 1
    raw = raw[: length - tail]
    crashed = [_call(f"crash_{j}", TOOLS[j], {"query": "last one"}) for j in range(3)]
    raw += [
        {"role": "user", "content": "One more thing: check all three sources."},
        {"role": "assistant", "content": None, "tool_calls": crashed},
        {"role": "tool", "tool_call_id": "crash_0", "content": "partial result"},
    ]
    assert len(raw) == length
    return healing.parse_messages(raw)


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def input_files(messages: list[healing.Message]) -> dict[str, bytes]:
    """Each input's bytes, as a client would upload them."""
    stored = {"title": "bench", "messages": [m.as_stored() for m in messages]}
    files = {
        "stored": json.dumps(stored).encode(),
        "stored JSONL": (json.dumps(stored) + "\n").encode(),
    }
    for fmt in formats.FORMATS:
        files[fmt] = json.dumps(formats.write(messages, fmt, {})).encode()
    files["claude-code"] = claude_code_session(messages).encode()
    files["codex"] = codex_rollout(messages).encode()
    return files


def _calls(message: healing.Message) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], message.metadata.get("tool_calls", []))


def _stamp(n: int) -> str:
    seconds = 1_700_000_000 + n
    clock = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{clock}.{n % 1000:03d}Z"


def claude_code_session(messages: list[healing.Message]) -> str:
    """The transcript as Claude Code writes a session: every event in its envelope, an
    assistant turn one content block per line (thinking, text, then each tool_use) under
    one message id, each tool result in a user event of its own. System rows have no
    place in a session (the system prompt is not logged) and are left out."""
    lines: list[str] = []
    parent: str | None = None
    envelope = {
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/projects/bench",
        "sessionId": SESSION,
        "version": "2.0.50",
        "gitBranch": "main",
    }
    usage = {"input_tokens": 12, "cache_read_input_tokens": 14210, "output_tokens": 40}

    def event(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent
        uid = f"{len(lines):08d}-0000-4000-8000-{len(lines):012d}"
        line = {"parentUuid": parent, **envelope, "type": kind, "message": message}
        lines.append(json.dumps({**line, **extra, "uuid": uid, "timestamp": _stamp(len(lines))}))
        parent = uid

    for turn, message in enumerate(messages):
        if message.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message.metadata["tool_call_id"],
                "content": message.content,
            }
            event("user", {"role": "user", "content": [result]}, toolUseResult={"ok": True})
        elif message.role == "user":
            event("user", {"role": "user", "content": message.content})
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = [
                {"type": "thinking", "thinking": "Which source answers this?", "signature": "Eq=="}
            ]
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in _calls(message):
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": json.loads(call["function"]["arguments"]),
                    }
                )
            for block in blocks:
                reply = {
                    "id": f"msg_{turn:024d}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [block],
                    "stop_reason": None,
                    "usage": usage,
                }
                event("assistant", reply, requestId=f"req_{turn:024d}")
    return "\n".join(lines) + "\n"


def codex_rollout(messages: list[healing.Message]) -> str:
    """The transcript as a Codex CLI rollout: a session_meta line, then each message as
    response_item lines (a message item, its function calls, their outputs), with the
    turn_context Codex writes before each model request and the token_count after it."""
    meta = {
        "id": SESSION,
        "timestamp": _stamp(0),
        "cwd": "/home/dev/bench",
        "originator": "codex_cli_rs",
        "cli_version": "0.104.0",
        "model_provider": "openai",
    }
    lines = [json.dumps({"timestamp": _stamp(0), "type": "session_meta", "payload": meta})]

    def line(kind: str, payload: dict[str, Any]) -> None:
        lines.append(
            json.dumps({"timestamp": _stamp(len(lines)), "type": kind, "payload": payload})
        )

    context = {"cwd": "/home/dev/bench", "approval_policy": "on-request", "model": "gpt-5-codex"}
    tokens = {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 900}}}
    for message in messages:
        if message.role in ("user", "system"):
            role = "user" if message.role == "user" else "developer"
            text = {"type": "input_text", "text": message.content}
            line("response_item", {"type": "message", "role": role, "content": [text]})
            line("turn_context", context)
        elif message.role == "assistant":
            if message.content:
                text = {"type": "output_text", "text": message.content}
                item = {"type": "message", "role": "assistant", "content": [text]}
                line("response_item", item)
            for call in _calls(message):
                function = call["function"]
                item = {
                    "type": "function_call",
                    "name": function["name"],
                    "arguments": function["arguments"],
                    "call_id": call["id"],
                }
                line("response_item", item)
            line("event_msg", tokens)
        else:
            output = {
                "type": "function_call_output",
                "call_id": message.metadata["tool_call_id"],
                "output": message.content,
            }
            line("response_item", output)
    return "\n".join(lines) + "\n"


@contextmanager
def counting_queries() -> Iterator[list[int]]:
    """The number of queries run inside, kept cheaply (CaptureQueriesContext would format
    and keep the SQL of every bulk insert, which costs time and memory of its own)."""
    count = [0]

    def count_one(execute: Any, sql: Any, params: Any, many: Any, context: Any) -> Any:
        count[0] += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count_one):
        yield count


def peak_mb(work: Callable[[], Any]) -> tuple[Any, float]:
    """``work()``'s result, and the most memory it held beyond what was held before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, (peak - before) / 1e6


@dataclass
class Row:
    operation: str
    format: str
    seconds: float
    peak_mb: float
    queries: int

    @property
    def ok(self) -> bool:
        return self.seconds < TARGET_S


def import_timed(
    data: bytes, name: str, fmt: str
) -> tuple[Conversation, tuple[float, float, float], tuple[int, int]]:
    """One import: the conversation; seconds reading, storing, and then waiting for the
    thread that copies SQLite's write-ahead log into the database file once the import
    has committed (``services.checkpoints``: not part of the import's time, and waited
    for so that each import starts as the first did); and queries reading and storing."""
    with counting_queries() as read_queries:
        start = time.perf_counter()
        conversations = read_transcript(data, name=name, format=fmt).conversations
        read = time.perf_counter() - start
    with counting_queries() as store_queries:
        start = time.perf_counter()
        [conversation] = services.import_conversations(conversations, via="bench")
        stored = time.perf_counter() - start
    start = time.perf_counter()
    checkpoints.wait_for_checkpoints()
    copied = time.perf_counter() - start
    expected = LENGTH - (fmt == "claude-code")  # a session does not log the system prompt
    assert conversation.message_count == expected, (name, fmt, conversation.message_count)
    return conversation, (read, stored, copied), (read_queries[0], store_queries[0])


def import_memory(data: bytes, name: str, fmt: str) -> tuple[float, float, float]:
    """Peak MB reading, storing (beyond the conversations read) and both together."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        conversations = read_transcript(data, name=name, format=fmt).conversations
        after_read, read_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        services.import_conversations(conversations, via="bench")
        store_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    checkpoints.wait_for_checkpoints()
    mb = 1e6
    return (
        (read_peak - before) / mb,
        (store_peak - after_read) / mb,
        (max(read_peak, store_peak) - before) / mb,
    )


def median_of(runs: int, work: Callable[[], Any]) -> tuple[float, int]:
    """Median seconds of ``work()`` and its query count (CaptureQueriesContext)."""
    times = []
    queries = 0
    for _ in range(runs):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            work()
            times.append(time.perf_counter() - start)
        queries = len(captured.captured_queries)
    return statistics.median(times), queries


def imports(files: dict[str, bytes]) -> tuple[list[Row], dict[str, Conversation]]:
    """The import rows, and the last conversation imported from each input."""
    rows: list[Row] = []
    imported: dict[str, Conversation] = {}
    for label, name, fmt in INPUTS:
        data = files[label]
        reads, stores, totals, copies = [], [], [], []
        queries = (0, 0)
        for _ in range(IMPORT_RUNS):
            conversation, (read, stored, copied), queries = import_timed(data, name, fmt)
            reads.append(read)
            stores.append(stored)
            copies.append(copied)
            totals.append(read + stored)
            imported[label] = conversation
        read_mb, store_mb, total_mb = import_memory(data, name, fmt)
        rows += [
            Row("import: read", label, statistics.median(reads), read_mb, queries[0]),
            Row("import: store", label, statistics.median(stores), store_mb, queries[1]),
            Row("import: total", label, statistics.median(totals), total_mb, sum(queries)),
        ]
        print(
            f"  imported {label} ({IMPORT_RUNS} + 1 runs; the log copied into the database "
            f"file after each, in a thread: median {statistics.median(copies):.2f} s)",
            flush=True,
        )
    return rows, imported


def exports(imported: dict[str, Conversation]) -> list[Row]:
    """The stored transcript in every document format, and each runtime's session written
    back as a session of that runtime (healed)."""
    rows: list[Row] = []
    sources = [(fmt, imported["stored"]) for fmt in DOCUMENT_FORMATS]
    sources += [(fmt, imported[fmt]) for fmt in NATIVE_FORMATS]
    for fmt, conversation in sources:
        work = partial(export, conversation, fmt)
        seconds, queries = median_of(EXPORT_RUNS, work)
        _, mb = peak_mb(work)
        rows.append(Row("export", fmt, seconds, mb, queries))
        print(f"  exported {fmt} ({EXPORT_RUNS} + 1 runs)", flush=True)
    return rows


def buffer_work(messages: list[healing.Message]) -> list[Row]:
    """Normalizing the buffer (MEM-5), and asking each provider whether it would take it."""
    rows: list[Row] = []
    stored = [m.as_stored() for m in messages]
    seconds, queries = median_of(FAST_RUNS, lambda: normalize.normalize(stored))
    normalized, mb = peak_mb(lambda: normalize.normalize(stored))
    rows.append(Row("normalize (MEM-5)", "-", seconds, mb, queries))
    seconds, queries = median_of(FAST_RUNS, lambda: sendability.check_all(messages))
    verdicts, mb = peak_mb(lambda: sendability.check_all(messages))
    rows.append(Row("sendability.check_all", "-", seconds, mb, queries))
    print(f"  normalize: {len(normalized.messages):,} messages out, {normalized.dropped} dropped")
    for verdict in verdicts.values():
        print(f"  {verdict.summary}")
    return rows


def main() -> None:
    began = time.perf_counter()
    print(
        f"FlowDrop Web import/export benchmark on {connection.vendor}: {LENGTH:,} messages; "
        f"medians of {IMPORT_RUNS} (imports, exports) or {FAST_RUNS} (the rest); "
        "peak MB from a separate run under tracemalloc\n"
    )
    messages = transcript(LENGTH)
    files = input_files(messages)
    print("Input files")
    for label, name, fmt in INPUTS:
        print(f"  {label:<18} {name:<12} read as {fmt:<18} {len(files[label]) / 1e6:>6.1f} MB")
    print("\nWorking")
    import_rows, imported = imports(files)
    buffer = selectors.buffer_messages(imported["stored"])
    assert buffer == messages, "the stored buffer must be the transcript, as it was given"
    rows = import_rows + exports(imported) + buffer_work(buffer)

    print(f"\n{'operation':<32}{'format':<18}{'median s':>9}{'peak MB':>9}{'queries':>9}  target")
    for row in rows:
        verdict = f"< {TARGET_S:.0f} s" if row.ok else "OVER"
        print(
            f"{row.operation:<32}{row.format:<18}{row.seconds:>9.2f}{row.peak_mb:>9.1f}"
            f"{row.queries:>9}  {verdict}"
        )
    over = [f"{row.operation} {row.format}" for row in rows if not row.ok]
    if over:
        print(f"\nOVER TARGET ({TARGET_S:.0f} s): {len(over)} of {len(rows)}: " + "; ".join(over))
    else:
        print(f"\nPASS: all {len(rows)} operations under {TARGET_S:.0f} s")
    print(f"(the whole benchmark took {(time.perf_counter() - began) / 60:.1f} min)")


if __name__ == "__main__":
    old_name = connection.settings_dict["NAME"]
    if connection.vendor == "postgresql":  # a scratch database of this process's own
        connection.settings_dict["TEST"]["NAME"] = f"test_{old_name}_bench_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        main()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
