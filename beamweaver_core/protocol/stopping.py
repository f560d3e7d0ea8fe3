"""Cancelling or rolling back a run for a caller: the one place the protocol stops runs
(`runs.cancel`, the `interrupt` and `rollback` multitask strategies, a client leaving
with `on_disconnect="cancel"`), each under the inbox's rule of who may cancel a run
(`runtime.access.AccessPolicy.cancel_refusal`): cancelling also cancels the thread's
pending reviews."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from beamweaver_core.models import Run
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.runtime import service
from beamweaver_core.runtime.access import access
from beamweaver_core.runtime.rollback import rollback_run


def stop(user: Any, runs: Sequence[Run], action: str = "interrupt") -> None:
    """Cancel every one of `runs` (`action="rollback"`: roll them back) for `user`, or
    none: 403 for the first they may not cancel, before any is stopped, and a run that
    can no longer be stopped (`RunStateError`) undoes those stopped before it."""
    for run in runs:
        refusal = access().cancel_refusal(user, run)
        if refusal is not None:
            raise ProtocolError(403, f"Run {run.id}: {refusal}")
    with transaction.atomic():
        # Every run locked before any thread, oldest first: the runtime's order is runs,
        # then their thread (`runtime.locks`; a worker's step holds its run until the commit
        # checks its events' foreign key against the thread). Cancelling one run locks the
        # thread, so waiting for the next only then deadlocked with that run's worker.
        locking = Run.objects.select_for_update().filter(id__in=[run.id for run in runs])
        list(locking.order_by("created_at", "id").values_list("id", flat=True))
        # Newest first: cancelling a run promotes the one waiting behind it, which would
        # then be active while the older one is rolled back.
        for run in reversed(runs):
            service.cancel_run(run.id, user=user)
        if action == "rollback":
            for run in runs:
                if run.kind == Run.Kind.START:
                    rollback_run(run.id, user=user)


__all__ = ["stop"]
