"""docs/conformance.md says what the rule markers and docs/conformance.toml say."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from tests import conformance


@pytest.fixture(scope="module")
def standing() -> dict[str, Any]:
    return tomllib.loads(conformance.STANDING.read_text())


@pytest.fixture(scope="module")
def proven() -> dict[str, list[str]]:
    """Which tests each rule("MEM-n") marker is on, as pytest itself collects them."""
    return conformance.collect_markers()


def test_every_rule_has_a_standing_that_the_markers_bear_out(
    standing: dict[str, Any], proven: dict[str, list[str]]
) -> None:
    assert conformance.problems(standing, proven) == []


def test_the_published_conformance_page_is_current(
    standing: dict[str, Any], proven: dict[str, list[str]]
) -> None:
    expected = conformance.render(standing, proven)

    assert conformance.PAGE.read_text() == expected, (
        "docs/conformance.md is stale: make conformance"
    )


def test_a_met_rule_without_tests_and_a_marker_for_no_rule_are_caught() -> None:
    standing = {rule: {"standing": "met"} for rule in conformance.rule_ids()}
    proven = {rule: ["tests/x.py::test_y"] for rule in conformance.rule_ids()}
    del proven["MEM-4"]
    proven["MEM-99"] = ["tests/x.py::test_z"]

    assert conformance.problems(standing, proven) == [
        "tests are marked rule('MEM-99'), which is not a GR-MEM rule",
        "MEM-4 is 'met' but no test is marked rule('MEM-4')",
    ]
