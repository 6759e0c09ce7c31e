"""Work on a whole transcript done aside (``bulk.Aside``): by a forked copy of the process
where it pays and is safe, else here; either way every result is the one the work gives
here, in order, and a work that fails fails here."""

from __future__ import annotations

import functools
import io
import json
import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection

from buffers import bulk, healing, search, services
from buffers.management.commands.import_transcripts import _Bar
from buffers.models import Conversation
from buffers.services import imports
from tests.aside_cases import (
    a_daemons_work,
    a_failing_work,
    a_killed_copy,
    results_in_order,
    where_and,
)
from tests.integrity import assert_consistent

ROOT = Path(__file__).resolve().parent.parent


def in_a_new_process[T](case: Callable[[], T]) -> T:
    """``case`` run by a new interpreter, whose only thread is its own: this one runs a
    test server's thread once a test has started one, and ``Aside`` copies no process
    that runs other threads."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as process:
        return process.submit(case).result()


def test_a_copy_of_the_process_does_the_work_and_sends_its_results_in_order() -> None:
    here, [first, second] = in_a_new_process(results_in_order)

    assert [value for _, value in (first, second)] == ["words", 2]
    assert first[0] == second[0] != here


def test_what_a_killed_copy_did_not_send_is_done_here() -> None:
    here, [words, tally] = in_a_new_process(a_killed_copy)

    assert words == (here, "words")
    assert tally == (here, "tally")


def test_a_work_that_fails_in_the_copy_fails_here() -> None:
    here, words, tally = in_a_new_process(functools.partial(a_failing_work, first=True))

    assert words == "no words"
    assert tally == (here, "tally")


def test_what_a_copy_computed_before_a_failing_work_is_taken_from_it() -> None:
    here, words, tally = in_a_new_process(functools.partial(a_failing_work, first=False))

    assert words == (words[0], "words")
    assert words[0] != here
    assert tally == "no tally"


def test_a_process_running_other_threads_is_not_copied() -> None:
    stop = threading.Event()
    waiting = threading.Thread(target=stop.wait)
    waiting.start()
    try:
        with bulk.Aside([functools.partial(where_and, 1)]) as aside:
            assert aside.next_result() == (os.getpid(), 1)
    finally:
        stop.set()
        waiting.join()


def test_a_pools_daemonic_worker_does_the_work_itself() -> None:
    """multiprocessing's pools run daemonic processes, which may not have children."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes=1) as pool:
        here, tally = pool.apply(a_daemons_work)

    assert tally == (here, "tally")


def test_work_not_worth_a_copy_is_done_here_when_asked_for() -> None:
    done: list[str] = []
    with bulk.Aside([functools.partial(done.append, "counted")], fork=False) as aside:
        assert done == []
        aside.next_result()
    assert done == ["counted"]


def crashed_transcript(turns: int) -> list[healing.Message]:
    """Turns of a user asking, a call with its result, an answer; the last call unanswered,
    and one result answering no call."""
    messages: list[dict[str, object]] = []
    for turn in range(turns):
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "look", "arguments": "{}"},
        }
        messages += [
            {"role": "user", "content": f"question {turn} about zeppelins"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{turn}", "content": f"airship {turn}"},
            {"role": "assistant", "content": f"answer {turn}"},
        ]
    messages[-2:] = [{"role": "tool", "tool_call_id": "nobody", "content": "stray"}]
    return healing.parse_messages(messages)


def database_url() -> str:
    """The test database, for a command run in its own process (it sees what a
    ``transaction=True`` test commits, and the test sees what it writes)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    password = f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else ""
    where = f"{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}"
    return f"postgres://{quote(db['USER'])}{password}@{where}/{quote(db['NAME'])}"


def stored(conversation: Conversation) -> tuple[Any, ...]:
    """What an import counts and indexes of a conversation, as read back."""
    assert_consistent(conversation)
    return (
        conversation.message_count,
        conversation.rejections,
        conversation.problem_counts,
        conversation.sendable,
        search.hit_indexes(conversation, ["zeppelins"]),
        search.hit_indexes(conversation, ["airship", "2500"]),
    )


@pytest.mark.django_db(transaction=True)
def test_the_command_counts_a_long_import_aside_and_stores_what_counting_here_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command runs in a process of its own, with no other thread: a transcript of
    ``ASIDE_FROM`` messages or more has its words and tally found by a copy of it."""
    messages = crashed_transcript(imports.ASIDE_FROM // 4 + 1)
    path = tmp_path / "long.json"
    document = {"key": "by the command", "messages": [m.as_stored() for m in messages]}
    path.write_text(json.dumps(document))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWDROP_")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "import_transcripts", str(path)],
        env=env | {"DATABASE_URL": database_url()},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    monkeypatch.setattr(imports, "ASIDE_FROM", len(messages) + 1)
    services.import_conversations([services.ConversationIn(messages, key="here")], via="test")

    by_the_command = stored(Conversation.objects.get(key="by the command"))
    assert by_the_command == stored(Conversation.objects.get(key="here"))
    length, rejections, problems, sendable, zeppelins, airship = by_the_command
    assert length == len(messages)
    assert not sendable
    assert rejections["anthropic"] > 0
    assert problems["orphan_result"] == 1
    assert zeppelins == list(range(0, len(messages), 4))
    assert airship == [4 * 2500 + 2]


def test_the_commands_progress_bar_starts_no_thread() -> None:
    """tqdm's monitor thread would keep the command from copying itself (``bulk.Aside``)."""
    threads = threading.active_count()
    with _Bar(total=imports.ASIDE_FROM, disable=False, file=io.StringIO()) as bar:
        bar.update(1)
        assert threading.active_count() == threads
