"""Every narrative example of MEM-1, 2, 3, 10, 11 and 14, replayed exactly.

Each runs three times: through the pure planner on a list, through the service on the
database, and through the storage API over HTTP. All must give the buffer and the
report the spec gives.
"""

from __future__ import annotations

from typing import Any

import pytest

from buffers import healing
from tests.buffers import assistant, result
from tests.conftest import spec_examples

MEM1 = spec_examples("MEM-1")
MEM2 = spec_examples("MEM-2")
MEM3 = spec_examples("MEM-3")
MEM10 = spec_examples("MEM-10")
MEM11 = spec_examples("MEM-11")
MEM14 = spec_examples("MEM-14")


def counts(report: healing.AppendReport) -> dict[str, Any]:
    return {"count": report.count, "appended": report.appended, "appended_any": report.appended_any}


@pytest.mark.rule("MEM-1")
def test_a_result_naming_an_id_already_answered_is_dropped(make_buffer: Any) -> None:
    assert MEM1[1]["verdict"] == "dropped"
    buffer = make_buffer([assistant("c1"), result("c1", "first result")])
    before = buffer.stored()

    report = buffer.append([MEM1[1]["buffer"]])

    assert buffer.stored() == before
    assert counts(report) == {"count": 2, "appended": 0, "appended_any": False}
    assert [(d.batch_index, d.reason) for d in report.dropped] == [(0, "duplicate_result")]


@pytest.mark.rule("MEM-1")
def test_a_result_naming_an_id_not_yet_seen_is_appended_even_as_an_orphan(
    make_buffer: Any,
) -> None:
    assert MEM1[2]["verdict"] == "appended"
    buffer = make_buffer([assistant("c1"), result("c1")])

    report = buffer.append([MEM1[2]["buffer"]])

    assert buffer.stored()[-1] == {
        "role": "tool",
        "content": "second result",
        "metadata": {"tool_call_id": "c2"},
    }
    assert counts(report) == {"count": 3, "appended": 1, "appended_any": True}


@pytest.mark.rule("MEM-1")
@pytest.mark.rule("MEM-10")
def test_the_real_result_arriving_late_replaces_the_placeholder_holding_its_id(
    make_buffer: Any,
) -> None:
    assert (MEM1[3]["verdict"], MEM1[4]["verdict"]) == ("held", "replaced")
    buffer = make_buffer([assistant("c1"), MEM1[3]["buffer"]])

    report = buffer.append([MEM1[4]["buffer"]])

    assert buffer.stored() == [assistant("c1"), MEM10[2]["buffer"]]
    assert counts(report) == {"count": 2, "appended": 0, "appended_any": False}
    assert [(r.index, r.tool_call_id) for r in report.replaced] == [(1, "c1")]


@pytest.mark.rule("MEM-2")
def test_a_turn_declaring_only_known_ids_is_dropped(make_buffer: Any) -> None:
    assert MEM2[1]["verdict"] == "dropped"
    buffer = make_buffer([assistant("c1")])

    report = buffer.append([MEM2[1]["buffer"]])

    assert buffer.stored() == [assistant("c1")]
    assert counts(report) == {"count": 1, "appended": 0, "appended_any": False}
    assert [d.reason for d in report.dropped] == ["duplicate_turn"]


@pytest.mark.rule("MEM-2")
def test_a_turn_declaring_one_known_id_and_one_new_one_is_kept_whole(make_buffer: Any) -> None:
    assert MEM2[2]["verdict"] == "kept"
    buffer = make_buffer([assistant("c1")])

    report = buffer.append([MEM2[2]["buffer"]])

    kept = buffer.stored()[1]
    assert kept["metadata"]["tool_calls"] == MEM2[2]["buffer"]["tool_calls"]
    assert counts(report) == {"count": 2, "appended": 1, "appended_any": True}


@pytest.mark.rule("MEM-3")
def test_a_user_turn_heals_the_dangling_call_directly_after_its_turn(make_buffer: Any) -> None:
    assert (MEM3[1]["verdict"], MEM3[2]["verdict"]) == ("unhealed", "healed")
    buffer = make_buffer(MEM3[1]["buffer"])
    user_turn = MEM3[2]["buffer"][-1]

    report = buffer.append([user_turn])

    assert buffer.stored() == MEM3[2]["buffer"]
    assert counts(report) == {"count": 5, "appended": 1, "appended_any": True}
    assert [(h.index, h.tool_call_id) for h in report.healed] == [(1, "c1")]


@pytest.mark.rule("MEM-3")
@pytest.mark.parametrize(
    "message",
    [result("c9", "an unrelated result"), result("c1", "the late result"), assistant("c7")],
    ids=["tool-other-id", "tool-same-id", "assistant"],
)
def test_appending_a_tool_or_assistant_message_never_heals(
    make_buffer: Any, message: dict[str, Any]
) -> None:
    buffer = make_buffer(MEM3[1]["buffer"])

    report = buffer.append([message])

    assert report.healed == ()
    assert not any(m["metadata"].get("healed") for m in buffer.stored())
    assert buffer.stored() == [*MEM3[1]["buffer"], message]


@pytest.mark.rule("MEM-10")
def test_the_replacement_keeps_the_slot_its_neighbours_and_the_length(make_buffer: Any) -> None:
    buffer = make_buffer([assistant("c1"), MEM10[1]["buffer"], {"role": "user", "content": "hi"}])

    report = buffer.append([MEM1[4]["buffer"]])

    stored = buffer.stored()
    assert stored[1] == MEM10[2]["buffer"]
    assert "healed" not in stored[1]["metadata"]
    assert [m["role"] for m in stored] == ["assistant", "tool", "user"]
    assert counts(report) == {"count": 3, "appended": 0, "appended_any": False}


@pytest.mark.rule("MEM-11")
def test_a_call_declared_in_the_provider_flat_spelling_is_healed_under_the_normalized_key(
    make_buffer: Any,
) -> None:
    buffer = make_buffer([MEM11[1]["buffer"]])

    buffer.append([{"role": "user", "content": "still there?"}])

    inserted = buffer.stored()[1]
    expected = MEM11[2]["buffer"]
    assert inserted["role"] == expected["role"]
    assert inserted["metadata"] == expected["metadata"]
    assert inserted["content"] == healing.INTERRUPTED_TEXT


@pytest.mark.rule("MEM-14")
def test_a_re_fired_tool_result_reports_nothing_appended(make_buffer: Any) -> None:
    assert MEM14[2]["verdict"] == "dropped"
    buffer = make_buffer([assistant("c1"), result("c1")])

    report = buffer.append([result("c1", "again")])

    assert counts(report) == MEM14[2]["buffer"]


@pytest.mark.rule("MEM-14")
def test_a_new_message_reports_one_appended_whatever_the_count(make_buffer: Any) -> None:
    """MEM-14's first example has a full three-message window. FlowDrop Web buffers have
    no window (docs/decisions.md, MEM-14), so the count grows; what the example pins,
    ``appended: 1`` and ``appended_any: true``, holds."""
    assert MEM14[1]["verdict"] == "appended"
    buffer = make_buffer([{"role": "user", "content": "a"}, assistant("c1"), result("c1")])

    report = buffer.append([{"role": "user", "content": "new content"}])

    expected = MEM14[1]["buffer"]
    assert (report.appended, report.appended_any) == (
        expected["appended"],
        expected["appended_any"],
    )
    assert report.count == 4 == len(buffer.stored())
