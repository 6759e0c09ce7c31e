"""Incoming messages in either shape become stored messages; bad ones say what and where."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from buffers.healing import (
    InvalidInput,
    Message,
    appendable_problems,
    parse_message,
    parse_messages,
    placeholder_for,
)
from buffers.healing.messages import MAX_DEPTH, json_problem


def problems_of(raw: object) -> list[str]:
    with pytest.raises(InvalidInput) as caught:
        parse_messages(raw)
    return [str(p) for p in caught.value.problems]


def test_a_stored_message_is_read_as_it_is() -> None:
    raw = {"role": "tool", "content": "Found 3 cats", "metadata": {"tool_call_id": "c1"}}

    assert parse_message(raw, "m").as_stored() == raw


def test_a_flat_message_moves_its_tool_keys_under_metadata() -> None:
    flat = {"role": "tool", "content": "Found 3 cats", "tool_call_id": "c1"}

    assert parse_message(flat, "m").as_stored() == {
        "role": "tool",
        "content": "Found 3 cats",
        "metadata": {"tool_call_id": "c1"},
    }


def test_nothing_a_client_sent_is_lost_unknown_keys_go_under_metadata() -> None:
    raw = {"role": "assistant", "content": None, "name": "planner", "metadata": {"run": 7}}

    assert parse_message(raw, "m").metadata == {"run": 7, "name": "planner"}


def test_structured_content_is_kept_as_sent() -> None:
    parts = [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}}]

    assert parse_message({"role": "user", "content": parts}, "m").content == parts


def test_a_message_without_content_has_null_content() -> None:
    assert parse_message({"role": "assistant"}, "m").content is None


def test_several_tool_keys_are_stored_in_one_order_whatever_the_process() -> None:
    """The stored JSON of a message is the same text in every process: tool keys are not
    ordered by a set's iteration, which changes with Python's string hashing."""
    program = (
        "import json, sys\n"
        "from buffers.healing import parse_message\n"
        "raw = {'role': 'tool', 'content': 'ok', 'healed': False, 'tool_call_id': 'c1',\n"
        "       'tool_calls': [{'id': 'c2', 'name': 'f'}], 'note': 1}\n"
        "print(json.dumps(parse_message(raw, 'm').as_stored()))\n"
    )
    texts = {
        subprocess.run(
            [sys.executable, "-c", program],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(6)
    }

    assert len(texts) == 1, texts
    [text] = texts
    assert list(json.loads(text)["metadata"]) == ["tool_calls", "tool_call_id", "healed", "note"]


def test_the_same_key_at_top_level_and_under_metadata_must_agree() -> None:
    agreeing = {"role": "tool", "tool_call_id": "c1", "metadata": {"tool_call_id": "c1"}}
    assert parse_message(agreeing, "m").metadata == {"tool_call_id": "c1"}

    assert problems_of(
        [{"role": "tool", "tool_call_id": "c1", "metadata": {"tool_call_id": "c2"}}]
    ) == [
        "messages[0].tool_call_id: is given both at top level and under metadata, "
        "with different values"
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("hello", "messages: must be a list of messages, not a string"),
        ([42], "messages[0]: must be an object, not a number"),
        ([{"content": "x"}], "messages[0].role: is missing"),
        (
            [{"role": "moderator"}],
            "messages[0].role: must be one of user, assistant, tool, system, not 'moderator'",
        ),
        (
            [{"role": "user", "content": 3}],
            "messages[0].content: must be a string, a list of content parts, an object or null, "
            "not a number",
        ),
        ([{"role": "user", "metadata": []}], "messages[0].metadata: must be an object, not a list"),
        (
            [{"role": "assistant", "tool_calls": {"id": "c1"}}],
            "messages[0].tool_calls: must be a list of calls, not an object",
        ),
        (
            [{"role": "assistant", "tool_calls": ["c1"]}],
            "messages[0].tool_calls[0]: must be an object, not a string",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": ["c1"]}]}],
            "messages[0].tool_calls[0].id: must be a string (or an integer), not a list",
        ),
        (
            [{"role": "tool", "tool_call_id": "x" * 600}],
            "messages[0].tool_call_id: is longer than 512 characters",
        ),
        (
            [{"role": "tool", "healed": "yes"}],
            "messages[0].healed: must be true or false, not a string",
        ),
        (
            [{"role": "user", "content": "x", "metadata": {"n": float("nan")}}],
            "messages[0].metadata.n: holds a number that JSON cannot carry (NaN or infinity)",
        ),
    ],
)
def test_a_malformed_message_is_refused_with_its_path_and_a_sentence(
    raw: object, expected: str
) -> None:
    assert problems_of(raw) == [expected]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"role": "user", "content": "a\x00b"}, "messages[0].content"),
        (
            {"role": "user", "content": [{"type": "text", "text": "\x00"}]},
            "messages[0].content[0].text",
        ),
        ({"role": "tool", "tool_call_id": "c1", "note": ["\x00"]}, "messages[0].note[0]"),
        ({"role": "tool", "metadata": {"note": ["\x00"]}}, "messages[0].metadata.note[0]"),
    ],
)
def test_a_nul_character_anywhere_is_refused_because_postgresql_cannot_store_it(
    raw: dict[str, object], expected: str
) -> None:
    assert problems_of([raw]) == [f"{expected}: holds the character U+0000, which cannot be stored"]


def test_a_nul_character_in_a_key_is_named_on_its_object() -> None:
    assert problems_of([{"role": "user", "content": "x", "metadata": {"k\x00": 1}}]) == [
        "messages[0].metadata: has a key that holds the character U+0000, which cannot be stored"
    ]


def test_a_lone_surrogate_is_refused_because_utf8_cannot_encode_it() -> None:
    assert problems_of([{"role": "user", "content": "a\ud800b"}]) == [
        "messages[0].content: holds the character U+D800, which cannot be stored"
    ]
    assert problems_of([{"role": "tool", "tool_call_id": "c\udfff"}]) == [
        "messages[0].tool_call_id: holds the character U+DFFF, which cannot be stored"
    ]


def test_nesting_deeper_than_the_limit_is_refused_in_plain_words() -> None:
    deep: list[object] = []
    inner = deep
    for _ in range(70):
        inner.append([])
        inner = inner[0]  # type: ignore[assignment]

    assert problems_of([{"role": "user", "content": deep}]) == [
        "messages[0].content: nests arrays or objects more than 64 levels deep"
    ]
    assert problems_of([{"role": "user", "metadata": {"x": deep}}]) == [
        "messages[0].metadata: nests arrays or objects more than 64 levels deep"
    ]


def test_a_tool_key_error_names_where_the_client_put_the_key() -> None:
    assert problems_of([{"role": "tool", "metadata": {"tool_call_id": [1]}}]) == [
        "messages[0].metadata.tool_call_id: must be a string (or an integer), not a list"
    ]
    assert problems_of([{"role": "assistant", "metadata": {"tool_calls": [{"id": {}}]}}]) == [
        "messages[0].metadata.tool_calls[0].id: must be a string (or an integer), not an object"
    ]


def test_every_problem_of_every_message_is_reported_at_once() -> None:
    raw = [{"role": "user"}, {"role": "bot"}, {"content": 1}, {"role": "user"}]

    assert [p.split(":")[0] for p in problems_of(raw)] == [
        "messages[1].role",
        "messages[2].role",
        "messages[2].content",
    ]


@pytest.mark.rule("MEM-1")
@pytest.mark.rule("MEM-11")
def test_an_append_needs_usable_ids_on_results_and_declared_calls() -> None:
    """A stored transcript may hold unusable ids (the analysis flags them); an append may not,
    because MEM-1 and MEM-2 decide by id (docs/decisions.md)."""
    batch = parse_messages(
        [
            {"role": "tool", "content": "x", "tool_call_id": "0"},
            {"role": "tool", "content": "x"},
            {"role": "assistant", "tool_calls": [{"tool_call_id": "c1"}, {"name": "no id"}]},
            {"role": "tool", "content": "fine", "tool_call_id": "c1"},
        ]
    )

    assert [p.path for p in appendable_problems(batch)] == [
        "messages[0].metadata.tool_call_id",
        "messages[1].metadata.tool_call_id",
        "messages[2].metadata.tool_calls[1]",
    ]


@pytest.mark.rule("MEM-3")
def test_the_placeholder_is_exactly_the_synthetic_message_of_the_spec() -> None:
    assert placeholder_for("c1").as_stored() == {
        "role": "tool",
        "content": "Tool call was interrupted; no result.",
        "metadata": {"tool_call_id": "c1", "healed": True},
    }


def test_a_message_is_immutable() -> None:
    message = Message(role="user", content="hi")

    with pytest.raises(ValueError, match="frozen"):
        message.role = "tool"  # type: ignore[misc]


def test_a_flat_message_round_trips_through_the_stored_shape() -> None:
    flat = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "f"}}],
        "refusal": None,
    }

    stored = parse_message(flat, "m")

    assert stored.metadata == {"tool_calls": flat["tool_calls"], "refusal": None}
    assert stored.to_flat().model_dump(exclude_unset=True) == flat


def _json_problem_reference(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is storable, as the spec of json_problem says, written plainly."""
    if value is None or isinstance(value, bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return not any(c == "\x00" or "\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, list | dict):
        if depth >= MAX_DEPTH:
            return False
        if isinstance(value, dict):
            if not all(isinstance(k, str) and _json_problem_reference(k) for k in value):
                return False
            value = list(value.values())
        return all(_json_problem_reference(v, depth + 1) for v in value)
    return False


_ODD_TEXT = st.text(alphabet=st.sampled_from(["a", "é", "\x00", "\ud800", "\udfff", "😀"]))
_ODD_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | _ODD_TEXT
    | st.just(object())
    | st.just(b"bytes")
)
_ODD_VALUES = st.recursive(
    _ODD_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(_ODD_TEXT | st.integers(), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(_ODD_VALUES)
def test_json_problem_finds_a_problem_exactly_when_a_value_cannot_be_stored(value: object) -> None:
    assert (json_problem(value) is None) is _json_problem_reference(value)


def test_json_problem_refuses_nesting_past_the_limit_and_takes_it_at_the_limit() -> None:
    at_limit: object = "leaf"
    for _ in range(MAX_DEPTH):
        at_limit = [at_limit]
    assert json_problem(at_limit) is None
    assert json_problem([at_limit]) == f"nests arrays or objects more than {MAX_DEPTH} levels deep"
