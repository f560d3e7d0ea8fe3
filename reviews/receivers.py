"""Review items follow the runtime: created when a run pauses, cancelled when their
interrupt is no longer pending.

Both receivers run inside the runtime's transaction (the one that records the pause or the
end of the run), so the inbox and the checkpoint can never disagree about what is pending.
A new item gets its review policy (`reviews.policies`) and the user who started the run,
and its "review needed" notifications are queued in the same transaction.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from django.db.models import Q
from django.utils import timezone

from beamweaver_core.agent import HITL
from beamweaver_core.exceptions import NotAReviewError
from beamweaver_core.models import Run, Thread
from beamweaver_core.types import Interrupt
from reviews import payloads, policies, realtime, summaries
from reviews.models import AuditEvent, NotificationEvent, ReviewItem
from reviews.notifications import notify

logger = logging.getLogger(__name__)

SUPERSEDED = "superseded: the run moved on without this answer"
RUN_CANCELLED = "the run was cancelled"
RUN_COMPLETED = "the run completed without this answer"
STATE_WRITTEN = "the thread's state was written past this question"


def classify(interrupt: Interrupt) -> tuple[str, list[str]]:
    """The item kind of an interrupt, and the tool names it reviews."""
    if interrupt.timing is not None:
        return ReviewItem.Kind.BREAKPOINT, []
    try:
        review = HITL.from_interrupt(interrupt)
    except NotAReviewError:
        return ReviewItem.Kind.INTERRUPT, []
    return ReviewItem.Kind.TOOL_REVIEW, sorted({a.name for a in review.action_requests})


def on_run_paused(
    sender: object, run: Run, interrupts: Sequence[Interrupt], **kwargs: object
) -> None:
    """One pending review item per interrupt (idempotent); stale ones are cancelled.

    One locking read finds both the thread's pending items and the items of these
    interrupts (in any status)."""
    current = {i.id for i in interrupts}
    items = list(
        ReviewItem.objects.select_for_update().filter(
            Q(status=ReviewItem.Status.PENDING) | Q(interrupt_id__in=current),
            thread_id=run.thread_id,
        )
    )
    _cancel([i for i in items if i.is_pending and i.interrupt_id not in current], reason=SUPERSEDED)
    existing = {i.interrupt_id: i for i in items if i.interrupt_id in current}
    for interrupt in interrupts:
        _upsert(run, interrupt, existing.get(interrupt.id))


def on_run_finished(sender: object, run: Run, **kwargs: object) -> None:
    """A cancelled run cancels its thread's pending items; a completed one supersedes them.

    A failed run leaves them alone: the thread still waits on its interrupts, and a
    re-queued run or a decision can continue it.
    """
    if run.status == Run.Status.CANCELLED:
        _cancel_pending(run, reason=RUN_CANCELLED)
    elif run.status == Run.Status.SUCCEEDED:
        _cancel_pending(run, reason=RUN_COMPLETED)


def on_state_written(
    sender: object, thread: Thread, interrupts: Sequence[Interrupt], user: object, **kwargs: object
) -> None:
    """A state written outside a run (`update_state` as `__end__`) dropped the questions
    not in `interrupts`: their pending items are cancelled, saying who wrote it."""
    current = {i.id for i in interrupts}
    stale = ReviewItem.objects.select_for_update().filter(
        thread_id=thread.id, status=ReviewItem.Status.PENDING
    )
    name = getattr(user, "get_username", None)
    reason = f"{STATE_WRITTEN} by {name()}" if callable(name) else STATE_WRITTEN
    _cancel([i for i in stale if i.interrupt_id not in current], reason=reason[:200])


def _cancel_pending(run: Run, *, reason: str) -> None:
    stale = ReviewItem.objects.select_for_update().filter(
        thread_id=run.thread_id, status=ReviewItem.Status.PENDING
    )
    _cancel(list(stale), reason=reason)


def _cancel(stale: list[ReviewItem], *, reason: str) -> None:
    now = timezone.now()
    for item in stale:
        item.status = ReviewItem.Status.CANCELLED
        item.status_reason = reason
        item.save(update_fields=["status", "status_reason", "updated_at"])
        AuditEvent.objects.about(
            item, AuditEvent.Action.CANCELLED, reason, source="runtime", at=now, summary=""
        )
        realtime.announce(realtime.CANCELLED, item.pk, item.thread_id)


def _upsert(run: Run, interrupt: Interrupt, item: ReviewItem | None) -> None:
    try:
        text = payloads.canonical(interrupt.value)
    except ValueError:
        logger.exception("Interrupt %s of thread %s is not JSON", interrupt.id, run.thread_id)
        text = payloads.canonical(repr(interrupt.value))
    kind, tools = classify(interrupt)
    fields = {
        "run": run,
        "graph": run.graph,
        "node": interrupt.node or "",
        "ns": interrupt.ns or "",
        "timing": interrupt.timing or "",
        "kind": kind,
        "payload_json": text,
        "digest": payloads.digest(text),
        "search_text": payloads.searchable(json.loads(text)),
        "tool_names": tools,
        "summary": summaries.summarize(kind, json.loads(text)),
    }
    if item is None:
        item = ReviewItem(thread_id=run.thread_id, interrupt_id=interrupt.id, **fields)
        policy = policies.resolve(run.graph, tools)
        policies.apply(item, policy, now=item.created_at)
        item.requested_by_id = requester(run)
        # No savepoint: this transaction holds the run's row (its fenced outcome), so no
        # other writer records this thread's pause meanwhile, and the locking read above
        # found no item for this interrupt.
        item.save(force_insert=True)
        _audit(item, AuditEvent.Action.CREATED, f"Review policy: {policy.version}.")
        realtime.announce(realtime.CREATED, item.pk, item.thread_id)
        notify(NotificationEvent.CREATED, item)
        if item.assignee_id is not None:
            notify(NotificationEvent.ASSIGNED, item)
        return
    if item.status != ReviewItem.Status.PENDING:
        return
    changed = item.digest != fields["digest"]
    for name, value in fields.items():
        setattr(item, name, value)
    item.save()
    if changed:
        _audit(item, AuditEvent.Action.UPDATED, "The payload changed while the item was pending.")
        realtime.announce(realtime.UPDATED, item.pk, item.thread_id)


def requester(run: Run) -> int | None:
    """Who started the run from input (`Run.requester_id`)."""
    return run.requester_id()


def _audit(item: ReviewItem, action: str, message: str) -> None:
    AuditEvent.objects.about(
        item, action, message, source="runtime", summary=item.get_kind_display()
    )


__all__ = ["classify", "on_run_finished", "on_run_paused", "on_state_written", "requester"]
