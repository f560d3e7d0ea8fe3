"""Rolling a thread back to where it was before a run (the protocol's `rollback`).

The run is cancelled (if it is still active) and the thread's state is put back to the
checkpoint the run started from, as a new checkpoint (`update_state`), so the thread's
history still shows what happened and the main line never forks. The run itself stays,
cancelled, with what it did in its events: runs are the audit trail.

Only a run started from input can be rolled back: a resume carries decisions that the
decision service recorded and audited, and a decision is not undone.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.models import Run, Thread
from beamweaver_core.runtime import registry
from beamweaver_core.runtime.service import ACTIVE, RunStateError, cancel_run

# The checkpoint before the run's first checkpoint of the thread's root namespace.
_START = """
SELECT parent_id FROM bw_checkpoint
 WHERE thread_id = %s AND ns = '' AND (metadata::jsonb ->> 'run_id') = %s
 ORDER BY seq LIMIT 1
"""


def rollback_run(run_id: Any, *, user: Any = None) -> Run:
    """Cancel the run if it is active and restore its thread's state to before it."""
    run = Run.objects.get(id=run_id)
    if run.kind != Run.Kind.START:
        raise RunStateError(
            f"Run {run_id} resumes the thread with recorded decisions, which are not undone; "
            "cancel it instead of rolling it back."
        )
    if run.status in (*ACTIVE, Run.Status.WAITING, Run.Status.INTERRUPTED):
        run = cancel_run(run_id, user=user)
    with transaction.atomic():
        Thread.objects.select_for_update().filter(id=run.thread_id).first()
        if Run.objects.filter(thread_id=run.thread_id, status__in=ACTIVE).exists():
            raise RunStateError(
                f"Thread {run.thread_id!r} has another active run; roll back before starting it."
            )
        with connection.cursor() as cursor:
            cursor.execute(_START, [run.thread_id, str(run.id)])
            row = cursor.fetchone()
        if row is None:
            return run  # the run wrote nothing
        if row[0] is None:
            _drop_storage(run.thread_id)
            return run
        graph = registry.compiled_graph(run.graph, PostgresCheckpointer())
        config = {"configurable": {"thread_id": run.thread_id, "checkpoint_id": row[0]}}
        # A start run superseded the questions pending before it (their review items are
        # cancelled), so they are not asked again: the state comes back without them.
        asked = bool(graph.get_state(config).interrupts)
        graph.update_state(config, {}, as_node="__end__" if asked else None)
    return run


def _drop_storage(thread_id: str) -> None:
    with connection.cursor() as cursor:
        for table in ("bw_checkpoint", "bw_checkpoint_write", "bw_checkpoint_blob"):
            cursor.execute(f"DELETE FROM {table} WHERE thread_id = %s", [thread_id])


__all__ = ["rollback_run"]
