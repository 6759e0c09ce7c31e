# Titles and sources are searched by their words as made in Python (buffers/search/words.py),
# as messages are, not as each database splits and lowers them: "İstanbul" was one word
# to the database and two to the query (Python lowers 'İ' to 'i' and a combining dot),
# PostgreSQL lowered a final 'Σ' to 'σ' where Python writes 'ς', dropped '²', and read
# Devanagari's virama as punctuation. The words are kept in a column by
# ``Conversation.save()``; the index reads it.
# - SQLite: the FTS5 table's triggers copy the column (buffers/triggers.py).
# - PostgreSQL: the GIN index is on the column read as a tsvector (words are letters,
#   digits and marks only: nothing in them is tsvector syntax).

from django.db import migrations, models

_BATCH = 2_000

PG_INDEX = (
    "CREATE INDEX conversation_search_words ON buffers_conversation USING gin "
    "((search_words::tsvector)) WITH (fastupdate = off)"
)
PG_INDEX_BEFORE = (
    "CREATE INDEX conversation_search_words ON buffers_conversation USING gin ("
    "(strip(to_tsvector('simple'::regconfig, "
    "regexp_replace(title || ' ' || source, '[[:punct:]]+', ' ', 'g'))))) "
    "WITH (fastupdate = off)"
)
SQLITE_TRIGGERS = (
    "buffers_conversationsearch_add",
    "buffers_conversationsearch_change",
)


def _fill(apps, schema_editor) -> None:
    from buffers.search.words import words_of

    Conversation = apps.get_model("buffers", "Conversation")
    rows = Conversation.objects.order_by("pk").values_list("pk", "title", "source")
    last = 0
    with schema_editor.connection.cursor() as cursor:
        while batch := list(rows.filter(pk__gt=last)[:_BATCH]):
            cursor.executemany(
                "UPDATE buffers_conversation SET search_words = %s WHERE id = %s",
                [(words_of(f"{title} {source}"), pk) for pk, title, source in batch],
            )
            last = batch[-1][0]


def _index_again(schema_editor, index: str, triggers: tuple[str, ...], words: str) -> None:
    """The titles' index made again: PostgreSQL's ``index``, SQLite's ``triggers`` (from
    buffers.triggers) and the FTS5 table filled from ``words`` (an SQL expression)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS conversation_search_words", params=None)
        schema_editor.execute(index, params=None)
        return
    for name in SQLITE_TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}", params=None)
    for sql in triggers:
        schema_editor.execute(sql, params=None)
    schema_editor.execute("DELETE FROM buffers_conversationsearch", params=None)
    schema_editor.execute(
        "INSERT INTO buffers_conversationsearch (rowid, words) "
        f"SELECT id, {words} FROM buffers_conversation",
        params=None,
    )


def by_words(apps, schema_editor):
    from buffers.triggers import SEARCH

    _fill(apps, schema_editor)
    _index_again(schema_editor, PG_INDEX, SEARCH, "search_words")


def as_written(apps, schema_editor):
    from buffers.triggers import TITLES_AS_WRITTEN

    _index_again(schema_editor, PG_INDEX_BEFORE, TITLES_AS_WRITTEN, "title || ' ' || source")


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0017_search_words_with_marks"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="search_words",
            field=models.TextField(
                default="",
                editable=False,
                help_text="The words of the title and the source, as the search index reads "
                "a message's (buffers.search.words_of); kept by save().",
            ),
        ),
        migrations.RunPython(by_words, as_written),
    ]
