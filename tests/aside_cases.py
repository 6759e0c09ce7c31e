"""What ``tests/test_bulk.py`` runs in a new interpreter: a process with no other thread,
which ``bulk.Aside`` copies. Django is loaded only by the case that runs the command."""

from __future__ import annotations

import functools
import io
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from buffers import bulk


def where_and(value: object) -> tuple[int, object]:
    return os.getpid(), value


def dies_in_a_copy(value: object, forked_from: int) -> tuple[int, object]:
    if os.getpid() != forked_from:
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid(), value


def fails(value: object) -> object:
    raise LookupError(f"no {value}")


def results_in_order() -> tuple[int, list[tuple[int, object]]]:
    with bulk.Aside(
        [functools.partial(where_and, "words"), functools.partial(where_and, 2)]
    ) as aside:
        return os.getpid(), [aside.next_result(), aside.next_result()]


def a_killed_copy() -> tuple[int, list[tuple[int, object]]]:
    here = os.getpid()
    works = [
        functools.partial(dies_in_a_copy, "words", here),
        functools.partial(where_and, "tally"),
    ]
    with bulk.Aside(works) as aside:
        return here, [aside.next_result(), aside.next_result()]


def exits_in_a_copy(value: object, forked_from: int) -> tuple[int, object]:
    if os.getpid() != forked_from:
        sys.exit(3)
    return os.getpid(), value


def a_copy_that_exits() -> tuple[int, tuple[int, object]]:
    """The copy's work ends it with ``sys.exit`` (a ``SystemExit``, not an ``Exception``):
    what ``next_result()`` gives, or an alarm after 20 s if it waits for ever."""
    here = os.getpid()
    signal.alarm(20)
    try:
        with bulk.Aside([functools.partial(exits_in_a_copy, "tally", here)]) as aside:
            return here, aside.next_result()
    finally:
        signal.alarm(0)


def dies_in_a_copy_once_made(path: Path, value: object, forked_from: int) -> tuple[int, object]:
    """In a copy, waits until ``path`` exists (10 s at most), then dies."""
    if os.getpid() != forked_from:
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid(), value


def a_result_taken_while_the_copy_works_on(path: Path) -> tuple[int, list[tuple[int, object]]]:
    """The copy works on the tally until the words it found are taken (``path`` is made
    once they are), then dies; what each ``next_result()`` gave."""
    here = os.getpid()
    works = [
        functools.partial(where_and, "words"),
        functools.partial(dies_in_a_copy_once_made, path, "tally", here),
    ]
    with bulk.Aside(works) as aside:
        words = aside.next_result()
        path.touch()
        return here, [words, aside.next_result()]


def a_failing_work(first: bool) -> tuple[int, tuple[int, object] | str, tuple[int, object] | str]:
    """The first or the second work fails; what each ``next_result()`` gave, or raised."""
    works: list[Callable[[], object]] = [
        functools.partial(fails if first else where_and, "words"),
        functools.partial(where_and if first else fails, "tally"),
    ]
    given: list[tuple[int, object] | str] = []
    with bulk.Aside(works) as aside:
        for _ in works:
            try:
                given.append(aside.next_result())
            except LookupError as error:
                given.append(str(error))
    return os.getpid(), given[0], given[1]


def a_daemons_work() -> tuple[int, tuple[int, object]]:
    with bulk.Aside([functools.partial(where_and, "tally")]) as aside:
        return os.getpid(), aside.next_result()


def say_where(pid_file: str) -> None:
    """Write this process's id to ``pid_file`` whole: whoever sees the file reads it all."""
    written = Path(f"{pid_file}.{os.getpid()}")
    written.write_text(str(os.getpid()))
    written.replace(pid_file)


def writes_its_pid_and_works_on(pid_file: str, forked_from: int) -> str:
    """In a copy, a long work that says where it runs; here, a quick one."""
    if os.getpid() != forked_from:
        say_where(pid_file)
        time.sleep(60)
    return "x" * 100_000


def killed_while_its_copy_works(pid_file: str) -> None:
    """Copy this process, and be killed (SIGKILL: nothing of it runs after) while the
    copy works."""
    with bulk.Aside([functools.partial(writes_its_pid_and_works_on, pid_file, os.getpid())]):
        while not Path(pid_file).exists():
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)


def a_copy_stopped_by_sigterm(pid_file: str) -> tuple[int, tuple[int, object]]:
    """A process whose SIGTERM handler only notes it (as a gunicorn worker's does) copies
    itself; the copy is sent SIGTERM while it works. What the process gets."""
    signal.signal(signal.SIGTERM, lambda number, frame: None)
    here = os.getpid()
    works = [functools.partial(where_after_waiting_in_a_copy, "tally", pid_file, here)]
    with bulk.Aside(works) as aside:
        while not Path(pid_file).exists():
            time.sleep(0.01)
        os.kill(int(Path(pid_file).read_text()), signal.SIGTERM)
        return here, aside.next_result()


def where_after_waiting_in_a_copy(value: object, pid_file: str, forked_from: int) -> object:
    if os.getpid() != forked_from:
        say_where(pid_file)
        time.sleep(60)
    return os.getpid(), value


def copies_made_by_the_command(database_url: str, path: str) -> int:
    """``import_transcripts path`` run in this process, Django set up here on
    ``database_url``: how many times the process copied itself meanwhile."""
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdrop_web.settings")
    import django
    from django.core.management import call_command

    django.setup()
    copies: list[int] = []
    os.register_at_fork(after_in_parent=lambda: copies.append(1))
    call_command("import_transcripts", path, stdout=io.StringIO(), stderr=io.StringIO())
    return len(copies)
