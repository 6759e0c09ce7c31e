"""The API itself: the ninja instance, how it reads bodies, and who may call it."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe
from ninja import NinjaAPI
from ninja.errors import ValidationError, ValidationErrorContext
from ninja.parser import Parser
from ninja.security import HttpBearer, SessionAuth

from buffers import access, healing
from buffers.healing import jsontext

MAX_PAGE = 500
"""The most conversations or messages one page answers; a larger ``limit`` is capped."""

BIGGEST_ID = 2**63 - 1

# The interactive docs (Swagger UI, served from ninja's own static files) set inline
# styles; only that page may, and it shows no transcript content.
_DOCS_CSP: dict[str, list[str]] = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
}


class BodyNotObject(ValueError):
    pass


class _JsonObjectParser(Parser):
    """JSON bodies (whatever their Content-Type, so a bare ``curl -d`` works) that are objects."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        # As json.loads reads bytes (UTF-8, -16 or -32), refusing a key named twice.
        body = request.body
        data, _ = jsontext.loads(body.decode(json.detect_encoding(body), "surrogatepass"))
        if not isinstance(data, dict):
            raise BodyNotObject(f"must be a JSON object, not {healing.describe(data)}")
        return data


class _Token(HttpBearer):
    """``Authorization: Bearer fdw_…``: an API token made in the admin or with
    ``manage.py api_token``. The caller is then the token's user, as ``request.user``."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        user = access.user_for_request_token(request, token)
        if user is not None:
            request.user = user
        return user


class _Session(SessionAuth):
    """The signed-in session, with Django's CSRF check on writes; but only once there is
    a session: without one the answer is 401, not a CSRF failure that says nothing of
    what is missing."""

    def __call__(self, request: HttpRequest) -> Any:
        if not request.user.is_authenticated:
            return None
        return super().__call__(request)


class _StorageAPI(NinjaAPI):
    def validation_error_from_error_contexts(
        self, error_contexts: list[ValidationErrorContext[Any]]
    ) -> ValidationError:
        """Ninja's errors, with the input each one was about kept, so that messages can say
        what was sent ("must be one of user, ..., not 'bot'")."""
        error = super().validation_error_from_error_contexts(error_contexts)
        inputs = [
            details["input"]
            for context in error_contexts
            for details in context.pydantic_validation_error.errors(include_url=False)
        ]
        for details, value in zip(error.errors, inputs, strict=True):
            details["input"] = value
        return error


api = _StorageAPI(
    title="FlowDrop Web storage API",
    version="1",
    description=(
        "Store agent transcripts verbatim and append turns under the GR-MEM buffer rules "
        "of the FlowDrop Workflow Specification (storage-api profile): deduplication "
        "(MEM-1, MEM-2), healing of unanswered tool calls at a user turn (MEM-3), "
        "placeholder replacement (MEM-10), both id spellings (MEM-11), serialized appends "
        "(MEM-12) and append reports (MEM-14)."
    ),
    urls_namespace="api",
    parser=_JsonObjectParser(),
    # A token for outside programs; the signed-in session for the inspector's own pages
    # (and the interactive docs), with Django's CSRF check on writes.
    auth=[_Token(), _Session()],
    docs_decorator=lambda view: csrf_exempt(require_safe(csp_override(_DOCS_CSP)(view))),
)
