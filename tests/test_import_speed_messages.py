"""What makes a long import faster reads exactly as before: the shortcut past the model for
messages in the stored shape (``messages._plainly_stored``) gives the same stored message,
key for key and in the same order, or the same problems; a log cut into lines one at a
time gives the lines ``str.split`` gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buffers.healing import InvalidInput, Message, jsontext, parse_message, parse_messages
from buffers.healing.formats import source
from buffers.healing.messages import MAX_ID_LENGTH, _parse_by_model

ids = st.one_of(
    st.sampled_from(["c1", "call_2", "x" * MAX_ID_LENGTH]),
    st.sampled_from([None, "", "0", " c3 ", "y" * (MAX_ID_LENGTH + 1), 7, 0, True, 2.5, ["c1"]]),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4), st.just("a\x00b")),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
odd = st.integers(0, 9).map(lambda n: n == 0)
"""Whether to draw something the model refuses or reads its own way (one time in ten)."""


@st.composite
def objects(draw: st.DrawFn, fixed: dict[str, st.SearchStrategy[Any]]) -> dict[Any, Any]:
    """An object holding some of ``fixed``'s keys and a few others, in any order."""
    items: list[tuple[Any, Any]] = [
        (key, draw(values)) for key, values in fixed.items() if draw(st.booleans())
    ]
    items += draw(st.lists(st.tuples(st.sampled_from(["type", "facts", "note"]), json_values)))
    if draw(odd):
        items.append((1, "a key that is not a string"))
    return dict(draw(st.permutations(items)))


calls = st.one_of(
    st.lists(objects({"tool_call_id": ids, "id": ids, "function": json_values}), max_size=3),
    st.sampled_from([None, "not a list", ["a call that is not an object"], ({"id": "c1"},)]),
)
tool_keys = {
    "tool_call_id": ids,
    "healed": st.one_of(st.booleans(), st.sampled_from([None, 1, "yes"])),
    "tool_calls": calls,
}
metadata = st.one_of(objects(tool_keys), st.sampled_from([None, [], "metadata"]))
contents = st.one_of(
    st.none(), st.text(max_size=5), st.lists(json_values, max_size=3), json_values, st.just(3)
)


@st.composite
def messages(draw: st.DrawFn) -> dict[Any, Any]:
    """Mostly the stored shape with a usual role; now and then a flat message, a role the
    model refuses, or a missing one."""
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    raw: dict[Any, Any] = {"role": role, "content": draw(contents), "metadata": draw(metadata)}
    if draw(odd):
        raw["role"] = draw(st.sampled_from(["robot", 3, None]))
    for key in ("content", "metadata", "role"):
        if draw(odd):
            del raw[key]
    if draw(odd):
        raw.update(draw(objects(tool_keys)))
    return dict(draw(st.permutations(list(raw.items()))))


def read(raw: object, *, by_model: bool, json_checked: bool) -> tuple[str, object]:
    try:
        if by_model:
            message = _parse_by_model(raw, "m", json_checked=json_checked)
        else:
            message = parse_message(raw, "m", json_checked=json_checked)
    except InvalidInput as error:
        return "problems", [str(problem) for problem in error.problems]
    return "stored", _written(message)


def _written(message: Message) -> str:
    """The message as the database is given it: JSON text, in its key order."""
    try:
        return jsontext.dumps(message.as_stored())
    except TypeError:  # a key that is not a string: JSON has none, compare the values
        return repr(message.as_stored())


@settings(max_examples=400)
@given(messages(), st.booleans())
def test_every_message_is_read_as_the_model_reads_it(
    raw: dict[Any, Any], json_checked: bool
) -> None:
    assert read(raw, by_model=False, json_checked=json_checked) == read(
        raw, by_model=True, json_checked=json_checked
    )


LONG_ID = "y" * (MAX_ID_LENGTH + 1)


@pytest.mark.parametrize(
    "metadata",
    [
        {"tool_call_id": LONG_ID},
        {"tool_call_id": "x" * MAX_ID_LENGTH, "facts": {}},
        {"tool_call_id": 7},
        {"tool_call_id": True},
        {"healed": 1},
        {"healed": True, "tool_call_id": "c1"},
        {"tool_calls": [{"id": LONG_ID}]},
        {"tool_calls": [{"tool_call_id": LONG_ID, "id": "c1"}]},
        {"tool_calls": [{"id": "c1", 1: "a key that is not a string"}]},
        {"tool_calls": ({"id": "c1"},)},
        {"tool_calls": ["c1"]},
        {"tool_calls": []},
        {"tool_calls": None, "note": 1},
        {"note": 1, 2: "a key that is not a string"},
        {"note": "a\x00b", "tool_call_id": "c1"},
    ],
)
@pytest.mark.parametrize("json_checked", [False, True])
def test_tool_keys_at_their_limits_are_read_as_the_model_reads_them(
    metadata: dict[Any, Any], json_checked: bool
) -> None:
    raw = {"role": "assistant", "content": "x", "metadata": metadata}

    assert read(raw, by_model=False, json_checked=json_checked) == read(
        raw, by_model=True, json_checked=json_checked
    )


@pytest.mark.parametrize(
    "raw",
    [
        {
            "metadata": {"facts": {"time": "t"}, "tool_call_id": "c1"},
            "content": "ok",
            "role": "tool",
        },
        {
            "role": "assistant",
            "content": None,
            "metadata": {
                "facts": {},
                "tool_calls": [{"type": "function", "function": {"name": "f"}, "id": "c1"}],
            },
        },
    ],
)
def test_a_stored_message_keeps_the_order_the_model_gives_its_keys(raw: dict[str, Any]) -> None:
    """Tool key first under metadata, a call's id first in the call: as stored before."""
    [message] = parse_messages([raw])

    assert next(iter(message.metadata)) in ("tool_call_id", "tool_calls")
    assert _written(message) == _written(_parse_by_model(raw, "m", json_checked=False))


def test_a_format_readers_row_keeps_its_metadata_as_it_is() -> None:
    row = {
        "role": "assistant",
        "content": None,
        "metadata": {"facts": {}, "tool_calls": [{"type": "function", "id": "c1"}]},
    }

    [message] = parse_messages([row], json_checked=True)

    assert message.metadata is row["metadata"]


@given(st.text(alphabet="ab\n\r\u2028 ", max_size=12))
def test_a_log_is_cut_into_lines_at_newlines_only(text: str) -> None:
    assert list(source._lines(text)) == text.split("\n")
