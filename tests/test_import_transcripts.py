"""``manage.py import_transcripts FILE...``: transcripts stored verbatim, file by file.

Each file is read whole and written in one transaction: a file with any error writes
nothing, and every error names the file, the place in it (``line N`` of a JSONL file,
``conversations[i]`` of a JSON list, ``conversation`` of a single JSON object), the
message index and the field.
"""

from __future__ import annotations

import contextlib
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from buffers import selectors, transcripts
from buffers.healing.formats import READABLE
from buffers.models import Conversation, Message

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parent.parent / "buffers" / "demo"
DEMO_FILES = sorted(DEMO.glob("*.json")) + sorted(DEMO.glob("*.jsonl"))
FAILED = "had errors and were not imported"


# Running the command.


def import_files(*files: Path, **options: Any) -> tuple[str, str]:
    """Run the command on ``files``; it must succeed. Returns (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    call_command("import_transcripts", *map(str, files), stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def import_failing(*files: Path, **options: Any) -> str:
    """Run the command on ``files``; it must fail with CommandError. Returns stderr."""
    err = StringIO()
    with pytest.raises(CommandError, match=FAILED):
        call_command(
            "import_transcripts", *map(str, files), stdout=StringIO(), stderr=err, **options
        )
    return err.getvalue()


def stored_counts() -> tuple[int, int]:
    return Conversation.objects.count(), Message.objects.count()


def buffer(conversation: Conversation) -> list[dict[str, Any]]:
    return [message.as_stored() for message in selectors.buffer_messages(conversation)]


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def write_jsonl(path: Path, *conversations: Any) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in conversations), encoding="utf-8")
    return path


@pytest.fixture
def already_stored() -> None:
    """Something in the database already, so that "nothing written" is not "nothing there"."""
    import_files(DEMO / "weather-crash.json")


# Transcripts that import.

CRASHED_FLAT = {
    "key": "weather-1",
    "title": "Weather agent crashed",
    "source": "openai export",
    "messages": [
        {"role": "system", "content": "Use tools for live data."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_paris", "type": "function", "function": {"name": "get_weather"}},
                {"id": "call_rome", "type": "function", "function": {"name": "get_weather"}},
            ],
            "refusal": None,
        },
        {"role": "tool", "tool_call_id": "call_paris", "content": "14C", "name": "get_weather"},
        {"role": "user", "content": "hello? are you still there?"},
    ],
}

CRASHED_STORED = [
    {"role": "system", "content": "Use tools for live data.", "metadata": {}},
    {"role": "user", "content": "Weather in Paris and Rome?", "metadata": {}},
    {
        "role": "assistant",
        "content": None,
        "metadata": {
            "tool_calls": [
                {"id": "call_paris", "type": "function", "function": {"name": "get_weather"}},
                {"id": "call_rome", "type": "function", "function": {"name": "get_weather"}},
            ],
            "refusal": None,
        },
    },
    {
        "role": "tool",
        "content": "14C",
        "metadata": {"tool_call_id": "call_paris", "name": "get_weather"},
    },
    {"role": "user", "content": "hello? are you still there?", "metadata": {}},
]

STORED_SHAPE = [
    {"role": "user", "content": "Find papers.", "metadata": {"client": "web"}},
    {
        "role": "assistant",
        "content": "",
        "metadata": {"tool_calls": [{"tool_call_id": "c1", "name": "search"}]},
    },
    {"role": "tool", "content": "3 papers", "metadata": {"tool_call_id": "c1"}},
    {"role": "assistant", "content": "Found 3.", "metadata": {}},
]


def test_a_json_file_with_one_conversation_is_stored_verbatim_in_the_stored_shape(
    tmp_path: Path,
) -> None:
    """Flat-shape tool keys and unknown top-level keys end up under metadata, unchanged."""
    import_files(write_json(tmp_path / "weather.json", CRASHED_FLAT))

    conversation = Conversation.objects.get()
    assert (conversation.key, conversation.title, conversation.source) == (
        "weather-1",
        "Weather agent crashed",
        "openai export",
    )
    assert (conversation.scope, conversation.scope_id) == ("global", "")
    assert buffer(conversation) == CRASHED_STORED
    assert conversation.message_count == 5


def test_a_crashed_transcript_is_stored_unhealed_and_its_unanswered_call_counted(
    tmp_path: Path,
) -> None:
    """call_rome was declared and never answered, and a user turn followed: the import
    inserts no placeholder (that is what an append does, not an import)."""
    import_files(write_json(tmp_path / "weather.json", CRASHED_FLAT))

    conversation = Conversation.objects.get()
    stored = buffer(conversation)
    assert len(stored) == len(CRASHED_FLAT["messages"])
    assert [m["role"] for m in stored] == ["system", "user", "assistant", "tool", "user"]
    assert not any(m["metadata"].get("healed") for m in stored)
    assert conversation.unanswered_count == 1
    assert conversation.healed_count == 0
    assert Conversation.objects.with_unanswered_calls().get() == conversation


def test_a_json_file_with_a_list_imports_every_conversation_in_it(
    tmp_path: Path, django_user_model: Any
) -> None:
    reader = django_user_model.objects.create_user("reader")
    path = write_json(
        tmp_path / "two.json",
        [
            CRASHED_FLAT,
            {
                "title": "Papers",
                "scope": "user",
                "scope_id": str(reader.pk),  # a user buffer is filed under its owner's id
                "messages": STORED_SHAPE,
            },
        ],
    )

    stdout, _ = import_files(path, owner="reader")

    assert stdout == f"{path}: read as the stored shape; imported 2 conversations, 9 messages\n"
    weather = Conversation.objects.get(key="weather-1")
    papers = Conversation.objects.get(title="Papers")
    assert buffer(weather) == CRASHED_STORED
    assert buffer(papers) == STORED_SHAPE
    assert (papers.scope, papers.scope_id, papers.owner) == ("user", str(reader.pk), reader)
    assert (papers.unanswered_count, papers.healed_count) == (0, 0)


def test_a_jsonl_file_imports_one_conversation_per_line_and_skips_blank_lines(
    tmp_path: Path,
) -> None:
    path = tmp_path / "export.jsonl"
    lines = [
        json.dumps(CRASHED_FLAT),
        "",
        json.dumps({"title": "Papers", "messages": STORED_SHAPE}),
    ]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")

    stdout, _ = import_files(path)

    assert stdout == f"{path}: read as the stored shape; imported 2 conversations, 9 messages\n"
    assert buffer(Conversation.objects.get(key="weather-1")) == CRASHED_STORED
    assert buffer(Conversation.objects.get(title="Papers")) == STORED_SHAPE


def test_a_jsonl_line_may_hold_unicode_line_separators_inside_its_strings(
    tmp_path: Path,
) -> None:
    """JSON lets U+2028, U+2029 and U+0085 stand unescaped in a string; they do not end a line."""
    text = "one\u2028two\u2029three\x85four"
    path = tmp_path / "separators.jsonl"
    path.write_text(
        json.dumps({"messages": [{"role": "user", "content": text}]}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )

    import_files(path)

    assert buffer(Conversation.objects.get()) == [{"role": "user", "content": text, "metadata": {}}]


@pytest.mark.parametrize("bom", ["", "\ufeff"], ids=["plain", "with a BOM"])
@pytest.mark.parametrize("name", ["numbers.json", "numbers.jsonl"])
def test_a_number_beyond_64_bits_is_stored_exactly(tmp_path: Path, name: str, bom: str) -> None:
    """The file is asked once, as bytes, whether it may hold such a number; then read as
    the standard library reads it, not as orjson would (a float)."""
    exact = 123456789012345678901234
    text = json.dumps({"messages": [{"role": "user", "content": "hi", "metadata": {"n": exact}}]})
    path = tmp_path / name
    path.write_text(bom + text + "\n", encoding="utf-8")

    import_files(path)

    [stored] = buffer(Conversation.objects.get())
    assert stored["metadata"]["n"] == exact
    assert isinstance(stored["metadata"]["n"], int)


def test_structured_content_is_kept_as_sent_not_flattened(tmp_path: Path) -> None:
    parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}},
    ]
    blocks = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "vision", "input": {"detail": "high"}},
    ]
    messages = [
        {"role": "user", "content": parts, "metadata": {}},
        {"role": "assistant", "content": blocks, "metadata": {}},
        {"role": "assistant", "content": {"type": "text", "text": "A cat."}, "metadata": {}},
    ]
    import_files(write_json(tmp_path / "parts.json", {"messages": messages}))

    assert buffer(Conversation.objects.get()) == messages


# Files with errors: named precisely, and nothing from them written.

BAD_FILES = [
    pytest.param(
        "broken.json",
        '{\n  "messages": [\n    {"role": "user", "content": "hi"},\n    {"role": }\n  ]\n}\n',
        ["line 4, column 14: is not JSON: Expecting value"],
        id="invalid JSON names its line and column",
    ),
    pytest.param(
        "broken.jsonl",
        '{"messages": []}\n{"messages": [\n',
        [
            "line 2, column 15: is not JSON: Expecting value (the line is cut off: its writer "
            "stopped mid-line?)"
        ],
        id="invalid JSON on a JSONL line names that line and column",
    ),
    pytest.param(
        "number.json",
        "42\n",
        [
            "file: is not a transcript in a format this reads: found a number; tried "
            + ", ".join(f.label for f in READABLE.values())
        ],
        id="a top-level value that is neither object nor list",
    ),
    pytest.param(
        "no-messages.json",
        '{"title": "no messages"}',
        ["conversation.messages: is missing"],
        id="a missing messages list",
    ),
    pytest.param(
        "not-a-list.json",
        '[{"messages": []}, {"messages": {"role": "user", "content": "hi"}}]',
        ["conversations[1].messages: must be a list of messages, not an object"],
        id="messages that is not a list",
    ),
    pytest.param(
        "not-an-object.jsonl",
        '{"messages": [{"role": "user", "content": "hi"}, "hello"]}\n',
        ["line 1: conversation.messages[1]: must be an object, not a string"],
        id="a message that is not an object",
    ),
    pytest.param(
        "robot.json",
        '{"messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}]}',
        [
            "conversation.messages[1].role: must be one of user, assistant, tool, system, "
            "not 'robot'"
        ],
        id="a role outside user, assistant, tool and system",
    ),
    pytest.param(
        "calls.json",
        '[{"messages": [{"role": "assistant", "tool_calls": {"id": "c1"}}]}]',
        ["conversations[0].messages[0].tool_calls: must be a list of calls, not an object"],
        id="tool_calls that is not a list",
    ),
    pytest.param(
        "call.json",
        '{"messages": [{"role": "assistant", "metadata": {"tool_calls": [{"id": "c1"}, "c2"]}}]}',
        ["conversation.messages[0].metadata.tool_calls[1]: must be an object, not a string"],
        id="a declared call that is not an object",
    ),
    pytest.param(
        "call-id.json",
        '{"messages": [{"role": "assistant", "tool_calls": [{"id": 1.5}]}]}',
        [  # no stored-shape field: read as OpenAI Chat, which also wants the function
            "messages[0].tool_calls[0].id: must be a string (or an integer), not a number",
            "messages[0].tool_calls[0].function: is missing",
        ],
        id="a declared call id that is not a string or an integer",
    ),
    pytest.param(
        "result-id.jsonl",
        '{"messages": [{"role": "user"}, {"role": "tool", "tool_call_id": true}]}\n',
        ["line 1: messages[1].tool_call_id: must be a string (or an integer), not a boolean"],
        id="a result id that is not a string or an integer",
    ),
    pytest.param(
        "third-line.jsonl",
        '{"key": "a", "messages": [{"role": "user", "content": "one"}]}\n'
        '{"key": "b", "messages": [{"role": "user", "content": "two"}]}\n'
        '{"key": "c", "messages": [{"role": "user", "content": "three"}, {"role": "bot"}]}\n',
        [
            "line 3: conversation.messages[1].role: must be one of user, assistant, tool, system, "
            "not 'bot'"
        ],
        id="an error on line 3 when lines 1 and 2 are fine",
    ),
    pytest.param("empty.jsonl", "", ["file: holds no lines"], id="an empty JSONL file"),
    pytest.param(
        "blank.jsonl", "\n  \n\n", ["file: holds no lines"], id="a JSONL file of blank lines"
    ),
    pytest.param(
        "scope.json",
        '{"scope": "team", "scope_id": "t1", "messages": []}',
        ["conversation.scope: must be one of global, user, session, not 'team'"],
        id="an unknown scope",
    ),
    pytest.param(
        "scope-id.jsonl",
        '{"scope": "session", "messages": []}\n',
        ['line 1: conversation.scope_id: is required in the "session" scope'],
        id="a non-global scope without a scope_id",
    ),
    pytest.param(
        "surrogate.json",
        '{"title": "t\\udfff", "messages": [{"role": "user", "content": "a\\ud800"}]}',
        [
            "conversation.title: holds the character U+DFFF, which cannot be stored",
            "conversation.messages[0].content: holds the character U+D800, which cannot be stored",
        ],
        id="lone surrogates, which UTF-8 and PostgreSQL cannot store",
    ),
    pytest.param(
        "nul.jsonl",
        '{"source": "a\\u0000", "messages": []}\n',
        ["line 1: conversation.source: holds the character U+0000, which cannot be stored"],
        id="a NUL character, which PostgreSQL cannot store",
    ),
    pytest.param(
        "huge-number.json",
        '{"messages": [{"role": "user", "metadata": {"n": ' + "9" * 5000 + "}}]}",
        [
            "file: cannot be read: Exceeds the limit (4300 digits) for integer string "
            "conversion: value has 5000 digits; use sys.set_int_max_str_digits() to increase "
            "the limit"
        ],
        id="an integer too long to read",
    ),
    pytest.param(
        "deep.jsonl",
        '{"messages": [{"role": "user", "content": ' + "[" * 100 + "]" * 100 + "}]}\n",
        [
            "line 1: conversation.messages[0].content: nests arrays or objects more than 64 "
            "levels deep"
        ],
        id="nesting too deep",
    ),
]


@pytest.mark.usefixtures("already_stored")
@pytest.mark.parametrize(("name", "text", "problems"), BAD_FILES)
def test_a_file_with_an_error_writes_nothing_and_the_error_names_file_place_and_field(
    tmp_path: Path, name: str, text: str, problems: list[str]
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    before = stored_counts()

    stderr = import_failing(path)

    assert stderr.splitlines() == [
        *(f"{path}: {problem}" for problem in problems),
        f"{path}: nothing was imported from this file",
    ]
    assert stored_counts() == before


@pytest.mark.usefixtures("already_stored")
def test_a_file_that_is_not_utf8_writes_nothing_and_says_where_decoding_failed(
    tmp_path: Path,
) -> None:
    raw = '{"messages": [{"role": "user", "content": "café"}]}'.encode("latin-1")
    path = tmp_path / "latin1.json"
    path.write_bytes(raw)
    before = stored_counts()

    stderr = import_failing(path)

    assert stderr.splitlines() == [
        f"{path}: is not UTF-8 text (byte {raw.index(b'\xe9')})",
        f"{path}: nothing was imported from this file",
    ]
    assert stored_counts() == before


@pytest.mark.usefixtures("already_stored")
def test_a_file_that_does_not_exist_is_named_and_fails_the_command(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    before = stored_counts()

    stderr = import_failing(missing)

    assert stderr.splitlines() == [
        f"{missing}: No such file or directory",
        f"{missing}: nothing was imported from this file",
    ]
    assert stored_counts() == before


def test_every_problem_in_a_file_is_reported_not_only_the_first(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text(
        '{"messages": [{"role": "robot"}, {"role": "user"},'
        ' {"role": "tool", "tool_call_id": []}]}\n'
        '{"messages": [{"role": "user", "content": "fine"}]}\n'
        '{"scope": "team", "messages": ["hi"]}\n',
        encoding="utf-8",
    )

    stderr = import_failing(path)

    assert stderr.splitlines() == [
        f"{path}: line 1: messages[0].role: must be one of system, developer, user, assistant, "
        "tool, not 'robot'",
        f"{path}: line 1: messages[2].tool_call_id: must be a string (or an integer), not a list",
        f"{path}: line 3: conversation.scope: must be one of global, user, session, not 'team'",
        f"{path}: line 3: conversation.messages[0]: must be an object, not a string",
        f"{path}: nothing was imported from this file",
    ]
    assert stored_counts() == (0, 0)


def test_a_good_file_is_imported_when_another_file_is_bad_and_the_command_still_fails(
    tmp_path: Path,
) -> None:
    good = write_json(tmp_path / "good.json", {"title": "Good", "messages": STORED_SHAPE})
    bad = write_jsonl(tmp_path / "bad.jsonl", {"title": "Bad", "messages": [{"role": "bot"}]})
    out, err = StringIO(), StringIO()

    with pytest.raises(CommandError, match="1 of 2 files had errors and were not imported"):
        call_command("import_transcripts", str(good), str(bad), stdout=out, stderr=err)

    assert out.getvalue() == (
        f"{good}: read as the stored shape; imported 1 conversation, 4 messages\n"
    )
    assert f"{bad}: nothing was imported from this file" in err.getvalue().splitlines()
    assert str(good) not in err.getvalue()
    assert [c.title for c in Conversation.objects.all()] == ["Good"]
    assert Message.objects.count() == len(STORED_SHAPE)


# Importing again.


def test_importing_the_demo_twice_with_skip_existing_stores_each_conversation_once() -> None:
    import_files(*DEMO_FILES, skip_existing=True)
    first = sorted(Conversation.objects.values_list("key", "message_count"))

    stdout, _ = import_files(*DEMO_FILES, skip_existing=True)

    assert sorted(Conversation.objects.values_list("key", "message_count")) == first
    assert {key for key, _ in first} == {
        "demo-research-agent",
        "demo-late-result",
        "demo-support-bot",
        "demo-healthy",
        "demo-weather-crash",
    }
    assert Message.objects.count() == sum(count for _, count in first)
    assert all("imported 0 conversations, 0 messages" in line for line in stdout.splitlines())
    assert "(2 already stored, skipped)" in stdout
    assert "(1 already stored, skipped)" in stdout


def test_without_skip_existing_a_second_import_of_a_keyed_file_fails_and_writes_nothing(
    tmp_path: Path,
) -> None:
    path = write_json(
        tmp_path / "keyed.json",
        [{"key": "fresh", "messages": STORED_SHAPE}, CRASHED_FLAT],
    )
    weather = write_json(tmp_path / "weather.json", CRASHED_FLAT)
    import_files(weather)
    before = stored_counts()

    stderr = import_failing(path)

    assert stderr.splitlines() == [
        f"{path}: conversations[1].key: a conversation with key 'weather-1' in scope 'global' "
        "is already stored",
        f"{path}: nothing was imported from this file",
    ]
    assert stored_counts() == before
    assert not Conversation.objects.filter(key="fresh").exists()


def test_a_key_conflict_names_the_file_even_when_its_relative_path_is_short(
    tmp_path: Path,
) -> None:
    """``con`` is the start of ``conversations[0]``: the file must still be named."""
    write_json(tmp_path / "con", [CRASHED_FLAT])
    with contextlib.chdir(tmp_path):
        import_files(Path("con"))
        stderr = import_failing(Path("con"))

    assert stderr.splitlines() == [
        "con: conversations[0].key: a conversation with key 'weather-1' in scope 'global' "
        "is already stored",
        "con: nothing was imported from this file",
    ]


# What the command prints.


def test_the_summary_says_how_many_conversations_and_messages_each_file_imported(
    tmp_path: Path,
) -> None:
    one = write_json(tmp_path / "one.json", CRASHED_FLAT)
    three = write_jsonl(
        tmp_path / "three.jsonl",
        {"messages": STORED_SHAPE},
        {"messages": []},
        {"messages": [{"role": "user", "content": "hi"}]},
    )

    stdout, stderr = import_files(one, three)

    assert stdout.splitlines() == [
        f"{one}: read as the stored shape; imported 1 conversation, 5 messages",
        f"{three}: read as the stored shape; imported 3 conversations, 5 messages",
    ]
    assert stderr == "", "small files show no progress bar"


def test_a_file_of_ten_thousand_messages_shows_a_progress_bar_and_imports_them_all(
    tmp_path: Path,
) -> None:
    """The bar counts messages across the file's conversations and redraws one line."""
    half = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"}
        for i in range(5_000)
    ]
    path = write_jsonl(tmp_path / "large.jsonl", {"messages": half}, {"messages": half})

    stdout, stderr = import_files(path)

    assert stdout == (
        f"{path}: read as the stored shape; imported 2 conversations, 10,000 messages\n"
    )
    assert "large.jsonl" in stderr
    assert "10000/10000" in stderr
    assert "\n" not in stderr.rstrip("\n"), "the bar redraws its line instead of adding lines"
    assert Message.objects.count() == 10_000
    for conversation in Conversation.objects.all():
        assert conversation.message_count == 5_000
        assert buffer(conversation)[-1] == {
            "role": "assistant",
            "content": "message 4999",
            "metadata": {},
        }


# How large a file the command reads.


def test_the_command_reads_a_file_larger_than_the_web_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upload page and the API stop at ``MAX_TRANSCRIPT_BYTES``; an operator's command
    reads a runtime log of 100,000 messages (40 to 120 MB), up to ``--max-mb``."""
    monkeypatch.setattr(transcripts, "MAX_TRANSCRIPT_BYTES", 1024)
    path = write_json(tmp_path / "long.json", stored_conversation(key="long", length=40))
    assert path.stat().st_size > 1024

    out, _ = import_files(path)

    assert "imported 1 conversation, 40 messages" in out
    assert stored_counts() == (1, 40)


def test_a_file_over_max_mb_is_refused_by_name_with_how_to_raise_the_limit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "huge.json"
    path.write_bytes(b" " * (2 * 1024 * 1024 + 1))

    err = import_failing(path, max_mb=2)

    assert f"{path}: is 2.0 MB; the largest transcript this reads is 2 MB (--max-mb" in err
    assert f"{path}: nothing was imported from this file" in err
    assert stored_counts() == (0, 0)


def test_max_mb_below_one_is_refused(tmp_path: Path) -> None:
    path = write_json(tmp_path / "one.json", stored_conversation(key="one", length=2))

    with pytest.raises(CommandError, match="--max-mb must be at least 1"):
        call_command("import_transcripts", str(path), max_mb=0, stdout=StringIO())
    assert stored_counts() == (0, 0)


def stored_conversation(*, key: str, length: int) -> dict[str, Any]:
    return {
        "key": key,
        "title": key,
        "messages": [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"}
            for i in range(length)
        ],
    }
