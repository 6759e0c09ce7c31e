"""Characters no database stores (U+0000, lone surrogates), replaced in a runtime log's
values rather than costing the log: ``storable_copy`` and how a log's lines use it."""

from __future__ import annotations

import json

from buffers.healing import json_problem
from buffers.healing.formats.source import may_hold_unstorable, parse_lines
from buffers.healing.messages import MAX_DEPTH, storable_copy


def test_every_string_and_key_holding_one_is_replaced_and_named() -> None:
    value = {
        "output": "ELF\x00\x00",
        "parts": [{"text": "fine"}, {"text": "lone \ud800"}],
        "odd\x00key": 1,
    }

    copy, places = storable_copy(value)

    assert copy == {
        "output": "ELF\ufffd\ufffd",
        "parts": [{"text": "fine"}, {"text": "lone \ufffd"}],
        "odd\ufffdkey": 1,
    }
    assert places == [
        (".output", "U+0000"),
        (".parts[1].text", "U+D800"),
        (".odd\ufffdkey", "U+0000"),
    ]
    assert json_problem(copy) is None
    assert value["output"] == "ELF\x00\x00", "the value itself is left as it was"


def test_a_string_holding_both_kinds_names_both() -> None:
    copy, places = storable_copy({"output": "a\x00b\ud800c\x00\udc00"})

    assert copy == {"output": "a\ufffdb\ufffdc\ufffd\ufffd"}
    assert places == [(".output", "U+0000"), (".output", "U+D800")]


def test_a_line_holding_both_kinds_says_both_at_its_place_once() -> None:
    source = parse_lines(json.dumps({"type": "out", "text": "a\x00b\ud800c"}))

    [altered] = source.altered
    assert altered.why == (
        "text: held U+0000 and U+D800, which no database stores: replaced by U+FFFD (the "
        "rest was read as written)"
    )


def test_what_holds_none_is_not_copied() -> None:
    value = {"a": [1, {"b": "text"}], "c": None}

    copy, places = storable_copy(value)

    assert copy is value
    assert places == []


def test_two_keys_that_would_become_one_are_left_for_the_refusal() -> None:
    value = {"k\x00": 1, "k\ud800": 2}

    copy, _ = storable_copy(value)

    assert copy is value
    assert json_problem(copy) is not None


def test_a_log_line_is_read_with_them_replaced_and_the_line_named() -> None:
    lines = [
        json.dumps({"type": "out", "text": "a\x00b"}),
        json.dumps({"type": "note", "text": "a backslash then u0000: \\u0000"}),
        json.dumps({"type": "deep", "text": "\x00", "nest": [[[]]]}).replace(
            "[[[]]]", "[" * MAX_DEPTH + "]" * MAX_DEPTH
        ),
    ]

    source = parse_lines("\n".join(lines))

    [first, second, third] = source.lines or ()
    assert first.value == {"type": "out", "text": "a\ufffdb"}
    assert first.problem() is None
    assert second.value == {"type": "note", "text": "a backslash then u0000: \\u0000"}
    assert third.problem() is not None, "nested too deep: refused as it is"
    [altered] = source.altered
    assert (altered.where, altered.why) == (
        "line 1",
        "text: held U+0000, which no database stores: replaced by U+FFFD (the rest was read "
        "as written)",
    )
    assert altered.original == {"type": "out", "text": "a\x00b"}


def test_a_text_may_hold_one_when_it_spells_an_escape_or_carries_a_surrogate() -> None:
    assert may_hold_unstorable('{"a": "\\u0000"}')
    assert may_hold_unstorable('{"a": "\\uD83D"}')
    assert may_hold_unstorable('{"a": "\ud800"}'), "a surrogate as it is"
    assert not may_hold_unstorable('{"a": "plain"}')
    assert not may_hold_unstorable('{"a": "café 🎉"}'), "not ASCII, but no surrogate"
