"""JSON read fast, and exactly as the standard library reads it."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from buffers.healing import jsontext
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


def test_what_cannot_be_stored_is_never_said_to_be_storable() -> None:
    for text in ['"\\u0000"', '"\\ud800"', "NaN", "[1e400]", "[" * 70 + "]" * 70]:
        assert jsontext.loads(text)[1] is False
