"""The test database, named for a process of its own."""

from __future__ import annotations

from urllib.parse import quote

from django.db import connection


def database_url() -> str:
    """The test database as a ``DATABASE_URL``, for a command or server run in its own
    process (it sees what a ``transaction=True`` test commits, and the test sees what it
    writes)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    password = f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else ""
    where = f"{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}"
    return f"postgres://{quote(db['USER'])}{password}@{where}/{quote(db['NAME'])}"
