"""Properties of the append rules over random buffers and random batches.

Buffers are arbitrary stored transcripts (crashed, healed, duplicated, unusable ids,
both spellings); batches are what an append accepts. The database service runs on
tiny blocks here so that every insert crosses block boundaries.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from buffers import healing, selectors
from tests.buffers import ApiBuffer, PureBuffer, StoredBuffer
from tests.integrity import assert_consistent

IDS = ["c1", "c2", "c3", "c4", "c5", "c6"]
UNUSABLE = ["0", "", "  "]


KEPT: list[dict[str, Any]] = [
    {"anthropic": {"layout": [{"type": "thinking", "thinking": "Hm.", "signature": "c2ln"}]}},
    {
        "anthropic": {
            "layout": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            ]
        }
    },
    {"gemini": {"layout": [{"text": "Hm.", "thought": True}]}},
]
"""Assistant turns of no content and no call that keep blocks for one provider."""
KEPT_TURNS = [{"role": "assistant", "content": None, "metadata": kept} for kept in KEPT]
MEDIA: list[dict[str, Any]] = [  # parts that are not text, some translated (sendability)
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
    {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
    {"inlineData": {"mimeType": "image/png", "data": "AA=="}},
    {"fileData": {"mimeType": "image/png", "fileUri": "https://x/files/1"}},
    {"type": "file", "file": {"file_id": "file-abc"}},
    {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
]
HI = {"role": "user", "content": "go on"}


def call(call_id: str | int, spelling: str) -> dict[str, Any]:
    return {spelling: call_id, "name": "search"}


@st.composite
def messages(draw: st.DrawFn, *, usable_only: bool) -> dict[str, Any]:
    ids = st.sampled_from(IDS) if usable_only else st.sampled_from(IDS + UNUSABLE)
    kinds = ["user", "system", "prose", "kept", "media", "turn", "result", "placeholder"]
    kind = draw(st.sampled_from(kinds))
    flat = draw(st.booleans())
    tool_keys: dict[str, Any]
    if kind in ("user", "system"):
        return {"role": kind, "content": draw(st.sampled_from(["hi", "go on", ""]))}
    if kind == "prose":
        return {"role": "assistant", "content": "thinking"}
    if kind == "kept":  # blocks only one provider's export writes (sendability)
        return {"role": "assistant", "content": None, "metadata": draw(st.sampled_from(KEPT))}
    if kind == "media":
        return {
            "role": draw(st.sampled_from(["user", "assistant"])),
            "content": [draw(st.sampled_from(MEDIA))],
        }
    if kind == "turn":
        calls = draw(
            st.lists(
                st.builds(call, ids, st.sampled_from(["tool_call_id", "id"])),
                min_size=1,
                max_size=3,
            )
        )
        tool_keys = {"tool_calls": calls}
        role, content = "assistant", ""
    else:
        tool_keys = {"tool_call_id": draw(ids)}
        if kind == "placeholder":
            tool_keys["healed"] = True
        outputs: list[Any] = ["ok", "Tool call was interrupted; no result."]
        role, content = ("tool", draw(st.sampled_from(outputs + [[part] for part in MEDIA])))
    if flat:
        return {"role": role, "content": content, **tool_keys}
    return {"role": role, "content": content, "metadata": tool_keys}


buffers = st.lists(messages(usable_only=False), max_size=14)
batches = st.lists(messages(usable_only=True), min_size=1, max_size=8)


def is_subsequence(short: list[Any], long: list[Any]) -> bool:
    rest = iter(long)
    return all(any(item == other for other in rest) for item in short)


@pytest.mark.rule("MEM-3")
@pytest.mark.rule("MEM-10")
@given(buffer=buffers, batch=batches)
def test_originals_are_never_lost_or_reordered(buffer: list[Any], batch: list[Any]) -> None:
    """Every stored message survives, in order; only a placeholder may be overwritten, and
    only by a real result for its own id (MEM-10)."""
    pure = PureBuffer(buffer)
    before = pure.stored()

    report = pure.append(batch)

    after = pure.stored()
    kept = [m for m in before if m["metadata"].get("healed") is not True or m["role"] != "tool"]
    assert is_subsequence(kept, after)
    assert len(after) == report.count
    for replaced in report.replaced:
        slot = after[replaced.index]
        assert slot["metadata"]["tool_call_id"].strip() == replaced.tool_call_id
        assert slot["metadata"].get("healed") is not True


@pytest.mark.rule("MEM-3")
@given(buffer=buffers, batch=batches)
def test_after_a_user_turn_no_declared_call_is_unanswered(
    buffer: list[Any], batch: list[Any]
) -> None:
    pure = PureBuffer(buffer)

    pure.append([*batch, {"role": "user", "content": "and now?"}])

    assert healing.analyze(healing.parse_messages(pure.stored())).unanswered == ()


@pytest.mark.rule("MEM-3")
@given(buffer=buffers, batch=batches)
def test_every_placeholder_sits_in_the_tool_block_right_after_its_declaring_turn(
    buffer: list[Any], batch: list[Any]
) -> None:
    pure = PureBuffer(buffer)

    report = pure.append(batch)

    after = healing.parse_messages(pure.stored())
    analysis = healing.analyze(after)
    for healed in report.healed:
        owner = analysis.declared_at[healed.tool_call_id]
        assert owner < healed.index
        assert all(m.role == "tool" for m in after[owner + 1 : healed.index + 1])


@pytest.mark.rule("MEM-3")
@given(buffer=buffers, batch=batches)
def test_healing_twice_changes_nothing(buffer: list[Any], batch: list[Any]) -> None:
    pure = PureBuffer(buffer)
    pure.append([*batch, {"role": "user", "content": "once"}])
    healed = pure.stored()

    report = pure.append([{"role": "user", "content": "twice"}])

    assert report.healed == ()
    assert pure.stored()[:-1] == healed


@pytest.mark.rule("MEM-1")
@pytest.mark.rule("MEM-2")
@pytest.mark.rule("MEM-14")
@given(buffer=buffers, batch=batches)
def test_a_batch_does_what_its_messages_do_one_append_at_a_time(
    buffer: list[Any], batch: list[Any]
) -> None:
    """A3: "earlier in the same append" counts as already in the buffer, for every rule."""
    whole, one_by_one = PureBuffer(buffer), PureBuffer(buffer)

    report = whole.append(batch)
    appended = sum(one_by_one.append([message]).appended for message in batch)

    assert whole.stored() == one_by_one.stored()
    assert report.appended == appended
    assert report.appended_any == (appended > 0)


@pytest.mark.rule("MEM-1")
@pytest.mark.rule("MEM-2")
@pytest.mark.rule("MEM-3")
@pytest.mark.rule("MEM-10")
@pytest.mark.rule("MEM-14")
@pytest.mark.django_db
@pytest.mark.parametrize("engine", [StoredBuffer, ApiBuffer], ids=["service", "api"])
@hypothesis_settings(max_examples=45, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(buffer=buffers, batches=st.lists(batches, min_size=1, max_size=3))
# Each turn of kept blocks last in a full block, then appended to: the stored verdicts an
# append keeps must be what a whole-buffer check says of it.
@example(buffer=[{"role": "user", "content": "hi"}] * 2 + [KEPT_TURNS[0]], batches=[[HI]])
@example(buffer=[{"role": "user", "content": "hi"}] * 2 + [KEPT_TURNS[1]], batches=[[HI]])
@example(buffer=[{"role": "user", "content": "hi"}] * 2 + [KEPT_TURNS[2]], batches=[[HI]])
def test_random_batches_give_the_planners_buffer_and_report_through_service_and_api(
    engine: type[StoredBuffer | ApiBuffer], buffer: list[Any], batches: list[list[Any]]
) -> None:
    with override_settings(FLOWDROP_BUFFER_BLOCK_SIZE=3):
        pure, stored = PureBuffer(buffer), engine(buffer)

        for batch in batches:
            assert stored.append(batch) == pure.append(batch)
            assert stored.stored() == pure.stored()
            assert_consistent(stored.conversation)


@pytest.mark.django_db
@hypothesis_settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(buffer=buffers, bounds=st.tuples(st.integers(0, 14), st.integers(0, 14)))
@example(  # a run of results that crosses two block boundaries, then a late result
    buffer=[
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
        *({"role": "tool", "content": "r", "tool_call_id": f"x{n}"} for n in range(4)),
        {"role": "user", "content": "?"},
        {"role": "tool", "content": "late", "tool_call_id": "c1"},
    ],
    bounds=(6, 7),
)
def test_a_window_analysed_from_the_index_finds_what_the_whole_analysis_finds_there(
    buffer: list[Any], bounds: tuple[int, int]
) -> None:
    """What the inspector shows of a page equals what analysing the whole buffer says of
    those messages; the page is analysed from its own rows and the index alone."""
    start, end = sorted(bounds)
    with override_settings(FLOWDROP_BUFFER_BLOCK_SIZE=3):
        stored = StoredBuffer(buffer)
        messages = healing.parse_messages(buffer)
        window = [
            row.as_core()
            for row in selectors.messages_page(
                stored.conversation, offset=start, limit=max(end - start, 1)
            )
        ][: end - start]

        facts = selectors.window_facts(stored.conversation, window)
        found = healing.analyze_window(window, start, facts)

    expected = [f for f in healing.analyze(messages).findings if start <= f.index < end]
    assert found == expected
    assert (
        healing.analyze_window(messages[start:end], start, healing.call_facts(messages)) == expected
    )
