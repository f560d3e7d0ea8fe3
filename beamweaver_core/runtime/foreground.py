"""Runs finished from a command: in the command's own process, through the same durable
claim a worker takes (lease, fencing token, heartbeat), or by waiting for a worker.

`manage.py run_graph` runs its run here; `manage.py resume` runs the resume it queued
here by default, or waits for a worker (`--wait`).
"""

from __future__ import annotations

import time
from typing import Any

from beamweaver_core.models import Run
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_run
from beamweaver_core.runtime.worker import WorkerSettings, heartbeating

UNFINISHED = (Run.Status.QUEUED, Run.Status.RUNNING)
POLL_SECONDS = 0.2


def run_here(run_id: Any, *, owner: str) -> bool:
    """Claim the queued run and execute it in this process to its next pause or end, under
    a heartbeated lease as a worker would; `False` if it could not be claimed (it is not
    queued, a worker has it, or another run of its thread is running)."""
    conf = WorkerSettings.from_django()
    claim = claim_run(run_id, owner, conf.lease_seconds)
    if claim is None:
        return False
    with heartbeating(claim, conf):
        execute(claim)
    return True


def run_to_pause(run_id: Any, *, owner: str, timeout: float) -> Run:
    """Run the queued run here (`run_here`); while a worker or another run of its thread
    holds it, wait and try again. The run once it is finished or paused, or as it is after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        run = Run.objects.get(pk=run_id)
        if run.status == Run.Status.QUEUED and run_here(run_id, owner=owner):
            continue
        if run.status not in UNFINISHED or time.monotonic() >= deadline:
            return run
        time.sleep(POLL_SECONDS)


def wait_for_run(run_id: Any, *, timeout: float) -> Run:
    """The run once a worker has run it to its next pause or end, or as it is after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        run = Run.objects.get(pk=run_id)
        if run.status not in UNFINISHED or time.monotonic() >= deadline:
            return run
        time.sleep(POLL_SECONDS)


def run_outcome(run: Run) -> dict[str, Any]:
    """The run as the commands print it (JSON-ready)."""
    return {
        "run_id": str(run.id),
        "thread_id": run.thread_id,
        "graph": run.graph,
        "status": run.status,
        "context": run.context,
        "result": run.result,
        "error": run.error or None,
    }


__all__ = ["run_here", "run_outcome", "run_to_pause", "wait_for_run"]
