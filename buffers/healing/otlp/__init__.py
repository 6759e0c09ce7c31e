"""Live OTLP ingest, the pure part: an OTLP/HTTP trace request decoded into spans
(``decode``), a span read as a model call (``spans``) with its messages in any of the four
conventions that put conversations on spans (``conventions``), the digests that recognize
a message sent again as history (``recognition``), and the answers OTLP/HTTP gives
(``answers``).

The caller (the endpoint and the storage service) decodes a request, reads each span,
groups the model calls by ``conversation_id`` (else trace id), recognizes the stored
prefix of a call's input by the ``digest`` of each message, and stores the new messages'
``rows``.
"""

from __future__ import annotations

from .answers import (
    INVALID_ARGUMENT,
    RESOURCE_EXHAUSTED,
    UNAUTHENTICATED,
    export_response,
    rpc_status,
)
from .conventions import RawMessage
from .decode import (
    JSON,
    PROTOBUF,
    Decoded,
    Scope,
    Span,
    SpanEvent,
    Status,
    Unreadable,
    UnsupportedType,
    decode_traces,
    media_type,
)
from .recognition import digest, digests
from .spans import ModelCall, Refusal, claims_model_call, model_call, rows

__all__ = [
    "INVALID_ARGUMENT",
    "JSON",
    "PROTOBUF",
    "RESOURCE_EXHAUSTED",
    "UNAUTHENTICATED",
    "Decoded",
    "ModelCall",
    "RawMessage",
    "Refusal",
    "Scope",
    "Span",
    "SpanEvent",
    "Status",
    "Unreadable",
    "UnsupportedType",
    "claims_model_call",
    "decode_traces",
    "digest",
    "digests",
    "export_response",
    "media_type",
    "model_call",
    "rows",
    "rpc_status",
]
