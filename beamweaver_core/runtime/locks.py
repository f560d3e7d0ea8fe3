"""The one order in which rows are locked, so that no two transactions deadlock.

1. **Runs**, oldest first. A worker's step holds its run (`FOR SHARE`, its fenced write)
   until it commits, and its claim and outcome lock it first too.
2. **Their thread.** A worker's step takes the thread's row (`FOR KEY SHARE`) only as it
   commits (its events' foreign key), after its run; a pause updates it before its items.
3. **The thread's review items** (the inbox's: the pause that writes them, the decision
   that answers one, a cancel, a deadline, a state written as `__end__` that drops them).

A transaction locks what it needs in this order, and never waits for an earlier kind of
row while it holds a later one: a request that held the thread and then waited for a run
deadlocked with that run's worker (`tests/protocol/test_lock_order.py`), and a decision
that held its item and then waited for the thread deadlocked with a state write
(`tests/reviews/test_lock_order.py`). Callers that lock only a thread (and then its items)
follow the order by taking no run lock after it.

A run's lock comes with the lock of its thread's queued run (`run_and_thread`), which
`resume_thread` locks again when it joins answers to it: a decision that held its thread
and then waited for the queued resume deadlocked with a cancel of that resume, which held
it and waited for the thread (`tests/reviews/test_lock_order.py`).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, Subquery

from beamweaver_core.models import Run, Thread


def run_and_thread(run_id: Any) -> tuple[Run, Thread]:
    """The run and its thread's queued run (oldest first, one statement), then the thread,
    every row locked (`FOR UPDATE`) until the caller's transaction ends;
    `Run.DoesNotExist` for an unknown run."""
    its_thread = Subquery(Run.objects.filter(pk=run_id).values("thread_id"))
    locked = (
        Run.objects.select_for_update()
        .filter(Q(pk=run_id) | Q(thread_id=its_thread, status=Run.Status.QUEUED))
        .order_by("created_at", "id")
    )
    run = next((found for found in locked if str(found.pk) == str(run_id)), None)
    if run is None:
        raise Run.DoesNotExist(f"Run {run_id} does not exist.")
    thread = Thread.objects.select_for_update().get(id=run.thread_id)
    return run, thread


def queued_run_and_thread(thread_id: str) -> tuple[Run | None, Thread | None]:
    """The thread's queued run (if any), then the thread, both locked (`FOR UPDATE`) until
    the caller's transaction ends; `None` for what does not exist."""
    queued = Run.objects.select_for_update().filter(thread_id=thread_id, status=Run.Status.QUEUED)
    run = queued.first()
    thread = Thread.objects.select_for_update().filter(id=thread_id).first()
    return run, thread


__all__ = ["queued_run_and_thread", "run_and_thread"]
