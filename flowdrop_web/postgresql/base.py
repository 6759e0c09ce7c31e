"""Django's PostgreSQL backend, checking a kept connection without a round trip.

With CONN_HEALTH_CHECKS, Django asks a kept connection ``SELECT 1`` before each request
uses it, so that one the server ended (a restart, ``pg_terminate_backend``) is replaced
rather than failing the request: a round trip per request, a tenth of an append's. A
server that ends a connection says so (it sends the reason, then closes the socket), and
an idle connection is otherwise sent nothing: so a socket with nothing to read is one the
server still holds, and only one with something to read is asked ``SELECT 1``.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        if self.connection is None or self.connection.closed:
            return False
        try:
            readable, _, _ = select.select([self.connection.fileno()], [], [], 0)
        except (OSError, ValueError):  # the socket is gone
            return False
        return not readable or bool(super().is_usable())
