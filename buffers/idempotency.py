"""Exactly-once writes: a write sent with an ``Idempotency-Key`` header (the API) or an
``idempotency_key`` form field (the inspector's forms) is carried out once; a retry with
the same key and the same request gets the first answer, status and body, and writes
nothing (docs/decisions.md, "Exactly-once writes"). Only a write's answer is kept: a
refusal (4xx, 5xx) wrote nothing, and leaves the key free.

The key is claimed in the same transaction as the write it guards, and the answer is kept
in it too: a server killed mid-write loses the write and the claim together, so the retry
writes; one killed after the commit left the answer, so the retry gets it. A request with
a key already in flight waits for it (PostgreSQL: the unique index holds the second insert
until the first commits; SQLite: the write lock), then gets its answer, or a ``409`` after
``FLOWDROP_IDEMPOTENCY_WAIT`` seconds. The same key with another request is a ``422``.
Keys are per user and kept at least 24 hours.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.urls import Resolver404, resolve
from django.utils import timezone

from . import access
from .models import IdempotentRequest

HEADER = "Idempotency-Key"
FIELD = "idempotency_key"
MAX_KEY = 200

WRITES = frozenset(
    {
        "api:create_conversation",
        "api:append",
        "api:import_transcript",
        "buffers:conversation_append",
    }
)
"""The writes a key guards, by URL name."""


class ExactlyOnce:
    """Middleware: a keyed write is done once (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        write = _write(request)
        if write is None:
            return self.get_response(request)
        api = write.startswith("api:")
        key = _key(request, api=api)
        if key is None:
            return self.get_response(request)
        user = _user(request, api=api)
        if user is None:  # the view answers 401, or sends to sign in
            return self.get_response(request)
        if len(key) > MAX_KEY or not key.isprintable():
            return _problem(request, 400, f"must be at most {MAX_KEY} printable characters")
        return _once(request, user, key, api, lambda: self.get_response(request))


def _write(request: HttpRequest) -> str | None:
    """The name of the write a request asks for (one of ``WRITES``), or None."""
    if request.method != "POST":
        return None
    try:
        name = resolve(request.path_info).view_name
    except Resolver404:
        return None
    return name if name in WRITES else None


def _key(request: HttpRequest, *, api: bool) -> str | None:
    if api:
        return request.headers.get(HEADER) or None
    return request.POST.get(FIELD) or request.headers.get(HEADER) or None


def _user(request: HttpRequest, *, api: bool) -> Any:
    """Whom the write will be done as, so the key is theirs: for the API, as its auth takes
    the caller (the bearer token's user, else the signed-in session's, so a session sent
    with a token that stands for nobody still keys its writes); for the inspector's forms,
    the session's."""
    if api:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and (
            found := access.user_for_request_token(request, token.strip())
        ):
            return found
    return access.real_user(request.user)


def _fingerprint(request: HttpRequest, *, api: bool) -> str:
    """What the write asked: its method, path and body; an inspector form's fields (and
    files), and the API's body as the API reads it, JSON whatever its Content-Type says."""
    digest = hashlib.sha256()
    for part in (request.method or "", request.path_info):
        digest.update(part.encode() + b"\0")
    if request.content_type == "multipart/form-data" and not api:
        fields = sorted((name, value) for name, values in request.POST.lists() for value in values)
        digest.update(repr(fields).encode())
        for name, files in sorted(request.FILES.lists()):
            for upload in files:
                digest.update(name.encode() + b"\0")
                for chunk in upload.chunks():
                    digest.update(chunk)
                upload.seek(0)
    else:
        digest.update(request.body)
    return digest.hexdigest()


def _once(
    request: HttpRequest,
    user: Any,
    key: str,
    api: bool,
    respond: Callable[[], HttpResponseBase],
) -> HttpResponseBase:
    fingerprint = _fingerprint(request, api=api)
    try:
        return _claimed(request, user, key, fingerprint, respond)
    except OperationalError as error:
        if connection.vendor == "sqlite" and "locked" in str(error):
            return _problem(request, 503, "could not be claimed: the database is busy")
        raise


def _claimed(
    request: HttpRequest,
    user: Any,
    key: str,
    fingerprint: str,
    respond: Callable[[], HttpResponseBase],
) -> HttpResponseBase:
    _forget_expired()
    with transaction.atomic():
        try:
            claim = _claim(user, key, fingerprint)
            if claim is None:
                # Expired keys are swept only now and then: one past its time is free again.
                expired = timezone.now() - IdempotentRequest.KEPT
                if IdempotentRequest.objects.filter(
                    user=user, key=key, created_at__lt=expired
                ).delete()[0]:
                    claim = _claim(user, key, fingerprint)
        except OperationalError as error:
            if getattr(error.__cause__, "sqlstate", None) == "55P03":  # lock_not_available
                transaction.set_rollback(True)  # the failed statement aborted the transaction
                return _problem(request, 409, "is in flight: a request with it is being written")
            raise
        if claim is None:  # taken, by a request before this one (or beside it, meanwhile)
            return _replay(request, user, key, fingerprint)
        response = respond()
        if response.status_code >= 400 or response.streaming or _wrote_nothing(response):
            # A refusal writes nothing: the key stays free, so that the request put right
            # (or tried again when the server is less busy) goes through with it.
            transaction.set_rollback(True)
            return response
        assert isinstance(response, HttpResponse)
        _keep(claim, response)
    return response


def _keep(claim: IdempotentRequest, response: HttpResponse) -> None:
    """Keep the answer in the key's row: one plain statement (a model's save cost three
    times as much to build as to run, on every keyed write)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _ANSWER,
            [
                response.status_code,
                response.get("Content-Type", ""),
                response.get("Location", ""),
                response.content,
                claim.pk,
            ],
        )


def wrote_nothing(response: HttpResponse) -> HttpResponse:
    """Mark a 2xx or 3xx answer that wrote nothing (a form shown again with its errors, a
    refused append): its key stays free, as after a 4xx."""
    setattr(response, _NOTHING_WRITTEN, True)
    return response


_NOTHING_WRITTEN = "flowdrop_wrote_nothing"


def _wrote_nothing(response: HttpResponseBase) -> bool:
    return bool(getattr(response, _NOTHING_WRITTEN, False))


def _claim(user: Any, key: str, fingerprint: str) -> IdempotentRequest | None:
    """The key's row, inserted; None when the key is taken. One statement, which leaves the
    transaction usable when the key is taken (no savepoint): on PostgreSQL it waits for a
    request in flight with the key at most FLOWDROP_IDEMPOTENCY_WAIT (``_BOUNDED_CLAIM``)."""
    claim = IdempotentRequest(
        user=user, key=key, fingerprint=fingerprint, status=0, body=b"", created_at=timezone.now()
    )
    values: list[Any] = [
        claim.user_id,
        key,
        fingerprint,
        claim.status,
        claim.content_type,
        claim.body,
        claim.location,
        connection.ops.adapt_datetimefield_value(claim.created_at),
    ]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_BOUNDED_CLAIM, [_wait_ms(), *values])
            inserted = cursor.fetchone()
            if inserted is None:  # the key is taken: put the wait back (RETURNING did not)
                cursor.execute(_RESTORE_WAIT)
        else:  # SQLite waits for its write lock as every write does
            cursor.execute(_CLAIM, values)
            inserted = cursor.fetchone()
    if inserted is None:
        return None
    claim.pk = inserted[0]
    return claim


# The claim: the key's row, or nothing when the (user, key) pair is taken (no error, so no
# savepoint around it).
_CLAIM = """
INSERT INTO buffers_idempotentrequest
    (user_id, key, fingerprint, status, content_type, body, location, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (user_id, key) DO NOTHING
RETURNING id
"""
# PostgreSQL, in one statement: bound the wait for a request in flight with the key (its
# uncommitted row holds the insert), insert, and put the bound back once the row is in (the
# RETURNING clause runs after the wait; the bound is kept in a custom setting meanwhile).
# The write's statements, which find rows by key and position, then run on the plan
# PostgreSQL keeps for a prepared statement (plan_cache_mode, for this transaction, as
# the buffer lock's statement does: services/locking.py).
_BOUNDED_CLAIM = """
WITH bounded AS MATERIALIZED (
    SELECT set_config('flowdrop.lock_timeout', current_setting('lock_timeout'), true),
           set_config('lock_timeout', %s, true),
           set_config('plan_cache_mode', 'auto', true)
)
INSERT INTO buffers_idempotentrequest
    (user_id, key, fingerprint, status, content_type, body, location, created_at)
SELECT %s, %s, %s, %s, %s, %s, %s, %s FROM bounded
ON CONFLICT (user_id, key) DO NOTHING
RETURNING id, set_config('lock_timeout', current_setting('flowdrop.lock_timeout'), true)
"""
_ANSWER = """
UPDATE buffers_idempotentrequest SET status = %s, content_type = %s, location = %s, body = %s
WHERE id = %s
"""
_RESTORE_WAIT = "SELECT set_config('lock_timeout', current_setting('flowdrop.lock_timeout'), true)"


SWEEP_EVERY = 60.0
"""Seconds between two deletions of expired keys by one process: not a query per write."""
_swept_at: float | None = None


def _forget_expired() -> None:
    global _swept_at
    now = time.monotonic()
    if _swept_at is not None and now - _swept_at < SWEEP_EVERY:
        return
    _swept_at = now
    IdempotentRequest.objects.filter(
        created_at__lt=timezone.now() - IdempotentRequest.KEPT
    ).delete()


def _wait_ms() -> str:
    """How long a request waits for one in flight with its key (PostgreSQL's lock_timeout)."""
    return f"{max(1, round(settings.FLOWDROP_IDEMPOTENCY_WAIT * 1000))}ms"


def _replay(request: HttpRequest, user: Any, key: str, fingerprint: str) -> HttpResponseBase:
    kept = IdempotentRequest.objects.get(user=user, key=key)
    if kept.fingerprint != fingerprint:
        return _problem(
            request,
            422,
            "was used with another request (another body or address): a key names one "
            "request; send a new key for a new one",
        )
    response = HttpResponse(bytes(kept.body), status=kept.status, content_type=kept.content_type)
    if kept.location:
        response["Location"] = kept.location
    response["Idempotent-Replayed"] = "true"
    return response


def _problem(request: HttpRequest, status: int, sentence: str) -> HttpResponseBase:
    where = "header Idempotency-Key" if request.path_info.startswith("/api/") else FIELD
    detail = {
        400: "A bad Idempotency-Key; nothing was written.",
        409: "A request with this Idempotency-Key is still being written; try again soon.",
        422: "This Idempotency-Key was used with another request; nothing was written.",
        503: "The database is busy; nothing was written. Try again with the same key.",
    }[status]
    response = JsonResponse(
        {"detail": detail, "problems": [{"path": where, "message": sentence}]}, status=status
    )
    if status in (409, 503):
        response["Retry-After"] = "1"
    return response
