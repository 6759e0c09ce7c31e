"""Work on a whole transcript done aside (``bulk.Aside``): by a forked copy of the process
where it pays and is safe, else here; either way every result is the one the work gives
here, in order, and a work that fails fails here."""

from __future__ import annotations

import functools
import io
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from buffers import bulk, healing, search, services
from buffers.management.commands.import_transcripts import _Bar
from buffers.models import Conversation
from buffers.services import imports
from tests.aside_cases import (
    a_copy_stopped_by_sigterm,
    a_copy_that_exits,
    a_daemons_work,
    a_failing_work,
    a_killed_copy,
    a_result_taken_while_the_copy_works_on,
    copies_made_by_the_command,
    results_in_order,
    where_and,
)
from tests.databases import database_url
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


def test_a_result_is_sent_as_soon_as_it_is_known_while_the_copy_works_on(tmp_path: Path) -> None:
    """The import files the words while the copy counts the tally: had the copy sent
    nothing before its last work was done, the words would have been found here."""
    taken = tmp_path / "words-taken"
    here, [words, tally] = in_a_new_process(
        functools.partial(a_result_taken_while_the_copy_works_on, taken)
    )

    assert words[1] == "words"
    assert words[0] != here
    assert tally == (here, "tally")


def test_a_copy_whose_work_exits_sends_nothing_and_the_work_is_done_here() -> None:
    here, tally = in_a_new_process(a_copy_that_exits)

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
    """The command, run by a process with no other thread, copies itself for a transcript
    of ``ASIDE_FROM`` messages or more: the copy finds its words and tally."""
    messages = crashed_transcript(imports.ASIDE_FROM // 4 + 1)
    path = tmp_path / "long.json"
    document = {"key": "by the command", "messages": [m.as_stored() for m in messages]}
    path.write_text(json.dumps(document))

    copies = in_a_new_process(
        functools.partial(copies_made_by_the_command, database_url(), str(path))
    )
    monkeypatch.setattr(imports, "ASIDE_FROM", len(messages) + 1)
    services.import_conversations([services.ConversationIn(messages, key="here")], via="test")

    assert copies == 1
    by_the_command = stored(Conversation.objects.get(key="by the command"))
    assert by_the_command == stored(Conversation.objects.get(key="here"))
    length, rejections, problems, sendable, zeppelins, airship = by_the_command
    assert length == len(messages)
    assert not sendable
    assert rejections["anthropic"] > 0
    assert problems["orphan_result"] == 1
    assert zeppelins == list(range(0, len(messages), 4))
    assert airship == [4 * 2500 + 2]


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (one that has ended and waits to be reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's kernel ends the copy")
def test_a_copy_ends_when_the_process_it_was_copied_from_is_killed(tmp_path: Path) -> None:
    """Killed (a gunicorn worker past its timeout, the OOM killer), a process runs nothing
    more: its copy, holding its sockets, must not work on (it would for a minute here)."""
    pid_file = tmp_path / "copy.pid"
    script = f"from tests.aside_cases import killed_while_its_copy_works as k; k({str(pid_file)!r})"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=60, check=False)
    assert done.returncode == -signal.SIGKILL

    copy = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while running(copy) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(copy)


def test_a_copy_stops_on_sigterm_though_its_process_only_notes_it(tmp_path: Path) -> None:
    """A gunicorn worker's SIGTERM handler asks it to stop after the request; its copy, had
    it kept the handler, would work on through a shutdown."""
    case = functools.partial(a_copy_stopped_by_sigterm, str(tmp_path / "copy.pid"))
    here, tally = in_a_new_process(case)

    assert tally == (here, "tally")


def test_the_commands_progress_bar_starts_no_thread() -> None:
    """tqdm's monitor thread would keep the command from copying itself (``bulk.Aside``)."""
    threads = threading.active_count()
    with _Bar(total=imports.ASIDE_FROM, disable=False, file=io.StringIO()) as bar:
        bar.update(1)
        assert threading.active_count() == threads
