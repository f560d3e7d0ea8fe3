"""The inbox's indexes at scale (a million items, a hundred thousand pending).

Measured on the scale fixture (`python -m bench.scale plans`): the counts, the filter
menus and the listing's counts read every item's row, 0.3-1.9 s each. The listing index
now carries the columns those read, the menus get an index to probe, and the search of
pending items a trigram index where the server has `pg_trgm` (every packaged PostgreSQL
ships it in contrib; the embedded development server does not, and searches by reading
the pending items instead). Built concurrently: writes go on meanwhile.
"""

from __future__ import annotations

import logging

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import DatabaseError, migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

logger = logging.getLogger(__name__)

SEARCH_INDEX = "bw_review_item_search_idx"
# The expressions of Django's `icontains` on these columns (`reviews.inbox.InboxQuery`),
# so the planner matches them; only pending items, which the inbox searches by default.
_CREATE_SEARCH = f"""
CREATE INDEX CONCURRENTLY IF NOT EXISTS {SEARCH_INDEX} ON bw_review_item
 USING gin (upper(payload_json) gin_trgm_ops, upper(thread_id::text) gin_trgm_ops)
 WHERE status = 'pending'
"""


def create_search_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
        if cursor.fetchone() is None:
            logger.warning(
                "pg_trgm is not available on this PostgreSQL server: the inbox search reads "
                "every pending item. Install the server's contrib package, then "
                "`manage.py migrate reviews 0004_audit_api_tokens` and `manage.py migrate`."
            )
            return
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except DatabaseError as exc:
            logger.warning(
                "Cannot create the pg_trgm extension (%s): the inbox search reads every "
                "pending item. A superuser can run CREATE EXTENSION pg_trgm in this database.",
                exc,
            )
            return
        cursor.execute(_CREATE_SEARCH)


def drop_search_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {SEARCH_INDEX}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("reviews", "0004_audit_api_tokens"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="reviewitem",
            index=models.Index(
                fields=["status", "created_at", "id"],
                include=(
                    "graph",
                    "kind",
                    "tool_names",
                    "reviewer_group_ids",
                    "responder_ids",
                    "assignee",
                    "escalated_at",
                    "escalation_group",
                ),
                name="bw_review_item_listing_idx",
            ),
        ),
        RemoveIndexConcurrently(model_name="reviewitem", name="bw_review_item_inbox_idx"),
        AddIndexConcurrently(
            model_name="reviewitem",
            index=models.Index(
                fields=["status", "graph", "tool_names"], name="bw_review_item_menu_idx"
            ),
        ),
        migrations.RunPython(create_search_index, drop_search_index, elidable=False),
    ]
