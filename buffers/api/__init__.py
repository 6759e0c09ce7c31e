"""The storage API: conversations over JSON, under the same rules as every other entry point.

Every endpoint calls the service (writes) or the selectors (reads); no rule is
implemented here. Errors are JSON: ``{"detail": "...", "problems": [{"path", "message"}]}``.
Every request is a user's: an API token's or a signed-in session's (401 otherwise), and
``buffers.access`` decides what it may see (404 for the rest, so ids do not leak) and
drive (403 for a conversation it may only view).
"""

from __future__ import annotations

from . import endpoints, errors  # noqa: F401  (registering the endpoints and error handlers)
from .errors import handler400, handler500, json_method_not_allowed, not_found
from .schemas import ExportFormat, ImportFormat
from .site import MAX_PAGE, api

__all__ = [
    "MAX_PAGE",
    "ExportFormat",
    "ImportFormat",
    "api",
    "handler400",
    "handler500",
    "json_method_not_allowed",
    "not_found",
]
