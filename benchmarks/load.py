#!/usr/bin/env python
"""Appends over HTTP to the production server (`make serve`: gunicorn) on PostgreSQL, from
clients in their own processes; then the same under fire, a gunicorn worker SIGKILLed every
few seconds while the clients send again what failed with the same Idempotency-Key, and a
consistency check read back from the database.

    .venv/bin/python benchmarks/load.py
    LOAD_POSTGRES=postgres://postgres@127.0.0.1:5432 WORKERS=5 DURATION=20 \\
        .venv/bin/python benchmarks/load.py

It makes a scratch database (flowdrop_load, dropped at the end) on that PostgreSQL server
and serves it with `make serve` (check --deploy, migrate, gunicorn with WORKERS, by default
2 x cores + 1) as behind a TLS proxy: FLOWDROP_HTTPS=1, and the clients send
X-Forwarded-Proto. Each client repeats a heal-append: an assistant turn that declares a
tool call, then a user turn that heals it (the crash an agent runtime leaves behind). Both
are appends and counted as such; the user turns alone are the "heals".

Runs, DURATION seconds each (20): 8 clients on 8 conversations (one each); 8 clients on one
conversation; then the kill run (KILL_DURATION, 30 s; a worker killed every KILL_EVERY, 3 s)
with 4 clients on their own conversations and 4 sharing one. Every run ends with the check:
each turn sent stored once, each declared call answered once right after its turn, each
count = stored + appended + healed, and the index columns agree with the messages.
Targets (issue 16, on a 2-core machine): >= 300 appends/s to 8 conversations, >= 150/s to
one, nothing lost or duplicated under the kills. The machine is shared and noisy: the CPU
figures say where the cores went. The server inherits the environment, so a change can be
tried without an edit (GUNICORN_CMD_ARGS=--preload, another DJANGO_SETTINGS_MODULE).
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POSTGRES = os.environ.get("LOAD_POSTGRES", "postgres://postgres@127.0.0.1:5432")
DATABASE = os.environ.get("LOAD_DATABASE", "flowdrop_load")
WORKERS = int(os.environ.get("WORKERS", 2 * (os.cpu_count() or 1) + 1))
DURATION = float(os.environ.get("DURATION", "20"))
KILL_DURATION = float(os.environ.get("KILL_DURATION", "30"))
KILL_EVERY = float(os.environ.get("KILL_EVERY", "3"))
CLIENTS = 8
HISTORY = 200
"""Messages each conversation holds before the clients start."""
GIVE_UP = 60.0
"""A client stops sending one append again after this many seconds of failures."""

# The server's environment: a deployment behind a TLS proxy, as README documents it.
os.environ |= {
    "DATABASE_URL": f"{POSTGRES}/{DATABASE}",
    "FLOWDROP_DEBUG": "0",
    "FLOWDROP_SECRET_KEY": secrets.token_urlsafe(50),
    "FLOWDROP_ALLOWED_HOSTS": "127.0.0.1",
    "FLOWDROP_CSRF_TRUSTED_ORIGINS": "https://127.0.0.1",
    "FLOWDROP_HTTPS": "1",
}
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdrop_web.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connections  # noqa: E402

from buffers import selectors  # noqa: E402
from buffers.models import ApiToken, Conversation  # noqa: E402
from tests.exactly_once import exactly_once  # noqa: E402
from tests.integrity import assert_consistent  # noqa: E402

RETRIED_STATUSES = {409, 500, 502, 503, 504}
"""Answers after which the same request is sent again: nothing was written (409 in flight,
503 busy) or it cannot be told (5xx); a dropped connection is sent again too."""


# The clients: each in its own process, speaking HTTP with http.client.


@dataclass(frozen=True)
class Job:
    client: int
    conversation: int
    port: int
    token: str
    tag: str
    until: float
    """Wall-clock time (time.time()) after which no new heal-append starts."""


@dataclass
class Sent:
    kind: str
    """"call" (the assistant turn declaring it) or "turn" (the user turn)."""
    text: str
    """The call's id, or the user turn's text."""
    conversation: int
    latency: float = 0.0
    """Seconds from the first attempt to the answer, retries included."""
    attempts: int = 0
    dropped: int = 0
    """Attempts whose connection broke before an answer."""
    refused: int = 0
    """Attempts answered with one of RETRIED_STATUSES."""
    replayed: bool = False
    """The answer was the kept one: an earlier attempt had committed."""
    status: int | None = None
    appended: int = 0
    healed: int = 0


@dataclass
class ClientRun:
    sent: list[Sent]
    started: float
    ended: float
    cpu: float


def post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any, bool]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", path, body, headers)
        answer = connection.getresponse()
        data = answer.read()
        replayed = answer.getheader("Idempotent-Replayed") == "true"
        return answer.status, json.loads(data) if data else None, replayed
    finally:
        connection.close()


def send(job: Job, sent: Sent, message: dict[str, Any], key: str) -> Sent:
    """Send one append until it is answered, again and again under the same key."""
    path = f"/api/conversations/{job.conversation}/messages"
    body = json.dumps({"messages": [message]}).encode()
    headers = {
        "Authorization": f"Bearer {job.token}",
        "Content-Type": "application/json",
        "Idempotency-Key": key,
        "X-Forwarded-Proto": "https",
    }
    start = time.perf_counter()
    while True:
        sent.attempts += 1
        try:
            status, answer, replayed = post(job.port, path, body, headers)
        except (OSError, http.client.HTTPException):
            sent.dropped += 1
        else:
            if status not in RETRIED_STATUSES:
                sent.status, sent.replayed = status, replayed
                if status == 200:
                    sent.appended, sent.healed = answer["appended"], len(answer["healed"])
                break
            sent.refused += 1
        if time.perf_counter() - start > GIVE_UP:
            break
        time.sleep(min(0.05 * sent.attempts, 0.5))
    sent.latency = time.perf_counter() - start
    return sent


def run_client(job: Job) -> ClientRun:
    sent: list[Sent] = []
    cpu, started = time.process_time(), time.time()
    number = 0
    while time.time() < job.until:
        name = f"{job.tag}-{job.client}-{number}"
        call = {
            "role": "assistant",
            "content": "Let me look that up.",
            "metadata": {
                "tool_calls": [{"tool_call_id": name, "name": "search", "args": {"q": name}}]
            },
        }
        turn = {"role": "user", "content": f"[{name}] The search never came back; go on."}
        for kind, text, message in (("call", name, call), ("turn", turn["content"], turn)):
            sent.append(send(job, Sent(kind, text, job.conversation), message, f"{name}-{kind}"))
        number += 1
    return ClientRun(sent, started, time.time(), time.process_time() - cpu)


# The server, and what its processes cost.


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class Process:
    parent: int
    session: int
    command: bytes
    cpu: float
    """Seconds of CPU, its own and its children's that it waited for (its exited children)."""
    started: int
    zombie: bool


def processes() -> dict[int, Process]:
    """Every process of the machine, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        cpu = sum(int(f) for f in fields[11:15]) / ticks  # utime stime cutime cstime
        found[int(entry.name)] = Process(
            int(fields[1]), int(fields[3]), command, cpu, int(fields[19]), fields[0] == "Z"
        )
    return found


def tree_cpu(table: dict[int, Process], root: int) -> float:
    """CPU seconds of a process and every descendant, living or exited (and waited for)."""
    children: dict[int, list[int]] = {}
    for pid, process in table.items():
        children.setdefault(process.parent, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += table[pid].cpu if pid in table else 0.0
        todo += children.get(pid, [])
    return total


_GUNICORN = b"\0gunicorn\0"
"""In the command line of ``python -m gunicorn``, as an argument of its own."""


def gunicorn_master(table: dict[int, Process], session: int) -> int:
    """The gunicorn master of the server's session (``make`` runs it through ``sh -c``)."""
    running = [pid for pid, p in table.items() if p.session == session and _GUNICORN in p.command]
    [master] = [pid for pid in running if table[pid].parent not in running]
    return master


def oldest_worker(session: int) -> int | None:
    """The worker up longest: booted, and serving (not one still starting)."""
    table = processes()
    master = gunicorn_master(table, session)
    running = [(p.started, pid) for pid, p in table.items() if p.parent == master and not p.zombie]
    return min(running)[1] if running else None


def postmaster(table: dict[int, Process]) -> int | None:
    """The PostgreSQL server on this machine (whose backends are its children), if here."""
    for pid, process in table.items():
        if process.command.startswith(b"/") and process.command.split(b"\0")[0].endswith(
            b"/postgres"
        ):
            return pid
    return None


@dataclass(frozen=True)
class Cpu:
    """CPU seconds spent so far: by the server (gunicorn and its workers), by PostgreSQL
    (every backend, and so every database, on this machine), and by the whole machine."""

    server: float
    database: float
    machine: float

    @classmethod
    def now(cls, session: int) -> Cpu:
        table = processes()
        database = postmaster(table)
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        busy = (sum(values[:8]) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")
        return cls(
            server=tree_cpu(table, gunicorn_master(table, session)),
            database=0.0 if database is None else tree_cpu(table, database),
            machine=busy,
        )

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(
            self.server - other.server, self.database - other.database, self.machine - other.machine
        )


@contextmanager
def server(log: Path) -> Iterator[tuple[int, int]]:
    """`make serve` in a session of its own; yields (port, session). Always stopped."""
    port = free_port()
    command = ["make", "--no-print-directory", "serve", "HOST=127.0.0.1", f"PORT={port}",
               f"WORKERS={WORKERS}"]  # fmt: skip
    with log.open("w") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                raise SystemExit(f"make serve stopped ({process.returncode}):\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise SystemExit(f"make serve did not answer in 180 s:\n{log.read_text()}")
            try:
                get(port, "/api/conversations", "")
                break
            except OSError:
                time.sleep(0.2)
        yield port, process.pid
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def get(port: int, path: str, token: str) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {"Authorization": f"Bearer {token}", "X-Forwarded-Proto": "https"}
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def create(port: int, token: str, title: str) -> int:
    status, answer, _ = post(
        port,
        "/api/conversations",
        json.dumps({"title": title, "messages": history(HISTORY, title)}).encode(),
        {"Authorization": f"Bearer {token}", "X-Forwarded-Proto": "https"},
    )
    assert status == 201, (status, answer)
    assert answer["count"] == HISTORY
    conversation: int = answer["id"]
    return conversation


def history(length: int, title: str) -> list[dict[str, Any]]:
    """A plausible agent transcript: a question, a call, its result, an answer, repeated."""
    messages: list[dict[str, Any]] = []
    n = 0
    while len(messages) < length:
        call = f"{title}-h{n}"
        messages += [
            {"role": "user", "content": f"{title}: what does the report say about item {n}?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"tool_call_id": call, "name": "search", "args": {"q": f"item {n}"}}]},
            {"role": "tool", "content": f"Item {n}: on track.", "tool_call_id": call},
            {"role": "assistant", "content": f"Item {n} is on track."},
        ]  # fmt: skip
        n += 1
    return messages[:length]


# A run, and what it found.


@dataclass
class Outcome:
    runs: list[ClientRun]
    wall: float
    cpu: Cpu
    kills: int = 0
    problems: list[str] = field(default_factory=list)
    messages: int = 0

    @property
    def sent(self) -> list[Sent]:
        return [s for run in self.runs for s in run.sent]

    @property
    def answered(self) -> list[Sent]:
        return [s for s in self.sent if s.status == 200]


def run(
    port: int,
    session: int,
    token: str,
    tag: str,
    layout: list[int],
    seconds: float,
    kill_every: float | None = None,
) -> Outcome:
    """Clients, one per entry of ``layout`` (the conversation it appends to), for ``seconds``;
    a worker SIGKILLed every ``kill_every`` seconds if given."""
    until = time.time() + seconds
    jobs = [Job(n, pk, port, token, tag, until) for n, pk in enumerate(layout)]
    connections.close_all()  # nothing of this process's database connection is forked
    context = multiprocessing.get_context("fork")
    kills = 0
    before = Cpu.now(session)
    with context.Pool(len(jobs)) as pool:
        pending = pool.map_async(run_client, jobs)
        while not pending.ready():
            pending.wait(kill_every)
            worker = oldest_worker(session) if kill_every and time.time() < until else None
            if worker is not None:
                os.kill(worker, signal.SIGKILL)
                kills += 1
        runs = pending.get()
    outcome = Outcome(
        runs=runs,
        wall=max(r.ended for r in runs) - min(r.started for r in runs),
        cpu=Cpu.now(session) - before,
        kills=kills,
    )
    outcome.problems, outcome.messages = check(outcome.sent)
    return outcome


def check(sent: list[Sent]) -> tuple[list[str], int]:
    """Read every conversation back from the database: what does not hold, and how many
    messages were read."""
    problems: list[str] = []
    read = 0
    for pk in sorted({s.conversation for s in sent}):
        conversation = Conversation.objects.get(pk=pk)
        messages = selectors.buffer_messages(conversation)
        read += len(messages)
        mine = [s for s in sent if s.conversation == pk]
        found = exactly_once(
            messages,
            turns=[s.text for s in mine if s.kind == "turn"],
            calls=[s.text for s in mine if s.kind == "call"],
        )
        problems += [f"conversation {pk}: lost {what}" for what in found.lost]
        problems += [f"conversation {pk}: stored twice: {what}" for what in found.duplicated]
        problems += [f"conversation {pk}: {i} not answered right after its turn"
                     for i in found.misplaced]  # fmt: skip
        answered = [s for s in mine if s.status == 200]
        expected = HISTORY + sum(s.appended + s.healed for s in answered)
        if not conversation.message_count == len(messages) == expected:
            problems.append(
                f"conversation {pk}: {conversation.message_count} counted, {len(messages)} "
                f"stored, {expected} = stored + appended + healed"
            )
        try:
            assert_consistent(conversation)
        except AssertionError as error:
            problems.append(f"conversation {pk}: index columns disagree: {error}")
    problems += [f"{s.text}: answered {s.status}" for s in sent if s.status not in (200, None)]
    problems += [f"{s.text}: gave up after {s.attempts} attempts" for s in sent if s.status is None]
    connections.close_all()
    return problems, read


# Printing.


def row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<62} {value:>14}  {note}")


def verdict(ok: bool) -> str:
    return "meets target" if ok else "MISSES target"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def report(title: str, outcome: Outcome, target: float | None) -> None:
    answered = outcome.answered
    appends = len(answered)
    heals = sum(1 for s in answered if s.kind == "turn")
    latencies = sorted(s.latency for s in answered)
    p95 = statistics.quantiles(latencies, n=20)[18] if len(latencies) > 1 else latencies[0]
    client_cpu = sum(r.cpu for r in outcome.runs)
    print(f"\n{title} ({outcome.wall:.0f} s)")
    rate = appends / outcome.wall
    row("appends/s (declaring turns and healing user turns)", f"{rate:.0f} /s",
        "" if target is None else f"{verdict(rate >= target)} (>= {target:.0f})")  # fmt: skip
    row("heals/s (the user turns alone)", f"{heals / outcome.wall:.0f} /s")
    row("latency p50 / p95 / max", f"{ms(statistics.median(latencies))} / {ms(p95)} / "
        f"{ms(latencies[-1])} ms")  # fmt: skip
    cpu = outcome.cpu
    rest = cpu.machine - cpu.server - cpu.database - client_cpu
    row("machine busy (all processes)", f"{cpu.machine / outcome.wall:.2f} cores",
        f"of {os.cpu_count()}; other work on it: {rest / outcome.wall:.2f} cores")  # fmt: skip
    ours = cpu.server + cpu.database + client_cpu
    for label, seconds in (("gunicorn (workers, and the master that forks them)", cpu.server),
                           ("PostgreSQL (its backends, every database)", cpu.database),
                           ("clients", client_cpu), ("all three", ours)):  # fmt: skip
        row(f"CPU per append: {label}", f"{ms(seconds / appends)} ms")
    row(f"appends/s that {os.cpu_count()} idle cores would give at this cost",
        f"{(os.cpu_count() or 1) / (ours / appends):.0f} /s")  # fmt: skip
    if outcome.kills:
        sent = outcome.sent
        row("workers SIGKILLed", f"{outcome.kills}")
        row("attempts whose connection dropped", f"{sum(s.dropped for s in sent)}")
        row("attempts answered 409/5xx", f"{sum(s.refused for s in sent)}")
        row("appends sent more than once (same key)", f"{sum(s.attempts > 1 for s in sent)}")
        row("... of which had committed before the drop (replayed)",
            f"{sum(s.replayed for s in sent)}")  # fmt: skip
    lost = sum("lost" in p or "gave up" in p for p in outcome.problems)
    doubled = sum("stored twice" in p for p in outcome.problems)
    row("lost / stored twice", f"{lost} / {doubled}",
        verdict(lost == doubled == 0) if outcome.kills else "")  # fmt: skip
    row(f"consistency, {outcome.messages:,} messages read back",
        "ok" if not outcome.problems else f"{len(outcome.problems)} PROBLEMS")  # fmt: skip
    for problem in outcome.problems[:10]:
        print(f"    {problem}")


# The whole benchmark.


def admin(sql: str) -> None:
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as connection:
        connection.execute(sql)


def server_setting(name: str) -> str:
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as connection:
        row = connection.execute(f"SHOW {name}").fetchone()
    return str(row[0]) if row else ""


def main(port: int, session: int) -> None:
    user = User.objects.create_user("load")
    token = ApiToken.issue(user, "load")[1]
    tag = secrets.token_hex(3)

    def conversations(name: str, count: int) -> list[int]:
        return [create(port, token, f"{tag}-{name}-{n}") for n in range(count)]

    print(f"FlowDrop Web under load: make serve, gunicorn with {WORKERS} workers on "
          f"{os.cpu_count()} cores, PostgreSQL; {CLIENTS} client processes; conversations of "
          f"{HISTORY} messages to begin with")  # fmt: skip
    if server_setting("autovacuum") != "on":
        print("PostgreSQL's autovacuum is off on this server: nothing is vacuumed or analysed "
              "during the runs, which a production server would do")  # fmt: skip
    run(port, session, token, f"{tag}w", conversations("warm", CLIENTS), 3)

    eight = run(port, session, token, f"{tag}a", conversations("eight", CLIENTS), DURATION)
    report(f"{CLIENTS} clients, each on its own conversation", eight, 300)

    [one] = conversations("one", 1)
    shared = run(port, session, token, f"{tag}b", [one] * CLIENTS, DURATION)
    report(f"{CLIENTS} clients on one conversation", shared, 150)

    half = CLIENTS // 2
    [both] = conversations("kill-shared", 1)
    layout = conversations("kill", half) + [both] * (CLIENTS - half)
    killed = run(port, session, token, f"{tag}k", layout, KILL_DURATION, kill_every=KILL_EVERY)
    report(f"A worker SIGKILLed every {KILL_EVERY:.0f} s; {half} clients on their own "
           f"conversations, {CLIENTS - half} on one; failures sent again, same key",
           killed, None)  # fmt: skip


if __name__ == "__main__":
    admin(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    admin(f"CREATE DATABASE {DATABASE}")
    try:
        with server(Path(tempfile.mkdtemp()) / "serve.log") as (port, session):
            main(port, session)
    finally:
        connections.close_all()
        admin(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
