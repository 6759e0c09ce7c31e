"""Stored verdicts (docs/decisions.md, "Stored verdicts"): each conversation's rejections per
provider, its problem counts by kind and whether it is sendable, computed here once for
every stored conversation from its whole buffer; the service keeps them from then on."""

from itertools import groupby
from operator import itemgetter
from typing import Any

from django.db import migrations, models

from buffers import healing


BATCH = 500
"""Conversations updated per statement."""


def compute_tallies(apps: Any, schema_editor: Any) -> None:
    """Every conversation's tally, from one ordered read of all messages (not a query per
    conversation: this runs while the migration holds the conversation table)."""
    Conversation = apps.get_model("buffers", "Conversation")
    Message = apps.get_model("buffers", "Message")
    empty = healing.verdicts.tally([])
    Conversation.objects.update(
        rejections=dict(empty.rejections), problem_counts=dict(empty.problems), sendable=empty.sendable
    )
    tally_conversations(apps, Message.objects.all())


def tally_conversations(apps: Any, messages: Any) -> None:
    """The tally of each conversation that ``messages`` (a queryset of whole buffers)
    holds rows of, stored (migration 0014 computes some again)."""
    Conversation = apps.get_model("buffers", "Conversation")
    rows = (
        messages.order_by("conversation_id", "block__start", "slot")
        .values_list("conversation_id", "role", "content", "metadata")
        .iterator(chunk_size=5_000)
    )
    changed: list[Any] = []
    for pk, group in groupby(rows, key=itemgetter(0)):
        tally = healing.verdicts.tally(
            [
                healing.Message.model_construct(role=role, content=content, metadata=metadata)
                for _, role, content, metadata in group
            ]
        )
        changed.append(
            Conversation(
                pk=pk,
                rejections=dict(tally.rejections),
                problem_counts=dict(tally.problems),
                sendable=tally.sendable,
            )
        )
        if len(changed) >= BATCH:
            Conversation.objects.bulk_update(changed, ["rejections", "problem_counts", "sendable"])
            changed = []
    if changed:
        Conversation.objects.bulk_update(changed, ["rejections", "problem_counts", "sendable"])


class Migration(migrations.Migration):
    dependencies = [
        ("buffers", "0008_keys_per_owner"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="problem_counts",
            field=models.JSONField(
                default=dict,
                editable=False,
                help_text="How many problems of each kind the buffer holds (only kinds present).",
            ),
        ),
        migrations.AddField(
            model_name="conversation",
            name="rejections",
            field=models.JSONField(
                default=dict,
                editable=False,
                help_text="For each provider, how many reasons it would have to refuse the "
                "buffer as history (sendability); 0 when it would accept it.",
            ),
        ),
        migrations.AddField(
            model_name="conversation",
            name="sendable",
            field=models.BooleanField(
                default=True, editable=False, help_text="No provider would refuse the buffer."
            ),
        ),
        migrations.AddIndex(
            model_name="conversation",
            index=models.Index(
                fields=["sendable", "-updated_at", "-id"], name="conversation_sendable"
            ),
        ),
        migrations.RunPython(compute_tallies, migrations.RunPython.noop, elidable=True),
    ]
