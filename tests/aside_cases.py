"""What ``tests/test_bulk.py`` runs in a new interpreter: a process with no other thread,
which ``bulk.Aside`` copies. Nothing here loads Django."""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Callable

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


def a_copy_killed_midway() -> tuple[int, list[tuple[int, object]]]:
    here = os.getpid()
    works = [functools.partial(where_and, "sent"), functools.partial(dies_in_a_copy, "late", here)]
    with bulk.Aside(works) as aside:
        return here, [aside.next_result(), aside.next_result()]


def a_failing_work() -> tuple[int, str, tuple[int, object]]:
    works: list[Callable[[], object]] = [
        functools.partial(fails, "words"),
        functools.partial(where_and, "tally"),
    ]
    with bulk.Aside(works) as aside:
        try:
            aside.next_result()
        except LookupError as error:
            raised = str(error)
        return os.getpid(), raised, aside.next_result()


def a_daemons_work() -> tuple[int, tuple[int, object]]:
    with bulk.Aside([functools.partial(where_and, "tally")]) as aside:
        return os.getpid(), aside.next_result()
