"""Working on a whole transcript at once."""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

_FROZEN_AT_LOAD = gc.get_freeze_count()
"""What was frozen before this module loaded: Python 3.12 keeps a few hundred immortal
tuples of its own frozen (375 here; each full collection puts back those a thaw moved),
which are no reason to leave a transcript in the youngest generation."""


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a transcript is read or written.

    Reading a 100,000-message transcript allocates millions of small objects; each
    allocation burst makes the collector walk everything alive, the growing transcript
    included, and that walking was a third of the time (benchmarks/exchange.py). A
    transcript is plain JSON data, with no reference cycles to collect: reference
    counting frees it as before. Nested uses leave the collector as the outermost found it.

    What the pause allocated and kept is still counted in the collector's youngest
    generation, so the first allocation after it would walk all of it at once (0.46 s of
    CPU after reading a 100,000-message Claude Code session, benchmarks/imports.py). So the
    outermost use first hands what survived to the oldest generation (``gc.freeze`` then
    ``gc.unfreeze``: two list splices), walked only at the next full collection; unless
    something froze objects of its own since this module loaded, which this would thaw.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() <= _FROZEN_AT_LOAD:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


class Aside:
    """Pure computations over a transcript already in memory, done by a forked copy of this
    process on the machine's other core while this one writes; ``next_result()`` gives
    their results in order, waiting for the copy to finish them.

    Threads cannot share that work: Python runs one at a time, and one that waits for the
    database hands the interpreter back to the other only at its next switch (the import
    of a 100,000-message Claude Code session took longer with its tally in a thread than
    without; benchmarks/imports.py). A forked copy holds the transcript from the start
    (copy on write) and sends back only the results.

    The work is done here instead, when ``next_result()`` asks for it, when a copy would
    not pay (``fork=False``), when this platform cannot fork, when this process runs other
    threads (a copy holds only the forking thread, and whatever lock another held stays
    held in it) or may have no child (``_may_fork``), when the system refuses a process,
    and for what a copy did not send (it failed or was killed). So every
    result is the one the work gives here, and a work that raises raises here.
    """

    def __init__(self, works: Sequence[Callable[[], object]], *, fork: bool = True) -> None:
        self._works = list(works)
        self._given = 0
        self._copy: multiprocessing.process.BaseProcess | None = None
        self._results: Connection | None = None
        if fork and self._works and _may_fork():
            self._start_copy()

    def _start_copy(self) -> None:
        context = multiprocessing.get_context("fork")
        try:
            self._results, sending = context.Pipe(duplex=False)
        except OSError:  # no file descriptor left
            return
        copy = context.Process(
            target=_send_results, args=(self._works, sending, self._results, os.getpid())
        )
        try:
            copy.start()
        except OSError:  # no memory or no process left for a copy: done here
            self._results.close()
            self._results = None
        else:
            self._copy = copy
        finally:
            sending.close()

    def next_result(self) -> Any:
        work = self._works[self._given]
        self._given += 1
        if self._results is not None:
            try:
                return self._results.recv()
            except (EOFError, OSError):  # the copy ended before sending it: done here
                self.close()
        return work()

    def close(self) -> None:
        """Stop the copy, if it still works (its results are not wanted)."""
        if self._copy is not None:
            self._copy.kill()
            self._copy.join()
            self._copy.close()
            self._copy = None
        if self._results is not None:
            self._results.close()
            self._results = None

    def __enter__(self) -> Aside:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _may_fork() -> bool:
    """Whether this process may copy itself: it can fork, runs no other thread (any, not
    only ``threading``'s), and is not a daemonic process of ``multiprocessing`` (a pool's
    worker), which may have no child."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    try:
        threads = sum(1 for _ in Path("/proc/self/task").iterdir())
    except OSError:  # no /proc: the threads Python started
        threads = threading.active_count()
    return threads == 1 and not multiprocessing.current_process().daemon


_PR_SET_PDEATHSIG = 1


def _send_results(
    works: Sequence[Callable[[], object]], results: Connection, reading: Connection, parent: int
) -> None:
    """In the forked copy: each work's result, sent by a thread of the copy's own as soon
    as it is known, while the next work goes on (a pipe holds 64 KB: a large result waits
    in it until the process reads it, and the sending thread with it, not the work).

    The copy is the process's own, and ends with it: it holds none of its signal handlers
    (a gunicorn worker's SIGTERM only asks the worker to stop, and the copy would outlive
    it holding its socket) and ignores Ctrl-C (the process stops it), the kernel kills it
    when the process ends (Linux), and it closes its copy of the pipe's reading end, so
    that a send to a process that has ended fails rather than waits forever."""
    reading.close()
    _signals_as_default()
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the kernel was asked
        return
    computed: queue.SimpleQueue[object] = queue.SimpleQueue()
    sender = threading.Thread(target=_send_each, args=(computed, results))
    sender.start()
    try:
        for work in works:
            try:
                computed.put(work())
            except Exception:  # computed again where it is asked for, and raised there
                break
    finally:  # whatever ends the works (SystemExit too), the sender ends with them
        computed.put(_NO_MORE)
        sender.join()


_NO_MORE = object()


def _send_each(computed: queue.SimpleQueue[object], results: Connection) -> None:
    while (result := computed.get()) is not _NO_MORE:
        try:
            results.send(result)
        except OSError:  # the process that wanted them has ended
            return


def _signals_as_default() -> None:
    for number in signal.valid_signals():
        if callable(signal.getsignal(number)):
            signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.set_wakeup_fd(-1)
