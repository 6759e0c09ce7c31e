"""Storing a batch exactly as it is (a live trace's messages): nothing dropped, healed or
replaced, and the declared-call index and counters what a scan of the result says."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from buffers.healing import (
    apply_plan,
    facts_from_messages,
    index_buffer,
    parse_messages,
    plan_verbatim,
)
from tests.buffers import assistant, placeholder, result, user

ROWS = st.sampled_from(
    [
        user(),
        assistant("c1"),
        assistant("c2", "c3"),
        assistant("c1", content="again"),
        result("c1"),
        result("c2"),
        result("c9"),
        placeholder("c3"),
    ]
)


def test_a_batch_goes_after_the_last_row_as_it_is_with_no_rule_applied() -> None:
    stored = parse_messages([user("go"), assistant("c1")])
    batch = parse_messages([result("c1"), result("c1"), user("again")])

    plan = plan_verbatim(facts_from_messages(stored), batch)

    assert apply_plan(stored, plan) == [*stored, *batch]
    assert plan.report.appended == 3
    assert plan.report.healed == ()
    assert plan.report.dropped == ()
    assert plan.answered == ("c1",)


@given(st.lists(ROWS, max_size=6), st.lists(ROWS, max_size=6))
def test_the_index_and_counters_follow_as_a_scan_of_the_result_says(
    before: list[dict[str, Any]], batch: list[dict[str, Any]]
) -> None:
    stored, added = parse_messages(before), parse_messages(batch)
    index = index_buffer(stored)
    plan = plan_verbatim(facts_from_messages(stored), added)
    after = index_buffer(apply_plan(stored, plan))

    assert len(index.open_calls()) + plan.unanswered_delta == len(after.open_calls())
    assert len(index.placeholders) + plan.placeholders_delta == len(after.placeholders)
    declared = {d.call_id: (d.position, d.ordinal) for d in plan.declarations}
    assert {**index.owners, **declared} == after.owners
    for declaration in plan.declarations:
        assert declaration.answered == (declaration.call_id in after.holders)
    for cid in plan.answered:
        assert cid in index.owners
        assert cid not in index.holders
        assert cid in after.holders
