"""Django's ``loaddata``, which then indexes the words of the messages it loaded for
search, in the same transaction: a fixture (``dumpdata``'s) holds no search index, and
one written before the index was left out holds index rows, which are not loaded."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError
from django.core.management.commands import loaddata
from django.db import DEFAULT_DB_ALIAS

from buffers import search
from buffers.models import Message

from .dumpdata import SEARCH_INDEX


class Command(loaddata.Command):
    help = (
        f"{loaddata.Command.help} The messages loaded are indexed for search ({SEARCH_INDEX} "
        "rows in a fixture are not loaded)."
    )

    def handle(self, *fixture_labels: str, **options: Any) -> None:
        options["exclude"] = [*options["exclude"], SEARCH_INDEX]
        self.loaded_messages: list[int] = []
        super().handle(*fixture_labels, **options)

    def save_obj(self, obj: Any) -> bool:
        saved: bool = super().save_obj(obj)
        if saved and isinstance(obj.object, Message):
            self.loaded_messages.append(obj.object.pk)
        return saved

    def loaddata(self, fixture_labels: Any) -> None:
        super().loaddata(fixture_labels)
        if not self.loaded_messages:
            return
        if self.using != DEFAULT_DB_ALIAS:  # the app keeps the index through the default
            raise CommandError(
                f"messages can be loaded into the database {DEFAULT_DB_ALIAS!r} only, whose "
                f"search index the app keeps, not into {self.using!r}: nothing was loaded"
            )
        indexed = search.index_stored(self.loaded_messages)
        if self.verbosity >= 1:
            self.stdout.write(f"Indexed the words of {indexed:,} messages for search")
