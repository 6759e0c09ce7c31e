#!/usr/bin/env python
"""Where an import's time goes: a 100,000-message Claude Code session, Codex rollout and
stored transcript, read and stored stage by stage, and the whole ``import_transcripts``
command (start-up included) in a process of its own.

    .venv/bin/python benchmarks/imports.py                      # SQLite
    DATABASE_URL=postgres://... .venv/bin/python benchmarks/imports.py
    .venv/bin/python benchmarks/imports.py --cases stored --profile   # cProfile, top 25

Runs on a scratch database (created and destroyed here; on PostgreSQL named after this
process). Stage times come from wrapping the functions that do each stage (no profiler
on); peak memory is Python's (tracemalloc, in a run of its own) for the in-process
import, and the command's peak RSS.
"""

from __future__ import annotations

import argparse
import compileall
import cProfile
import importlib
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdrop_web.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from buffers import bulk, healing, search, services, transcripts  # noqa: E402
from buffers.services import checkpoints  # noqa: E402
from buffers.services import imports as import_service  # noqa: E402

LENGTH = 100_000
LIMIT = transcripts.MAX_FILE_MB * 2**20
"""The largest file the command reads (the runtime logs here are 40 to 120 MB)."""
# The runtime logs' generators; importing it lifts the web's limit in this process too.
exchange = importlib.import_module("benchmarks.exchange")
append_benchmark = importlib.import_module("benchmarks.append")
# The runtime logs of 100,000 messages are larger than the upload page and the API take
# (32 MB); the import itself is measured on them all the same.
transcripts.MAX_TRANSCRIPT_BYTES = 1 << 30
CASES = ("claude-code", "codex", "stored")
FILE_NAMES = {"claude-code": "session.jsonl", "codex": "rollout.jsonl", "stored": "bench.json"}


def stored_transcript(length: int) -> list[healing.Message]:
    """benchmarks/append.py's transcript (user, a call, its result, an answer), crashed at
    its middle: the 16 MB file issue 16's command target was measured on."""
    messages: list[healing.Message] = append_benchmark.transcript(length, dangling_at=length // 2)
    return messages


def write_files(folder: Path, cases: list[str]) -> dict[str, Path]:
    paths: dict[str, Path] = {}
    runtime = exchange.transcript(LENGTH) if {"claude-code", "codex"} & set(cases) else []
    for case in cases:
        path = folder / FILE_NAMES[case]
        if case == "claude-code":
            path.write_text(exchange.claude_code_session(runtime))
        elif case == "codex":
            path.write_text(exchange.codex_rollout(runtime))
        else:
            messages = stored_transcript(LENGTH)
            document = {"title": "crashed", "messages": [m.as_stored() for m in messages]}
            path.write_bytes(healing.jsontext.dumps(document).encode())
        paths[case] = path
    return paths


class Stages:
    """Seconds spent in each stage, by wrapping the function that does it."""

    WRAPPED: tuple[tuple[str, Any, str], ...] = (
        ("read: JSON", transcripts, "text_source"),
        ("read: reader + messages", transcripts, "read_source"),
        ("  of which parse_messages", healing, "parse_messages"),
        ("store: call index", healing, "index_buffer"),
        ("store: INSERT/COPY rows", import_service, "_insert_rows"),
        ("store: words + tally, waited for", bulk.Aside, "next_result"),
        ("store: search index, written", search, "index_words"),
        ("store: declared calls", import_service, "_index_calls"),
        ("store: tally, stored", import_service, "store_tally"),
    )
    """The store's stages overlap: PostgreSQL files rows while the next are made, and a
    copy of the process finds the words to index and counts the tally meanwhile (timed
    here: how long the import waited for each). CPU is this process's, not the copy's."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    @contextmanager
    def timing(self) -> Iterator[None]:
        originals = [(owner, name, getattr(owner, name)) for _, owner, name in self.WRAPPED]
        depth: dict[str, int] = defaultdict(int)
        for (label, owner, name), (_, _, original) in zip(self.WRAPPED, originals, strict=True):
            setattr(owner, name, self._wrap(label, original, depth))
        try:
            yield
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)

    def _wrap(self, label: str, work: Callable[..., Any], depth: dict[str, int]) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            depth[label] += 1
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return work(*args, **kwargs)
            finally:
                depth[label] -= 1
                if not depth[label]:
                    self.seconds[label] += time.perf_counter() - start
                    self.cpu[label] += time.process_time() - cpu

        return timed


def import_once(path: Path) -> tuple[float, float, float]:
    """Read and store one file in this process: seconds reading, seconds storing, and the
    CPU seconds of this process for both (the machines are shared: CPU time is steadier)."""
    cpu = time.process_time()
    start = time.perf_counter()
    reading = transcripts.read_transcript_file(path)
    read = time.perf_counter() - start
    start = time.perf_counter()
    [conversation] = services.import_conversations(reading.conversations, via="bench")
    stored = time.perf_counter() - start
    cpu = time.process_time() - cpu
    # SQLite's write-ahead log, copied into the database file by a thread once the import
    # has committed (services.checkpoints): waited for, outside the import's time, so that
    # the next import starts as this one did.
    checkpoints.wait_for_checkpoints()
    assert conversation.message_count >= LENGTH - 1, conversation.message_count
    return read, stored, cpu


def peak_mb(path: Path) -> tuple[float, float]:
    """Python's peak MB reading, and storing beyond what was read."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        reading = transcripts.read_transcript_file(path)
        after_read, read_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        services.import_conversations(reading.conversations, via="bench")
        store_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    checkpoints.wait_for_checkpoints()
    return (read_peak - before) / 1e6, (store_peak - after_read) / 1e6


def database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    port = settings.get("PORT") or 5432
    user = settings.get("USER") or "postgres"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{settings['HOST']}:{port}/{settings['NAME']}"


def command_once(path: Path) -> tuple[float, float, float]:
    """The whole command in a process of its own: wall seconds, CPU seconds, peak RSS MB.

    Measured by ``/usr/bin/time``: a child's own ``ru_maxrss`` would count this big
    process's memory, which the child shares until it runs the command. It runs as
    Python runs a command the second time, its modules' bytecode cached
    (``cache_bytecode``)."""
    env = {**os.environ, "DATABASE_URL": database_url()}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    manage = [sys.executable, str(ROOT / "manage.py"), "import_transcripts", "-v0", str(path)]
    with tempfile.NamedTemporaryFile("r") as report:
        timer = ["/usr/bin/time", "-o", report.name, "-f", "%U %S %M"]
        start = time.perf_counter()
        subprocess.run([*timer, *manage], env=env, stdout=subprocess.DEVNULL, check=True)
        took = time.perf_counter() - start
        user, system, kilobytes = report.read().split()[-3:]
    return took, float(user) + float(system), int(kilobytes) / 1024


def cache_bytecode() -> None:
    """The project's modules compiled to ``__pycache__``, as Python leaves them after any
    first run, unless the environment says not to write bytecode (these machines set
    PYTHONDONTWRITEBYTECODE): each command would then compile its 61 modules again,
    about 0.1 s of its start-up, which no user's second run pays."""
    for folder in ("buffers", "flowdrop_web"):
        compileall.compile_dir(ROOT / folder, quiet=1)


def profile(path: Path, top: int) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    import_once(path)
    profiler.disable()
    stats = pstats.Stats(profiler).strip_dirs().sort_stats("tottime")
    stats.print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def run_case(case: str, path: Path, runs: int, command_runs: int) -> None:
    size = path.stat().st_size / 1e6
    lines = path.read_bytes().count(b"\n")
    print(f"\n{case}: {path.name}, {size:.1f} MB, {lines:,} lines", flush=True)
    per_stage: dict[str, list[float]] = defaultdict(list)
    per_stage_cpu: dict[str, list[float]] = defaultdict(list)
    reads, stores, totals, cpus = [], [], [], []
    for _ in range(runs):
        stages = Stages()
        with stages.timing():
            read, stored, cpu = import_once(path)
        cpus.append(cpu)
        reads.append(read)
        stores.append(stored)
        totals.append(read + stored)
        for label, _, _ in Stages.WRAPPED:
            per_stage[label].append(stages.seconds.get(label, 0.0))
            per_stage_cpu[label].append(stages.cpu.get(label, 0.0))
    read_mb, store_mb = peak_mb(path)
    for label, _, _ in Stages.WRAPPED:
        wall, cpu = statistics.median(per_stage[label]), statistics.median(per_stage_cpu[label])
        print(f"  {label:<36}{wall:>8.2f} s   CPU {cpu:.2f} s")
    print(f"  {'read (whole)':<36}{statistics.median(reads):>8.2f} s   peak {read_mb:,.0f} MB")
    print(f"  {'store (whole)':<36}{statistics.median(stores):>8.2f} s   peak {store_mb:,.0f} MB")
    whole = statistics.median(totals)
    cpu = statistics.median(cpus)
    print(
        f"  {'in process, read + store':<36}{whole:>8.2f} s   CPU {cpu:.2f} s   (median of {runs})"
    )
    if command_runs and path.stat().st_size > LIMIT:
        print(
            f"  import_transcripts command: not run, the file is over its {LIMIT // 2**20} MB limit"
        )
    elif command_runs:
        cache_bytecode()
        runs_done = [command_once(path) for _ in range(command_runs)]
        seconds = statistics.median(took for took, _, _ in runs_done)
        cpu = statistics.median(cpu for _, cpu, _ in runs_done)
        rss = max(mb for _, _, mb in runs_done)
        print(f"  {'import_transcripts command':<36}{seconds:>8.2f} s   CPU {cpu:.2f} s   "
              f"peak RSS {rss:,.0f} MB   (median of {command_runs}, start-up in)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES)
    )
    parser.add_argument("--runs", type=int, default=3, help="in-process imports per case")
    parser.add_argument(
        "--command-runs", type=int, default=2, help="command runs per case (0: none)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile one import per case instead"
    )
    parser.add_argument("--top", type=int, default=25)
    options = parser.parse_args()
    cases = [c for c in options.cases.split(",") if c]
    print(f"FlowDrop Web import benchmark on {connection.vendor}: {LENGTH:,} messages per file")
    with tempfile.TemporaryDirectory() as folder:
        paths = write_files(Path(folder), cases)
        for case in cases:
            if options.profile:
                print(f"\n{case}: cProfile of one import")
                profile(paths[case], options.top)
            else:
                run_case(case, paths[case], options.runs, options.command_runs)


if __name__ == "__main__":
    old_name = connection.settings_dict["NAME"]
    if connection.vendor == "postgresql":  # a scratch database of this process's own
        connection.settings_dict["TEST"]["NAME"] = f"test_{old_name}_imports_{os.getpid()}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        main()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
