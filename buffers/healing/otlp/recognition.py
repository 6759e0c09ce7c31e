"""How a message sent again as history is recognized: by a short digest of what an answer
and the same message sent back share."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from buffers.healing.formats.otel_messages import canonical_part, not_sent_back


def digest(message: Mapping[str, Any]) -> str:
    """A short stable digest of a message's role and parts: what an answer and the same
    message sent back as history share (``finish_reason``, ``name``, an ``index`` and any
    other message key are left out; a call's arguments written as JSON text read as the
    JSON they hold; parts' keys holding null are left out; so are reasoning parts, which
    most models are not sent back, and empty text parts, which many agents drop). Raises
    TypeError for a value JSON cannot write (never for the messages of a ``ModelCall``)."""
    parts = message.get("parts")
    if isinstance(parts, list):
        parts = [part for part in parts if not not_sent_back(part)]
    return _digest_of(message.get("role"), parts)


def legacy_digest(message: Mapping[str, Any]) -> str:
    """``digest`` as it was before reasoning and empty text parts were left out of it: what
    the messages traced before then were stored under (``digests``)."""
    return _digest_of(message.get("role"), message.get("parts"))


def digests(message: Mapping[str, Any]) -> set[str]:
    """What a stored message's digest may be if it is ``message``: ``digest``, or
    ``legacy_digest`` for one stored before the two differed."""
    return {digest(message), legacy_digest(message)}


def _digest_of(role: object, parts: object) -> str:
    canonical = [canonical_part(part) for part in parts] if isinstance(parts, list) else parts
    try:
        text = orjson.dumps({"role": role, "parts": canonical}, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # arguments whose JSON nests too deeply to write: digest them as text
        text = orjson.dumps({"role": role, "parts": parts}, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(text, digest_size=16).hexdigest()
