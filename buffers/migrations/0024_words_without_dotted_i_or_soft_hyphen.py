# Two changes to how words are made (buffers.search.words), indexed again in one pass:
#
# - A dotted capital I ('İ', U+0130) is a plain 'i' (``_lowered``): Python lowers it to
#   'i' and a combining dot above, so "İstanbul" was indexed as "i̇stanbul", which
#   "istanbul" typed does not begin. What is read again: the messages and the titles
#   whose words hold an 'i' with a combining dot.
# - A soft hyphen (U+00AD) is dropped before text is split (``unhyphenated``): it split
#   its word, so "Zwei\u00adtausend" was indexed as "zwei" and "tausend" and not found by
#   "zweitausend". What is read again: the messages whose content or metadata holds one
#   (as the character, or as JSON's escape of it), and the conversations whose title or
#   source holds one.
#
# The rest is left as it is: the words of a text holding neither do not change.

from django.db import migrations

_DOTTED = "i\u0307"
_SOFT_HYPHEN = "\u00ad"
_ESCAPED = "\\u00ad"  # as Python's json.dumps writes it (lowercased: any case)


def _messages_again(schema_editor) -> None:
    from buffers.search import index

    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        dotted = "SELECT message_id FROM buffers_messagesearch WHERE strpos(document::text, %s) > 0"
        position, content, metadata = "strpos", "lower(content::text)", "lower(metadata::text)"
    else:
        dotted = "SELECT rowid FROM buffers_messagesearch WHERE instr(body, %s) > 0"
        position, content, metadata = "instr", "lower(content)", "lower(metadata)"
    hyphened = " OR ".join(
        f"{position}({column}, %s) > 0" for column in (content, metadata) for _ in (1, 2)
    )
    with connection.cursor() as cursor:
        cursor.execute(dotted, [_DOTTED])
        ids = {pk for (pk,) in cursor.fetchall()}
        cursor.execute(
            f"SELECT id FROM buffers_message WHERE {hyphened}", [_SOFT_HYPHEN, _ESCAPED] * 2
        )
        ids.update(pk for (pk,) in cursor.fetchall())
    index.index_stored(sorted(ids))


def _titles_again(schema_editor) -> None:
    from buffers.search.words import words_of

    connection = schema_editor.connection
    position = "strpos" if connection.vendor == "postgresql" else "instr"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, title, source FROM buffers_conversation WHERE "
            f"{position}(search_words, %s) > 0 OR {position}(title, %s) > 0 "
            f"OR {position}(source, %s) > 0",
            [_DOTTED, _SOFT_HYPHEN, _SOFT_HYPHEN],
        )
        words = [(words_of(f"{title} {source}"), pk) for pk, title, source in cursor.fetchall()]
        cursor.executemany("UPDATE buffers_conversation SET search_words = %s WHERE id = %s", words)
        if connection.vendor == "sqlite":  # the titles' index, whether its trigger is there
            cursor.executemany(
                "UPDATE buffers_conversationsearch SET words = %s WHERE rowid = %s", words
            )


def words_again(apps, schema_editor) -> None:
    _messages_again(schema_editor)
    _titles_again(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("buffers", "0023_tool_call_arguments_read_as_json")]

    # Back, the words stay as made here: the code of before finds them by "istanbul" and
    # "zweitausend" typed, no longer by "İstanbul" or with the soft hyphen.
    operations = [migrations.RunPython(words_again, migrations.RunPython.noop, elidable=True)]
