"""The append-only audit log: one row for everything that happened to a review item (and
to API tokens), its identifiers copied so the record outlives the item. Every write goes
through `AuditEvent.objects.about`."""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.db import models
from django.utils import timezone

from beamweaver_core.users import User
from reviews.models.items import ReviewItem


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def about(
        self,
        item: ReviewItem | None,
        action: str,
        message: str,
        *,
        actor: User | None = None,
        source: str,
        **extra: object,
    ) -> AuditEvent:
        """The one way to append an audit event: about `item` (None: no item) by `actor`
        (None: the system), the item's ids copied so it outlives it; `extra`: other fields."""
        fields: dict[str, Any] = {
            "actor": actor,
            "actor_name": actor.get_username() if actor is not None else "",
            "action": action,
            "item": item,
            "summary": action,
            "message": message,
            "source": source,
        }
        if item is not None:
            fields.update(
                item_ref=str(item.pk),
                thread_ref=item.thread_id,
                graph=item.graph,
                interrupt_id=item.interrupt_id,
                digest_current=item.digest,
            )
        return self.create(**{**fields, **extra})

    def update(self, **kwargs: object) -> NoReturn:
        raise TypeError("The audit log is append-only: audit events cannot be updated.")

    def delete(self) -> NoReturn:
        raise TypeError("The audit log is append-only: audit events cannot be deleted.")


class AuditEvent(models.Model):
    """One thing that happened to a review item, kept forever: created, decided, refused
    attempts, cancellations. Identifiers are copied so the record outlives its item. API
    tokens issued and revoked are recorded here too (with no item)."""

    class Action(models.TextChoices):
        CREATED = "created"
        UPDATED = "updated"
        DECIDED = "decided"
        REFUSED = "refused"
        CANCELLED = "cancelled"
        EXPIRED = "expired"
        APPROVED = "approved", "Approved (one of several)"
        CLAIMED = "claimed"
        UNCLAIMED = "unclaimed"
        REASSIGNED = "reassigned"
        REMINDED = "reminded"
        ESCALATED = "escalated"
        OVERDUE = "overdue"
        EXTENDED = "extended"
        REVEALED = "revealed", "Revealed secrets"
        TOKEN_ISSUED = "token_issued", "Issued an API token"
        TOKEN_REVOKED = "token_revoked", "Revoked an API token"
        FORKED = "forked", "Replayed or forked a thread"

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="review_audit_events",
    )
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=16, choices=Action, db_index=True)
    item = models.ForeignKey(
        ReviewItem,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_events",
    )
    item_ref = models.CharField(max_length=40, blank=True, default="")
    thread_ref = models.CharField(max_length=255, blank=True, default="", db_index=True)
    graph = models.CharField(max_length=200, blank=True, default="")
    interrupt_id = models.CharField(max_length=255, blank=True, default="")
    digest_seen = models.CharField(max_length=64, blank=True, default="")
    digest_current = models.CharField(max_length=64, blank=True, default="")
    client_decision_id = models.CharField(max_length=64, blank=True, default="")
    summary = models.CharField(max_length=200, blank=True, default="")
    decision = models.JSONField(null=True, blank=True)
    diff = models.JSONField(null=True, blank=True)
    outcome = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="The outcome code of a decision request (reviews.outcomes.Code); empty for "
        "other events.",
    )
    message = models.TextField(blank=True, default="")
    note = models.TextField(blank=True, default="", help_text="The reviewer's private note.")
    source = models.CharField(max_length=8, blank=True, default="")

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        db_table = "bw_review_audit"
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action} {self.item_ref}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise TypeError("The audit log is append-only: audit events cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("The audit log is append-only: audit events cannot be deleted.")


__all__ = ["AuditEvent", "AuditEventQuerySet"]
