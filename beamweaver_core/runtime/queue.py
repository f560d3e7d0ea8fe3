"""The run queue in Postgres: claim, lease, heartbeat, finish, sweep.

Every state change is one SQL statement conditional on what the caller believes (the run's
id, status and fencing token), so a worker that lost its lease can neither heartbeat nor
finish the run: its statements match no row. Claiming is a single
`UPDATE ... WHERE id = (SELECT ... FOR NO KEY UPDATE SKIP LOCKED)`; the same transaction then
reads the head of the run's thread (`Claim.head`), so the run's first step needs no read
of its own: a run on a worker commits once per step, reads included.

Why the head cannot be stale: it is read after the claim's `UPDATE` took the run (and its
thread row), in a new snapshot. Every earlier writer to the thread has stopped for good by
then: a run only becomes claimable once no run of its thread is running, and a previous
owner of this run lost it when the sweeper re-queued it (that `UPDATE` waited for the
owner's in-flight fenced write, and every later write of the owner is refused by its
fence). From the claim on, only this run's fenced writes can add a checkpoint.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import DatabaseError, connections, transaction
from django.utils import timezone

from beamweaver_core.checkpoint.postgres import HeadRead, PostgresCheckpointer
from beamweaver_core.models import Run, Thread
from beamweaver_core.observability import instruments
from beamweaver_core.runtime.wakeup import notify_run_queued

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Claim:
    """A run a worker now owns, and the fencing token its writes must carry."""

    run_id: UUID
    thread_id: str
    graph: str
    kind: str
    input: Any
    token: int
    attempts: int
    lease_expires_at: datetime
    context: Any = None
    """The graph's `runtime.context` for this run (a JSON object, or `None`)."""
    trace_context: Any = None
    """What the run keeps of the request that queued it (`observability.runs`)."""
    options: Any = None
    """How to run beyond the input (`runtime.options`; a JSON object, or `None`)."""
    head: HeadRead | None = None
    """The thread's head, read in the claim's transaction (`None`: not read)."""


# One statement (atomic by itself, no BEGIN/COMMIT round trips): claim the run and mark
# its thread running. The run and its thread are both locked SKIP LOCKED: a run whose
# thread a transaction holds (a resume being queued, a cancel) is taken at the next poll,
# and the claim never waits for a thread lock while holding a run (no deadlock with
# `resume_thread`, which locks the thread and then its queued run). The lock is
# `FOR NO KEY UPDATE` (what the UPDATEs below take anyway: no key changes): a row that
# merely refers to the run or its thread (a foreign key's check, `FOR KEY SHARE`, taken
# when the referring row commits) does not hide the run from the claim; `FOR UPDATE`
# made a worker woken by a decision skip its resume run until the next poll whenever a
# row referring to it committed at that moment.
_CLAIM = """
WITH claimed AS (
UPDATE bw_run AS r
   SET status = 'running',
       lease_owner = %s,
       lease_expires_at = now() + make_interval(secs => %s),
       fencing_token = r.fencing_token + 1,
       attempts = r.attempts + 1,
       started_at = coalesce(r.started_at, now()),
       updated_at = now()
 WHERE r.id = (
        SELECT q.id FROM bw_run AS q JOIN bw_thread AS th ON th.id = q.thread_id
         WHERE q.status = 'queued' {pick}
           AND NOT EXISTS (SELECT 1 FROM bw_run AS x
                            WHERE x.thread_id = q.thread_id AND x.status = 'running')
         ORDER BY q.created_at, q.id
         LIMIT 1
           FOR NO KEY UPDATE OF q, th SKIP LOCKED)
RETURNING r.id, r.thread_id, r.graph, r.kind, r.input, r.fencing_token, r.attempts, r.lease_expires_at,
          r.context, r.trace_context, r.options
), running AS (
UPDATE bw_thread AS t SET status = 'running', updated_at = now()
  FROM claimed WHERE t.id = claimed.thread_id
)
SELECT * FROM claimed
"""


def claim_next_run(worker: str, lease_seconds: float, using: str = "default") -> Claim | None:
    """Take the oldest queued run whose thread has no running run, or `None`."""
    return _claim(_CLAIM.format(pick=""), [worker, lease_seconds], using)


def claim_run(
    run_id: Any, worker: str, lease_seconds: float, using: str = "default"
) -> Claim | None:
    """Take this queued run (e.g. to execute it in the calling process), or `None`."""
    return _claim(_CLAIM.format(pick="AND q.id = %s"), [worker, lease_seconds, run_id], using)


def _claim(sql: str, params: list[Any], using: str) -> Claim | None:
    with transaction.atomic(using=using):
        with connections[using].cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        head = _read_head(row[1], using)
    payload, context, kept, options = (
        json.loads(value) if isinstance(value, str) else value
        for value in (row[4], row[8], row[9], row[10])
    )
    return Claim(
        run_id=row[0] if isinstance(row[0], UUID) else UUID(str(row[0])),
        thread_id=row[1],
        graph=row[2],
        kind=row[3],
        input=payload,
        token=row[5],
        attempts=row[6],
        lease_expires_at=row[7],
        context=context,
        trace_context=kept,
        options=options,
        head=head,
    )


def _read_head(thread_id: str, using: str) -> HeadRead | None:
    """The head of the claimed run's thread, in the claim's transaction. A head that cannot
    be decoded is left for the run to read (and fail on, recording why) rather than
    rolling the claim back and leaving the run queued for every worker to trip over."""
    try:
        return HeadRead(thread_id, PostgresCheckpointer(using).load(thread_id))
    except DatabaseError:
        raise
    except Exception:
        logger.exception("Could not read the head of thread %r with its claim", thread_id)
        return None


def extend_lease(claim: Claim, lease_seconds: float, using: str = "default") -> bool:
    """Heartbeat: push the lease forward; `False` means the run is no longer ours."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "UPDATE bw_run SET lease_expires_at = now() + make_interval(secs => %s), updated_at = now() "
            "WHERE id = %s AND fencing_token = %s AND status = 'running'",
            [lease_seconds, claim.run_id, claim.token],
        )
        updated: int = cursor.rowcount
        return updated == 1


# The run's outcome, if the run is still ours, and its thread's status, in one statement.
# The thread's row is updated only through the run's returned row, so it is locked after
# the run, in `runtime.locks`' order (as the claim marks the thread running), and not at
# all for a run that is no longer ours.
_FINISH = """
WITH finished AS (
UPDATE bw_run SET status = %s, result = %s, error = %s, finished_at = now(),
       lease_owner = '', lease_expires_at = NULL, updated_at = now()
 WHERE id = %s AND fencing_token = %s AND status = 'running'
RETURNING *
), ended AS (
UPDATE bw_thread AS t SET status = %s, updated_at = %s
  FROM finished WHERE t.id = finished.thread_id
)
SELECT * FROM finished
"""

_THREAD_STATUS = {
    Run.Status.INTERRUPTED: Thread.Status.INTERRUPTED,
    Run.Status.SUCCEEDED: Thread.Status.COMPLETED,
    Run.Status.FAILED: Thread.Status.FAILED,
}
"""A thread's status once its run ended with each outcome (`finish_run`)."""


def finish_run(
    claim: Claim,
    status: str,
    *,
    result: Any = None,
    error: str = "",
    using: str = "default",
) -> Run | None:
    """Record the run's outcome (`status`: interrupted, succeeded or failed) and its
    thread's status (`_THREAD_STATUS`) if the run is still ours; the updated run if it was
    (read back by the same statement), else `None`. The thread's row stays locked until
    the caller's transaction ends."""
    rows = Run.objects.using(using).raw(
        _FINISH,
        [
            status,
            None if result is None else json.dumps(result, ensure_ascii=False),
            error,
            claim.run_id,
            claim.token,
            _THREAD_STATUS[Run.Status(status)],
            timezone.now(),
        ],
    )
    return next(iter(rows), None)


def release_run(claim: Claim, using: str = "default") -> bool:
    """Give a run back to the queue (graceful shutdown before it finished)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "UPDATE bw_run SET status = 'queued', lease_owner = '', lease_expires_at = NULL, "
            "updated_at = now() WHERE id = %s AND fencing_token = %s AND status = 'running'",
            [claim.run_id, claim.token],
        )
        updated: int = cursor.rowcount
        return updated == 1


# Queue the thread's oldest waiting run, unless a run of the thread is queued already.
# Callers hold the thread's row lock (taken by the statement that recorded the end of a
# run, or by a cancel), so two promoters of one thread are serialized and the second sees
# what the first queued.
_PROMOTE = """
UPDATE bw_run SET status = 'queued', updated_at = now()
 WHERE id = (SELECT w.id FROM bw_run AS w WHERE w.thread_id = %s AND w.status = 'waiting'
              ORDER BY w.created_at, w.id LIMIT 1)
   AND NOT EXISTS (SELECT 1 FROM bw_run AS q WHERE q.thread_id = %s AND q.status = 'queued')
RETURNING id
"""


def promote_waiting(thread_id: str, using: str = "default") -> UUID | None:
    """Queue the thread's next waiting run (in the caller's transaction, which holds the
    thread's row lock); its id, or `None`. Workers are told once the transaction commits."""
    with connections[using].cursor() as cursor:
        cursor.execute(_PROMOTE, [thread_id, thread_id])
        row = cursor.fetchone()
    if row is None:
        return None
    run_id: UUID = row[0] if isinstance(row[0], UUID) else UUID(str(row[0]))
    transaction.on_commit(lambda: notify_run_queued(run_id), using=using)
    return run_id


def promote_stalled(using: str = "default") -> list[UUID]:
    """Queue the next waiting run of every thread that has no queued or running run (a
    run that ended without recording its outcome, e.g. failed by the sweeper, promotes no
    successor itself)."""
    promoted: list[UUID] = []
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT w.thread_id FROM bw_run AS w WHERE w.status = 'waiting' "
            "AND NOT EXISTS (SELECT 1 FROM bw_run AS x WHERE x.thread_id = w.thread_id "
            "AND x.status IN ('queued', 'running'))"
        )
        stalled = [row[0] for row in cursor.fetchall()]
    for thread_id in stalled:
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM bw_thread WHERE id = %s FOR UPDATE SKIP LOCKED", [thread_id]
            )
            if cursor.fetchone() is None:
                continue
            run_id = promote_waiting(thread_id, using)
            if run_id is not None:
                promoted.append(run_id)
    return promoted


def sweep_expired_leases(
    max_attempts: int, using: str = "default"
) -> tuple[list[UUID], list[UUID]]:
    """Re-queue running runs whose lease expired; fail those out of attempts.

    Returns `(requeued, failed)` run ids. Bumping nothing here is deliberate: the next
    claim bumps the fencing token, which is what locks the old owner out.
    """
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute(
            "UPDATE bw_run SET status = CASE WHEN attempts >= %s THEN 'failed' ELSE 'queued' END, "
            "error = CASE WHEN attempts >= %s THEN 'The run lost its worker ' || attempts || "
            "' times (lease expired); giving up.' ELSE error END, "
            "finished_at = CASE WHEN attempts >= %s THEN now() ELSE finished_at END, "
            "lease_owner = '', lease_expires_at = NULL, updated_at = now() "
            "WHERE status = 'running' AND lease_expires_at < now() "
            "RETURNING id, status",
            [max_attempts, max_attempts, max_attempts],
        )
        rows = cursor.fetchall()
    requeued = [r[0] for r in rows if r[1] == "queued"]
    failed = [r[0] for r in rows if r[1] == "failed"]
    instruments.LEASE_EXPIRIES.labels("requeued").inc(len(requeued))
    instruments.LEASE_EXPIRIES.labels("failed").inc(len(failed))
    instruments.RUN_REQUEUES.labels("lease_expired").inc(len(requeued))
    if requeued or failed:
        logger.warning(
            "Sweeper: re-queued %d run(s), failed %d run(s) with expired leases",
            len(requeued),
            len(failed),
        )
    return requeued, failed


__all__ = [
    "Claim",
    "claim_next_run",
    "extend_lease",
    "finish_run",
    "promote_stalled",
    "promote_waiting",
    "release_run",
    "sweep_expired_leases",
]
