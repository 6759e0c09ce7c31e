"""MEM-11: one definition of a tool call id, for every rule."""

from __future__ import annotations

import pytest

from buffers.healing import (
    Message,
    call_id,
    declared_call_ids,
    declared_calls,
    is_placeholder,
    result_call_id,
    usable_id,
)

pytestmark = pytest.mark.rule("MEM-11")


def turn(*calls: object) -> Message:
    return Message(role="assistant", content="", metadata={"tool_calls": list(calls)})


@pytest.mark.parametrize(
    ("raw", "read"),
    [
        ("c1", "c1"),
        ("  c1 ", "c1"),
        (7, "7"),
        ("", None),
        ("   ", None),
        ("0", None),
        pytest.param(0, None, id="int-zero"),
        (None, None),
        (True, None),
        (1.5, None),
        (["c1"], None),
    ],
)
def test_an_id_is_a_trimmed_non_empty_string_other_than_zero(raw: object, read: str | None) -> None:
    assert usable_id(raw) == read


def test_a_call_is_read_under_either_spelling() -> None:
    assert call_id({"tool_call_id": "c1", "name": "search"}) == "c1"
    assert call_id({"id": "call_1", "name": "search"}) == "call_1"


def test_the_normalized_spelling_wins_when_both_are_usable() -> None:
    assert call_id({"tool_call_id": "c1", "id": "call_1"}) == "c1"


def test_the_flat_spelling_stands_in_when_the_normalized_one_is_unusable() -> None:
    assert call_id({"tool_call_id": "0", "id": "call_1"}) == "call_1"
    assert call_id({"tool_call_id": "", "id": "call_1"}) == "call_1"


def test_a_turn_declares_its_calls_in_order_in_both_spellings_side_by_side() -> None:
    message = turn({"tool_call_id": "c1"}, {"id": "c2"}, {"name": "no id"}, "not a call")

    assert declared_calls(message) == [(0, "c1"), (1, "c2"), (2, None), (3, None)]
    assert declared_call_ids(message) == ["c1", "c2"]


def test_only_assistant_turns_declare_calls() -> None:
    message = Message(role="user", content="", metadata={"tool_calls": [{"tool_call_id": "c1"}]})

    assert declared_call_ids(message) == []


def test_a_result_names_its_call_under_metadata_tool_call_id() -> None:
    assert result_call_id(Message(role="tool", metadata={"tool_call_id": " c1 "})) == "c1"
    assert result_call_id(Message(role="tool", metadata={"tool_call_id": "0"})) is None
    assert result_call_id(Message(role="user", metadata={"tool_call_id": "c1"})) is None


def test_a_placeholder_is_known_by_its_marker_and_never_by_its_text() -> None:
    text = "Tool call was interrupted; no result."
    marked = Message(role="tool", content="x", metadata={"tool_call_id": "c1", "healed": True})
    same_text = Message(role="tool", content=text, metadata={"tool_call_id": "c1"})
    marked_false = Message(
        role="tool", content=text, metadata={"tool_call_id": "c1", "healed": False}
    )

    assert is_placeholder(marked)
    assert not is_placeholder(same_text)
    assert not is_placeholder(marked_false)
