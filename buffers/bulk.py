"""Working on a whole transcript at once."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a transcript is read or written.

    Reading a 100,000-message transcript allocates millions of small objects; each
    allocation burst makes the collector walk everything alive, the growing transcript
    included, and that walking was a third of the time (benchmarks/exchange.py). A
    transcript is plain JSON data, with no reference cycles to collect: reference
    counting frees it as before. Nested uses leave the collector as the outermost found it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
