# Words fold the letters SQLite's tokenizer folds into others (buffers.search.words.FOLDED:
# the micro sign into mu, a long s into s, Greek symbol forms into letters): the messages
# and the titles whose words held one of them are indexed again, the rest is left as it is
# (the words of a text without them do not change). One pass over each index to find them.

from django.db import migrations

_BATCH = 2_000


def _folded_letters() -> list[str]:
    from buffers.search.words import FOLDED

    return [chr(code) for code in FOLDED]


def _holding(connection, column: str, letters: list[str]) -> tuple[str, list[str]]:
    """A condition that the text ``column`` holds one of ``letters``, and its parameters."""
    position = "strpos" if connection.vendor == "postgresql" else "instr"
    return " OR ".join([f"{position}({column}, %s) > 0"] * len(letters)), letters


def _messages_again(schema_editor) -> None:
    from buffers.search import index
    from buffers.search.words import text_of, words_of
    from buffers.selectors import json_column

    connection = schema_editor.connection
    postgresql = connection.vendor == "postgresql"
    key, column = ("message_id", "document::text") if postgresql else ("rowid", "body")
    holds, params = _holding(connection, column, _folded_letters())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {key} FROM buffers_messagesearch WHERE {holds}", params)
        ids = sorted(pk for (pk,) in cursor.fetchall())
        for first in range(0, len(ids), _BATCH):
            batch = ids[first : first + _BATCH]
            marks = ", ".join(["%s"] * len(batch))
            cursor.execute(
                "SELECT id, conversation_id, role, content, metadata FROM buffers_message "
                f"WHERE id IN ({marks})",
                batch,
            )
            rows = [
                (pk, conversation, text_of(role, json_column(content), json_column(metadata) or {}))
                for pk, conversation, role, content, metadata in cursor.fetchall()
            ]
            index.forget_messages(batch)
            index.index_words((pk, c, words_of(text) if text else "") for pk, c, text in rows)


def _titles_again(schema_editor) -> None:
    from buffers.search.words import words_of

    connection = schema_editor.connection
    holds, params = _holding(connection, "search_words", _folded_letters())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, title, source FROM buffers_conversation WHERE {holds}", params)
        words = [(words_of(f"{title} {source}"), pk) for pk, title, source in cursor.fetchall()]
        cursor.executemany("UPDATE buffers_conversation SET search_words = %s WHERE id = %s", words)
        if connection.vendor == "sqlite":  # the titles' index, whether its trigger is there
            cursor.executemany(
                "UPDATE buffers_conversationsearch SET words = %s WHERE rowid = %s", words
            )


def folded(apps, schema_editor) -> None:
    _messages_again(schema_editor)
    _titles_again(schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0018_titles_searched_by_their_words"),
    ]

    # Back, the words stay folded: the code of before finds them by the folded spelling.
    operations = [migrations.RunPython(folded, migrations.RunPython.noop)]
