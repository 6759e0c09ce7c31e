"""Exactly-once through killed workers: gunicorn (two workers) serving the test database,
clients in threads appending heal-appends with an Idempotency-Key each; one worker killed
after its append committed and before it answered, others killed mid-request. What failed
is sent again with the same key, and then every turn is stored once and every declared call
answered once, right after its turn (benchmarks/load.py does the same at length)."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from buffers import selectors
from buffers.models import ApiToken, Conversation
from tests.buffers import acting_user, assistant, result, store, user
from tests.databases import database_url
from tests.exactly_once import exactly_once
from tests.integrity import assert_consistent

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 4
AT_LEAST = 6
"""Heal-appends each client makes, kills or not."""
RETRIED = {409, 500, 502, 503, 504}


@dataclass
class Server:
    port: int
    master: int
    log: Path
    held: Path
    """Where a worker holding an answer (tests/held_wsgi.py) leaves its pid."""

    def oldest_worker(self) -> int | None:
        """The worker that has been up longest: booted, and serving."""
        found = []
        for entry in Path("/proc").iterdir():
            try:
                stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
            except OSError:  # gone meanwhile
                continue
            fields = stat.rsplit(")", 1)[1].split() if stat else []
            if fields and int(fields[1]) == self.master and fields[0] != "Z":
                found.append((int(fields[19]), int(entry.name)))  # (start time, pid)
        return min(found)[1] if found else None


@pytest.fixture
def gunicorn(postgresql: None, tmp_path: Path) -> Iterator[Server]:
    """gunicorn with two workers on the test database, listening on a socket bound here
    (no port to race for); always stopped, workers and all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWDROP_")}
    env |= {
        "DATABASE_URL": database_url(),
        "FLOWDROP_SECRET_KEY": secrets.token_urlsafe(50),
        "FLOWDROP_ALLOWED_HOSTS": "127.0.0.1",
        "HOLD_DIR": str(tmp_path),
    }
    log = tmp_path / "gunicorn.log"
    with socket.socket() as listener, log.open("w") as out:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "tests.held_wsgi", "--workers", "2",
             "--bind", f"fd://{listener.fileno()}", "--error-logfile", "-", "--no-control-socket"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            pass_fds=[listener.fileno()], start_new_session=True,
        )  # fmt: skip
        port = listener.getsockname()[1]
    try:
        yield Server(port, process.pid, log, tmp_path)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass
class Sent:
    kind: str
    text: str
    status: int | None = None
    attempts: int = 0
    dropped: int = 0
    replayed: bool = False
    appended: int = 0
    healed: int = 0


def send(
    port: int, path: str, headers: dict[str, str], message: dict[str, Any], sent: Sent
) -> None:
    """One append, sent again under its key until it is answered (at most 30 s)."""
    body = json.dumps({"messages": [message]}).encode()
    give_up = time.monotonic() + 30
    while time.monotonic() < give_up:
        sent.attempts += 1
        answer = None
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                connection.request("POST", path, body, headers)
                response = connection.getresponse()
                data = response.read()  # a worker killed mid-answer breaks this
                answer = response
            finally:
                connection.close()
        except (OSError, http.client.HTTPException):
            sent.dropped += 1
        if answer is not None and answer.status not in RETRIED:
            sent.status = answer.status
            sent.replayed = answer.getheader("Idempotent-Replayed") == "true"
            if answer.status == 200:
                report = json.loads(data)
                sent.appended, sent.healed = report["appended"], len(report["healed"])
            return
        time.sleep(0.05)


def test_a_killed_worker_loses_nothing_and_a_retry_with_its_key_stores_nothing_twice(
    gunicorn: Server,
) -> None:
    history = [user("start"), assistant("h1"), result("h1"), user("go on")]
    conversation = store(history)
    headers = {
        "Authorization": f"Bearer {ApiToken.issue(acting_user(), 'worker kill')[1]}",
        "Content-Type": "application/json",
    }
    path = f"/api/conversations/{conversation.pk}/messages"
    sent: list[Sent] = []
    stop = threading.Event()

    def client(number: int) -> None:
        round_ = 0
        while round_ < AT_LEAST or not stop.is_set():
            name = f"c{number}r{round_}"
            for kind, text, message in (
                ("call", name, assistant(name)),
                ("turn", f"{name}: go on", user(f"{name}: go on")),
            ):
                sent.append(mine := Sent(kind, text))
                send(gunicorn.port, path, headers | {"Idempotency-Key": f"{name}-{kind}"},
                     message, mine)  # fmt: skip
            round_ += 1

    def answered() -> int:
        return sum(s.status == 200 for s in list(sent))

    def progress(more: int, within: float = 20) -> None:
        """Until ``more`` appends more are answered (a new worker is up and serving)."""
        target, deadline = answered() + more, time.monotonic() + within
        while answered() < target and time.monotonic() < deadline:
            time.sleep(0.02)

    def held() -> None:
        """A heal-append whose user turn's first answer is held, until its worker is killed."""
        sent.append(call := Sent("call", "held"))
        send(gunicorn.port, path, headers | {"Idempotency-Key": "held-call"}, assistant("held"),
             call)  # fmt: skip
        sent.append(turn := Sent("turn", "held: go on"))
        hold = {"Idempotency-Key": "held-turn", "X-Hold-Answer": "1"}  # the first attempt only
        send(gunicorn.port, path, headers | hold, user("held: go on"), turn)

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    threads.append(threading.Thread(target=held, daemon=True))
    kills = 0
    try:
        for thread in threads:
            thread.start()
        progress(8, within=60)  # both workers booted, and busy
        deadline = time.monotonic() + 30
        while not (holding := list(gunicorn.held.glob("held/[0-9]*"))):
            assert time.monotonic() < deadline, "no worker held the answer"
            time.sleep(0.02)
        os.kill(int(holding[0].name), signal.SIGKILL)
        kills += 1
        progress(6)
        # Killed mid-request, a worker drops its connection: at least once, in a few tries.
        while kills < 6 and sum(s.dropped for s in list(sent)) < 2:
            if worker := gunicorn.oldest_worker():
                os.kill(worker, signal.SIGKILL)
                kills += 1
            progress(6)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    log = gunicorn.log.read_text()[-3000:]

    assert [s for s in sent if s.status != 200] == [], log
    [held_turn] = [s for s in sent if s.text == "held: go on"]
    # Committed before its worker died: a retry got the first answer, replayed. (A later
    # kill may drop a retry too, so it may have been dropped more than once.)
    assert held_turn.dropped >= 1, held_turn
    assert held_turn.replayed, held_turn
    assert sum(s.dropped for s in sent) >= 2, f"no request dropped mid-way in {kills} kills\n{log}"
    messages = selectors.buffer_messages(conversation)
    found = exactly_once(
        messages,
        turns=[s.text for s in sent if s.kind == "turn"],
        calls=[s.text for s in sent if s.kind == "call"],
    )
    assert found.ok, found
    conversation = Conversation.objects.get(pk=conversation.pk)
    stored_and_written = len(history) + sum(s.appended + s.healed for s in sent)
    assert conversation.message_count == len(messages) == stored_and_written
    assert_consistent(conversation)
