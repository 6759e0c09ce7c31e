"""The OTLP/HTTP trace receiver: ``POST /api/otel/v1/traces``.

An agent's OpenTelemetry exporter, pointed here with an API token, is the whole set-up:

    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://host:8000/api/otel/v1/traces
    OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer fdw_...

It answers as the OTLP specification says a server does: the request's own encoding
(protobuf or JSON) back; ``200`` with an ``ExportTraceServiceResponse``, whose
``partial_success`` counts the spans that could not be read and says why, and warns of
model calls sent without their messages (content capture off); ``400`` with a
``google.rpc.Status`` for a request that cannot be parsed; ``401`` without a valid token;
``413`` past the size limit, checked on the body as sent and again as it inflates (a
small gzip cannot become a large body); ``415`` for another content type. The model calls
its spans hold go to ``services.ingest_model_calls``; other spans are counted and left.
"""

from __future__ import annotations

import zlib
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import access, services
from .healing import otlp


class _Refused(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@csrf_exempt
@require_POST
def traces(request: HttpRequest) -> HttpResponse:
    given = otlp.media_type(request.headers.get("Content-Type", ""))
    encoding = given or otlp.JSON
    try:
        user = _user(request)
        if given is None:
            raise _Refused(
                415,
                otlp.INVALID_ARGUMENT,
                f"Content-Type must be {otlp.PROTOBUF} or {otlp.JSON}, "
                f"not {request.content_type!r}.",
            )
        body = _body(request)
        try:
            decoded = otlp.decode_traces(body, encoding)
        except otlp.Unreadable as unreadable:
            raise _Refused(400, otlp.INVALID_ARGUMENT, str(unreadable)) from None
    except _Refused as refused:
        answer = otlp.rpc_status(encoding, refused.message, refused.code)
        response = HttpResponse(answer, content_type=encoding, status=refused.status)
        if refused.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="FlowDrop Web"'
        return response

    calls: list[otlp.ModelCall] = []
    rejected: list[str] = []
    uncaptured = 0  # model calls exported with content capture off: nothing to store
    for span in decoded.spans:
        read = otlp.model_call(span)
        if isinstance(read, otlp.Refusal):
            rejected.append(read.reason)
        elif read is not None:
            calls.append(read)
        elif otlp.claims_model_call(span):
            uncaptured += 1
    done = services.ingest_model_calls(calls, owner=user)
    rejected += [f"span {span}: {why}" for span, why in done.rejected]
    said = [_first_ten(rejected)] if rejected else []
    # Warnings (OTLP: a message with no span rejected for it).
    refused_spans = {span for span, _ in done.rejected}
    stored = [call for call in calls if call.span_id not in refused_spans]
    replaced = [f"span {call.span_id}: {call.replaced}" for call in stored if call.replaced]
    if replaced:
        said.append(_first_ten(replaced))
    if uncaptured:
        said.append(_uncaptured(uncaptured))
    answer = otlp.export_response(encoding, len(rejected), "; ".join(said))
    return HttpResponse(answer, content_type=encoding, status=200)


def _first_ten(sentences: list[str]) -> str:
    more = f" (and {len(sentences) - 10} more)" if len(sentences) > 10 else ""
    return "; ".join(sentences[:10]) + more


CAPTURE_ON_SPANS = (
    "OpenTelemetry's GenAI instrumentations: OTEL_SEMCONV_STABILITY_OPT_IN="
    "gen_ai_latest_experimental and OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="
    "SPAN_ONLY; their earlier releases take true, and send the messages as log events, "
    "which this receiver does not read"
)
"""How the instrumentations most agents use put the messages on their spans."""


def _uncaptured(spans: int) -> str:
    what = "1 model call span" if spans == 1 else f"{spans} model call spans"
    return (
        f"{what} carried no messages, so nothing of {'it' if spans == 1 else 'them'} was "
        "stored: turn message capture on in the instrumentation, with the messages on the "
        f"spans ({CAPTURE_ON_SPANS})"
    )


def _user(request: HttpRequest) -> Any:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    user = access.user_for_token(token.strip()) if scheme.lower() == "bearer" else None
    if user is None:
        raise _Refused(
            401,
            otlp.UNAUTHENTICATED,
            "An API token is needed: send Authorization: Bearer fdw_... "
            "(OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer fdw_...).",
        )
    return user


def _body(request: HttpRequest) -> bytes:
    limit = settings.FLOWDROP_OTLP_MAX_BYTES
    too_big = _Refused(413, otlp.RESOURCE_EXHAUSTED, f"The request is larger than {limit:,} bytes.")
    try:
        sent = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        sent = 0
    if sent > limit:
        raise too_big
    # Read from the stream, never past the limit: ``request.body`` is held to the API's
    # limit (DATA_UPLOAD_MAX_MEMORY_SIZE), and a trace request to its own.
    body = request.read(limit + 1)
    if len(body) > limit:
        raise too_big
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise _Refused(415, otlp.INVALID_ARGUMENT, f"Content-Encoding {encoding!r} is not gzip.")
    if not body:
        raise _Refused(400, otlp.INVALID_ARGUMENT, "The gzip body is empty.")
    # Member by member (RFC 1952: a gzip file may be several, its data theirs in turn),
    # never inflating past the limit. An exporter writes one; a few are read, and a body of
    # many tiny ones (each costing a pass over what follows it) is refused.
    inflated = bytearray()
    offset = 0
    for _ in range(_GZIP_MEMBERS):
        if body[offset : offset + 2] != _GZIP_MAGIC:
            raise _Refused(400, otlp.INVALID_ARGUMENT, "The body has bytes after the gzip data.")
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            inflated += inflater.decompress(memoryview(body)[offset:], limit + 1 - len(inflated))
            if len(inflated) > limit or inflater.unconsumed_tail:
                raise too_big
            inflated += inflater.flush()
        except zlib.error as error:
            raise _Refused(400, otlp.INVALID_ARGUMENT, f"The body is not gzip: {error}.") from None
        if len(inflated) > limit:
            raise too_big
        if not inflater.eof:
            raise _Refused(400, otlp.INVALID_ARGUMENT, "The gzip body is cut off.")
        offset = len(body) - len(inflater.unused_data)
        if offset == len(body):
            return bytes(inflated)
    raise _Refused(
        400, otlp.INVALID_ARGUMENT, f"The gzip body has more than {_GZIP_MEMBERS} members."
    )


_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_MEMBERS = 16
