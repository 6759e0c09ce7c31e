# A soft hyphen (U+00AD) is dropped before text is split into words
# (buffers.search.words.unhyphenated): before, it split its word, so "Zwei\u00adtausend"
# was indexed as "zwei" and "tausend" and not found by "zweitausend". The messages whose
# content or metadata holds one (as the character, or as JSON's escape of it) and the
# conversations whose title or source holds one are indexed again, the rest is left as it
# is. One pass over the messages to find them.

from django.db import migrations

_SOFT_HYPHEN = "\u00ad"
_ESCAPED = "\\u00ad"  # as Python's json.dumps writes it (lowercased: any case)


def _messages_again(schema_editor) -> None:
    from buffers.search import index

    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        position, content, metadata = "strpos", "lower(content::text)", "lower(metadata::text)"
    else:
        position, content, metadata = "instr", "lower(content)", "lower(metadata)"
    holds = " OR ".join(
        f"{position}({column}, %s) > 0" for column in (content, metadata) for _ in (1, 2)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM buffers_message WHERE {holds}", [_SOFT_HYPHEN, _ESCAPED] * 2
        )
        ids = [pk for (pk,) in cursor.fetchall()]
    index.index_stored(ids)


def _titles_again(schema_editor) -> None:
    from buffers.search.words import words_of

    connection = schema_editor.connection
    position = "strpos" if connection.vendor == "postgresql" else "instr"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, title, source FROM buffers_conversation "
            f"WHERE {position}(title, %s) > 0 OR {position}(source, %s) > 0",
            [_SOFT_HYPHEN, _SOFT_HYPHEN],
        )
        words = [(words_of(f"{title} {source}"), pk) for pk, title, source in cursor.fetchall()]
        cursor.executemany("UPDATE buffers_conversation SET search_words = %s WHERE id = %s", words)
        if connection.vendor == "sqlite":  # the titles' index, whether its trigger is there
            cursor.executemany(
                "UPDATE buffers_conversationsearch SET words = %s WHERE rowid = %s", words
            )


def unhyphenated(apps, schema_editor) -> None:
    _messages_again(schema_editor)
    _titles_again(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("buffers", "0024_dotted_capital_i_as_i")]

    # Back, the words stay whole: the code of before finds them by "zweitausend" typed.
    operations = [migrations.RunPython(unhyphenated, migrations.RunPython.noop, elidable=True)]
