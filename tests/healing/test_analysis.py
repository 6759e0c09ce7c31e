"""The analysis says, for each message of any buffer, what is wrong or notable."""

from __future__ import annotations

from typing import Any

from buffers.healing import analyze, parse_messages
from tests.buffers import assistant, placeholder, result, user


def findings(messages: list[dict[str, Any]]) -> list[tuple[int, str, str | None, int | None]]:
    analysis = analyze(parse_messages(messages))
    return [(f.index, f.kind, f.tool_call_id, f.related_index) for f in analysis.findings]


def test_a_well_paired_buffer_has_no_findings() -> None:
    assert findings([user(), assistant("c1", "c2"), result("c1"), result("c2"), user()]) == []


def test_an_unanswered_call_is_reported_on_the_turn_that_declared_it() -> None:
    analysis = analyze(parse_messages([user(), assistant("c1", "c2"), result("c2")]))

    assert [(f.index, f.kind, f.tool_call_id) for f in analysis.findings] == [
        (1, "unanswered_call", "c1")
    ]
    assert [(u.tool_call_id, u.declared_at) for u in analysis.unanswered] == [("c1", 1)]


def test_a_healed_placeholder_is_marked_and_points_at_its_call() -> None:
    assert findings([assistant("c1"), placeholder("c1")]) == [(1, "healed_placeholder", "c1", 0)]


def test_an_orphan_result_is_one_no_turn_declares() -> None:
    assert findings([user(), result("c9")]) == [(1, "orphan_result", "c9", None)]


def test_a_second_result_for_an_id_is_a_duplicate_of_the_first() -> None:
    assert findings([assistant("c1"), result("c1"), result("c1")]) == [
        (2, "duplicate_result", "c1", 1)
    ]


def test_an_id_declared_again_by_a_later_turn_is_flagged_there() -> None:
    assert findings([assistant("c1"), result("c1"), assistant("c1", "c2"), result("c2")]) == [
        (2, "redeclared_id", "c1", 0)
    ]


def test_a_result_away_from_its_call_is_not_adjacent() -> None:
    late = findings([assistant("c1"), user("?"), result("c1")])
    early = findings([result("c1"), assistant("c1")])

    assert late == [(2, "non_adjacent_result", "c1", 0)]
    assert early == [(0, "non_adjacent_result", "c1", 1)]


def test_results_anywhere_in_the_block_after_the_turn_are_adjacent() -> None:
    assert findings([assistant("c1", "c2", "c3"), result("c3"), result("c1"), result("c2")]) == []


def test_unusable_ids_are_flagged_on_the_call_and_on_the_result() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": "", "tool_calls": [{"tool_call_id": "0"}, {"id": ""}]},
        {"role": "tool", "content": "result", "tool_call_id": "0"},
    ]

    assert findings(messages) == [
        (0, "unusable_id", None, None),
        (0, "unusable_id", None, None),
        (1, "unusable_id", None, None),
    ]


def test_the_analysis_says_which_result_answers_which_call() -> None:
    analysis = analyze(parse_messages([assistant("c1", "c2"), result("c2"), placeholder("c1")]))

    assert analysis.answered_by == {"c2": 1, "c1": 2}
    assert analysis.declared_at == {"c1": 0, "c2": 0}


def test_findings_can_be_read_per_message() -> None:
    analysis = analyze(parse_messages([assistant("c1"), user(), result("c9")]))

    assert [f.kind for f in analysis.at(0)] == ["unanswered_call"]
    assert [f.label for f in analysis.at(2)] == ["orphan result"]
    assert analysis.at(1) == []
