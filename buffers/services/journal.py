"""The repair journal: who wrote to a buffer, through which entry point, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User

from buffers.models import Action, BufferChange, Conversation

type Actor = AbstractBaseUser | AnonymousUser | str | None
"""Who writes, for the repair journal: a user (anonymous counts as nobody), or a name for a
writer with no account (``"alice (shell)"`` for a management command)."""


@dataclass(frozen=True)
class Writer:
    """A write as the journal records it: through which entry point, by whom, and why."""

    via: str
    by: Actor
    action: Action
    reason: str = ""

    def record(
        self, conversation: Conversation, *, version: int, message_count: int, rows: list[Any]
    ) -> BufferChange:
        entry = self.entry(conversation, version=version, message_count=message_count, rows=rows)
        entry.save(force_insert=True)
        return entry

    def entry(
        self, conversation: Conversation, *, version: int, message_count: int, rows: list[Any]
    ) -> BufferChange:
        """The journal's entry for a write, not saved yet (``record`` saves it)."""
        user = cast(User | None, self.by if isinstance(self.by, AbstractBaseUser) else None)
        if user is not None:
            name = user.get_username()
        else:
            name = self.by if isinstance(self.by, str) else ""
        return BufferChange(
            conversation=conversation,
            actor=user,
            actor_name=name,
            via=self.via,
            action=self.action,
            reason=self.reason,
            version=version,
            message_count=message_count,
            rows=rows,
        )
