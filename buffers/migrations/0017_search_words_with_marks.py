# A word keeps its combining marks (buffers/search/words.py): Devanagari's vowel signs,
# Hebrew's points and a decomposed accent were word breaks, so "हिन्दी" was indexed as the
# letters "ह न द" and found where those stood apart. Text is indexed composed (NFC).
# - SQLite: FTS5's unicode61 reads letters, digits and private-use characters as words
#   by default, a mark as a break; both tables now read marks as word characters too.
#   An FTS5 table's tokenizer is fixed when it is made: they are made again.
# - Both: every message is indexed again (search.rebuild), as its words may have changed.

from django.db import migrations

MARKED = "tokenize = \"unicode61 remove_diacritics 0 categories 'L* N* Co M*'\""
UNMARKED = "tokenize = 'unicode61 remove_diacritics 0'"


def _sqlite_tables(tokenize: str) -> list[str]:
    """The two FTS5 tables of migration 0006, made again with ``tokenize``, and the
    titles' table filled again (its triggers name it: they stay, and keep it after)."""
    return [
        "DROP TABLE buffers_messagesearch",
        "CREATE VIRTUAL TABLE buffers_messagesearch USING fts5("
        f"body, conversation_id, {tokenize}, columnsize = 0)",
        "DROP TABLE buffers_conversationsearch",
        f"CREATE VIRTUAL TABLE buffers_conversationsearch USING fts5(words, {tokenize}, "
        "columnsize = 0)",
        "INSERT INTO buffers_conversationsearch (rowid, words) "
        "SELECT id, title || ' ' || source FROM buffers_conversation",
    ]


def _index_again(schema_editor, tokenize: str) -> None:
    from buffers import search

    if schema_editor.connection.vendor == "sqlite":
        for sql in _sqlite_tables(tokenize):
            schema_editor.execute(sql, params=None)
    search.rebuild()


def with_marks(apps, schema_editor):
    _index_again(schema_editor, MARKED)


def without_marks(apps, schema_editor):
    _index_again(schema_editor, UNMARKED)


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0016_messages_without_constraints"),
    ]

    operations = [migrations.RunPython(with_marks, without_marks)]
