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


def a_killed_copy() -> tuple[int, list[tuple[int, object]]]:
    here = os.getpid()
    works = [
        functools.partial(where_and, "words"),
        functools.partial(dies_in_a_copy, "tally", here),
    ]
    with bulk.Aside(works) as aside:
        return here, [aside.next_result(), aside.next_result()]


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
