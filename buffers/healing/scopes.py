"""MEM-6, MEM-7, MEM-13: resolving a memory scope from an execution context, or refusing.

A buffer lives in a scope (``global``, ``user``, ``session``) under a scope id. The
``global`` scope is not tied to an identity: it resolves to ``""``, the one shared
bucket. An identity scope resolves to the identity's id, or **refuses**: it never falls
back to ``""``, which would pour every caller without an identity into one bucket.

A usable identity (A18) is a positive integer that a database row can have, or its
decimal spelling. Absent, ``None``,
``""``, ``0``, ``"0"``, a boolean, a negative or non-numeric value all refuse. Whether an
id names an existing user or session is the context builder's to say: it hands over
only ids it has found (``ExecutionContext``), and ``None`` for one it has not.

This is the one resolver: every consumer (an append through the API or the inspector,
an admin heal) asks it before it touches storage, and answers the neutral result on a
refusal (MEM-7).
"""

from __future__ import annotations

from dataclasses import dataclass

IDENTITY_SCOPES: dict[str, str] = {"user": "user", "session": "session"}
"""The scopes tied to an identity, and what each needs from the execution context."""


@dataclass(frozen=True)
class ExecutionContext:
    """Who a write runs for. ``user_id`` is the memory principal: for a conversation, its
    owner and never the caller (MEM-8). ``session_id`` is the session being driven."""

    user_id: object = None
    session_id: object = None


@dataclass(frozen=True)
class Resolution:
    scope: str
    scope_id: str
    """The bucket: the identity's id, ``""`` for the global scope, and ``""`` on a
    refusal (MEM-7: only ``refused`` tells the two apart)."""
    refused: bool = False
    reason: str = ""


MAX_ID = 2**63 - 1
"""The largest id a database row can have: a larger number names nothing."""


def real_identity(value: object) -> str | None:
    """The id as text when it is a usable identity (A18), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdecimal()) or len(text) > len(str(MAX_ID)):
            return None
        value = int(text)
    if isinstance(value, int) and 0 < value <= MAX_ID:
        return str(value)
    return None


def resolve(scope: str, context: ExecutionContext | None) -> Resolution:
    """The bucket ``scope`` selects in ``context``, or a refusal that says why."""
    if scope not in IDENTITY_SCOPES:
        return Resolution(scope, "")
    if context is None:
        return _refused(scope, "there is no execution context")
    value = context.user_id if scope == "user" else context.session_id
    identity = real_identity(value)
    if identity is None:
        what = "user" if scope == "user" else "session"
        shown = "none" if value is None else repr(value)
        return _refused(scope, f"the execution context carries no real {what} (it has {shown})")
    return Resolution(scope, identity)


def _refused(scope: str, reason: str) -> Resolution:
    return Resolution(scope, "", refused=True, reason=reason)
