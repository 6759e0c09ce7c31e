"""No query string makes a 500: a NUL (which PostgreSQL cannot take in a query) sent to every
GET parameter of every page and endpoint is a clear 400, on either database."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, reverse

from buffers.urls import urlpatterns as inspector_patterns
from tests.buffers import assistant, signed_in, store, user

pytestmark = pytest.mark.django_db

PARAMETERS = (
    "q",
    "show",
    "sort",
    "page",
    "at",
    "start",
    "end",
    "stop",
    "window_start",
    "offset",
    "limit",
    "format",
    "unanswered",
    "source",
    "scope",
    "owner__id__exact",
    "o",
    "p",
    "x",
)


def pages(pk: int) -> list[str]:
    found = []
    for pattern in inspector_patterns:
        assert isinstance(pattern, URLPattern)
        arguments: dict[str, Any] = {}
        if "pk" in pattern.pattern.converters:
            arguments["pk"] = pk
        if "format" in pattern.pattern.converters:
            arguments["format"] = "stored"
        if "index" in pattern.pattern.converters:
            arguments["index"] = 0
        found.append(reverse(f"buffers:{pattern.name}", kwargs=arguments))
    return found


def endpoints(client: Client, pk: int) -> list[str]:
    paths = client.get("/api/openapi.json").json()["paths"]
    return [
        path.replace("{conversation_id}", str(pk))
        for path, operations in paths.items()
        if "get" in operations
    ]


ADMIN = [
    "/admin/",
    "/admin/buffers/conversation/",
    "/admin/buffers/bufferchange/",
    "/admin/buffers/apitoken/",
    "/admin/auth/user/",
]


def test_a_nul_in_any_get_parameter_of_any_page_or_endpoint_is_a_400() -> None:
    staff = User.objects.create_superuser("root-user")
    client = signed_in(staff)
    conversation = store([user("hi"), assistant("c1")], owner=staff)
    urls = [*pages(conversation.pk), *endpoints(client, conversation.pk), *ADMIN]
    assert len(urls) > 15

    for url in urls:
        for name in PARAMETERS:
            answer = client.get(url, {name: "a\x00b"})
            assert answer.status_code == 400, (url, name, answer.status_code)
            assert "U+0000" in answer.text

    assert client.get("/", {"q\x00": "x"}).status_code == 400


def test_the_api_says_which_parameter_in_json() -> None:
    client = signed_in()

    answer = client.get("/api/conversations", {"q": "\x00"})

    assert answer.status_code == 400
    assert answer.json()["problems"] == [
        {"path": "query.q", "message": "holds the character U+0000, which no parameter takes"}
    ]


def test_every_api_read_documents_that_400() -> None:
    document = signed_in().get("/api/openapi.json").json()

    reads = [
        (path, operation)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if method == "get"
    ]
    assert len(reads) >= 6
    for path, operation in reads:
        assert "400" in operation["responses"], path
