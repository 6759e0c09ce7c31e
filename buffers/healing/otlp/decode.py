"""An OTLP/HTTP trace request body, already decompressed, decoded into plain spans.

Both encodings of the OTLP specification are read into the same dataclasses:

- ``application/x-protobuf``: ``ExportTraceServiceRequest.FromString`` (opentelemetry-proto);
- ``application/json``: OTLP/JSON, read here by hand rather than mapped into the protobuf
  message with ``json_format.ParseDict``, which is pure Python and took about 9 s for 10,000
  spans. OTLP/JSON is the protobuf JSON mapping with OTLP's own exceptions, all kept:
  keys in lowerCamelCase only (``traceId``: the original ``trace_id`` is not a key of
  it, so it is ignored like any unknown field), trace and span ids in hex (not base64),
  enums as integers (their protobuf names are read too), 64-bit integers as numbers or
  decimal strings, ``bytesValue`` in base64, ``null`` for a field's default.

An attribute value (``AnyValue``) becomes Python: strings, booleans, integers and floats as
they are, ``arrayValue`` a list, ``kvlistValue`` a dict (the last of repeated keys wins),
``bytesValue`` its standard base64 text, an empty value None. Values are untrusted:
arrays and key-value lists nested more than ``MAX_DEPTH`` levels deep are refused.

Anything that is not such a request raises ``Unreadable``, whose message is one sentence
naming the place (``resourceSpans[0].scopeSpans[1].spans[4].traceId must be a hex
string...``), for the ``400`` with a ``google.rpc.Status``; a content type that is
neither raises its subclass ``UnsupportedType`` (a ``415``, if the caller wants one). No
other exception leaves ``decode_traces``, whatever the body.

Span links, trace state, flags and dropped counts are not read: nothing here uses them.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status as ProtoStatus

from buffers.healing import jsontext
from buffers.healing.messages import MAX_DEPTH, describe

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MEDIA_TYPES = {PROTOBUF: PROTOBUF, "application/protobuf": PROTOBUF, JSON: JSON}
"""The media types read, and the encoding each names."""

_INT64 = 2**63
_UINT64 = 2**64
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
_DECIMAL = re.compile(r"-?[0-9]{1,20}")
_KINDS: dict[str, int] = dict(ProtoSpan.SpanKind.items())
_CODES: dict[str, int] = dict(ProtoStatus.StatusCode.items())
_SPECIAL_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class Unreadable(ValueError):
    """A request body that is not an OTLP trace export: ``message`` says what, in one
    sentence (the ``message`` of the ``google.rpc.Status`` answered with a ``400``)."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class UnsupportedType(Unreadable):
    """A body in an encoding OTLP/HTTP does not have (its ``Content-Type``)."""


class Scope(NamedTuple):
    """The instrumentation scope that made a span: the instrumentation library."""

    name: str
    version: str


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Status:
    code: int
    """0 unset, 1 ok, 2 error."""
    message: str


@dataclass(slots=True)
class Span:
    """One span, decoded. ``resource`` (the resource's attributes, e.g. ``service.name``)
    is the same dict for every span of one resource: read it, do not change it."""

    trace_id: str
    """Lowercase hex, as written (normally 32 digits; empty or other lengths are kept)."""
    span_id: str
    parent_span_id: str | None
    """None for a root span."""
    name: str
    kind: int
    """``SpanKind``: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer."""
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[SpanEvent]
    status: Status
    resource: dict[str, Any]
    scope: Scope


@dataclass(frozen=True, slots=True)
class Decoded:
    """The spans of one request, in the order the request holds them."""

    spans: list[Span]


def media_type(content_type: str) -> str | None:
    """The encoding a ``Content-Type`` header names (``PROTOBUF`` or ``JSON``), parameters
    and case aside, or None when it is neither."""
    return MEDIA_TYPES.get(content_type.partition(";")[0].strip().lower())


def decode_traces(body: bytes, content_type: str) -> Decoded:
    """The spans of an OTLP/HTTP trace request body (already decompressed), in the
    encoding its ``content_type`` names. Raises ``Unreadable`` (``UnsupportedType`` for
    another content type), and nothing else."""
    encoding = media_type(content_type)
    if encoding is None:
        shown = content_type.strip()[:100] or "none"
        raise UnsupportedType(
            f"The content type {shown!r} is not an OTLP/HTTP encoding: send {PROTOBUF} or {JSON}."
        )
    try:
        spans = _from_protobuf(body) if encoding == PROTOBUF else _from_json(body)
    except _Bad as bad:
        what = "protobuf ExportTraceServiceRequest" if encoding == PROTOBUF else "JSON trace export"
        raise Unreadable(f"The body is not an OTLP/{what}: {bad.sentence()}.") from None
    return Decoded(spans)


class _Bad(Exception):
    """Something wrong at a place, which each enclosing level names on the way out."""

    def __init__(self, what: str, *where: str) -> None:
        super().__init__(what)
        self.what = what
        self.where = list(reversed(where))

    def at(self, segment: str) -> _Bad:
        self.where.append(segment)
        return self

    def sentence(self) -> str:
        path = "".join(reversed(self.where)).removeprefix(".")
        return f"{path} {self.what}" if path else self.what


def _within[T, R](segment: str, read: Callable[[T], R], value: T) -> R:
    """``read(value)``, naming ``segment`` as the place of what is wrong in it."""
    try:
        return read(value)
    except _Bad as bad:
        raise bad.at(segment) from None


# Protobuf.


def _from_protobuf(body: bytes) -> list[Span]:
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RecursionError, ValueError) as error:
        detail = str(error).strip().rstrip(".") or "it cannot be parsed"
        raise _Bad(f"it cannot be parsed ({detail})") from None
    spans: list[Span] = []
    for i, resource_spans in enumerate(request.resource_spans):
        try:
            resource = _within(".resource", _proto_attributes, resource_spans.resource.attributes)
            for j, scope_spans in enumerate(resource_spans.scope_spans):
                scope = Scope(scope_spans.scope.name, scope_spans.scope.version)
                for k, span in enumerate(scope_spans.spans):
                    try:
                        spans.append(_proto_span(span, resource, scope))
                    except _Bad as bad:
                        raise bad.at(f".scopeSpans[{j}].spans[{k}]") from None
        except _Bad as bad:
            raise bad.at(f"resourceSpans[{i}]") from None
    return spans


def _proto_span(span: ProtoSpan, resource: dict[str, Any], scope: Scope) -> Span:
    events: list[SpanEvent] = []
    for place, event in enumerate(span.events):
        try:
            attributes = _proto_attributes(event.attributes)
        except _Bad as bad:
            raise bad.at(f".events[{place}]") from None
        events.append(SpanEvent(event.name, event.time_unix_nano, attributes))
    return Span(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() or None,
        name=span.name,
        kind=span.kind,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes=_proto_attributes(span.attributes),
        events=events,
        status=Status(span.status.code, span.status.message),
        resource=resource,
        scope=scope,
    )


def _proto_attributes(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for place, pair in enumerate(pairs):
        value = pair.value
        if value.WhichOneof("value") == "string_value":  # the usual case, first
            attributes[pair.key] = value.string_value
            continue
        try:
            attributes[pair.key] = _proto_value(value, 0)
        except _Bad as bad:
            raise bad.at(f".attributes[{place}].value") from None
    return attributes


def _proto_value(value: AnyValue, depth: int) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if kind == "array_value":
        _deep(depth)
        return [_proto_value(held, depth + 1) for held in value.array_value.values]
    if kind == "kvlist_value":
        _deep(depth)
        return {pair.key: _proto_value(pair.value, depth + 1) for pair in value.kvlist_value.values}
    return None


def _deep(depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise _Bad(f"nests arrays or key-value lists more than {MAX_DEPTH} levels deep")


# JSON.


def _from_json(body: bytes) -> list[Span]:
    try:
        document = orjson.loads(body)
        jsontext.unique_keys(body, document)
    except jsontext.DuplicateKey as error:
        raise _Bad(f"names the key {error.shown_key} twice", error.path or "it") from None
    except orjson.JSONDecodeError as error:
        raise _Bad(f"it is not JSON ({error})") from None
    except (RecursionError, ValueError) as error:  # from json, checking the keys
        raise _Bad(f"it cannot be read as JSON ({error})") from None
    if not isinstance(document, dict):
        raise _Bad(f"it must be an object, not {describe(document)}")
    spans: list[Span] = []
    for i, resource_spans in enumerate(_objects(document, "resourceSpans")):
        try:
            resource = _within(".resource", _json_attributes, _object(resource_spans, "resource"))
            for j, scope_spans in enumerate(_objects(resource_spans, "scopeSpans")):
                try:
                    scope = _within(".scope", _json_scope, _object(scope_spans, "scope"))
                    for k, span in enumerate(_objects(scope_spans, "spans")):
                        try:
                            spans.append(_json_span(span, resource, scope))
                        except _Bad as bad:
                            raise bad.at(f".spans[{k}]") from None
                except _Bad as bad:
                    raise bad.at(f".scopeSpans[{j}]") from None
        except _Bad as bad:
            raise bad.at(f"resourceSpans[{i}]") from None
    return spans


def _json_scope(scope: dict[str, Any]) -> Scope:
    return Scope(_text(scope, "name"), _text(scope, "version"))


def _json_span(span: dict[str, Any], resource: dict[str, Any], scope: Scope) -> Span:
    events: list[SpanEvent] = []
    for place, event in enumerate(_objects(span, "events")):
        try:
            events.append(
                SpanEvent(
                    _text(event, "name"), _fixed(event, "timeUnixNano"), _json_attributes(event)
                )
            )
        except _Bad as bad:
            raise bad.at(f".events[{place}]") from None
    status = _object(span, "status")
    try:
        code = _enum(status, "code", _CODES)
        status_message = _text(status, "message")
    except _Bad as bad:
        raise bad.at(".status") from None
    return Span(
        trace_id=_hex(span, "traceId"),
        span_id=_hex(span, "spanId"),
        parent_span_id=_hex(span, "parentSpanId") or None,
        name=_text(span, "name"),
        kind=_enum(span, "kind", _KINDS),
        start_ns=_fixed(span, "startTimeUnixNano"),
        end_ns=_fixed(span, "endTimeUnixNano"),
        attributes=_json_attributes(span),
        events=events,
        status=Status(code, status_message),
        resource=resource,
        scope=scope,
    )


def _object(holder: dict[str, Any], key: str) -> dict[str, Any]:
    value = holder.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Bad(f"must be an object, not {describe(value)}", f".{key}")
    return value


def _objects(holder: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = holder.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(f"must be a list, not {describe(value)}", f".{key}")
    for place, item in enumerate(value):
        if not isinstance(item, dict):
            raise _Bad(f"must be an object, not {describe(item)}", f".{key}", f"[{place}]")
    return value


def _text(holder: dict[str, Any], key: str) -> str:
    value = holder.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Bad(f"must be a string, not {describe(value)}", f".{key}")
    return value


def _integer(value: object, low: int, high: int) -> int | None:
    """An integer written as a JSON number or a decimal string, within [low, high)."""
    if isinstance(value, str):
        if not _DECIMAL.fullmatch(value):
            return None
        value = int(value, 10)
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and low <= value < high:
        return value
    return None


def _fixed(holder: dict[str, Any], key: str) -> int:
    """A ``fixed64`` field: nanoseconds since the epoch."""
    value = holder.get(key)
    if value is None:
        return 0
    number = _integer(value, 0, _UINT64)
    if number is None:
        shown = repr(value)[:40] if isinstance(value, str) else describe(value)
        raise _Bad(
            f"must be an unsigned 64-bit integer (a number or a string), not {shown}", f".{key}"
        )
    return number


def _enum(holder: dict[str, Any], key: str, names: dict[str, int]) -> int:
    value = holder.get(key)
    if value is None:
        return 0
    if isinstance(value, str) and value in names:
        return names[value]
    number = _integer(value, -(2**31), 2**31)
    if number is None:
        shown = repr(value)[:40] if isinstance(value, str) else describe(value)
        raise _Bad(f"must be an enum value (an integer), not {shown}", f".{key}")
    return number


def _hex(holder: dict[str, Any], key: str) -> str:
    value = holder.get(key)
    if value is None:
        return ""
    if not isinstance(value, str) or not value.isascii() or not _HEX.fullmatch(value):
        shown = repr(value)[:40] if isinstance(value, str) else describe(value)
        raise _Bad(
            f"must be a hex string (OTLP/JSON writes trace and span ids in hex, not base64), "
            f"not {shown}",
            f".{key}",
        )
    return value.lower()


def _json_attributes(holder: dict[str, Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for place, pair in enumerate(_objects(holder, "attributes")):
        key, value = pair.get("key"), pair.get("value")
        if type(key) is str and type(value) is dict and len(value) == 1:
            text = value.get("stringValue")
            if type(text) is str:  # the usual case, first
                attributes[key] = text
                continue
        try:
            attributes[_text(pair, "key")] = _json_value(value, 0)
        except _Bad as bad:
            raise bad.at(f".attributes[{place}]") from None
    return attributes


def _json_value(value: object, depth: int) -> Any:
    """An ``AnyValue`` as Python; its place is ``.value``."""
    try:
        return _any_value(value, depth)
    except _Bad as bad:
        raise bad.at(".value") from None


def _any_value(value: object, depth: int) -> Any:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Bad(f"must be an AnyValue object, not {describe(value)}")
    if "stringValue" in value:
        return _text(value, "stringValue")
    if "boolValue" in value:
        held = value["boolValue"]
        if held is None or isinstance(held, bool):
            return bool(held)
        raise _Bad(f"must be a boolean, not {describe(held)}", ".boolValue")
    if "intValue" in value:
        held = value["intValue"]
        number = 0 if held is None else _integer(held, -_INT64, _INT64)
        if number is None:
            shown = repr(held)[:40] if isinstance(held, str) else describe(held)
            raise _Bad(f"must be a 64-bit integer (a number or a string), not {shown}", ".intValue")
        return number
    if "doubleValue" in value:
        return _double(value["doubleValue"])
    if "bytesValue" in value:
        return _bytes(value["bytesValue"])
    if "arrayValue" in value:
        _deep(depth)
        held = _object(value, "arrayValue")
        values = held.get("values")
        if values is None:
            return []
        if not isinstance(values, list):
            raise _Bad(f"must be a list, not {describe(values)}", ".arrayValue", ".values")
        items: list[Any] = []
        for place, item in enumerate(values):
            try:
                items.append(_any_value(item, depth + 1))
            except _Bad as bad:
                raise bad.at(f".arrayValue.values[{place}]") from None
        return items
    if "kvlistValue" in value:
        _deep(depth)
        held = _object(value, "kvlistValue")
        pairs: dict[str, Any] = {}
        for place, pair in enumerate(_objects(held, "values")):
            try:
                pairs[_text(pair, "key")] = _json_value(pair.get("value"), depth + 1)
            except _Bad as bad:
                raise bad.at(f".kvlistValue.values[{place}]") from None
        return pairs
    return None


def _double(held: object) -> float:
    if held is None:
        return 0.0
    if isinstance(held, str) and held in _SPECIAL_DOUBLES:
        return _SPECIAL_DOUBLES[held]
    if isinstance(held, int | float) and not isinstance(held, bool):
        try:
            return float(held)
        except OverflowError:
            pass
    shown = repr(held)[:40] if isinstance(held, str) else describe(held)
    raise _Bad(f"must be a number, not {shown}", ".doubleValue")


def _bytes(held: object) -> str:
    if held is None:
        return ""
    if isinstance(held, str) and held.isascii():
        try:
            standard = held.replace("-", "+").replace("_", "/")
            raw = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
        except (binascii.Error, ValueError):
            pass
        else:
            return base64.b64encode(raw).decode("ascii")
    raise _Bad(f"must be base64 text, not {describe(held)}", ".bytesValue")
