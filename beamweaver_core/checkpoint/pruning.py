"""Retention for `PostgresCheckpointer` storage, without breaking any resumable thread.

Keeping a checkpoint keeps everything it needs: its pending writes, and the blob versions
its channel values are rebuilt from (for a list stored as appended deltas, the whole chain
back to its snapshot). Threads with a queued or running run are left alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import connections, transaction

from beamweaver_core.exceptions import ThreadBusyError

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper


@dataclass
class PruneReport:
    thread_id: str
    checkpoints_deleted: int = 0
    writes_deleted: int = 0
    blobs_deleted: int = 0
    checkpoints_kept: int = 0
    namespaces: list[str] = field(default_factory=list)


def busy_message(thread_id: str) -> str:
    """Why retention leaves a thread alone."""
    return f"Thread {thread_id!r} has a queued or running run; prune it later."


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
            raise ThreadBusyError(busy_message(thread_id))
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


@dataclass(frozen=True)
class Chunk:
    """What retention has to do in one slice of the threads (found without locks)."""

    prune: list[str]
    """Threads with a namespace holding more checkpoints than are kept."""
    drop: list[str]
    """Finished threads older than the cut-off that still have checkpoint storage."""
    busy: list[str]
    """Threads of the slice with a queued or running run (left alone)."""


_PRUNABLE = (
    "SELECT DISTINCT thread_id FROM bw_checkpoint WHERE thread_id = ANY(%s) "
    "GROUP BY thread_id, ns HAVING count(*) > %s"
)
_DROPPABLE = """
SELECT t.id FROM bw_thread t
 WHERE t.id = ANY(%s) AND t.status = ANY(%s) AND t.updated_at < %s
   AND (EXISTS (SELECT 1 FROM bw_checkpoint c WHERE c.thread_id = t.id)
        OR EXISTS (SELECT 1 FROM bw_checkpoint_blob b WHERE b.thread_id = t.id)
        OR EXISTS (SELECT 1 FROM bw_checkpoint_write w WHERE w.thread_id = t.id)
        OR EXISTS (SELECT 1 FROM bw_run_event e WHERE e.thread_id = t.id))
"""
_BUSY = (
    "SELECT DISTINCT thread_id FROM bw_run WHERE thread_id = ANY(%s) "
    "AND status IN ('queued', 'running')"
)


def chunks(
    keep: int,
    *,
    finished: Sequence[str] = (),
    cutoff: datetime | None = None,
    thread_id: str | None = None,
    size: int = 1000,
    using: str = "default",
) -> Iterator[Chunk]:
    """The threads in id order, `size` at a time, each slice with the threads retention
    must prune (more than `keep` checkpoints in a namespace) or drop (status in
    `finished`, not updated since `cutoff`, storage left), by read-only queries over
    the indexes: a run over a million threads with nothing to do takes no lock and
    writes nothing, and costs a few index probes per thousand threads."""
    after = ""
    with connections[using].cursor() as cursor:
        while True:
            if thread_id is not None:
                ids = [thread_id] if after == "" else []
            else:
                cursor.execute(
                    "SELECT id FROM bw_thread WHERE id > %s ORDER BY id LIMIT %s", [after, size]
                )
                ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return
            after = ids[-1]
            drop: list[str] = []
            if cutoff is not None:
                cursor.execute(_DROPPABLE, [ids, list(finished), cutoff])
                drop = sorted(row[0] for row in cursor.fetchall())
            cursor.execute(_PRUNABLE, [ids, keep])
            dropping = set(drop)
            prune = sorted(row[0] for row in cursor.fetchall() if row[0] not in dropping)
            cursor.execute(_BUSY, [ids])
            busy = sorted(row[0] for row in cursor.fetchall() if row[0] not in dropping)
            yield Chunk(prune, drop, busy)


__all__ = ["Chunk", "PruneReport", "busy_message", "chunks", "drop_thread_storage", "prune_thread"]
