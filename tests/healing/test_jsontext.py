"""JSON read fast, and exactly as the standard library reads it."""

from __future__ import annotations

import codecs
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from buffers.healing import jsontext
from buffers.healing.formats import parse_lines, parse_values
from buffers.healing.messages import json_problem

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(VALUES, st.sampled_from([None, 1]), st.booleans())
def test_any_text_reads_as_the_standard_library_reads_it(
    value: object, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)

    read, storable = jsontext.loads(text)

    assert json.dumps(read) == json.dumps(json.loads(text))
    if storable:
        assert json_problem(read) is None


@given(VALUES)
def test_a_stored_text_reads_back_as_the_standard_library_reads_it(value: object) -> None:
    """What the database gives back (``loads_stored``): written by the app from a value,
    so no key twice, read the same as ``loads`` reads it, long numbers and NaN included."""
    text = json.dumps(value)

    assert json.dumps(jsontext.loads_stored(text)) == json.dumps(json.loads(text))


def test_a_number_beyond_64_bits_stays_an_exact_integer() -> None:
    for text in [
        "123456789012345678901234",
        "[1, -99999999999999999999]",
        '{"a":\n 1' + "0" * 25 + "}",
    ]:
        assert jsontext.loads(text)[0] == json.loads(text)


def test_long_digit_runs_inside_strings_do_not_slow_reading_down() -> None:
    assert not jsontext.has_long_number(
        '{"id": "msg_0000000000000000000001", "t": "17000000000000000000"}'
    )
    assert jsontext.has_long_number('{"n": 17000000000000000000}')


@given(VALUES)
def test_a_files_bytes_say_what_its_text_says_of_long_numbers(value: object) -> None:
    """A file is asked once, as the bytes it came in (the text it decodes to, BOM
    dropped, is not encoded again to be asked)."""
    text = json.dumps(value, ensure_ascii=False)

    for written in (text, "\ufeff" + text):
        as_bytes = written.encode("utf-8", "surrogatepass")
        assert jsontext.has_long_number(as_bytes) == jsontext.has_long_number(text)


def test_a_file_that_is_a_long_number_says_so_after_its_bom() -> None:
    assert jsontext.has_long_number(codecs.BOM_UTF8 + b"12345678901234567890")
    assert not jsontext.has_long_number(codecs.BOM_UTF8 + b"1234567890")


def test_what_cannot_be_stored_is_never_said_to_be_storable() -> None:
    for text in ['"\\u0000"', '"\\ud800"', "NaN", "[1e400]", "[" * 70 + "]" * 70]:
        assert jsontext.loads(text)[1] is False


# Keys named twice.

# Objects as the pairs written, so that one may name a key twice; few keys, so that many do.
# Strings with colons, and colons spelled \u003a, are what the fast proof counts.
_KEYS = st.sampled_from(["a", "b", "type", "x:y", ":", "a b", "é"])
_WRITTEN: st.SearchStrategy[object] = st.recursive(
    st.none() | st.integers(-(10**25), 10**25) | st.sampled_from(["", "a:b", ":", "::", "é"]),
    lambda inner: (
        st.lists(inner, max_size=3).map(tuple)
        | st.lists(st.tuples(_KEYS, inner), max_size=4).map(lambda pairs: {"pairs": pairs})
    ),
    max_leaves=10,
)


def _write(value: object, spaced: bool, escaped: bool) -> str:
    comma, colon = (", ", ": ") if spaced else (",", ":")

    def string(text: str) -> str:
        written = json.dumps(text, ensure_ascii=False)
        return written.replace(":", "\\u003a") if escaped else written

    if isinstance(value, dict):
        pairs = value["pairs"]
        return (
            "{"
            + comma.join(f"{string(k)}{colon}{_write(v, spaced, escaped)}" for k, v in pairs)
            + "}"
        )
    if isinstance(value, tuple):
        return "[" + comma.join(_write(v, spaced, escaped) for v in value) + "]"
    return string(value) if isinstance(value, str) else json.dumps(value)


def _first_twice(value: object, path: str = "") -> tuple[str, str] | None:
    """The path and key of the first key named twice, in the order of the text."""
    if isinstance(value, tuple):
        for index, held in enumerate(value):
            if found := _first_twice(held, f"{path}[{index}]"):
                return found
    elif isinstance(value, dict):
        seen: set[str] = set()
        for key, held in value["pairs"]:
            if key in seen:
                return path, key
            seen.add(key)
            named = f"{path}.{key}" if path else key
            inside = named if key.isidentifier() and key.isascii() else f"{path}[{json.dumps(key)}]"
            if found := _first_twice(held, inside):
                return found
    return None


@given(_WRITTEN, st.booleans(), st.booleans())
def test_a_key_named_twice_is_refused_with_its_path_and_place_and_no_other_text_is(
    value: object, spaced: bool, escaped: bool
) -> None:
    text = _write(value, spaced, escaped)
    twice = _first_twice(value)

    if twice is None:
        assert json.dumps(jsontext.loads(text)[0]) == json.dumps(json.loads(text))
        return
    with pytest.raises(jsontext.DuplicateKey) as refused:
        jsontext.loads(text)
    assert (refused.value.path, refused.value.key) == twice
    assert json.JSONDecoder().raw_decode(text, refused.value.pos)[0] == twice[1]


def test_a_key_named_twice_is_named_with_its_line_and_column() -> None:
    text = '{"messages": [\n  {"role": "user",\n   "content": [{"text": "a", "text": "b"}]}]}'

    with pytest.raises(jsontext.DuplicateKey) as refused:
        jsontext.loads(text)

    assert (refused.value.lineno, refused.value.colno) == (3, 30)
    assert refused.value.msg == 'messages[0].content[0]: the key "text" appears twice'


@pytest.mark.parametrize("whole_text_scanned", [True, False])
def test_a_colon_spelled_as_an_escape_cannot_hide_a_key_named_twice(
    whole_text_scanned: bool,
) -> None:
    # As many colons as orjson writes for {"a": ":"}: counting alone would be fooled.
    text = '{"a": "x", "a": "\\u003a"}'
    escaped = jsontext.has_escaped_colon(text) if whole_text_scanned else True

    with pytest.raises(jsontext.DuplicateKey) as refused:
        jsontext.loads(text, escaped_colons=escaped)

    assert (refused.value.path, refused.value.key) == ("", "a")


def test_bytes_are_checked_as_their_text() -> None:
    with pytest.raises(jsontext.DuplicateKey) as refused:
        jsontext.unique_keys('{"a": {"é": 1, "é": 2}}'.encode(), {"a": {"é": 2}})

    assert (refused.value.path, refused.value.key, refused.value.colno) == ("a", "é", 16)
    jsontext.unique_keys(b'{"a": {"b": 1}, "b": [{"a": 1}]}', {"a": {"b": 1}, "b": [{"a": 1}]})


@pytest.mark.parametrize(
    "text", ['{"n": 123456789012345678901234, "n": 1}', '[NaN, {"x": 1, "x": 2}]']
)
def test_a_text_only_json_reads_is_checked_too(text: str) -> None:
    with pytest.raises(jsontext.DuplicateKey):
        jsontext.loads(text)


def test_a_log_line_naming_a_key_twice_is_kept_aside_as_a_line_that_is_not_json_is() -> None:
    lines = parse_lines('{"a": 1}\n{"b": {"c": 1, "c": 2}}\n{"d": 1}\n')
    values = parse_values(
        '{"a": 1}\n{\n  "b": {"c": 1,\n        "c": 2}\n}\n  {"b": {"c": 1, "c": 2}}\n{"d": 1}'
    )

    assert [entry.value for entry in lines.lines or ()] == [{"a": 1}, {"d": 1}]
    assert [str(s) for s in lines.unreadable] == ['line 2, column 16: b: the key "c" appears twice']
    assert [entry.value for entry in values.lines or ()] == [{"a": 1}, {"d": 1}]
    assert [str(s) for s in values.unreadable] == [
        'line 4, column 9: b: the key "c" appears twice',
        'line 6, column 18: b: the key "c" appears twice',
    ]


def depth(value: object) -> int:
    """How deeply arrays and objects nest in ``value``, by a walk: 0 for a scalar."""
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


# Strings full of what the text's own structure is made of.
_TRICKY = st.text(alphabet='[]{}"\\:,ab \u00e9\n', max_size=8)
_NESTED = st.recursive(
    st.none() | st.integers() | _TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY, inner, max_size=3),
    max_leaves=30,
)


@given(_NESTED, st.sampled_from([None, 1]), st.booleans())
def test_a_texts_nesting_is_read_from_the_text_as_a_walk_of_its_values_finds_it(
    value: object, indent: int | None, ascii_only: bool
) -> None:
    """Brackets and quotes inside strings, escaped or not, do not count."""
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    levels = depth(value)

    assert jsontext.nests_at_most(text, levels)
    assert not jsontext.nests_at_most(text, levels - 1) or levels == 0
    # Not thorough, it may give up, but never says less than the truth.
    assert not jsontext.nests_at_most(text, levels - 1, thorough=False) or levels == 0


def test_a_document_holding_what_no_database_stores_or_nesting_too_deep_is_not_known_storable() -> (
    None
):
    from buffers.healing.messages import MAX_DEPTH

    assert jsontext.known_storable_document(json.dumps({"messages": [[[]]] * 3}))
    assert not jsontext.known_storable_document(json.dumps({"a": "x\u0000y"}))
    deep: object = "end"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    assert jsontext.nests_at_most(json.dumps(deep), MAX_DEPTH)
    assert not jsontext.known_storable_document(json.dumps([deep]))


def test_a_document_whose_nesting_would_take_long_to_read_is_walked_instead() -> None:
    towers = json.dumps(["[" * 20 + "]" * 20] * 1000).replace('"', "")
    mixed = json.dumps({"messages": [{"role": "user", "metadata": {"a": [1, {}]}}] * 1000})

    assert jsontext.nests_at_most(towers, 21)
    assert not jsontext.nests_at_most(towers, 21, thorough=False)
    assert not jsontext.known_storable_document(towers)
    assert jsontext.nests_at_most(mixed, 6, thorough=False)
    assert jsontext.known_storable_document(mixed)
