# A dotted capital I ('İ', U+0130) is a plain 'i' in words (buffers.search.words._lowered):
# Python lowers it to 'i' and a combining dot above, so "İstanbul" was indexed as
# "i̇stanbul", which "istanbul" typed does not begin. The messages and the titles whose
# words hold an 'i' with a combining dot are indexed again, the rest is left as it is (the
# words of a text without one do not change). One pass over each index to find them.

from django.db import migrations

_DOTTED = "i\u0307"


def _messages_again(schema_editor) -> None:
    from buffers.search import index

    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        sql = "SELECT message_id FROM buffers_messagesearch WHERE strpos(document::text, %s) > 0"
    else:
        sql = "SELECT rowid FROM buffers_messagesearch WHERE instr(body, %s) > 0"
    with connection.cursor() as cursor:
        cursor.execute(sql, [_DOTTED])
        ids = [pk for (pk,) in cursor.fetchall()]
    index.index_stored(ids)


def _titles_again(schema_editor) -> None:
    from buffers.search.words import words_of

    connection = schema_editor.connection
    position = "strpos" if connection.vendor == "postgresql" else "instr"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, title, source FROM buffers_conversation "
            f"WHERE {position}(search_words, %s) > 0",
            [_DOTTED],
        )
        words = [(words_of(f"{title} {source}"), pk) for pk, title, source in cursor.fetchall()]
        cursor.executemany("UPDATE buffers_conversation SET search_words = %s WHERE id = %s", words)
        if connection.vendor == "sqlite":  # the titles' index, whether its trigger is there
            cursor.executemany(
                "UPDATE buffers_conversationsearch SET words = %s WHERE rowid = %s", words
            )


def as_plain_i(apps, schema_editor) -> None:
    _messages_again(schema_editor)
    _titles_again(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("buffers", "0023_tool_call_arguments_read_as_json")]

    # Back, the words keep the plain 'i' (the code of before makes words from the rows as
    # they are, not this): it finds them by "istanbul" typed, no longer by "İstanbul".
    operations = [migrations.RunPython(as_plain_i, migrations.RunPython.noop, elidable=True)]
