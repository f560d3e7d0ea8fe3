"""Retention for `PostgresCheckpointer` storage, without breaking any resumable thread.

Keeping a checkpoint keeps everything it needs: its pending writes, and the blob versions
its channel values are rebuilt from (for a list stored as appended deltas, the whole chain
back to its snapshot). Threads with a queued or running run are left alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import connections, transaction

from beamweaver_core.exceptions import ThreadBusyError

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper

if TYPE_CHECKING:
    pass


@dataclass
class PruneReport:
    thread_id: str
    checkpoints_deleted: int = 0
    writes_deleted: int = 0
    blobs_deleted: int = 0
    checkpoints_kept: int = 0
    namespaces: list[str] = field(default_factory=list)


def prune_thread(
    thread_id: str, keep_latest: int, *, using: str = "default", dry_run: bool = False
) -> PruneReport:
    """Keep the `keep_latest` newest checkpoints of each namespace of the thread."""
    if keep_latest < 1:
        raise ValueError(
            "keep_latest must be at least 1: the latest checkpoint is the thread's state."
        )
    report = PruneReport(thread_id)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute("SELECT id FROM bw_thread WHERE id = %s FOR UPDATE", [thread_id])
        cursor.execute(
            "SELECT 1 FROM bw_run WHERE thread_id = %s AND status IN ('queued', 'running') LIMIT 1",
            [thread_id],
        )
        if cursor.fetchone() is not None:
            raise ThreadBusyError(
                f"Thread {thread_id!r} has a queued or running run; prune it later."
            )
        cursor.execute(
            "SELECT DISTINCT ns FROM bw_checkpoint WHERE thread_id = %s ORDER BY ns", [thread_id]
        )
        report.namespaces = [row[0] for row in cursor.fetchall()]
        for ns in report.namespaces:
            _prune_namespace(
                cursor, thread_id, ns, keep=keep_latest, report=report, dry_run=dry_run
            )
        if dry_run:
            transaction.set_rollback(True, using=using)
    return report


def _prune_namespace(
    cursor: CursorWrapper, thread_id: str, ns: str, *, keep: int, report: PruneReport, dry_run: bool
) -> None:
    cursor.execute(
        "SELECT checkpoint_id, seq, document FROM bw_checkpoint WHERE thread_id = %s AND ns = %s ORDER BY seq DESC",
        [thread_id, ns],
    )
    rows = cursor.fetchall()
    kept, dropped = rows[:keep], rows[keep:]
    report.checkpoints_kept += len(kept)
    if not dropped:
        return
    needed: dict[str, list[tuple[int, int]]] = {}
    for _, _, document in kept:
        doc = json.loads(document)
        chains = doc.get("chains", {})
        for channel, version in doc.get("versions", {}).items():
            low = int(chains[channel][0]) if channel in chains else int(version)
            needed.setdefault(channel, []).append((low, int(version)))
    cursor.execute(
        "SELECT id, channel, version FROM bw_checkpoint_blob WHERE thread_id = %s AND ns = %s",
        [thread_id, ns],
    )
    doomed_blobs = [
        blob_id
        for blob_id, channel, version in cursor.fetchall()
        if not any(low <= version <= high for low, high in needed.get(channel, ()))
    ]
    kept_ids = [row[0] for row in kept]
    dropped_ids = [row[0] for row in dropped]
    report.checkpoints_deleted += len(dropped_ids)
    report.blobs_deleted += len(doomed_blobs)
    cursor.execute(
        "SELECT count(*) FROM bw_checkpoint_write WHERE thread_id = %s AND ns = %s AND NOT (checkpoint_id = ANY(%s))",
        [thread_id, ns, kept_ids],
    )
    report.writes_deleted += cursor.fetchone()[0]
    if dry_run:
        return
    cursor.execute(
        "DELETE FROM bw_checkpoint WHERE thread_id = %s AND ns = %s AND checkpoint_id = ANY(%s)",
        [thread_id, ns, dropped_ids],
    )
    cursor.execute(
        "DELETE FROM bw_checkpoint_write WHERE thread_id = %s AND ns = %s AND NOT (checkpoint_id = ANY(%s))",
        [thread_id, ns, kept_ids],
    )
    if doomed_blobs:
        cursor.execute("DELETE FROM bw_checkpoint_blob WHERE id = ANY(%s)", [doomed_blobs])


def drop_thread_storage(
    thread_id: str, *, using: str = "default", dry_run: bool = False
) -> PruneReport:
    """Delete all checkpoints, writes, blobs and stored run events of a finished thread
    (the thread, its runs and the review audit stay)."""
    report = PruneReport(thread_id)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        for table, attr in (
            ("bw_checkpoint", "checkpoints_deleted"),
            ("bw_checkpoint_write", "writes_deleted"),
            ("bw_checkpoint_blob", "blobs_deleted"),
        ):
            cursor.execute(f"SELECT count(*) FROM {table} WHERE thread_id = %s", [thread_id])
            setattr(report, attr, cursor.fetchone()[0])
            if not dry_run:
                cursor.execute(f"DELETE FROM {table} WHERE thread_id = %s", [thread_id])
        if not dry_run:
            cursor.execute("DELETE FROM bw_run_event WHERE thread_id = %s", [thread_id])
            cursor.execute(
                "UPDATE bw_thread SET metadata = metadata || jsonb_build_object('pruned_at', now()::text) WHERE id = %s",
                [thread_id],
            )
    return report


__all__ = ["PruneReport", "drop_thread_storage", "prune_thread"]
