"""manage.py import_transcripts [--format F] FILE...: store transcripts verbatim, in the stored
shape or a provider's (see buffers.transcripts)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from tqdm import tqdm

from buffers import access, services
from buffers.healing import InvalidInput
from buffers.transcripts import FORMATS, MAX_FILE_MB, check_size, read_transcript_file

SHOWN_SKIPS = 20
_RAISE_LIMIT = "--max-mb raises the limit, or split it into several files"


class _Unended:
    """The stream the progress bar draws on: ``out`` without the newline OutputWrapper ends
    each write with, so that the bar redraws its line (``\\r``) instead of adding one."""

    def __init__(self, out: OutputWrapper) -> None:
        self._out = out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)

    def write(self, text: str) -> None:
        self._out.write(text, ending="")


class _Bar(tqdm):  # type: ignore[type-arg]
    """A progress bar without tqdm's monitor thread (which checks on stalled bars): a
    process with a thread of its own does a long import's counting itself (bulk.Aside)."""

    monitor_interval = 0


class Command(BaseCommand):
    # No system checks first: they load the URLconf and with it the API and the admin,
    # a sixth of the command's start-up (CPU 2.55 to 2.1 s median here), for checks of
    # serving that the server runs; an import needs the models and the database only.
    requires_system_checks = ()
    help = (
        "Store transcripts exactly as given (no healing, no dedup). Each file is read whole "
        "and written in one transaction: a file with any error writes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
        parser.add_argument(
            "--skip-existing",
            action="store_true",
            help="Leave a conversation alone when its key is already stored, instead of failing.",
        )
        parser.add_argument(
            "--owner",
            metavar="USERNAME",
            help="Who owns the conversations imported (may view and drive them); nobody if unset.",
        )
        parser.add_argument(
            "--format",
            choices=("auto", *FORMATS),
            default="auto",
            help="Read every file in this format instead of detecting it file by file.",
        )
        parser.add_argument(
            "--max-mb",
            type=int,
            default=MAX_FILE_MB,
            metavar="MB",
            help=(
                f"The largest file read, in MB (default {MAX_FILE_MB}). A file is read whole, "
                "taking about seven times its size in memory."
            ),
        )

    def handle(
        self,
        *args: Any,
        files: list[Path],
        skip_existing: bool,
        format: str,
        owner: str | None,
        max_mb: int,
        **options: Any,
    ) -> None:
        owner_user = _user(owner) if owner else None
        if max_mb < 1:
            raise CommandError("--max-mb must be at least 1.")
        max_bytes = max_mb * 1024 * 1024
        failed = 0
        for path in files:
            try:
                if path.is_file():
                    check_size(str(path), path.stat().st_size, max_bytes, advice=_RAISE_LIMIT)
                reading = read_transcript_file(path, format, max_bytes=max_bytes)
                conversations = reading.conversations
                total = sum(len(c.messages) for c in conversations)
                with _Bar(
                    total=total,
                    unit="msg",
                    desc=path.name,
                    file=_Unended(self.stderr),
                    disable=total < 10_000 or options["verbosity"] == 0,
                ) as bar:
                    created = services.import_conversations(
                        conversations,
                        via="import_transcripts command",
                        by=f"{getpass.getuser()} (shell)",
                        owner=owner_user,
                        on_existing="skip" if skip_existing else "error",
                        progress=bar.update,
                    )
            except InvalidInput as error:
                failed += 1
                for problem in error.problems:
                    self.stderr.write(str(problem))
                self.stderr.write(f"{path}: nothing was imported from this file")
                continue
            skipped = len(conversations) - len(created)
            message_count = sum(c.message_count for c in created)
            summary = (
                f"{path}: {reading.summary()}; imported {_count(len(created), 'conversation')}, "
                f"{_count(message_count, 'message')}"
            )
            if skipped:
                summary += f" ({skipped} already stored, skipped)"
            self.stdout.write(summary)
            for problem in reading.skipped[:SHOWN_SKIPS]:
                self.stdout.write(f"  skipped {problem}")
            if len(reading.skipped) > SHOWN_SKIPS:
                self.stdout.write(f"  and {len(reading.skipped) - SHOWN_SKIPS:,} more skipped")
            for problem in reading.changed[:SHOWN_SKIPS]:
                self.stdout.write(f"  changed {problem}")
            if len(reading.changed) > SHOWN_SKIPS:
                self.stdout.write(f"  and {len(reading.changed) - SHOWN_SKIPS:,} more changed")
        if failed:
            raise CommandError(f"{failed} of {len(files)} files had errors and were not imported")


def _user(username: str) -> User:
    try:
        user = User.objects.get_by_natural_key(username)
    except User.DoesNotExist:
        raise CommandError(f"There is no user {username!r}.") from None
    if not access.is_real(user):
        raise CommandError(f"{username!r} is not an active user and cannot own anything.")
    return user


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"
