"""Stored conversations.

A buffer is a list whose middle grows: healing inserts a placeholder directly
after the turn that declared an unanswered call, anywhere in the buffer. Reads by
position (a page at offset 99,950; the index of an inserted placeholder) are far
more frequent than those inserts. So the order is kept in two levels
(docs/decisions.md, "Buffer order"): messages live in ``Block``s of about
``FLOWDROP_BUFFER_BLOCK_SIZE`` rows; a block knows the buffer index of its first message
(``start``) and a message its ``slot`` in its block. A message's index is
``block.start + slot``. An insert shifts the slots of the rows after it in its own
block and the ``start`` of the blocks after it: a few hundred small rows, never the
rest of the buffer.

What the rules need (which ids are declared, which are answered, which rows are
placeholders) is kept in indexed columns filled by the pure core's one id reader
(MEM-11), so an append reads only the rows its batch names.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
import uuid
from datetime import timedelta
from typing import Any, ClassVar, cast

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from . import healing


class Scope(models.TextChoices):
    """The storage scope of a FlowDrop memory value: scope, scope id and key name a buffer."""

    GLOBAL = "global", "global"
    USER = "user", "user"
    SESSION = "session", "session"


def new_key() -> str:
    return f"conversation-{uuid.uuid4().hex}"


class ConversationQuerySet(models.QuerySet["Conversation"]):
    def with_unanswered_calls(self) -> ConversationQuerySet:
        return self.filter(unanswered_count__gt=0)

    def without_unanswered_calls(self) -> ConversationQuerySet:
        return self.filter(unanswered_count=0)

    def healed(self) -> ConversationQuerySet:
        return self.filter(healed_count__gt=0)

    def rejected_by(self, provider: str) -> ConversationQuerySet:
        """Those ``provider`` would refuse as history (its stored rejections)."""
        return self.filter(sendable=False, **{f"rejections__{provider}__gt": 0})


class Conversation(models.Model):
    title = models.CharField(max_length=300, blank=True)
    source = models.CharField(
        max_length=300, blank=True, help_text="Where the transcript came from (a file, a runtime)."
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DB_SET_NULL,
        related_name="conversations",
        help_text="Who may view and drive it (append, heal). Nobody, when empty.",
    )
    viewers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        through="SharedWithUser",
        related_name="shared_conversations",
        help_text="Users it is shared with: they may view it, never drive it.",
    )
    viewer_groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        through="SharedWithGroup",
        related_name="shared_conversations",
        help_text="Groups it is shared with: their members may view it, never drive it.",
    )
    scope = models.CharField(max_length=20, choices=Scope, default=Scope.GLOBAL)
    scope_id = models.CharField(
        max_length=100, blank=True, default="", help_text='Empty for the "global" scope.'
    )
    key = models.CharField(max_length=200, default=new_key)
    source_format = models.CharField(
        max_length=30, blank=True, help_text="The format it was imported from, if any."
    )
    metadata = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the imported document held beside its messages (model, tools...).",
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now, editable=False)
    search_words = models.TextField(
        default="",
        editable=False,
        help_text="The words of the title and the source, as the search index reads a "
        "message's (buffers.search.words_of); kept by save().",
    )

    # Kept by the service in the same transaction as every write to the buffer.
    message_count = models.IntegerField(default=0, editable=False)
    unanswered_count = models.IntegerField(
        default=0, editable=False, help_text="Declared calls with no result anywhere."
    )
    healed_count = models.IntegerField(
        default=0, editable=False, help_text="Healed placeholders the buffer holds."
    )
    version = models.BigIntegerField(
        default=0, editable=False, help_text="Counts the writes to the buffer (MEM-12)."
    )
    # The stored verdicts (healing.verdicts.Tally), kept with the counters above.
    rejections = models.JSONField(
        default=dict,
        editable=False,
        help_text="For each provider, how many reasons it would have to refuse the buffer "
        "as history (sendability); 0 when it would accept it.",
    )
    problem_counts = models.JSONField(
        default=dict,
        editable=False,
        help_text="How many problems of each kind the buffer holds (only kinds present).",
    )
    sendable = models.BooleanField(
        default=True, editable=False, help_text="No provider would refuse the buffer."
    )

    objects = ConversationQuerySet.as_manager()

    class Meta:
        ordering: ClassVar[list[str]] = ["-updated_at", "-id"]
        constraints: ClassVar[list[Any]] = [
            # Keys are per owner: a key someone else uses is free, and says nothing of
            # theirs. Ownerless conversations (the demo, command imports) share one space.
            models.UniqueConstraint(
                fields=["owner", "scope", "scope_id", "key"],
                condition=Q(owner__isnull=False),
                name="conversation_storage_identity_per_owner",
            ),
            models.UniqueConstraint(
                fields=["scope", "scope_id", "key"],
                condition=Q(owner__isnull=True),
                name="conversation_storage_identity_ownerless",
            ),
            models.CheckConstraint(
                condition=Q(message_count__gte=0)
                & Q(unanswered_count__gte=0)
                & Q(healed_count__gte=0),
                name="conversation_counts_not_negative",
            ),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["-updated_at", "-id"], name="conversation_recent"),
            models.Index(fields=["-created_at", "-id"], name="conversation_newest"),
            models.Index(fields=["-unanswered_count", "-id"], name="conversation_unanswered"),
            models.Index(fields=["-healed_count", "-id"], name="conversation_healed"),
            models.Index(fields=["-message_count", "-id"], name="conversation_longest"),
            models.Index(fields=["title", "id"], name="conversation_title"),
            models.Index(fields=["sendable", "-updated_at", "-id"], name="conversation_sendable"),
        ]

    def __str__(self) -> str:
        return self.title if _shows_something(self.title) else f"Conversation {self.pk}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        from buffers.search.words import words_of  # buffers.search reads these models

        self.search_words = words_of(f"{self.title} {self.source}")
        fields = kwargs.get("update_fields")
        if fields is not None and {"title", "source"} & set(fields):
            kwargs["update_fields"] = {*fields, "search_words"}
        super().save(*args, **kwargs)

    @property
    def tally(self) -> healing.verdicts.Tally:
        """The stored verdicts and problem counts."""
        return healing.verdicts.Tally.from_stored(self.rejections, self.problem_counts)


class SharedWithUser(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.DB_CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.DB_CASCADE)

    class Meta:
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(fields=["conversation", "user"], name="shared_with_user_once"),
        ]

    def __str__(self) -> str:
        return f"conversation {self.conversation_id} shared with user {self.user_id}"


class SharedWithGroup(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.DB_CASCADE)
    group = models.ForeignKey("auth.Group", on_delete=models.DB_CASCADE)

    class Meta:
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(
                fields=["conversation", "group"], name="shared_with_group_once"
            ),
        ]

    def __str__(self) -> str:
        return f"conversation {self.conversation_id} shared with group {self.group_id}"


class Block(models.Model):
    """A run of consecutive messages of one buffer; see the module docstring."""

    # No index of its own: ``block_start`` (conversation, start) starts with it.
    conversation = models.ForeignKey(
        Conversation, on_delete=models.DB_CASCADE, related_name="blocks", db_index=False
    )
    start = models.IntegerField(help_text="The buffer index of this block's first message.")
    size = models.IntegerField(default=0)

    class Meta:
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(fields=["conversation", "start"], name="block_start"),
        ]

    def __str__(self) -> str:
        return f"messages {self.start}..{self.start + self.size - 1}"


BUFFER_INDEX = F("block__start") + F("slot")
"""A message's index in its buffer: ``.annotate(index=BUFFER_INDEX)``."""


class WrittenJSONField(models.JSONField[Any]):
    """A JSON column whose text only the app writes, from values it has read and checked
    (the ORM's ``json.dumps``, or the bulk paths' ``jsontext.dumps``): SQLite's
    ``JSON_VALID`` check, which parses every row's text again as it is written, is left
    out (a 100,000-message Claude Code session: 140 MB parsed twice, 0.2 s of its insert).
    PostgreSQL's ``jsonb`` reads the text whatever the check (migration 0013)."""

    def db_check(self, connection: Any) -> None:
        return None


class MessageQuerySet(models.QuerySet["Message"]):
    def in_buffer_order(self) -> MessageQuerySet:
        return self.order_by("block__start", "slot")


class Message(models.Model):
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="messages",
        help_text="Its block's conversation, kept here for the indexes that start with it. "
        "The block's trigger deletes it (a foreign key checked each of an import's rows "
        "again: migrations 0012, 0016).",
    )
    # No index of its own: ``message_slot`` (block, slot) starts with it.
    block = models.ForeignKey(
        Block,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="messages",
        db_index=False,
        help_text="A trigger deletes the block's messages with it (migration 0016: a "
        "foreign key checked each of an import's rows at the commit).",
    )
    slot = models.IntegerField()
    role = models.CharField(max_length=16, choices=[(r, r) for r in healing.ROLES])
    content = WrittenJSONField(null=True, blank=True)
    metadata = WrittenJSONField(default=dict, blank=True)

    # Derived through healing.result_call_id / healing.is_placeholder; never set by hand.
    # NULL (not "") for "answers no call", so the partial index below skips those rows.
    answers_call_id = models.TextField(null=True, blank=True, editable=False)  # noqa: DJ001
    is_placeholder = models.BooleanField(default=False, editable=False)

    objects = MessageQuerySet.as_manager()

    class Meta:
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(fields=["block", "slot"], name="message_slot"),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(
                fields=["conversation", "answers_call_id"],
                condition=Q(answers_call_id__isnull=False),
                name="message_answers_call",
            ),
            # The next healed placeholder ("next problem") among the placeholders alone.
            models.Index(
                fields=["conversation"],
                condition=Q(is_placeholder=True),
                name="message_placeholder",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} message in {self.conversation_id}"

    def as_core(self) -> healing.Message:
        """This row as the pure core's message (trusted: it was validated on the way in)."""
        return healing.Message.model_construct(
            role=cast(healing.Role, self.role), content=self.content, metadata=self.metadata
        )

    @classmethod
    def from_core(cls, message: healing.Message, **fields: Any) -> Message:
        return cls(
            role=message.role,
            content=message.content,
            metadata=message.metadata,
            answers_call_id=healing.result_call_id(message),
            is_placeholder=healing.is_placeholder(message),
            **fields,
        )


class TsVectorField(models.Field[Any, Any]):
    """PostgreSQL's ``tsvector``: the one column ``MessageSearch`` declares beyond its keys
    (``django.contrib.postgres`` is not installed, and nothing reads it through the ORM)."""

    def db_type(self, connection: Any) -> str:
        return "tsvector"


class MessageSearch(models.Model):
    """The full-text index of message text (``buffers/search/``): a row per message that
    has text, written by the service in the transaction of every write.

    Its table is made by hand for each backend (migration 0006), so no migration may alter
    it: on PostgreSQL it is this model's table (a stripped ``tsvector`` with a GIN index);
    on SQLite an FTS5 table of the same name whose rowid is the message's id. The model
    exists so that Django knows the table (a test database's flush empties it with the
    rest); read and write it through ``buffers.search`` only, never through the ORM."""

    message = models.OneToOneField(
        Message,
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text="Its row goes with the message: a trigger deletes it (a foreign key would "
        "check each of an import's rows, a third of the index's cost).",
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    document = TsVectorField(help_text="Its GIN index is made by hand, with the table.")
    block = models.ForeignKey(
        Block,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        db_index=False,
        help_text="The message's block, which never changes (migration 0010): a search "
        "counts hits per block without reading the messages. PostgreSQL only.",
    )

    def __str__(self) -> str:
        return f"search index of message {self.message_id}"


class DeclaredCall(models.Model):
    """A tool call id a buffer declares, at the turn that owns it (its first declaration)."""

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,  # ``declared_call_once`` (conversation, call id) starts with it
        related_name="declared_calls",
        help_text="Its message's conversation; the message's trigger is the cascade "
        "(migrations 0012, 0016).",
    )
    message = models.ForeignKey(
        Message,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="declared_calls",
        help_text="A trigger deletes the message's declared calls with it (migration 0016).",
    )
    call_id = models.TextField()
    ordinal = models.IntegerField(help_text="The call's place in the turn's tool_calls.")
    answered = models.BooleanField(
        help_text="A tool result (real or placeholder) for this id is somewhere in the buffer."
    )

    class Meta:
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(fields=["conversation", "call_id"], name="declared_call_once"),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(
                fields=["conversation"], condition=Q(answered=False), name="declared_call_open"
            ),
        ]

    def __str__(self) -> str:
        return self.call_id


class Action(models.TextChoices):
    APPEND = "append", "append"
    HEAL = "heal", "heal"
    IMPORT = "import", "import"
    EDIT = "edit", "edit"
    DELETE = "delete", "delete"
    OWNER = "owner", "owner"


class BufferChange(models.Model):
    """One write to a buffer, in the repair journal: who, when, through which entry point,
    and what changed. ``rows`` lists each message the write touched, by its index at the
    time, and keeps the old message of every row it replaced, edited or deleted, so that
    nothing a write removes is lost (docs/decisions.md, "The repair journal")::

        [{"change": "inserted", "index": 4, "role": "tool", "call_id": "c1", "healed": true},
         {"change": "replaced", "index": 2, "old": {...}, "new": {...}},
         {"change": "deleted", "index": 7, "old": {...}}]

    An import records its message count, not one row per message.
    """

    conversation = models.ForeignKey(
        Conversation, on_delete=models.DB_CASCADE, related_name="changes"
    )
    at = models.DateTimeField(default=timezone.now, editable=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DB_SET_NULL,
        related_name="buffer_changes",
    )
    actor_name = models.CharField(
        max_length=200, blank=True, help_text="Who, as named when the change was made."
    )
    via = models.CharField(max_length=40, help_text="The entry point: inspector, api, admin...")
    action = models.CharField(max_length=10, choices=Action)
    reason = models.TextField(blank=True)
    version = models.BigIntegerField(help_text="The conversation's version after this change.")
    message_count = models.IntegerField(help_text="How many messages the buffer held after.")
    rows = models.JSONField(default=list, blank=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-at", "-id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["conversation", "-at", "-id"], name="change_history"),
        ]

    def __str__(self) -> str:
        return f"{self.action} via {self.via} at {self.at:%Y-%m-%d %H:%M:%S}"


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def live(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True, user__is_active=True)


class ApiToken(models.Model):
    """A bearer token for the storage API. Only its SHA-256 digest is stored: the token
    itself is shown once, when it is made (``ApiToken.issue``), and cannot be read back.
    A token is 256 random bits, so a fast hash is enough; a password hash would only
    slow every request."""

    PREFIX = "fdw_"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What it is for, to tell tokens apart.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    hint = models.CharField(
        max_length=12, editable=False, help_text="The token's first characters, to recognize it."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering: ClassVar[list[str]] = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @staticmethod
    def digest_of(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def issue(cls, user: Any, name: str) -> tuple[ApiToken, str]:
        """A new token for ``user``: the stored row, and the token (shown once)."""
        token = cls.PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(
            user=user, name=name, digest=cls.digest_of(token), hint=token[: len(cls.PREFIX) + 6]
        )
        return row, token

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


class SignInLinkQuerySet(models.QuerySet["SignInLink"]):
    def usable(self) -> SignInLinkQuerySet:
        return self.filter(used_at__isnull=True, expires_at__gt=timezone.now())


class SignInLink(models.Model):
    """A one-time sign-in link for the development server: ``make run`` prints one on every
    start (``manage.py local_signin``). Like an API token, only its SHA-256 digest is
    stored; it signs in once, within ``LIFETIME``, and only while ``FLOWDROP_DEBUG`` is on
    and the browser is on this machine (``views.sign_in_link``)."""

    LIFETIME = timedelta(hours=1)

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_in_links"
    )
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField(editable=False)
    used_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = SignInLinkQuerySet.as_manager()

    def __str__(self) -> str:
        return f"sign-in link for user {self.user_id}, made {self.created_at:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def issue(cls, user: Any) -> str:
        """A new link's token for ``user`` (shown once, in the link)."""
        token = secrets.token_urlsafe(32)
        now = timezone.now()
        cls.objects.create(
            user=user,
            digest=ApiToken.digest_of(token),
            created_at=now,
            expires_at=now + cls.LIFETIME,
        )
        return token

    @classmethod
    def redeem(cls, token: str) -> tuple[Any, str]:
        """The user ``token`` signs in, once, and ``""``; or ``None`` and why it cannot:
        ``"unknown"``, ``"used"``, ``"expired"`` or ``"inactive"``."""
        link = cls.objects.select_related("user").filter(digest=ApiToken.digest_of(token)).first()
        if link is None:
            return None, "unknown"
        if link.used_at is not None:
            return None, "used"
        if link.expires_at <= timezone.now():
            return None, "expired"
        if not link.user.is_active:
            return None, "inactive"
        # Two tabs opening the link at once: only the one that marks it used signs in.
        if not cls.objects.usable().filter(pk=link.pk).update(used_at=timezone.now()):
            return None, "used"
        return link.user, ""


class TracedMessage(models.Model):
    """A message a live trace sent (OpenTelemetry ingest), by its place among the
    conversation's traced messages: its digest, and the buffer index of the first row it
    became. A later span's input repeats these; comparing digests at a few places tells
    the stored prefix from what is new, or from a history the agent rewrote, without
    reading the buffer (docs/decisions.md, "Live ingest")."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.DB_CASCADE, related_name="traced_messages"
    )
    position = models.IntegerField()
    digest = models.CharField(max_length=64)
    row = models.IntegerField(help_text="The buffer index of the first row it became.")

    class Meta:
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(
                fields=["conversation", "position"], name="traced_message_position"
            ),
        ]

    def __str__(self) -> str:
        return f"traced message {self.position} of conversation {self.conversation_id}"


class IdempotentRequest(models.Model):
    """A write sent with an ``Idempotency-Key``, and the answer it got: a retry with the
    same key and the same request gets that answer again and writes nothing
    (``buffers.idempotency``). Keys are per user; kept ``KEPT`` at least."""

    KEPT = timedelta(hours=24)

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idempotent_requests"
    )
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(
        max_length=64, help_text="SHA-256 of the method, path and body the key was first sent with."
    )
    status = models.IntegerField()
    content_type = models.CharField(max_length=200)
    body = models.BinaryField()
    location = models.CharField(max_length=2000, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.key} of user {self.user_id}: {self.status}"


def _shows_something(text: str) -> bool:
    """Whether ``text`` holds a character that shows: not only spaces, controls and
    zero-width characters (a link of those has nothing to click)."""
    return any(not unicodedata.category(c).startswith(("Z", "C")) for c in text)
