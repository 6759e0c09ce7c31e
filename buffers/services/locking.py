"""The buffer lock and bounded transactions: every write to a buffer is one transaction,
and appends to one conversation take their turns (MEM-12)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, transaction

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


def with_buffer_lock[T](conversation_id: int, via: str, work: Callable[[Conversation], T]) -> T:
    """Run ``work`` on the conversation in one transaction that holds its buffer lock;
    every write to a buffer goes through here. ``via`` names the entry point in warnings.

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

    def locked_work() -> T:
        return work(_lock(conversation_id, via, _wait_ms()))

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
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA busy_timeout = {_wait_ms()}")
        try:
            with transaction.atomic():
                return work()
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


def _lock(conversation_id: int, via: str, wait_ms: int) -> Conversation:
    conversations = Conversation.objects.filter(pk=conversation_id)
    if connection.vendor == "postgresql":
        _take_advisory_lock(conversation_id, via, wait_ms)
    # SQLite: BEGIN IMMEDIATE already holds the database write lock.
    return _get(conversations, conversation_id)


def _take_advisory_lock(conversation_id: int, via: str, wait_ms: int) -> None:
    key = [_LOCK_CLASS, conversation_id & 0x7FFFFFFF]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, true)",
            [f"{wait_ms}ms"],
        )
        previous = cursor.fetchone()[0]
        try:
            with transaction.atomic():
                cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", key)
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
        finally:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])


def _get(conversations: Any, conversation_id: int) -> Conversation:
    try:
        conversation: Conversation = conversations.get()
    except Conversation.DoesNotExist:
        raise ConversationNotFound(f"no conversation {conversation_id}") from None
    return conversation
