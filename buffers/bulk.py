"""Working on a whole transcript at once."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

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
