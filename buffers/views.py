from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from . import selectors

PAGE_SIZE = 50


@require_safe
def conversation_list(request: HttpRequest) -> HttpResponse:
    paginator = Paginator(selectors.conversations_recent(), PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    return render(request, "buffers/conversation_list.html", {"page": page})
