"""Sign-in for the inspector's pages, and query strings no view could take."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponseBadRequest, HttpResponseBase, JsonResponse


class InspectorLoginRequired(LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware for every page but the storage API's, which
    authenticates each request itself (a token or a session) and answers a JSON 401."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class RefuseUnstorableQuery:
    """A query string holding U+0000 is a 400 before any view runs: PostgreSQL cannot take
    the character in a query, so a search or an admin filter holding it would fail as a
    500, and no parameter of this site means anything with it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return _bad_query(request, name.replace("\x00", "\\u0000"))
        return self.get_response(request)


def _bad_query(request: HttpRequest, name: str) -> HttpResponseBase:
    sentence = "holds the character U+0000, which no parameter takes"
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {
                "detail": "Bad request: nothing was read or written.",
                "problems": [{"path": f"query.{name}", "message": sentence}],
            },
            status=400,
        )
    return HttpResponseBadRequest(
        f"Bad request: the query parameter {name!r} {sentence}.", content_type="text/plain"
    )
