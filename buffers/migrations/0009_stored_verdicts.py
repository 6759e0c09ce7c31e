"""Stored verdicts (docs/decisions.md, "Stored verdicts"): each conversation's rejections per
provider, its problem counts by kind and whether it is sendable, computed here once for
every stored conversation from its whole buffer; the service keeps them from then on."""

from typing import Any

from django.db import migrations, models

from buffers import healing


def compute_tallies(apps: Any, schema_editor: Any) -> None:
    Conversation = apps.get_model("buffers", "Conversation")
    Message = apps.get_model("buffers", "Message")
    for pk in Conversation.objects.values_list("pk", flat=True).iterator():
        rows = (
            Message.objects.filter(conversation_id=pk)
            .order_by("block__start", "slot")
            .values_list("role", "content", "metadata")
        )
        messages = [
            healing.Message.model_construct(role=role, content=content, metadata=metadata)
            for role, content, metadata in rows.iterator()
        ]
        tally = healing.verdicts.tally(messages)
        Conversation.objects.filter(pk=pk).update(
            rejections=dict(tally.rejections),
            problem_counts=dict(tally.problems),
            sendable=tally.sendable,
        )


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
