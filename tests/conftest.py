from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

SPEC = Path(__file__).resolve().parent.parent / "docs" / "spec"


def spec_examples(rule: str) -> dict[int, Any]:
    """The JSON examples of one rule's narrative, by their number."""
    examples = json.loads((SPEC / "examples.json").read_text())
    return {e["n"]: e for e in examples if e["rule"] == rule}


@pytest.fixture
def postgresql(db: None) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: run with DATABASE_URL=postgres://...")
