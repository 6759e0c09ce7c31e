"""manage.py export_transcript ID [--format F] [--output FILE]: a stored conversation written
out in the stored shape, normalized (MEM-5), or as a provider's request body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from buffers import access, healing
from buffers.exports import EXPORT_FORMATS, export
from buffers.models import Conversation


class Command(BaseCommand):
    help = (
        "Write a conversation's buffer as it is stored (not healed) in a format: "
        + ", ".join(f"{name} ({kind.label})" for name, kind in EXPORT_FORMATS.items())
        + "."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("conversation_id", type=int, metavar="ID")
        parser.add_argument("--format", choices=list(EXPORT_FORMATS), default="stored")
        parser.add_argument(
            "--output", "-o", type=Path, metavar="FILE", help="Write here instead of stdout."
        )

    def handle(
        self,
        *args: Any,
        conversation_id: int,
        format: str,
        output: Path | None,
        **options: Any,
    ) -> None:
        visible = access.visible_to(access.SHELL, Conversation.objects.all())
        conversation = visible.filter(pk=conversation_id).first()
        if conversation is None:
            raise CommandError(f"There is no conversation {conversation_id}.")
        try:
            exported = export(conversation, format)
        except healing.InvalidInput as error:
            raise CommandError("; ".join(str(p) for p in error.problems)) from None
        if output is None:
            self.stdout.write(
                exported.body.decode(), ending="" if format == "stored-jsonl" else "\n"
            )
            return
        try:
            output.write_bytes(exported.body)
        except OSError as error:
            raise CommandError(f"{output}: {error.strerror or error}") from None
        self.stderr.write(f"{output}: {conversation.message_count:,} messages as {format}")
