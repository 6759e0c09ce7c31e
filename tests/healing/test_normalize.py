"""Assembly (MEM-4), normalization (MEM-5) and text made into a message (MEM-16)."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buffers.healing import INTERRUPTED_TEXT, parse_messages
from buffers.healing.normalize import (
    Drop,
    Normalized,
    assemble,
    coerce_content,
    normalize,
    text_to_message,
)
from buffers.healing.sendability import check
from tests.buffers import assistant, placeholder, result, user
from tests.conftest import spec_examples

MEM4 = spec_examples("MEM-4")
MEM5 = spec_examples("MEM-5")
MEM16 = spec_examples("MEM-16")


def system(content: str = "be brief") -> dict[str, Any]:
    return {"role": "system", "content": content, "metadata": {}}


def interrupted(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "content": INTERRUPTED_TEXT, "tool_call_id": call_id}


def reasons(normalized: Normalized) -> list[tuple[int | None, str, str | None]]:
    return [(d.index, d.reason, d.call_id) for d in normalized.drops]


# MEM-4


@pytest.mark.rule("MEM-4")
def test_ports_are_flattened_in_their_declared_order_not_their_names() -> None:
    assert assemble(MEM4[1]["buffer"]) == MEM4[2]["buffer"]


@pytest.mark.rule("MEM-4")
def test_an_unwired_port_contributes_nothing() -> None:
    assert assemble(MEM4[3]["buffer"]) == MEM4[4]["buffer"]


@pytest.mark.rule("MEM-4")
def test_a_list_gives_its_items_a_single_message_one_item_and_none_nothing() -> None:
    first, second, third = {"role": "user", "content": "1"}, user("2"), system("3")

    assembled = assemble([("history", [first, second]), ("empty", None), ("preamble", third)])

    assert assembled == [first, second, third]
    assert assemble({"a": [], "b": None}) == []


# MEM-5 (1), A15: content coercion


@pytest.mark.rule("MEM-5")
@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("as it is", "as it is"),
        ("", ""),
        (None, ""),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-42, "-42"),
        (2.5, "2.5"),
        (1e16, "1e+16"),
        (math.nan, ""),
        (math.inf, ""),
        pytest.param(10**5000, "", id="an-integer-of-5001-digits"),
        ([{"type": "text", "text": "héllo/there"}], '[{"type":"text","text":"héllo/there"}]'),
        ({"b": 1, "a": [True, None]}, '{"b":1,"a":[true,null]}'),
        ({1: "one"}, '{"1":"one"}'),
        ((1, 2), "[1,2]"),
        ([math.nan], ""),
        ({"when": object()}, ""),
        ({1, 2}, ""),
    ],
)
def test_content_is_coerced_to_text(value: object, text: str) -> None:
    assert coerce_content(value) == text


@pytest.mark.rule("MEM-5")
def test_content_that_cannot_be_serialized_because_it_contains_itself_is_empty() -> None:
    circular: list[object] = []
    circular.append(circular)

    assert coerce_content(circular) == ""


# MEM-5: the spec's examples


@pytest.mark.rule("MEM-5")
def test_a_call_and_its_result_both_spelled_0_are_dropped_with_the_turn_three_drops() -> None:
    assert MEM5[2]["buffer"] == []

    normalized = normalize(MEM5[1]["buffer"])

    assert normalized.messages == []
    assert normalized.dropped == 3
    assert reasons(normalized) == [
        (0, "unusable_call_id", None),
        (0, "empty_turn", None),
        (1, "unusable_result_id", None),
    ]


@pytest.mark.rule("MEM-5")
def test_a_result_ahead_of_its_call_is_stripped_and_the_call_gets_an_interrupted_result() -> None:
    normalized = normalize(MEM5[3]["buffer"])

    assert normalized.messages == MEM5[4]["buffer"]
    assert normalized.dropped == 1
    assert reasons(normalized) == [(0, "leading_tool", "c1")]


# MEM-5 (1): coercion to the flat shape


@pytest.mark.rule("MEM-5")
def test_stored_rows_become_flat_messages_with_no_metadata() -> None:
    stored = [
        user("find cats") | {"timestamp": 1700000000},
        assistant("c1") | {"content": None},
        result("c1", "Found 3 cats") | {"metadata": {"tool_call_id": "c1", "source": "search"}},
    ]

    assert normalize(stored) == Normalized(
        [
            {"role": "user", "content": "find cats"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"tool_call_id": "c1", "name": "search"}],
            },
            {"role": "tool", "content": "Found 3 cats", "tool_call_id": "c1"},
        ]
    )


@pytest.mark.rule("MEM-5")
def test_a_stored_placeholder_becomes_a_plain_result_with_no_healed_marker() -> None:
    normalized = normalize([user(), assistant("c1"), placeholder("c1"), user()])

    assert normalized.messages[2] == interrupted("c1")
    assert normalized.dropped == 0


@pytest.mark.rule("MEM-5")
def test_call_entries_keep_their_own_keys_and_ids_are_read_in_either_spelling() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    flat_turn = {"role": "assistant", "content": "", "tool_calls": [call]}

    normalized = normalize(
        [user(), flat_turn, {"role": "tool", "content": "ok", "tool_call_id": " call_1 "}]
    )

    assert normalized.messages[1]["tool_calls"] == [call]
    assert normalized.messages[2] == {"role": "tool", "content": "ok", "tool_call_id": "call_1"}
    assert normalized.dropped == 0


@pytest.mark.rule("MEM-5")
def test_non_scalar_content_is_serialized_not_blanked() -> None:
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]

    normalized = normalize(
        [{"role": "user", "content": parts}, {"role": "user", "content": {"k": 1}}]
    )

    assert [m["content"] for m in normalized.messages] == [
        '[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}}]',
        '{"k":1}',
    ]


@pytest.mark.rule("MEM-5")
def test_entries_that_are_not_messages_are_dropped_and_counted_where_they_were() -> None:
    entries: list[object] = [
        None,
        user("kept"),
        "just text",
        7,
        {"content": "no role"},
        {"role": "", "content": "blank role"},
        {"role": "moderator", "content": "an unknown role is not coerced (A11)"},
        {"role": ["user"], "content": "a role that is not text"},
    ]

    normalized = normalize(entries)

    assert normalized.messages == [{"role": "user", "content": "kept"}]
    assert reasons(normalized) == [
        (0, "not_an_object", None),
        (2, "not_an_object", None),
        (3, "not_an_object", None),
        (4, "no_role", None),
        (5, "no_role", None),
        (6, "unknown_role", None),
        (7, "unknown_role", None),
    ]
    assert normalized.dropped == 7


# MEM-5 (2): system first


@pytest.mark.rule("MEM-5")
def test_system_messages_move_to_the_front_and_both_groups_keep_their_order() -> None:
    normalized = normalize(
        [user("u1"), system("s1"), assistant(content="a1"), system("s2"), user("u2")]
    )

    assert [m["content"] for m in normalized.messages] == ["s1", "s2", "u1", "a1", "u2"]
    assert normalized.dropped == 0


@pytest.mark.rule("MEM-5")
def test_a_system_message_between_a_call_and_its_result_no_longer_separates_them() -> None:
    normalized = normalize([user(), assistant("c1"), system(), result("c1")])

    assert [m["role"] for m in normalized.messages] == ["system", "user", "assistant", "tool"]
    assert normalized.messages[3]["content"] == "result"


# MEM-5 (3): pairing repair


@pytest.mark.rule("MEM-5")
def test_an_unanswered_call_gets_an_interrupted_result_after_the_results_that_follow_its_turn() -> (
    None
):
    normalized = normalize([user(), assistant("c1", "c2", "c3"), result("c2"), user("next")])

    assert normalized.messages[2:] == [
        {"role": "tool", "content": "result", "tool_call_id": "c2"},
        interrupted("c1"),
        interrupted("c3"),
        {"role": "user", "content": "next"},
    ]
    assert normalized.dropped == 0


@pytest.mark.rule("MEM-5")
def test_an_orphan_result_is_dropped_and_so_is_a_duplicate_the_first_surviving() -> None:
    normalized = normalize(
        [user(), assistant("c1"), result("c1", "first"), result("c1", "second"), result("c9")]
    )

    assert normalized.messages[2:] == [{"role": "tool", "content": "first", "tool_call_id": "c1"}]
    assert reasons(normalized) == [(3, "duplicate_result", "c1"), (4, "orphan_result", "c9")]


@pytest.mark.rule("MEM-5")
def test_an_id_declared_again_is_removed_from_the_later_turn() -> None:
    normalized = normalize(
        [
            user(),
            assistant("c1"),
            result("c1"),
            assistant("c1", "c2", content="again"),
            result("c2"),
        ]
    )

    assert normalized.messages[3] == {
        "role": "assistant",
        "content": "again",
        "tool_calls": [{"tool_call_id": "c2", "name": "search"}],
    }
    assert reasons(normalized) == [(3, "redeclared_call", "c1")]


@pytest.mark.rule("MEM-5")
def test_a_turn_left_with_no_calls_and_blank_content_is_removed() -> None:
    normalized = normalize(
        [user(), assistant("c1"), result("c1"), assistant("c1", content="  "), result("c1", "late")]
    )

    assert [m["role"] for m in normalized.messages] == ["user", "assistant", "tool"]
    assert reasons(normalized) == [
        (3, "redeclared_call", "c1"),
        (3, "empty_turn", None),
        (4, "duplicate_result", "c1"),
    ]


@pytest.mark.rule("MEM-5")
def test_a_blank_turn_that_declared_no_calls_is_kept_without_tool_calls() -> None:
    turn: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": []}

    assert normalize([user(), turn]) == Normalized(
        [{"role": "user", "content": "next"}, {"role": "assistant", "content": ""}]
    )


@pytest.mark.rule("MEM-5")
def test_a_result_away_from_its_call_is_dropped_and_the_call_interrupted_a7() -> None:
    normalized = normalize([user(), assistant("c1"), user("?"), result("c1", "late")])

    assert normalized.messages == [
        {"role": "user", "content": "next"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"tool_call_id": "c1", "name": "search"}],
        },
        interrupted("c1"),
        {"role": "user", "content": "?"},
    ]
    assert reasons(normalized) == [(3, "misplaced_result", "c1")]


@pytest.mark.rule("MEM-5")
def test_a_result_before_its_call_behind_system_messages_is_still_leading() -> None:
    normalized = normalize([system(), result("c1"), assistant("c1")])

    assert [m["role"] for m in normalized.messages] == ["system", "assistant", "tool"]
    assert reasons(normalized) == [(1, "leading_tool", "c1")]


@pytest.mark.rule("MEM-5")
def test_an_unusable_call_leaves_a_turn_with_text_in_place() -> None:
    normalized = normalize([user(), assistant("", "c2", content="two calls"), result("c2")])

    assert normalized.messages[1] == {
        "role": "assistant",
        "content": "two calls",
        "tool_calls": [{"tool_call_id": "c2", "name": "search"}],
    }
    assert reasons(normalized) == [(1, "unusable_call_id", None)]


@pytest.mark.rule("MEM-5")
def test_tool_calls_that_are_not_a_list_count_as_one_unusable_call() -> None:
    normalized = normalize([{"role": "assistant", "content": "hm", "tool_calls": "search"}])

    assert normalized.messages == [{"role": "assistant", "content": "hm"}]
    assert reasons(normalized) == [(0, "unusable_call_id", None)]


def test_normalizing_leaves_its_input_unchanged() -> None:
    flat_turn = {"role": "assistant", "content": "", "tool_calls": [{"id": "c2"}, {"id": "c2"}]}
    entries = [user(), assistant("c1", "0"), result("c1"), flat_turn, system(), result("c2")]
    before = copy.deepcopy(entries)

    normalize(entries)

    assert entries == before


@pytest.mark.rule("MEM-5")
def test_a_turn_with_very_many_calls_keeps_every_call_and_its_result() -> None:
    # Its cost (it was quadratic in the calls of one turn) is in benchmarks/exchange.py.
    ids = [f"c{n}" for n in range(40_000)]
    turn = {"role": "assistant", "content": "", "tool_calls": [{"id": cid} for cid in ids]}
    results = [{"role": "tool", "content": "ok", "tool_call_id": cid} for cid in reversed(ids)]

    normalized = normalize([user(), turn, *results])

    assert normalized.dropped == 0
    assert [m.get("tool_call_id") for m in normalized.messages[2:]] == list(reversed(ids))


# Properties over generated buffers

IDS = st.sampled_from(["c1", "c2", "c3", " c2 ", "0", "", 1, None])


@st.composite
def entries(draw: st.DrawFn) -> list[object]:
    """Buffers with every kind of damage: unusable, repeated and misplaced ids, results
    without calls, system messages anywhere, junk, in the stored or the flat shape."""
    made: list[object] = []
    for n in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "tool", "placeholder", "system", "junk"]))
        if kind == "junk":
            made.append(
                draw(st.sampled_from([None, "text", 3, {"content": "x"}, {"role": "moderator"}]))
            )
            continue
        content = draw(st.sampled_from([f"m{n}", "", None, [{"type": "text", "text": f"m{n}"}]]))
        message: dict[str, Any] = {
            "role": "tool" if kind == "placeholder" else kind,
            "content": content,
        }
        keys: dict[str, Any] = {}
        if kind == "assistant":
            spelling = st.sampled_from(["tool_call_id", "id"])
            calls = draw(st.lists(st.fixed_dictionaries({"name": st.just("search")}), max_size=3))
            keys["tool_calls"] = [call | {draw(spelling): draw(IDS)} for call in calls]
        elif kind in ("tool", "placeholder"):
            keys["tool_call_id"] = draw(IDS)
            if kind == "placeholder":
                keys["healed"] = True
        if draw(st.booleans()):
            message |= keys
        else:
            message["metadata"] = keys
        made.append(message)
    return made


@pytest.mark.rule("MEM-5")
@settings(max_examples=300)
@given(entries())
def test_normalizing_twice_changes_nothing_and_drops_nothing(buffer: list[object]) -> None:
    once = normalize(buffer)

    assert normalize(once.messages) == Normalized(once.messages)


@pytest.mark.rule("MEM-5")
@settings(max_examples=300)
@given(entries())
def test_what_normalization_gives_is_accepted_by_openai_and_anthropic(buffer: list[object]) -> None:
    """Its pairing is: MEM-5's four rules keep an empty message (rule 1 blanks what it
    cannot serialize, and nothing drops a blank user turn), which Anthropic refuses on
    its own account and the check names as such."""
    stored = parse_messages(normalize(buffer).messages)

    for provider in ("openai-chat", "openai-responses", "anthropic"):
        verdict = check(stored, provider)
        pairing = [r for r in verdict.rejections if r.reason != "empty_turn"]
        assert pairing == [], verdict.summary


@pytest.mark.rule("MEM-5")
@settings(max_examples=300)
@given(entries())
def test_every_message_missing_from_the_output_is_a_drop_record_a10(buffer: list[object]) -> None:
    normalized = normalize(buffer)
    synthetic = sum(m["content"] == INTERRUPTED_TEXT for m in normalized.messages)
    whole = [d for d in normalized.drops if d.whole_message]

    assert len(buffer) - len(whole) + synthetic == len(normalized.messages)
    assert len({d.index for d in whole}) == len(whole)
    assert normalized.dropped == len(normalized.drops)
    assert all(isinstance(d, Drop) and 0 <= (d.index or 0) < len(buffer) for d in normalized.drops)


# MEM-16


@pytest.mark.rule("MEM-16")
def test_a_role_no_provider_defines_becomes_user() -> None:
    assert text_to_message(**MEM16[1]["buffer"]) == ([MEM16[2]["buffer"]], MEM16[2]["buffer"])


@pytest.mark.rule("MEM-16")
def test_a_pairing_id_on_a_user_row_is_discarded() -> None:
    assert text_to_message(**MEM16[3]["buffer"]) == ([MEM16[4]["buffer"]], MEM16[4]["buffer"])


@pytest.mark.rule("MEM-16")
@pytest.mark.parametrize("role", ["user", "assistant", "system", "tool"])
def test_the_four_roles_are_kept(role: str) -> None:
    _, message = text_to_message("hi", role)

    assert message["role"] == role


@pytest.mark.rule("MEM-16")
@pytest.mark.parametrize("role", [None, "", "model", "User", " user", 3])
def test_any_other_role_and_an_absent_one_is_user(role: object) -> None:
    assert text_to_message("hi", role)[1] == {"role": "user", "content": "hi"}


@pytest.mark.rule("MEM-16")
@pytest.mark.parametrize(("given", "kept"), [("  call_1 ", "call_1"), (7, "7")])
def test_a_tool_row_keeps_its_id_trimmed(given: object, kept: str) -> None:
    rows, message = text_to_message("14C", "tool", given)

    assert message == {"role": "tool", "content": "14C", "tool_call_id": kept}
    assert rows == [message]


@pytest.mark.rule("MEM-16")
@pytest.mark.parametrize("blank", [None, "", "   ", "0", " 0 "])
def test_a_blank_id_is_omitted_and_so_is_0_which_names_no_call(blank: object) -> None:
    assert text_to_message("14C", "tool", blank)[1] == {"role": "tool", "content": "14C"}


@pytest.mark.rule("MEM-16")
@pytest.mark.parametrize("text", ["", None, "  \n\t", [], {}])
def test_empty_content_makes_no_message(text: object) -> None:
    assert text_to_message(text) == ([], {})
    assert text_to_message(text, "tool", "c1") == ([], {})


@pytest.mark.rule("MEM-16")
def test_content_is_coerced_as_normalization_coerces_it() -> None:
    assert text_to_message({"a": 1})[1]["content"] == '{"a":1}'
    assert text_to_message(False)[1]["content"] == "false"
    assert text_to_message(object()) == ([], {})


def test_the_list_and_the_object_are_not_the_same_dict() -> None:
    rows, message = text_to_message("hello")
    message["content"] = "changed"

    assert rows == [{"role": "user", "content": "hello"}]
