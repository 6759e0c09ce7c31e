from __future__ import annotations

from django.apps import AppConfig


class BuffersConfig(AppConfig):
    name = "buffers"
    verbose_name = "Conversation buffers"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate, pre_migrate

        from . import checks  # noqa: F401  (registers the deploy checks)
        from .triggers import drop_sqlite_cascades, keep_sqlite_triggers

        pre_migrate.connect(drop_sqlite_cascades, sender=self)
        post_migrate.connect(keep_sqlite_triggers, sender=self)
