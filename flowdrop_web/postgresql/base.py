"""Django's PostgreSQL backend, with a health check that costs no round trip.

A worker keeps its connection between requests (``CONN_MAX_AGE``) and, with
``CONN_HEALTH_CHECKS``, Django checks it before a request first uses it by sending
``SELECT 1``: a round trip on every request (100 µs, 50 of them the worker's CPU; the
look at the socket takes 2; docs/decisions.md, "Running it for a team").
Here the check looks at the socket first: an idle connection (no transaction open) that
the server has not ended has nothing to read, since PostgreSQL sends nothing unasked but
the notice that it ends a session (a restart, ``pg_terminate_backend``) before it closes
the socket. Anything to read, or a connection in any other state, is checked as Django
checks it.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import Connection
from psycopg.pq import TransactionStatus


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self) -> None:
        # (django-stubs do not know the health check's attributes, Django 4.1's.)
        due = self.health_check_enabled and not self.health_check_done  # type: ignore[attr-defined,has-type]
        if due and self.connection is not None and _idle_with_nothing_to_read(self.connection):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()


def _idle_with_nothing_to_read(connection: Connection[object]) -> bool:
    if connection.closed or connection.broken:
        return False
    if connection.info.transaction_status != TransactionStatus.IDLE:
        return False
    poll = select.poll()
    poll.register(connection.fileno(), select.POLLIN | select.POLLPRI)  # and hang-ups, always
    return not poll.poll(0)
