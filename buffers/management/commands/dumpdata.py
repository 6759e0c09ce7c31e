"""Django's ``dumpdata``, without the full-text index of message text, which is made from
the messages, in a form of each database's own (an FTS5 table on SQLite, a ``tsvector``
on PostgreSQL): ``loaddata`` makes it again from the messages it loads, on either."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError
from django.core.management.commands import dumpdata

SEARCH_INDEX = "buffers.MessageSearch"


class Command(dumpdata.Command):
    help = (
        f"{dumpdata.Command.help} The search index of message text ({SEARCH_INDEX}) is "
        "left out: loaddata makes it again from the messages it loads."
    )

    def handle(self, *app_labels: str, **options: Any) -> None:
        if any(label.lower() == SEARCH_INDEX.lower() for label in app_labels):
            raise CommandError(
                f"{SEARCH_INDEX} is the search index of message text, made from the "
                "messages: it is not dumped, and loaddata makes it again from the "
                "messages it loads."
            )
        options["exclude"] = [*options["exclude"], SEARCH_INDEX]
        super().handle(*app_labels, **options)
