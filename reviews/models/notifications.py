"""Notifications waiting to go out (the outbox) and what each reviewer wants to receive.

An outbox row is written in the same transaction as the change it announces, so a
notification is never lost and never sent for a change that rolled back; the sweeper
sends due rows and retries failures with exponential backoff (see
`reviews.notifications.outbox`).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from reviews.models.items import ReviewItem


class NotificationEvent(models.TextChoices):
    """What a notification announces."""

    CREATED = "review.created", "A new item you may review"
    ASSIGNED = "review.assigned", "An item was assigned to you"
    REMINDER = "review.reminder", "An item's deadline is near"
    ESCALATED = "review.escalated", "An item was escalated to your group"
    EXPIRED = "review.expired", "An item expired"
    DECIDED = "review.decided", "An item was decided"


def default_email_events() -> list[str]:
    """Email by default only for what is addressed to you or running late."""
    return [
        NotificationEvent.ASSIGNED,
        NotificationEvent.REMINDER,
        NotificationEvent.ESCALATED,
        NotificationEvent.EXPIRED,
    ]


class NotificationPreference(models.Model):
    """One reviewer's choices (absent: email on, for `default_email_events`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_notifications"
    )
    email_enabled = models.BooleanField(default=True)
    email_events = ArrayField(
        models.CharField(max_length=32, choices=NotificationEvent),
        default=default_email_events,
        blank=True,
    )

    class Meta:
        db_table = "bw_review_notification_preference"

    def __str__(self) -> str:
        return f"notification preferences of {self.user}"


class OutboxMessage(models.Model):
    """One notification to deliver through one channel to one target."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        DEAD = "dead", "Gave up"

    channel = models.CharField(max_length=32)
    target = models.CharField(max_length=500, help_text="An email address, a webhook name.")
    event = models.CharField(max_length=32, choices=NotificationEvent)
    item = models.ForeignKey(
        ReviewItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    payload = models.JSONField()
    status = models.CharField(max_length=8, choices=Status, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "bw_review_outbox"
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(status="pending"),
                name="bw_review_outbox_due_idx",
            )
        ]
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.event} via {self.channel} to {self.target} ({self.status})"


__all__ = ["NotificationEvent", "NotificationPreference", "OutboxMessage", "default_email_events"]
