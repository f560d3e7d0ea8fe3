"""Deadlines of review items: reminders before them, escalation and the default outcome at
them, and extensions by an operator.

`sweep` is idempotent and keeps no state of its own: everything it needs is on the items
in Postgres (`remind_at`/`reminded_at`, `due_at`, `escalated_at`, `overdue_at`), and each
item is handled in its own transaction with the same locks as a decision (the run, then
the item), re-checked after locking. So it can run in every worker at once, be stopped at
any point, and catch up after a restart. At an item's deadline:

- with an escalation group not yet used: the group may decide too, the claim is
  released, and the deadline moves one policy period later;
- else with the default outcome `reject`: the item becomes `expired` (a terminal state,
  never recorded as a decision) and the thread resumes with every action rejected by a
  message that says it expired; a question or a breakpoint, or a review whose tools do not
  allow rejecting, cannot be rejected, so its run is cancelled instead;
- else (`wait`): it is marked overdue once and keeps waiting.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from beamweaver_core.agent import HITL
from beamweaver_core.exceptions import BeamWeaverError, NotAReviewError
from beamweaver_core.models import Run
from beamweaver_core.runtime import service as runtime_service
from beamweaver_core.runtime.locks import run_and_thread
from beamweaver_core.users import User
from reviews import realtime
from reviews.models import AuditEvent, NotificationEvent, ReviewItem
from reviews.notifications import notify
from reviews.outcomes import Code, Outcome
from reviews.permissions import can_manage
from reviews.policies import DEFAULT_EXPIRY_MESSAGE

logger = logging.getLogger(__name__)

BATCH = 200
MAX_EXTENSION = timedelta(days=30)


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did."""

    reminded: int = 0
    escalated: int = 0
    expired: int = 0
    overdue: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "reminded": self.reminded,
            "escalated": self.escalated,
            "expired": self.expired,
            "overdue": self.overdue,
        }


def _audit(
    item: ReviewItem, action: str, message: str, *, actor: User | None = None, **extra: object
) -> None:
    source = "web" if actor is not None else "sweeper"
    AuditEvent.objects.about(item, action, message, actor=actor, source=source, **extra)


def sweep(now: datetime | None = None) -> SweepReport:
    """Send due reminders and handle passed deadlines (see the module docstring)."""
    now = now or timezone.now()
    reminded = sum(_remind(pk, now) for pk in _due_reminders(now))
    outcomes = [_deadline(pk, now) for pk in _due_deadlines(now)]
    return SweepReport(
        reminded=reminded,
        escalated=outcomes.count("escalated"),
        expired=outcomes.count("expired"),
        overdue=outcomes.count("overdue"),
    )


def _due_reminders(now: datetime) -> list[int]:
    return list(
        ReviewItem.objects.filter(
            status=ReviewItem.Status.PENDING, reminded_at__isnull=True, remind_at__lte=now
        )
        .order_by("remind_at")
        .values_list("pk", flat=True)[:BATCH]
    )


def _due_deadlines(now: datetime) -> list[int]:
    return list(
        ReviewItem.objects.filter(
            status=ReviewItem.Status.PENDING, overdue_at__isnull=True, due_at__lte=now
        )
        .order_by("due_at")
        .values_list("pk", flat=True)[:BATCH]
    )


def _remind(pk: int, now: datetime) -> int:
    with transaction.atomic():
        item = (
            ReviewItem.objects.select_for_update(skip_locked=True)
            .filter(
                pk=pk,
                status=ReviewItem.Status.PENDING,
                reminded_at__isnull=True,
                remind_at__lte=now,
            )
            .first()
        )
        if item is None:
            return 0
        item.reminded_at = now
        item.save(update_fields=["reminded_at", "updated_at"])
        due = f"{item.due_at:%Y-%m-%d %H:%M:%S} UTC" if item.due_at else "soon"
        _audit(item, AuditEvent.Action.REMINDED, f"Reminder sent: due {due}.")
        notify(NotificationEvent.REMINDER, item)
        realtime.announce(realtime.UPDATED, item.pk, item.thread_id)
        return 1


def _deadline(pk: int, now: datetime) -> str:
    run_id = ReviewItem.objects.filter(pk=pk).values_list("run_id", flat=True).first()
    if run_id is None:
        return ""
    try:
        with transaction.atomic():
            # The run, its thread, then the item (`runtime.locks`, as the decision
            # service): a decision racing the sweep waits for it, or is waited for, and
            # whoever comes second sees it.
            run, _ = run_and_thread(run_id)
            item = (
                ReviewItem.objects.select_for_update()
                .filter(pk=pk, status=ReviewItem.Status.PENDING, overdue_at__isnull=True)
                .first()
            )
            if item is None or item.run_id != run.pk or item.due_at is None or item.due_at > now:
                return ""
            if item.escalation_group_id is not None and item.escalated_at is None:
                return _escalate(item, now)
            if item.policy.get("on_expiry") == "reject":
                return _expire(item, run, now)
            item.overdue_at = now
            item.save(update_fields=["overdue_at", "updated_at"])
            _audit(item, AuditEvent.Action.OVERDUE, "The deadline passed; the item keeps waiting.")
            realtime.announce(realtime.UPDATED, item.pk, item.thread_id)
            return "overdue"
    except (BeamWeaverError, LookupError) as exc:
        # Nothing was changed (the transaction rolled back): the next sweep tries again.
        logger.warning("Deadline of review item %s not handled yet: %s", pk, exc)
        return ""


def _escalate(item: ReviewItem, now: datetime) -> str:
    period = item.policy.get("deadline_seconds")
    item.escalated_at = now
    item.due_at = now + timedelta(seconds=period) if period else None
    remind = item.policy.get("remind_before_seconds")
    item.remind_at = item.due_at - timedelta(seconds=remind) if item.due_at and remind else None
    item.reminded_at = None
    item.claimed_by, item.claimed_at = None, None
    item.save()
    group = item.escalation_group.name if item.escalation_group else "?"
    _audit(
        item,
        AuditEvent.Action.ESCALATED,
        f"Nobody decided in time: escalated to {group}"
        + (f", new deadline {item.due_at:%Y-%m-%d %H:%M:%S} UTC." if item.due_at else "."),
    )
    notify(NotificationEvent.ESCALATED, item)
    # New to the escalation group's inboxes: announced as created.
    realtime.announce(realtime.CREATED, item.pk, item.thread_id)
    return "escalated"


def _rejection(item: ReviewItem, message: str) -> dict[str, Any] | None:
    """The all-reject answer of a tool review, or `None` if it cannot be rejected."""
    if item.kind != ReviewItem.Kind.TOOL_REVIEW:
        return None
    try:
        review = HITL.from_value(item.payload, item.interrupt_id)
    except NotAReviewError:
        return None
    if any("reject" not in c.allowed_decisions for c in review.review_configs):
        return None
    return {"decisions": [{"type": "reject", "message": message}] * len(review.review_configs)}


def _expire(item: ReviewItem, run: Run, now: datetime) -> str:
    stated = item.policy.get("expiry_message") or DEFAULT_EXPIRY_MESSAGE
    message = (
        f"This review expired at {now:%Y-%m-%d %H:%M:%S} UTC without a human decision: {stated}"
    )
    answer = _rejection(item, message)
    item.status = ReviewItem.Status.EXPIRED
    item.expired_at = now
    item.status_reason = f"expired without a decision: {stated}"[:200]
    item.save(update_fields=["status", "status_reason", "expired_at", "updated_at"])
    if answer is not None:
        resume = runtime_service.resume_thread(item.thread_id, {item.interrupt_id: answer})
        what = f"the run resumes with a rejection (run {resume.pk})"
    else:
        runtime_service.cancel_run(run.pk)
        what = "it cannot be rejected, so the run was cancelled"
    _audit(
        item,
        AuditEvent.Action.EXPIRED,
        f"Expired at the deadline; {what}. Message to the model: {message}",
        decision=answer,
    )
    notify(NotificationEvent.EXPIRED, item)
    realtime.announce(realtime.EXPIRED, item.pk, item.thread_id)
    return "expired"


def extend(item_id: int, user: User, by: timedelta) -> Outcome:
    """Move the item's deadline `by` later (from now if it passed or there was none);
    managers only."""
    if not timedelta(0) < by <= MAX_EXTENSION:
        return Outcome(
            Code.INVALID, f"Extend by more than nothing and at most {MAX_EXTENSION.days} days."
        )
    with transaction.atomic():
        item = ReviewItem.objects.visible_to(user).select_for_update().filter(pk=item_id).first()
        if item is None:
            return Outcome(Code.NOT_FOUND, "No such review item.")
        if not can_manage(user):
            return Outcome(Code.NOT_ALLOWED, "Only a manager can extend a deadline.", item)
        if not item.is_pending:
            message = f"This item is {item.status}; its deadline no longer matters."
            return Outcome(Code.GONE, message, item)
        now = timezone.now()
        before = item.due_at
        item.due_at = max(item.due_at or now, now) + by
        remind = item.policy.get("remind_before_seconds")
        item.remind_at = item.due_at - timedelta(seconds=remind) if remind else None
        item.reminded_at = None if item.remind_at and item.remind_at > now else item.reminded_at
        item.overdue_at = None
        item.save()
        due = f"{item.due_at:%Y-%m-%d %H:%M:%S} UTC"
        if before:
            message = f"Deadline extended from {before:%Y-%m-%d %H:%M:%S} UTC to {due}."
        else:
            message = f"Deadline set to {due} (the item had none)."
        _audit(item, AuditEvent.Action.EXTENDED, message, actor=user)
        realtime.announce(realtime.UPDATED, item.pk, item.thread_id)
        return Outcome(Code.EXTENDED, message, item)


__all__ = ["MAX_EXTENSION", "SweepReport", "extend", "sweep"]
