"""The inbox search reads the payload as the pages show it, secrets redacted.

It matched `payload_json`, the raw interrupt value, so a search for a guessed prefix of
a withheld secret listed the item when the guess was right: a way to read the secret
one character at a time, for anyone who may see the item. Items now carry
`search_text` (`reviews.payloads.searchable`), filled in here for the items that exist
(read and written in batches of `BATCH`, in id order), and the trigram index of pending
items (`reviews 0005`) covers it instead of `payload_json`, where the server has
`pg_trgm`. Built concurrently: writes go on meanwhile.
"""

from __future__ import annotations

import json

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

BATCH = 1000
OLD_INDEX = "bw_review_item_search_idx"
NEW_INDEX = "bw_review_item_search_text_idx"
# The expressions of Django's `icontains` on these columns (`reviews.inbox.InboxQuery`),
# so the planner matches them; only pending items, which the inbox searches by default.
_CREATE = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON bw_review_item
 USING gin (upper({column}) gin_trgm_ops, upper(thread_id::text) gin_trgm_ops)
 WHERE status = 'pending'
"""


def fill_search_text(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    from reviews.payloads import searchable

    items = apps.get_model("reviews", "ReviewItem").objects.using(schema_editor.connection.alias)
    last = 0
    while True:
        batch = list(items.filter(pk__gt=last).order_by("pk").only("pk", "payload_json")[:BATCH])
        if not batch:
            return
        for item in batch:
            item.search_text = searchable(json.loads(item.payload_json))
        items.bulk_update(batch, ["search_text"])
        last = batch[-1].pk


def _swap_index(schema_editor: BaseDatabaseSchemaEditor, *, drop: str, create: str) -> None:
    with schema_editor.connection.cursor() as cursor:
        # Without pg_trgm (reviews 0005 said so when it skipped it) the search reads
        # every pending item, before and after.
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone() is not None:
            column = "search_text" if create == NEW_INDEX else "payload_json"
            cursor.execute(_CREATE.format(name=create, column=column))
        cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {drop}")


def index_search_text(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _swap_index(schema_editor, drop=OLD_INDEX, create=NEW_INDEX)


def index_payload_json(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _swap_index(schema_editor, drop=NEW_INDEX, create=OLD_INDEX)


class Migration(migrations.Migration):
    atomic = False  # each batch commits; CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("reviews", "0010_policy_generation_first")]

    operations = [
        migrations.AddField(
            model_name="reviewitem",
            name="search_text",
            field=models.TextField(
                blank=True,
                default="",
                help_text="The payload as the pages show it, secrets redacted: what the inbox "
                "search matches (`reviews.payloads.searchable`).",
            ),
        ),
        migrations.RunPython(fill_search_text, migrations.RunPython.noop, elidable=True),
        migrations.RunPython(index_search_text, index_payload_json, elidable=False),
    ]
