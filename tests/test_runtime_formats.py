"""Agent-runtime logs in: every fixture is read as its own format and no other; a crashed run
of each format imports by detection, shows its unanswered call in words, heals with a user
turn, and exports to its runtime's provider in a form that provider accepts; logs are read as
logs (junk and a cut-off tail skipped and named); Claude Code sessions and Codex rollouts go
back to their runtime healed. Through the real entry points: the upload page, the command,
the API, the export links."""

from __future__ import annotations

import json
import re
import tempfile
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buffers import healing, transcripts
from buffers.healing import formats, sendability
from buffers.models import Conversation

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RUNTIMES = ("claude-code", "codex", "gemini-cli", "otel-genai", "swe-agent", "openhands")
SUFFIXES = (".json", ".jsonl", ".traj")

NOT_READ: set[str] = set()
"""Fixtures kept to show a refusal."""

CRASHED = {
    "claude-code": "crashed.jsonl",
    "codex": "crashed.jsonl",
    "gemini-cli": "crashed.json",
    "otel-genai": "crashed.json",
    "swe-agent": "unanswered.traj",
    "openhands": "crashed.json",
}
"""One fixture per format whose run died with a call declared and never answered."""


def fixtures() -> list[Path]:
    return sorted(
        path
        for folder in RUNTIMES
        for path in (FIXTURES / folder).rglob("*")
        if path.name.endswith(SUFFIXES)
    )


def runtime_of(path: Path) -> str:
    return path.relative_to(FIXTURES).parts[0]


def fixture_id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


READ_FIXTURES = [p for p in fixtures() if fixture_id(p) not in NOT_READ]


def source_of(path: Path, text: str | None = None) -> formats.Source:
    return transcripts.text_source(
        path.read_text() if text is None else text, jsonl=path.suffix == ".jsonl"
    )


# Detection never guesses.


@pytest.mark.parametrize("path", READ_FIXTURES, ids=fixture_id)
def test_every_fixture_fits_its_own_format_and_no_other(path: Path) -> None:
    source = source_of(path)
    fitting = [f.name for f in formats.READABLE.values() if f.fits(source)]

    assert fitting == [runtime_of(path)]


@pytest.mark.parametrize("path", READ_FIXTURES, ids=fixture_id)
def test_every_fixture_reads_as_its_format_by_detection(path: Path) -> None:
    reading = transcripts.read_transcript(path.read_bytes(), name=path.name)

    assert reading.read_as == [runtime_of(path)]
    assert reading.conversations
    assert reading.summary().startswith(f"read as {formats.named(runtime_of(path))}")


def reserialized(path: Path, sort_keys: bool, ascii_only: bool, indent: int | None) -> str:
    """The fixture written again as JSON with other spacing, key order and escapes."""

    def dump(value: object, one_line: bool) -> str:
        return json.dumps(
            value,
            sort_keys=sort_keys,
            ensure_ascii=ascii_only,
            indent=None if one_line else indent,
            separators=(",", ":") if indent is None else None,
        )

    source = source_of(path)
    if source.is_lines:
        return "\n".join(dump(entry.value, one_line=True) for entry in source.lines or ())
    return dump(source.document, one_line=False)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    path=st.sampled_from(READ_FIXTURES),
    sort_keys=st.booleans(),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 1, 4]),
)
def test_detection_of_any_fixture_is_stable_under_reserialization(
    path: Path, sort_keys: bool, ascii_only: bool, indent: int | None
) -> None:
    text = reserialized(path, sort_keys, ascii_only, indent)
    found = formats.detect_source(source_of(path, text))

    assert found is not None
    assert found.name == runtime_of(path)


def test_a_document_that_fits_no_format_is_refused_with_what_it_looks_like_and_what_was_tried() -> (
    None
):
    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript(
            b'{"history": 1, "trajectory_steps": [], "infos": {}}', name="odd.json"
        )

    [problem] = refused.value.problems
    assert problem.path == "odd.json: file"
    assert "found an object with keys history, infos, trajectory_steps" in problem.message
    assert "tried" in problem.message
    for runtime in RUNTIMES:
        assert formats.label(runtime) in problem.message


def test_a_forced_format_that_does_not_fit_says_what_was_forced_and_what_it_found() -> None:
    traj = (FIXTURES / "swe-agent" / "clean.traj").read_bytes()

    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript(traj, name="run.traj", format="claude-code")

    [problem] = refused.value.problems
    assert "was to be read as a Claude Code session (format claude-code)" in problem.message
    assert "found an object with keys" in problem.message
    assert "history" in problem.message


# Logs are read as logs.


@pytest.mark.django_db
@pytest.mark.parametrize("runtime", ["claude-code", "codex"])
def test_a_log_with_junk_and_a_cut_off_tail_imports_what_it_holds_and_names_what_it_skipped(
    runtime: str, tmp_path: Path
) -> None:
    clean = (FIXTURES / runtime / "clean.jsonl").read_text().rstrip("\n").split("\n")
    middle = len(clean) // 2
    lines = [*clean[:middle], "this is not JSON", *clean[middle:], clean[-1][: len(clean[-1]) // 2]]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = StringIO()

    call_command("import_transcripts", str(path), stdout=out)

    report = out.getvalue()
    assert f"read as {formats.named(runtime)} (" in report
    assert f"skipped {path}: line {middle + 1}, column 1: is not JSON" in report
    assert f"skipped {path}: line {len(lines)}" in report
    assert "cut off" in report
    assert Conversation.objects.filter(source_format=runtime).exists()


def test_a_file_of_junk_only_is_refused() -> None:
    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript(b"not json\nnor this\n", name="x.jsonl")

    assert "is not JSON" in str(refused.value)


def test_identical_problems_on_many_lines_are_said_once() -> None:
    lines = "\n".join('{"messages": [{"role": "robot", "content": "beep"}]}' for _ in range(50))

    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript(lines.encode(), name="bots.jsonl")

    [problem] = refused.value.problems
    assert problem.path == "bots.jsonl: lines 1-50"
    assert problem.message.startswith("the same problem on 50 lines; first: bots.jsonl: line 1: ")
    assert "not 'robot'" in problem.message


def test_the_same_problem_on_lines_far_apart_is_said_at_each_line() -> None:
    good = '{"messages": [{"role": "user", "content": "hi"}]}'
    bad = '{"messages": [{"role": "robot", "content": "beep"}]}'
    lines = [good] * 1200
    for number in (3, 600, 1150):
        lines[number - 1] = bad

    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript("\n".join(lines).encode(), name="bots.jsonl")

    assert [p.path.split(":")[1].strip() for p in refused.value.problems] == [
        "line 3",
        "line 600",
        "line 1150",
    ]


def test_a_run_of_the_same_problem_ends_at_a_line_without_it() -> None:
    good = '{"messages": [{"role": "user", "content": "hi"}]}'
    bad = '{"messages": [{"role": "robot", "content": "beep"}]}'
    lines = [good] * 12
    for number in (3, 4, 5, 7, 9, 10, 11):
        lines[number - 1] = bad

    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript("\n".join(lines).encode(), name="bots.jsonl")

    assert [p.path for p in refused.value.problems] == [
        "bots.jsonl: lines 3-5",
        "bots.jsonl: line 7: conversation.messages[0].role",
        "bots.jsonl: lines 9-11",
    ]
    assert refused.value.problems[2].message.startswith("the same problem on 3 lines; first: ")


def test_the_same_problem_twice_on_one_line_is_counted_in_its_run() -> None:
    bad = '{"messages": [{"role": "robot", "content": "a"}, {"role": "robot", "content": "b"}]}'

    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript("\n".join([bad] * 3).encode(), name="bots.jsonl")

    [problem] = refused.value.problems
    assert problem.path == "bots.jsonl: lines 1-3"
    assert problem.message.startswith("the same problem 6 times on 3 lines; first: ")


# A crashed run of each format, end to end through the inspector.


def _written(lines: list[str]) -> Path:
    path = Path(tempfile.mkdtemp()) / "rollout.jsonl"
    path.write_text("\n".join(lines))
    return path


def upload(client: Client, path: Path) -> dict[str, Any]:
    response = client.post(
        "/import",
        {"transcripts": [SimpleUploadedFile(path.name, path.read_bytes())], "format": "auto"},
    )
    assert response.status_code == 201, response.text
    return {"page": response.text}


@pytest.mark.django_db
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_crashed_run_imports_by_detection_shows_heals_and_exports_as_its_provider_accepts(
    runtime: str, client: Client
) -> None:
    path = FIXTURES / runtime / CRASHED[runtime]
    report = upload(client, path)["page"]
    conversation = Conversation.objects.get()
    assert conversation.source_format == runtime
    assert f"read as {formats.named(runtime)}" in report
    assert conversation.unanswered_count >= 1

    page = client.get(f"/c/{conversation.pk}/").text
    assert re.search(r"unanswered call \S+", page)
    assert f"read from {formats.label(runtime)}" in page

    response = client.post(
        f"/c/{conversation.pk}/append",
        {"kind": "user", "at": "0", "user-content": "Are you still there?"},
    )
    assert response.status_code == 302
    conversation.refresh_from_db()
    assert conversation.unanswered_count == 0
    assert conversation.healed_count >= 1

    provider = formats.READABLE[runtime].provider
    exported = client.get(f"/c/{conversation.pk}/export/{provider}").json()
    [sent] = formats.read(exported, provider)
    verdict = sendability.check(healing.parse_messages(sent.messages), provider)
    assert verdict.accepted, verdict.summary


@pytest.mark.django_db
def test_the_list_names_each_conversations_format_in_words(client: Client) -> None:
    for runtime in RUNTIMES:
        upload(client, FIXTURES / runtime / CRASHED[runtime])

    page = client.get("/").text

    for runtime in RUNTIMES:
        assert formats.label(runtime) in page


@pytest.mark.django_db
def test_the_api_import_reads_a_log_from_its_text_and_says_what_it_was_read_as(
    client: Client,
) -> None:
    path = FIXTURES / "codex" / "crashed.jsonl"

    response = client.post(
        "/api/imports",
        {"text": path.read_text(), "name": "rollout.jsonl"},
        content_type="application/json",
    )

    assert response.status_code == 201, response.text
    body = response.json()
    assert body["read_as"].startswith("read as a Codex CLI rollout (")
    assert [c["source_format"] for c in body["conversations"]] == ["codex"]
    assert body["conversations"][0]["unanswered"] >= 1
    assert any("cut off" in skipped["why"] for skipped in body["skipped"])


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["rollout.jsonl", "chat.json"])
def test_the_api_import_takes_a_text_that_starts_with_a_byte_order_mark_as_files_do(
    client: Client, name: str
) -> None:
    """A file's text pasted whole keeps its BOM; the upload page and the command drop it,
    and so does the API now (it answered with Python's own "Unexpected UTF-8 BOM")."""
    path = FIXTURES / "codex" / "crashed.jsonl"
    text = path.read_text() if name.endswith(".jsonl") else '{"messages": []}'

    response = client.post(
        "/api/imports",
        {"text": "\ufeff" + text, "name": name},
        content_type="application/json",
    )

    assert response.status_code == 201, response.text


# What the review found, held down.


def test_a_provider_body_that_breaks_its_format_is_told_where_not_refused_as_unknown() -> None:
    body = b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}, {"content": "y"}]}'

    with pytest.raises(healing.InvalidInput) as refused:
        transcripts.read_transcript(body, name="chat.json")

    assert [str(p) for p in refused.value.problems] == ["chat.json: messages[1].role: is missing"]


def test_an_empty_gemini_cli_session_fits_that_format_alone() -> None:
    session = {"sessionId": "s", "projectHash": "p", "startTime": "t", "messages": []}
    source = formats.Source(document=session)

    assert [f.name for f in formats.READABLE.values() if f.fits(source)] == ["gemini-cli"]


@pytest.mark.django_db
def test_a_refusal_quoting_a_key_no_page_can_encode_is_shown_not_a_500(client: Client) -> None:
    response = client.post(
        "/import",
        {"transcripts": [SimpleUploadedFile("x.json", b'{"\\ud800": 1}')], "format": "auto"},
    )

    assert response.status_code == 422
    assert "\\ud800" in response.text


@pytest.mark.django_db
def test_a_runtime_file_name_taken_from_the_file_is_safe_in_a_header(client: Client) -> None:
    lines = (FIXTURES / "codex" / "clean.jsonl").read_text().split("\n")
    meta = json.loads(lines[0])
    meta["payload"]["timestamp"] = '2026-02-23T14:05:07"\r\nX-Evil: 1'
    meta["payload"]["id"] = "é/../../id"
    lines[0] = json.dumps(meta)
    upload(client, _written(lines))
    conversation = Conversation.objects.get()

    response = client.get(f"/c/{conversation.pk}/export/codex")

    assert response.status_code == 200
    disposition = response["Content-Disposition"]
    assert re.fullmatch(r'attachment; filename="[A-Za-z0-9._-]+"', disposition), disposition
