"""Errors: every one JSON, every one with its place (``{"detail", "problems": [{"path",
"message"}]}``), including the 400, 404, 405 and 500 that Django or ninja answer first."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, RawPostDataException
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import bad_request, server_error
from ninja.errors import HttpError, ValidationError
from pydantic_core import ErrorDetails

from buffers import healing, services
from buffers.healing import jsontext

from .site import BodyNotObject, api


def _error(
    request: HttpRequest, status: int, detail: str, problems: Sequence[healing.Problem] = ()
) -> HttpResponse:
    body = {
        "detail": detail,
        "problems": [{"path": p.path, "message": p.message} for p in problems],
    }
    response = api.create_response(request, body, status=status)
    if status == 401:  # RFC 9110: a 401 says how to authenticate
        response["WWW-Authenticate"] = 'Bearer realm="FlowDrop Web"'
    return response


def _not_valid(request: HttpRequest) -> str:
    """A 422's detail: a write says it wrote nothing; a read has nothing to say of it."""
    if request.method in ("GET", "HEAD"):
        return "The request is not valid."
    return "The request is not valid; nothing was written."


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, error: ValidationError) -> HttpResponse:
    problems = [
        healing.problem_from(cast(ErrorDetails, e), skip=_request_part(e["loc"]))
        for e in error.errors
    ]
    if any(p.path.startswith("messages[") for p in problems):
        # The schema stops at a message's shape; read the batch as the endpoint would, so
        # that every problem of every message is listed at once, rule problems included.
        others = [p for p in problems if not p.path.startswith("messages[")]
        problems = others + _batch_problems(request)
    return _error(request, 422, _not_valid(request), problems)


def _batch_problems(request: HttpRequest) -> list[healing.Problem]:
    messages = json.loads(request.body)["messages"]
    appending = request.resolver_match is not None and request.resolver_match.url_name == "append"
    try:
        healing.parse_messages(messages, appendable=appending)
    except healing.InvalidInput as invalid:
        return invalid.problems
    return []


def _request_part(loc: Sequence[Any]) -> int:
    """How much of a ninja error location names the request part, not the field:
    ``("body", "payload", "messages", 3)``, ``("query", "limit")``."""
    return 2 if loc[:1] == ("body",) else 1


@api.exception_handler(healing.InvalidInput)
def _invalid_input(request: HttpRequest, error: healing.InvalidInput) -> HttpResponse:
    return _error(request, 422, _not_valid(request), error.problems)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, error: HttpError) -> HttpResponse:
    cause = error.__cause__
    if isinstance(cause, BodyNotObject):
        return _error(
            request, 422, "The request is not valid.", [healing.Problem("body", str(cause))]
        )
    if isinstance(cause, jsontext.DuplicateKey):
        problem = healing.Problem(cause.path or "body", cause.why)
        return _error(request, 422, _not_valid(request), [problem])
    if isinstance(cause, json.JSONDecodeError):
        where = f"body, line {cause.lineno}, column {cause.colno}"
        return _error(request, 400, "The body is not JSON.", [healing.Problem(where, cause.msg)])
    if isinstance(cause, RecursionError | ValueError | UnicodeDecodeError):
        problem = healing.Problem("body", f"cannot be read: {cause}")
        return _error(request, 400, "The body cannot be read.", [problem])
    return _error(request, error.status_code, str(error))


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, error: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    problem = healing.Problem("body", f"is larger than the limit of {limit:,} bytes")
    return _error(request, 400, "The body is too large; nothing was written.", [problem])


@api.exception_handler(RawPostDataException)
def _read_as_a_form(request: HttpRequest, error: RawPostDataException) -> HttpResponse:
    # A session's write labelled multipart: the CSRF check read its body as a form.
    problem = healing.Problem("header Content-Type", f"is {request.content_type}, not JSON")
    detail = "The body was read as a form; send it as application/json. Nothing was written."
    return _error(request, 400, detail, [problem])


@api.exception_handler(services.ConversationNotFound)
def _not_found(request: HttpRequest, error: services.ConversationNotFound) -> HttpResponse:
    return _error(request, 404, "No such conversation.")


@api.exception_handler(services.BufferBusy)
def _busy(request: HttpRequest, error: services.BufferBusy) -> HttpResponse:
    response = _error(request, 503, f"{error} Try again shortly.")
    response["Retry-After"] = "5"
    return response


@csrf_exempt  # an API path: no CSRF token is asked for, here as on the real endpoints
def not_found(request: HttpRequest) -> HttpResponse:
    """Any other path under /api/: a JSON 404, like every other API error."""
    return _error(request, 404, "No such endpoint.")


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's own 400s (too many fields, a bad Host): JSON under /api/."""
    if request.path.startswith("/api/"):
        return _error(request, 400, f"Bad request: {exception}")
    return bad_request(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    """An unexpected error: JSON under /api/. It is a bug: the traceback is logged."""
    if request.path.startswith("/api/"):
        return _error(request, 500, "Internal error; nothing was written.")
    return server_error(request)


def json_method_not_allowed(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: ninja answers a wrong method with a plain-text 405; under /api/ it is JSON
    like every other error (the Allow header stays)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if response.status_code == 405 and request.path.startswith("/api/"):
            allowed = response.get("Allow", "")
            response = _error(request, 405, f"Method not allowed here; allowed: {allowed}.")
            response["Allow"] = allowed
        return response

    return middleware
