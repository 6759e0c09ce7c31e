# PostgreSQL's GIN indexes of the search (buffers/search/) keep new entries in a pending
# list, merged into the index by vacuum or once the list is full, and every search reads
# all of that list: a full list (4 MB by default) cost a search for a rare word 3.6 ms on
# the messages' index and 7 ms on the titles', where the index itself took 0.05 ms
# (benchmarks/pages.py, after 100,000 conversations were written). So:
# - the messages' index merges its list at 256 kB: a search reads at most 32 pages of it,
#   and an import of 100,000 messages took no longer (3.25 s, against 3.35 with 4 MB);
# - the titles' index has no list: a conversation is written once and renamed rarely, and
#   its few words go straight into the index.
# SQLite's FTS5 tables have no such list.

from django.db import migrations

POSTGRESQL = [
    "ALTER INDEX message_search_document SET (gin_pending_list_limit = 256)",
    "ALTER INDEX conversation_search_words SET (fastupdate = off)",
    # Turning the list off leaves what it holds: merged now.
    "SELECT gin_clean_pending_list('conversation_search_words')",
]
POSTGRESQL_REVERSE = [
    "ALTER INDEX conversation_search_words RESET (fastupdate)",
    "ALTER INDEX message_search_document RESET (gin_pending_list_limit)",
]


def shorten(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in POSTGRESQL:
            schema_editor.execute(sql, params=None)


def restore(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in POSTGRESQL_REVERSE:
            schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0010_search_blocks"),
    ]

    operations = [migrations.RunPython(shorten, restore)]
