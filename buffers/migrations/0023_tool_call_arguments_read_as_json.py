# A tool call's arguments are read as JSON (buffers.search.words._call_text): before, their
# JSON text was split as it is written, escapes and all, so a word after a line break
# ("import os\nprint(...)") was indexed as "nprint" and "Z\u00fcrich" as "z" and "u00fcrich".
# The assistant messages that hold tool calls are indexed again, the rest is left as it is
# (their words do not change). One pass over the messages to find them.

from django.db import migrations


def _messages_again(apps, schema_editor) -> None:
    from buffers.search import index

    connection = schema_editor.connection
    holds = (
        "metadata ? 'tool_calls'"  # a jsonb key, read without writing the value out
        if connection.vendor == "postgresql"
        else "instr(metadata, '\"tool_calls\"') > 0"
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM buffers_message WHERE role = 'assistant' AND {holds}")
        ids = [pk for (pk,) in cursor.fetchall()]
    index.index_stored(ids)


class Migration(migrations.Migration):
    dependencies = [("buffers", "0022_verdicts_counted_again")]

    operations = [migrations.RunPython(_messages_again, migrations.RunPython.noop, elidable=True)]
