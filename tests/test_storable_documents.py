"""A stored-shape document whose text shows every value storable (read by orjson, no
U+0000, nesting no deeper than messages.MAX_DEPTH) is read without walking each message's
values, and reads exactly as when they are walked; one whose text does not is walked, and
refused where a value cannot be stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from buffers import transcripts
from buffers.healing.errors import InvalidInput
from buffers.healing.messages import MAX_DEPTH

_TEXT = st.text(alphabet='ab[]{}"\\ \u00e9\n', max_size=6)
_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=10,
)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system"]), "content": _VALUE},
    optional={
        "metadata": st.dictionaries(
            st.sampled_from(["tool_call_id", "note", "tool_calls", "name"]), _VALUE, max_size=3
        )
    },
)


def read(document: object) -> tuple[bool, Any]:
    """Whether the text was known storable, and what was read (or the refusal's problems)."""
    text = json.dumps(document)
    source = transcripts.text_source(text, jsonl=False)
    try:
        reading = transcripts.read_source(source, "stored", "")
    except InvalidInput as error:
        return source.storable, [(p.path, p.message) for p in error.problems]
    return source.storable, [[m.model_dump() for m in c.messages] for c in reading.conversations]


def walked(document: object) -> Any:
    """What is read when every value is walked (the document as a value, not a text)."""
    try:
        conversations = transcripts._stored(document, "")
    except InvalidInput as error:
        return [(p.path, p.message) for p in error.problems]
    return [[m.model_dump() for m in c.messages] for c in conversations]


@given(st.lists(_MESSAGE, max_size=6))
def test_a_document_known_storable_reads_as_one_walked(messages: list[dict[str, Any]]) -> None:
    document = {"title": "t", "messages": messages}

    storable, found = read(document)

    assert storable
    assert found == walked(document)


def nested(levels: int) -> object:
    value: object = "end"
    for _ in range(levels):
        value = [value]
    return value


def test_content_nesting_too_deep_is_refused_with_its_place() -> None:
    document = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "user", "content": nested(MAX_DEPTH + 1)},
        ]
    }

    storable, found = read(document)

    assert not storable
    assert found == walked(document)
    assert found == [
        (
            "conversation.messages[1].content",
            f"nests arrays or objects more than {MAX_DEPTH} levels deep",
        )
    ]


def test_content_as_deep_as_allowed_is_read_but_the_document_is_walked() -> None:
    document = {"messages": [{"role": "user", "content": nested(MAX_DEPTH)}]}

    storable, found = read(document)

    assert not storable  # the document itself nests deeper than MAX_DEPTH
    assert found == walked(document)
    assert found[0][0]["content"] == nested(MAX_DEPTH)


@pytest.mark.parametrize("content", [float("nan"), "a\u0000b"])
def test_what_no_database_stores_is_never_taken_as_storable(content: object) -> None:
    document = {"messages": [{"role": "user", "content": content}]}

    storable, _ = read(document)

    assert not storable
