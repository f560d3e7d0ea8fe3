"""Review policies kept in the database (edited in the admin): who reviews the calls of a
graph or a tool, and what happens when nobody does in time.

Policies in settings (`BEAMWEAVER["REVIEW_POLICIES"]`) are the defaults; a row here for
the same graph and tool overrides them (see `reviews.policies` for the resolution). Every
change of a row's content bumps its `version`, which review items and decisions record.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F
from django.db.models.signals import m2m_changed
from django.dispatch import receiver

MAX_APPROVALS = 10


class ReviewPolicy(models.Model):
    """Who reviews the items of a graph / tool, and their deadline."""

    class OnExpiry(models.TextChoices):
        WAIT = "wait", "Keep waiting"
        REJECT = "reject", "Reject with the expiry message"

    name = models.CharField(max_length=100, unique=True)
    graph = models.CharField(
        max_length=200, blank=True, default="", help_text="Registered graph; empty: every graph."
    )
    tool = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="Tool name; empty: every item (questions and breakpoints too).",
    )
    enabled = models.BooleanField(default=True)
    reviewer_groups = models.ManyToManyField(
        Group,
        blank=True,
        related_name="+",
        help_text="Members may see and decide; none (and no responders): every reviewer.",
    )
    allowed_responders = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="+",
        help_text="These users may decide too, whatever their groups.",
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    required_approvals = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_APPROVALS)],
        help_text="Distinct reviewers who must approve (the run's requester never counts).",
    )
    deadline = models.DurationField(null=True, blank=True, help_text="e.g. 04:00:00; empty: none.")
    remind_before = models.DurationField(
        null=True, blank=True, help_text="Remind this long before the deadline."
    )
    escalate_to = models.ForeignKey(
        Group,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="At the deadline this group may decide too, for one more deadline period.",
    )
    on_expiry = models.CharField(max_length=8, choices=OnExpiry, default=OnExpiry.WAIT)
    expiry_message = models.TextField(
        blank=True, default="", help_text="Sent to the model when the item expires (reject)."
    )
    version = models.PositiveIntegerField(default=1, editable=False)
    fingerprint = models.CharField(max_length=64, blank=True, default="", editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "bw_review_policy"
        constraints = [
            models.UniqueConstraint(fields=["graph", "tool"], name="bw_review_policy_scope"),
        ]
        ordering = ["graph", "tool", "name"]
        verbose_name_plural = "review policies"

    def __str__(self) -> str:
        return f"{self.name} (v{self.version})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        self.refresh_version()

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.deadline is not None and self.deadline <= timedelta(0):
            errors["deadline"] = "The deadline must be positive."
        if self.remind_before is not None:
            if self.deadline is None:
                errors["remind_before"] = "A reminder needs a deadline."
            elif not timedelta(0) < self.remind_before < self.deadline:
                errors["remind_before"] = "Remind between zero and the deadline."
        if self.escalate_to_id is not None and self.deadline is None:
            errors["escalate_to"] = "Escalation happens at the deadline: set a deadline."
        if self.on_expiry == self.OnExpiry.REJECT and self.deadline is None:
            errors["on_expiry"] = "Rejecting on expiry needs a deadline."
        if errors:
            raise ValidationError(errors)

    def content(self) -> dict[str, Any]:
        """What the policy says (the part its version tracks)."""
        return {
            "graph": self.graph,
            "tool": self.tool,
            "enabled": self.enabled,
            "groups": sorted(self.reviewer_groups.values_list("name", flat=True)),
            "responders": sorted(u.get_username() for u in self.allowed_responders.all()),
            "assignee": self.assignee.get_username() if self.assignee else None,
            "approvals": self.required_approvals,
            "deadline": self.deadline.total_seconds() if self.deadline else None,
            "remind_before": self.remind_before.total_seconds() if self.remind_before else None,
            "escalate_to": self.escalate_to.name if self.escalate_to else None,
            "on_expiry": self.on_expiry,
            "expiry_message": self.expiry_message,
        }

    def refresh_version(self) -> None:
        """Bump `version` if the content changed since it was last versioned."""
        text = json.dumps(self.content(), sort_keys=True)
        fingerprint = hashlib.sha256(text.encode()).hexdigest()
        if fingerprint == self.fingerprint:
            return
        bump = F("version") + 1 if self.fingerprint else F("version")
        ReviewPolicy.objects.filter(pk=self.pk).update(version=bump, fingerprint=fingerprint)
        self.refresh_from_db(fields=["version", "fingerprint"])


@receiver(m2m_changed, sender=ReviewPolicy.reviewer_groups.through)
@receiver(m2m_changed, sender=ReviewPolicy.allowed_responders.through)
def _members_changed(
    sender: type[models.Model], instance: models.Model, action: str, **kwargs: object
) -> None:
    if action.startswith("post_") and isinstance(instance, ReviewPolicy):
        instance.refresh_version()


__all__ = ["MAX_APPROVALS", "ReviewPolicy"]
