"""The buffer lock and bounded transactions: every write to a buffer is one transaction,
and appends to one conversation take their turns (MEM-12)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import OperationalError, connection, transaction

from buffers import selectors
from buffers.models import Conversation

log = logging.getLogger("buffers")

_ATTEMPTS = 6


class ConversationNotFound(LookupError):
    pass


class BufferBusy(RuntimeError):
    """An append could not take its turn in six rounds; nothing was written (MEM-12 in
    docs/decisions.md)."""


class _StaleBuffer(Exception):
    """The buffer changed between reading its facts and writing the plan: an append that
    proceeded unserialized met another one. Planning again on the buffer as it now is
    puts the turn in (MEM-12)."""


# pg_advisory_xact_lock(class, object): the class names FlowDrop buffers ("Flow").
_LOCK_CLASS = 0x466C6F77


def with_buffer_lock[T](
    conversation_id: int,
    via: str,
    work: Callable[[Conversation], T],
    *,
    loaded: Conversation | None = None,
) -> T:
    """Run ``work`` on the conversation in one transaction that holds its buffer lock;
    every write to a buffer goes through here. ``via`` names the entry point in warnings.

    ``work`` gets the conversation read under the lock; or ``loaded``, the row the caller
    read before it (no second read), when ``work`` writes only if that row is still the
    stored one (a compare-and-set on its version, as ``append_messages`` does). On
    PostgreSQL ``loaded`` serves only when the lock was free: after a wait for it, another
    write most likely got in, and the row is read under the lock.

    The lock is per conversation (whose scope, scope id and key are unique together),
    and waiting for it is bounded by FLOWDROP_BUFFER_LOCK_WAIT:

    - PostgreSQL: a transaction-scoped advisory lock. Past the bound the append proceeds
      unserialized and logs a warning. Its first write is a compare-and-set on the
      conversation's version, so if another append got in first, this one plans again.
    - SQLite: BEGIN IMMEDIATE takes the database write lock. SQLite cannot write without
      it, so past the bound the append logs a warning and waits again.

    Either way a turn is never dropped. After ``_ATTEMPTS`` rounds the append gives up
    with ``BufferBusy`` and nothing written (docs/decisions.md, MEM-12).
    """

    serialized = True

    def locked_work() -> T:
        nonlocal serialized, loaded
        if serialized and connection.vendor == "postgresql":
            try:
                if not _take_advisory_lock(conversation_id, via, _wait_ms()):
                    loaded = None  # it waited for another write: read the row as it is now
            except _LockWaitOver:
                # This transaction is aborted: the next one goes unlocked, on the row as
                # it is then (another write holds the lock, so the loaded one is old).
                serialized, loaded = False, None
                raise
        # SQLite: BEGIN IMMEDIATE already holds the database write lock.
        if loaded is not None:
            row, loaded = loaded, None  # a later attempt reads it under the lock
            return work(row)
        return work(_get(conversation_id))

    return _in_bounded_transaction(
        locked_work, f"append to conversation {conversation_id} via {via}"
    )


def _wait_ms() -> int:
    return max(1, round(settings.FLOWDROP_BUFFER_LOCK_WAIT * 1000))


def _in_bounded_transaction[T](work: Callable[[], T], what: str) -> T:
    """Run ``work`` in one transaction, trying again (with a warning) while the database
    is busy or another write got in first, at most ``_ATTEMPTS`` times in all; then
    ``BufferBusy`` with nothing written. On SQLite each try waits FLOWDROP_BUFFER_LOCK_WAIT
    for the write lock that BEGIN IMMEDIATE takes."""
    for attempt in range(1, _ATTEMPTS + 1):
        if connection.vendor == "sqlite" and not connection.in_atomic_block:
            _sqlite_busy_timeout(_wait_ms())
        try:
            with transaction.atomic():
                return work()
        except _LockWaitOver:
            continue  # warned where the wait ran out
        except _StaleBuffer:
            why: str | None = "the buffer changed under this unserialized append; planning again"
        except OperationalError as error:
            why = _retryable(error)
            if why is None:
                raise
        log.warning(
            "MEM-12: %s: %s (attempt %s of %s)",
            what,
            why if attempt < _ATTEMPTS else f"{why}; giving up, nothing written",
            attempt,
            _ATTEMPTS,
        )
    raise BufferBusy(f"{what} could not take its turn; nothing was written.")


def _retryable(error: OperationalError) -> str | None:
    """Why an append should be tried again after this error, or None when it should not."""
    if connection.vendor == "sqlite" and "locked" in str(error):
        return f"waited {settings.FLOWDROP_BUFFER_LOCK_WAIT}s for the SQLite write lock"
    sqlstate = getattr(error.__cause__, "sqlstate", None)
    if sqlstate in ("40P01", "40001"):  # deadlock detected, serialization failure
        return "the database cancelled it to break a deadlock; trying again"
    return None


def _sqlite_busy_timeout(wait_ms: int) -> None:
    """How long SQLite waits for its write lock, set on the connection when it differs from
    what was set last on that connection (not a statement per write)."""
    connection.ensure_connection()
    current = (connection.connection, wait_ms)
    previous = getattr(connection, "_flowdrop_busy_timeout", None)
    if previous is None or previous[0] is not current[0] or previous[1] != wait_ms:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {wait_ms}")
        setattr(connection, "_flowdrop_busy_timeout", current)  # noqa: B010


class _LockWaitOver(Exception):
    """The bounded wait for the advisory lock ran out (PostgreSQL), which aborts the
    transaction: the next one proceeds unserialized."""


# One statement: bound the wait (lock_timeout, for this transaction), take the lock (at
# once if it is free, else waiting), and put the bound back as it was. Materialized CTEs
# run in that order, the outer SELECT last; it answers whether the lock was free. It also
# lets the write's statements, which find rows by conversation and position, run on the
# plan PostgreSQL keeps for a prepared statement (plan_cache_mode, for this transaction;
# the connection's default plans every run for its parameters, see settings.py): that
# plan saves a heal-append a third of PostgreSQL's CPU. It is made for no parameter's
# value, so a condition a partial index needs is written out in the statement (the open
# calls' ``NOT d.answered`` in appends.py), not bound.
_ADVISORY_LOCK = """
WITH bounded AS MATERIALIZED (
    SELECT current_setting('lock_timeout') AS previous, set_config('lock_timeout', %s, true)
), free AS MATERIALIZED (
    SELECT pg_try_advisory_xact_lock(%s, %s) AS at_once FROM bounded
), locked AS MATERIALIZED (
    SELECT at_once, CASE WHEN NOT at_once THEN pg_advisory_xact_lock(%s, %s)::text END
    FROM free
)
SELECT at_once, set_config('lock_timeout', previous, true),
    set_config('plan_cache_mode', 'auto', true)
FROM bounded, locked
"""


def _take_advisory_lock(conversation_id: int, via: str, wait_ms: int) -> bool:
    """Take the buffer's advisory lock, waiting at most ``wait_ms``; whether it was free.
    ``_LockWaitOver`` (with a warning) when the wait ran out: the transaction is then
    aborted, and the statement's ``set_config`` undone with it."""
    key = [_LOCK_CLASS, conversation_id & 0x7FFFFFFF]
    try:
        with connection.cursor() as cursor:
            cursor.execute(_ADVISORY_LOCK, [f"{wait_ms}ms", *key, *key])
            at_once: bool = cursor.fetchone()[0]
    except OperationalError as error:
        if getattr(error.__cause__, "sqlstate", None) != "55P03":  # lock_not_available
            raise
        log.warning(
            "MEM-12: append to conversation %s via %s could not take the buffer lock "
            "within %sms; proceeding unserialized",
            conversation_id,
            via,
            wait_ms,
        )
        raise _LockWaitOver from error
    return at_once


def _get(conversation_id: int) -> Conversation:
    try:
        conversation = selectors.conversation_by_pk(conversation_id)
    except Conversation.DoesNotExist:
        raise ConversationNotFound(f"no conversation {conversation_id}") from None
    return conversation
