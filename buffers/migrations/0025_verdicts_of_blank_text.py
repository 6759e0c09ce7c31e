"""Stored verdicts computed again for the conversations whose Anthropic verdict changed
with the rule on blank text (docs/decisions.md, "Sendability"): Anthropic refuses a user
or assistant message whose text is all whitespace, and an empty text block anywhere. A
database migrated before kept them as sendable. Read again, the conversations holding a
user or assistant message whose content is a string (not empty) of no ASCII letters or
digits, or which names a text of none: a superset (text in other scripts only is in it),
each judged whole. The others keep theirs."""

import importlib
from typing import Any

from django.db import migrations
from django.db.models import Q, TextField
from django.db.models.functions import Cast

stored_verdicts = importlib.import_module("buffers.migrations.0009_stored_verdicts")

# A JSON string of no ASCII letters or digits, escapes aside; as a whole content, not empty
# (an empty one, as a call turn's often is, was judged already).
_NO_WORD = r'(\\u[0-9a-fA-F]{4}|\\[nrtfb/]|[^A-Za-z0-9\\"])'
BLANK_STRING = rf'^"{_NO_WORD}+"$'
BLANK_TEXT_PART = rf'"text": ?"{_NO_WORD}*"'


def tally_again(apps: Any, schema_editor: Any) -> None:
    Message = apps.get_model("buffers", "Message")
    holding = (
        Message.objects.filter(role__in=("user", "assistant"))
        .annotate(content_text=Cast("content", TextField()))
        .filter(Q(content_text__regex=BLANK_STRING) | Q(content_text__regex=BLANK_TEXT_PART))
    )
    stored_verdicts.tally_conversations(
        apps, Message.objects.filter(conversation_id__in=holding.values("conversation_id"))
    )


class Migration(migrations.Migration):
    dependencies = [("buffers", "0024_words_without_dotted_i_or_soft_hyphen")]

    operations = [
        migrations.RunPython(tally_again, migrations.RunPython.noop, elidable=True),
    ]
