"""A bounded fuzzing run of the storage API from its OpenAPI document: no input causes a
500, and every response is one the document describes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis import checks

from buffers.models import ApiToken
from flowdrop_web.wsgi import application
from tests.buffers import acting_user

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]


@pytest.fixture
def connection_kept_across_requests() -> Iterator[None]:
    """As Django's test client does: the fuzzed requests share the test's transaction."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.mark.django_db
@pytest.mark.usefixtures("connection_kept_across_requests")
@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_the_api_answers_every_generated_request_as_documented(
    case: schemathesis.Case[Any],
) -> None:
    """Not "every schema-valid request is accepted": a batch can be well-formed and still be
    refused by the rules (an unusable id, the same key given twice), with a 422 that says so.
    Sent with a real token, so that the fuzzing reaches past authentication."""
    _, token = ApiToken.issue(acting_user(), "fuzzing")
    case.call_and_validate(checks=CHECKS, headers={"Authorization": f"Bearer {token}"})
