"""The bodies OTLP/HTTP answers with, in the encoding of the request (``decode.PROTOBUF``
or ``decode.JSON``; anything else is answered in protobuf):

- ``export_response``: the ``200``'s ``ExportTraceServiceResponse``, with
  ``partial_success`` (``rejected_spans`` and a message) when some spans were refused, or
  only a message (a warning, such as "content capture is off");
- ``rpc_status``: the ``google.rpc.Status`` of a ``400`` (code 3, ``INVALID_ARGUMENT``)
  or of any other failure.

JSON is the protobuf JSON mapping OTLP/JSON uses (lowerCamelCase keys, 64-bit integers
as strings).
"""

from __future__ import annotations

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]  # no py.typed
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from .decode import JSON

INVALID_ARGUMENT = 3
RESOURCE_EXHAUSTED = 8
UNAUTHENTICATED = 16
"""google.rpc.Code values (``google/rpc/code.proto``) a receiver answers with."""


def _safe(text: str) -> str:
    """Text protobuf can encode: a lone surrogate is written as its escape."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _encoded(message: Message, encoding: str) -> bytes:
    if encoding == JSON:
        return json_format.MessageToJson(message, indent=None).encode("utf-8")
    return message.SerializeToString()


def export_response(encoding: str, rejected_spans: int = 0, message: str = "") -> bytes:
    """The body of an export's ``200``."""
    response = ExportTraceServiceResponse()
    if rejected_spans or message:
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=rejected_spans, error_message=_safe(message))
        )
    return _encoded(response, encoding)


def rpc_status(encoding: str, message: str, code: int = INVALID_ARGUMENT) -> bytes:
    """The body of a failed export (``400`` for a body ``decode_traces`` cannot read)."""
    return _encoded(Status(code=code, message=_safe(message)), encoding)
