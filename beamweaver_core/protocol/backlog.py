"""A run's stored events read a bounded number of bytes at a time.

A stream sends a run's stored events in batches. Reading a batch as "the next 100 rows"
loads all 100 into the web process however large they are (a run whose steps store
400 KB values loads 40 MB to send one of them when the stream may send little more).
Here Postgres picks the rows: of the next `limit` events, those whose data before them
(as JSON text) is within `budget` bytes, and always the first.
"""

from __future__ import annotations

from typing import Any

from django.db.models.query import RawQuerySet

from beamweaver_core.models import RunEvent

_SQL = """
SELECT * FROM (
    SELECT page.*,
        SUM(COALESCE(OCTET_LENGTH(page.data::text), 0)) OVER (ORDER BY page.seq)
        - COALESCE(OCTET_LENGTH(page.data::text), 0) AS bytes_before
    FROM (
        SELECT * FROM {table} WHERE run_id = %s AND seq >= %s ORDER BY seq LIMIT %s
    ) AS page
) AS sized
WHERE sized.bytes_before <= %s
ORDER BY sized.seq
"""


def next_events(run_id: Any, first_seq: int, limit: int, budget: float) -> RawQuerySet[RunEvent]:
    """The run's stored events from `first_seq` on, in order: at most `limit`, and only
    as many as fit in `budget` bytes of data (at least one)."""
    sql = _SQL.format(table=RunEvent._meta.db_table)
    return RunEvent.objects.raw(sql, [run_id, first_seq, limit, max(int(budget), 0)])


__all__ = ["next_events"]
