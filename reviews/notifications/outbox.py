"""The notification outbox in Postgres: rows are queued with the change they announce and
delivered by the sweeper, each in its own transaction, with exponential backoff.

A row is locked (`FOR UPDATE SKIP LOCKED`) while it is sent, so several sweepers never
send it twice at once; a process that dies mid-send rolls back and the row is retried.
Delivery is therefore at least once: webhook receivers dedupe on the delivery id.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from beamweaver_core.conf import conf
from reviews.models import OutboxMessage, ReviewItem
from reviews.notifications.channels import DeliveryError, configured

logger = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 6 * 3600.0


@dataclass(frozen=True)
class DeliveryReport:
    """What one pass over the outbox did."""

    sent: int = 0
    retrying: int = 0
    dead: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"sent": self.sent, "retrying": self.retrying, "dead": self.dead}


def enqueue(
    channel: str, target: str, event: str, item: ReviewItem | None, payload: dict[str, Any]
) -> OutboxMessage:
    """Queue one message (in the caller's transaction)."""
    return OutboxMessage.objects.create(
        channel=channel, target=target[:500], event=event, item=item, payload=payload
    )


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failure: base, 2 x base, 4 x base, ... capped."""
    base = conf.notify_backoff_seconds
    return timedelta(seconds=min(base * 2 ** max(0, attempts - 1), MAX_BACKOFF_SECONDS))


def _next_due(now: datetime) -> OutboxMessage | None:
    return (
        OutboxMessage.objects.select_for_update(skip_locked=True)
        .filter(status=OutboxMessage.Status.PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at", "id")
        .first()
    )


def deliver_due(*, now: datetime | None = None, limit: int = 100) -> DeliveryReport:
    """Send up to `limit` due messages; failures are rescheduled or given up on."""
    now = now or timezone.now()
    max_attempts = conf.notify_max_attempts
    channels = configured()
    sent = retrying = dead = 0
    for _ in range(limit):
        with transaction.atomic():
            message = _next_due(now)
            if message is None:
                break
            message.attempts += 1
            channel = channels.get(message.channel)
            try:
                if channel is None:
                    raise DeliveryError(f"no channel named {message.channel!r} is configured")
                channel.send(message)
            except DeliveryError as exc:
                message.last_error = str(exc)[:2000]
                if message.attempts >= max_attempts or channel is None:
                    message.status = OutboxMessage.Status.DEAD
                    dead += 1
                    logger.error("Gave up on notification %s: %s", message.pk, exc)
                else:
                    message.next_attempt_at = now + backoff(message.attempts)
                    retrying += 1
                    logger.warning(
                        "Notification %s failed (attempt %d), retry at %s: %s",
                        message.pk,
                        message.attempts,
                        message.next_attempt_at.isoformat(),
                        exc,
                    )
            else:
                message.status = OutboxMessage.Status.SENT
                message.sent_at = timezone.now()
                message.last_error = ""
                sent += 1
            message.save()
    return DeliveryReport(sent=sent, retrying=retrying, dead=dead)


__all__ = ["DeliveryReport", "backoff", "deliver_due", "enqueue"]
