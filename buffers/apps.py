from __future__ import annotations

from django.apps import AppConfig


class BuffersConfig(AppConfig):
    name = "buffers"
    verbose_name = "Conversation buffers"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the deploy checks)
