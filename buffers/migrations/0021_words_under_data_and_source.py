# A tool result's records under "data" (a REST answer's shape), a record's "source" written in
# words, and a text beginning "data:" that is not a data: URI are words now
# (buffers.search.words._collect); before, all of them were left out as a media part's
# bytes. The messages whose content names "data", "source" or "data:" are indexed again, the
# rest is left as it is (their words do not change). One pass over the messages to find them.

from django.db import migrations

_NAMED = ('"data"', '"source"', "data:")


def _messages_again(apps, schema_editor) -> None:
    from buffers.search import index

    connection = schema_editor.connection
    postgresql = connection.vendor == "postgresql"
    # Lowercased: a data: URI is told in any case (words._DATA_URI).
    position, content = (
        ("strpos", "lower(content::text)") if postgresql else ("instr", "lower(content)")
    )
    holds = " OR ".join([f"{position}({content}, %s) > 0"] * len(_NAMED))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM buffers_message WHERE {holds}", list(_NAMED))
        ids = [pk for (pk,) in cursor.fetchall()]
    index.index_stored(ids)


class Migration(migrations.Migration):
    dependencies = [("buffers", "0020_placeholders_indexed")]

    operations = [migrations.RunPython(_messages_again, migrations.RunPython.noop, elidable=True)]
