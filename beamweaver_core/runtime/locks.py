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
"""

from __future__ import annotations

from typing import Any

from beamweaver_core.models import Run, Thread


def run_and_thread(run_id: Any) -> tuple[Run, Thread]:
    """The run, then its thread, both rows locked (`FOR UPDATE`) until the caller's
    transaction ends; `Run.DoesNotExist` for an unknown run."""
    run = Run.objects.select_for_update().get(pk=run_id)
    thread = Thread.objects.select_for_update().get(id=run.thread_id)
    return run, thread


__all__ = ["run_and_thread"]
