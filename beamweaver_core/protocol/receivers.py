"""The protocol's receivers of the runtime's signals: a run's webhook once its outcome is
committed, and on the workers' tick the retries of failed webhooks and the deletion of
stateless runs' threads (`on_completion="delete"`) once their runs have ended."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol import webhooks
from beamweaver_core.protocol.deletion import delete_thread, kept_elsewhere
from beamweaver_core.protocol.lookup import ACTIVE
from beamweaver_core.protocol.models import ProtocolRun

logger = logging.getLogger(__name__)

STATELESS_GRACE = timedelta(seconds=60)
"""How long a finished stateless run's thread stays, so `runs.wait` and `join` callers
still read its values."""

ENDED = (Run.Status.SUCCEEDED, Run.Status.FAILED, Run.Status.CANCELLED)


def on_run_ended(sender: Any, run: Run, **kwargs: Any) -> None:
    """A run paused or ended (inside the runtime's transaction): send its webhook after
    the commit. While webhooks are off no run is sent one, so none is looked up (a
    statement fewer at every outcome)."""
    if (
        webhooks.enabled()
        and ProtocolRun.objects.filter(run_id=run.id).exclude(webhook="").exists()
    ):
        run_id = run.id
        transaction.on_commit(lambda: webhooks.deliver_soon(run_id))


def on_worker_tick(sender: Any, **kwargs: Any) -> None:
    webhooks.retry_due()
    delete_stateless_threads()


def delete_stateless_threads(limit: int = 20) -> int:
    """Delete the threads of stateless runs that ended `STATELESS_GRACE` ago; one that
    the inbox keeps records of (the run paused for a review) is kept. How many went."""
    due = ProtocolRun.objects.filter(
        stateless=True,
        on_completion="delete",
        run__status__in=ENDED,
        run__finished_at__lt=timezone.now() - STATELESS_GRACE,
    ).values_list("run__thread_id", flat=True)[:limit]
    deleted = 0
    for thread_id in list(due):
        with transaction.atomic():
            thread = Thread.objects.select_for_update(skip_locked=True).filter(id=thread_id).first()
            if thread is None or Run.objects.filter(thread=thread, status__in=ACTIVE).exists():
                continue
            if kept_elsewhere(thread):
                ProtocolRun.objects.filter(run__thread=thread).update(on_completion="keep")
                continue
            delete_thread(thread)
            deleted += 1
    return deleted


__all__ = ["delete_stateless_threads", "on_run_ended", "on_worker_tick"]
