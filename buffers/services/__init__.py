"""The one place that writes a buffer.

Views, the admin, the API and the management commands call these functions; the
rules themselves live in the pure core (``buffers.healing``). Every write is one
transaction. Appends are serialized per conversation (MEM-12).

The package, by concern (callers use the names re-exported here):

- ``appends``: appending under the rules (``append_messages``): the facts the planner
  needs, loaded from the index columns, and its plan written.
- ``scopes``: ``resolve_scope``, the one place a buffer's scope is resolved (MEM-6, 7, 8
  and 13), and whether it changed while a write waited.
- ``repair``: admin repair: ``heal_conversation``, ``preview_heal``, ``preview_append``,
  and the admin tier (MEM-15), ``edit_message`` and ``delete_message``.
- ``imports``: storing transcripts verbatim (``ConversationIn``,
  ``import_conversations``): checks, then bulk inserts.
- ``ownership``: ``give_ownerless``, ``change_owner`` (``OwnershipRefused``, ``key_taken_by``,
  ``owner_refusal``).
- ``sharing``: ``share_conversation`` and ``unshare_conversation`` (who else may view),
  ``share_with_group`` and ``unshare_with_group`` (the admin's),
  ``viewer_named``, ``SharingRefused``.
- ``ingest``: live traces (``ingest_model_calls``): each model call's new messages stored
  verbatim in its conversation, recognized by digests, never by reading the buffer.
- ``locking``: ``with_buffer_lock``, bounded transactions and ``BufferBusy``,
  advisory locks; ``ConversationNotFound``.
- ``layout``: where rows go in a buffer's blocks: making room, shifting slots and
  block starts, placing the tail, resizing blocks.
- ``journal``: the repair journal's ``Writer`` and its ``Actor``.
"""

from __future__ import annotations

from .appends import MAX_BATCH, append_messages
from .imports import ConversationIn, import_conversations
from .ingest import Ingested, ingest_model_calls
from .journal import Actor, Writer
from .locking import BufferBusy, ConversationNotFound, with_buffer_lock
from .ownership import (
    OwnershipRefused,
    change_owner,
    give_ownerless,
    key_taken_by,
    owner_refusal,
)
from .repair import delete_message, edit_message, heal_conversation, preview_append, preview_heal
from .scopes import resolve_scope
from .sharing import (
    SHARING_ROWS,
    SharingRefused,
    share_conversation,
    share_with_group,
    unshare_conversation,
    unshare_with_group,
    viewer_named,
)

__all__ = [
    "MAX_BATCH",
    "SHARING_ROWS",
    "Actor",
    "BufferBusy",
    "ConversationIn",
    "ConversationNotFound",
    "Ingested",
    "OwnershipRefused",
    "SharingRefused",
    "Writer",
    "append_messages",
    "change_owner",
    "delete_message",
    "edit_message",
    "give_ownerless",
    "heal_conversation",
    "import_conversations",
    "ingest_model_calls",
    "key_taken_by",
    "owner_refusal",
    "preview_append",
    "preview_heal",
    "resolve_scope",
    "share_conversation",
    "share_with_group",
    "unshare_conversation",
    "unshare_with_group",
    "viewer_named",
    "with_buffer_lock",
]
