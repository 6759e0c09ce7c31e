"""Sign-in for the inspector's pages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponseBase


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
