"""Review items say what they ask: a one-line summary (`reviews.summaries`) stored on the
item, written when it is created or its payload changes, and filled in here for the items
that exist (read and written in batches of `BATCH`, in id order)."""

from __future__ import annotations

import json

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

BATCH = 1000


def fill_summaries(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    from reviews.summaries import summarize

    items = apps.get_model("reviews", "ReviewItem").objects.using(schema_editor.connection.alias)
    last = 0
    while True:
        batch = list(
            items.filter(pk__gt=last).order_by("pk").only("pk", "kind", "payload_json")[:BATCH]
        )
        if not batch:
            return
        for item in batch:
            try:
                item.summary = summarize(item.kind, json.loads(item.payload_json))
            except ValueError:
                item.summary = ""
        items.bulk_update(batch, ["summary"])
        last = batch[-1].pk


class Migration(migrations.Migration):
    atomic = False  # each batch commits: a million items are not one transaction

    dependencies = [("reviews", "0005_inbox_at_scale")]

    operations = [
        migrations.AddField(
            model_name="reviewitem",
            name="summary",
            field=models.CharField(
                blank=True,
                default="",
                help_text="What is asked, in one line, secrets redacted (`reviews.summaries`).",
                max_length=200,
            ),
        ),
        migrations.RunPython(fill_summaries, migrations.RunPython.noop, elidable=True),
    ]
