"""The append rules beyond the narrative examples: every ambiguity we decided
(docs/decisions.md), through the pure planner and through the database service."""

from __future__ import annotations

from typing import Any

import pytest

from buffers import healing
from tests.buffers import assistant, placeholder, result, user


def roles_and_ids(stored: list[dict[str, Any]]) -> list[str]:
    """A compact picture of a buffer: ``A(c1,c2)``, ``T(c1)``, ``P(c1)``, ``U``, ``S``."""
    picture = []
    for m in stored:
        meta = m["metadata"]
        if m["role"] == "assistant":
            ids = [c.get("tool_call_id") or c.get("id") for c in meta.get("tool_calls", [])]
            picture.append(f"A({','.join(ids)})" if ids else "A")
        elif m["role"] == "tool":
            picture.append(
                f"{'P' if meta.get('healed') is True else 'T'}({meta.get('tool_call_id')})"
            )
        else:
            picture.append(m["role"][0].upper())
    return picture


# MEM-1


@pytest.mark.rule("MEM-1")
def test_a_duplicate_with_different_content_is_dropped_and_the_first_result_stays(
    make_buffer: Any,
) -> None:
    buffer = make_buffer([assistant("c1"), result("c1", "first")])

    buffer.append([result("c1", "second, different")])

    assert buffer.stored()[1]["content"] == "first"
    assert len(buffer.stored()) == 2


@pytest.mark.rule("MEM-1")
def test_within_one_batch_the_first_result_for_an_id_wins(make_buffer: Any) -> None:
    buffer = make_buffer([])

    report = buffer.append([result("x1", "first"), result("x1", "second")])

    assert [m["content"] for m in buffer.stored()] == ["first"]
    assert (report.appended, [d.batch_index for d in report.dropped]) == (1, [1])


@pytest.mark.rule("MEM-1")
@pytest.mark.rule("MEM-11")
def test_a_flat_result_and_a_stored_result_for_the_same_id_are_one(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1"), result("c1")])

    report = buffer.append([{"role": "tool", "content": "again", "tool_call_id": " c1 "}])

    assert report.appended == 0


# MEM-2


@pytest.mark.rule("MEM-2")
def test_a_turn_that_declares_no_calls_is_always_appended(make_buffer: Any) -> None:
    """A1: "every id it declares is known" is vacuously true of prose; prose is kept."""
    buffer = make_buffer([assistant("c1"), result("c1")])

    report = buffer.append(
        [
            {"role": "assistant", "content": "done"},
            {"role": "assistant", "content": "done"},
            {"role": "assistant", "content": "", "tool_calls": []},
        ]
    )

    assert report.appended == 3


@pytest.mark.rule("MEM-2")
@pytest.mark.rule("MEM-11")
def test_a_known_id_in_the_other_spelling_counts_as_known(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1", spelling="id")])

    report = buffer.append([assistant("c1", spelling="tool_call_id")])

    assert [d.reason for d in report.dropped] == ["duplicate_turn"]


@pytest.mark.rule("MEM-2")
def test_ids_declared_earlier_in_the_same_batch_count_as_known(make_buffer: Any) -> None:
    buffer = make_buffer([])

    report = buffer.append([assistant("c1", "c2"), assistant("c2"), assistant("c2", "c3")])

    assert roles_and_ids(buffer.stored()) == ["A(c1,c2)", "A(c2,c3)"]
    assert [(d.batch_index, d.reason) for d in report.dropped] == [(1, "duplicate_turn")]


# MEM-3


@pytest.mark.rule("MEM-3")
def test_several_dangling_calls_heal_in_declaration_order_each_after_its_own_turn(
    make_buffer: Any,
) -> None:
    buffer = make_buffer(
        [
            user("go"),
            assistant("a1", "a2"),
            user("?"),
            assistant("b1"),
            {"role": "assistant", "content": "hm"},
        ]
    )

    report = buffer.append([user("again")])

    assert roles_and_ids(buffer.stored()) == [
        "U", "A(a1,a2)", "P(a1)", "P(a2)", "U", "A(b1)", "P(b1)", "A", "U",
    ]  # fmt: skip
    assert [(h.index, h.tool_call_id, h.declared_at) for h in report.healed] == [
        (2, "a1", 1),
        (3, "a2", 1),
        (6, "b1", 5),
    ]


@pytest.mark.rule("MEM-3")
def test_a_placeholder_goes_directly_after_the_turn_before_results_already_there(
    make_buffer: Any,
) -> None:
    """A4, decided literally: "inserted directly after the turn that declared the call"."""
    buffer = make_buffer([assistant("c1", "c2"), result("c2"), user("?")])

    buffer.append([user("again")])

    assert roles_and_ids(buffer.stored()) == ["A(c1,c2)", "P(c1)", "T(c2)", "U", "U"]


@pytest.mark.rule("MEM-3")
def test_a_user_turn_in_a_batch_heals_calls_declared_earlier_in_that_batch(
    make_buffer: Any,
) -> None:
    buffer = make_buffer([user("start"), assistant("c1")])

    report = buffer.append([assistant("c2", "c3"), result("c3"), user("next")])

    assert roles_and_ids(buffer.stored()) == [
        "U", "A(c1)", "P(c1)", "A(c2,c3)", "P(c2)", "T(c3)", "U",
    ]  # fmt: skip
    assert [(h.tool_call_id, h.declared_at) for h in report.healed] == [("c1", 1), ("c2", 3)]
    assert report.appended == 3
    assert report.count == 7


@pytest.mark.rule("MEM-3")
def test_healing_twice_changes_nothing(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1")])
    buffer.append([user("one")])
    healed = buffer.stored()

    report = buffer.append([user("two")])

    assert buffer.stored() == [*healed, user("two")]
    assert report.healed == ()


@pytest.mark.rule("MEM-3")
def test_a_system_message_does_not_heal(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1")])

    report = buffer.append([{"role": "system", "content": "be brief"}])

    assert report.healed == ()
    assert roles_and_ids(buffer.stored()) == ["A(c1)", "S"]


@pytest.mark.rule("MEM-3")
def test_an_id_declared_twice_heals_once_after_its_first_declaration(make_buffer: Any) -> None:
    """A4: the first declaration owns the call."""
    buffer = make_buffer([assistant("c1"), user("?"), assistant("c1", "c2"), result("c2")])

    buffer.append([user("again")])

    assert roles_and_ids(buffer.stored()) == ["A(c1)", "P(c1)", "U", "A(c1,c2)", "T(c2)", "U"]


@pytest.mark.rule("MEM-2")
@pytest.mark.rule("MEM-3")
def test_a_kept_partial_overlap_heals_only_its_new_call(make_buffer: Any) -> None:
    """A19: the kept turn re-declares answered c1 and adds c2; only c2 is healed."""
    buffer = make_buffer([assistant("c1"), result("c1")])

    buffer.append([assistant("c1", "c2"), user("?")])

    assert roles_and_ids(buffer.stored()) == ["A(c1)", "T(c1)", "A(c1,c2)", "P(c2)", "U"]


@pytest.mark.rule("MEM-3")
@pytest.mark.rule("MEM-14")
def test_placeholders_count_in_the_buffer_but_not_as_appended(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1", "c2")])

    report = buffer.append([user("?")])

    assert (report.count, report.appended, report.appended_any) == (4, 1, True)


@pytest.mark.rule("MEM-3")
@pytest.mark.rule("MEM-11")
def test_a_result_answers_a_declaration_in_the_flat_spelling_so_nothing_heals(
    make_buffer: Any,
) -> None:
    buffer = make_buffer([assistant("c1", spelling="id"), result("c1")])

    report = buffer.append([user("?")])

    assert report.healed == ()


@pytest.mark.rule("MEM-3")
def test_a_result_anywhere_answers_a_call_even_far_from_it(make_buffer: Any) -> None:
    """MEM-3 heals calls with no result *anywhere*; a late result at the end (A7) counts."""
    buffer = make_buffer([assistant("c1"), user("?"), {"role": "assistant", "content": "x"}])
    buffer.append([result("c1", "late")])

    report = buffer.append([user("now?")])

    assert report.healed == ()


# MEM-10


@pytest.mark.rule("MEM-10")
def test_after_a_replacement_a_second_real_result_is_dropped(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1"), placeholder("c1"), user("hi")])
    buffer.append([result("c1", "Found 3 cats")])

    report = buffer.append([result("c1", "Found 4 cats")])

    assert [d.reason for d in report.dropped] == ["duplicate_result"]
    assert buffer.stored()[1]["content"] == "Found 3 cats"


@pytest.mark.rule("MEM-10")
def test_an_incoming_message_marked_healed_never_replaces_a_placeholder(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1"), placeholder("c1")])
    incoming = {
        "role": "tool",
        "content": "a guess",
        "metadata": {"tool_call_id": "c1", "healed": True},
    }

    report = buffer.append([incoming])

    assert [d.reason for d in report.dropped] == ["healed_duplicate"]
    assert buffer.stored()[1] == placeholder("c1")


@pytest.mark.rule("MEM-10")
def test_an_incoming_message_marked_healed_is_dropped_whatever_holds_its_id(
    make_buffer: Any,
) -> None:
    buffer = make_buffer([assistant("c1"), result("c1")])

    report = buffer.append([placeholder("c1")])

    assert [d.reason for d in report.dropped] == ["healed_duplicate"]


@pytest.mark.rule("MEM-10")
def test_an_incoming_message_marked_healed_with_a_new_id_is_kept_as_sent(make_buffer: Any) -> None:
    """A13: so that exported buffers import and round-trip; it is then a placeholder like any."""
    buffer = make_buffer([assistant("c1")])

    buffer.append([placeholder("c1")])
    buffer.append([result("c1", "real")])

    assert buffer.stored() == [assistant("c1"), result("c1", "real")]


@pytest.mark.rule("MEM-10")
def test_heal_then_late_result_then_user_turn_leaves_a_sendable_buffer(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1")])
    buffer.append([user("hi")])
    buffer.append([result("c1", "Found 3 cats")])

    report = buffer.append([user("thanks")])

    assert report.healed == ()
    assert roles_and_ids(buffer.stored()) == ["A(c1)", "T(c1)", "U", "U"]
    assert healing.analyze(healing.parse_messages(buffer.stored())).findings == ()


@pytest.mark.rule("MEM-10")
def test_a_result_later_in_the_same_batch_replaces_the_placeholder_that_batch_inserted(
    make_buffer: Any,
) -> None:
    buffer = make_buffer([assistant("c1")])

    report = buffer.append([user("hi"), result("c1", "real")])

    assert buffer.stored() == [assistant("c1"), result("c1", "real"), user("hi")]
    assert [(h.index, h.tool_call_id) for h in report.healed] == [(1, "c1")]
    assert [(r.index, r.tool_call_id) for r in report.replaced] == [(1, "c1")]
    assert report.appended == 1


@pytest.mark.rule("MEM-10")
@pytest.mark.parametrize("stored", [True, False], ids=["stored placeholder", "same batch"])
def test_a_replacing_result_that_says_healed_false_leaves_no_healed_key_behind(
    make_buffer: Any, stored: bool
) -> None:
    """MEM-10: "the healed marking is removed with it". The slot holds no ``healed`` key at
    all, not ``healed: false``, whatever the real result said of it (a client that spells
    the flag out on every result)."""
    buffer = make_buffer([assistant("c1"), placeholder("c1")] if stored else [assistant("c1")])
    spelled_out = {"role": "tool", "content": "Found 3 cats", "tool_call_id": "c1", "healed": False}

    report = buffer.append([spelled_out] if stored else [user("hi"), spelled_out])

    assert [(r.index, r.tool_call_id) for r in report.replaced] == [(1, "c1")]
    assert buffer.stored()[1] == result("c1", "Found 3 cats")


# MEM-14


@pytest.mark.rule("MEM-14")
def test_each_incoming_message_reports_what_became_of_it(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1"), placeholder("c1"), assistant("c2"), result("c2")])

    report = buffer.append(
        [result("c2", "again"), result("c1", "real"), assistant("c2"), user("ok"), result("c9")]
    )

    assert [(o.batch_index, o.action, o.index, o.reason) for o in report.outcomes] == [
        (0, "dropped", None, "duplicate_result"),
        (1, "replaced", 1, None),
        (2, "dropped", None, "duplicate_turn"),
        (3, "appended", 4, None),
        (4, "appended", 5, None),
    ]
    assert (report.count, report.appended, report.appended_any) == (6, 2, True)


@pytest.mark.rule("MEM-1")
def test_a_batch_with_an_unusable_id_is_refused_whole(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1")])

    with pytest.raises(healing.InvalidInput) as refused:
        buffer.append([user("fine"), {"role": "tool", "content": "x", "tool_call_id": "0"}])

    assert [p.path for p in refused.value.problems] == ["messages[1].tool_call_id"]
    assert buffer.stored() == [assistant("c1")]
