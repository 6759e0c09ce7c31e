# A tool result's records under "data" (a REST answer's shape), a record's "source" written in
# words, and a text beginning "data:" that is not a data: URI are words now
# (buffers.search.words._collect); before, all of them were left out as a media part's
# bytes. The messages whose content names "data", "source" or "data:" are indexed again, the
# rest is left as it is (their words do not change). One pass over the messages to find them.

from django.db import migrations

_BATCH = 2_000
_NAMED = ('"data"', '"source"', "data:")


def _messages_again(apps, schema_editor) -> None:
    from buffers.search import index
    from buffers.search.words import text_of, words_of
    from buffers.selectors import json_column

    connection = schema_editor.connection
    postgresql = connection.vendor == "postgresql"
    # Lowercased: a data: URI is told in any case (words._DATA_URI).
    position, content = (
        ("strpos", "lower(content::text)") if postgresql else ("instr", "lower(content)")
    )
    holds = " OR ".join([f"{position}({content}, %s) > 0"] * len(_NAMED))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM buffers_message WHERE {holds}", list(_NAMED))
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


class Migration(migrations.Migration):
    dependencies = [("buffers", "0020_placeholders_indexed")]

    operations = [migrations.RunPython(_messages_again, migrations.RunPython.noop, elidable=True)]
