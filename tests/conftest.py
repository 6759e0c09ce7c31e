from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from hypothesis import HealthCheck, settings

from buffers.services import checkpoints
from tests.buffers import ApiBuffer, PureBuffer, StoredBuffer, signed_in
from tests.chromium import find_chromium

# Speed is measured in benchmarks/, not in tests: a per-example deadline only turns a busy
# two-core machine into a failed run.
settings.register_profile("flowdrop", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("flowdrop")

SPEC = Path(__file__).resolve().parent.parent / "docs" / "spec"


def spec_examples(rule: str) -> dict[int, Any]:
    """The JSON examples of one rule's narrative, by their number."""
    examples = json.loads((SPEC / "examples.json").read_text())
    return {e["n"]: e for e in examples if e["rule"] == rule}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stop before any test runs when browser tests are chosen and no chromium is there:
    one sentence saying what to install, not one fixture error per browser test."""
    if config.option.collectonly:
        return
    if any(item.get_closest_marker("browser") for item in items):
        chromium, advice = find_chromium()
        if chromium is None:
            pytest.exit(f"{advice}\n(or leave the browser tests out: -m 'not browser')", 1)


@pytest.fixture(
    params=[
        pytest.param(PureBuffer, id="pure"),
        pytest.param(StoredBuffer, id="db", marks=pytest.mark.django_db),
        pytest.param(ApiBuffer, id="api", marks=pytest.mark.django_db),
    ]
)
def make_buffer(request: pytest.FixtureRequest) -> Any:
    """A buffer class: the pure planner on a list, the service on the database, or the
    storage API over HTTP. Spec examples and decided rules run through all three."""
    return request.param


@pytest.fixture
def client(db: None) -> Client:
    """pytest-django's client, signed in as tests.buffers.acting_user, who owns
    what ``store`` stores. ``Client()`` is an anonymous one."""
    return signed_in()


@pytest.fixture
def postgresql(db: None) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: run with DATABASE_URL=postgres://...")


@pytest.fixture(autouse=True)
def _checkpoints_ended() -> Iterator[None]:
    """A long import on SQLite leaves a thread copying its log into the database file
    (``services.checkpoints``): each test ends once it has, so that none runs into the
    next test (which may count the threads of its process, or copy it)."""
    yield
    checkpoints.wait_for_checkpoints()
