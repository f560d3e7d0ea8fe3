"""The review inbox's storage: one review item per pending interrupt, the approvals and the
decision made on it, and who is looking at it (the audit log: `reviews.models.audit`).

Review items are written by the runtime's `run_paused` / `run_finished` signals in the same
transaction that records the pause (see `reviews.receivers`), so an item exists if and only if
its interrupt was committed; the review policy that applies is copied onto the item then
(`reviews.policies`). Approvals and decisions are written only by `reviews.services.decide`.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from beamweaver_core.models import Run, Thread
from beamweaver_core.users import AnyUser
from reviews import roles


class ReviewItemQuerySet(models.QuerySet["ReviewItem"]):
    def visible_to(self, user: AnyUser | None) -> ReviewItemQuerySet:
        """The items `user` may see (see `reviews.roles.visible_items`)."""
        return roles.visible_items(user, self)

    def pending(self) -> ReviewItemQuerySet:
        return self.filter(status=ReviewItem.Status.PENDING)


class ReviewItem(models.Model):
    """One interrupt of a paused thread, waiting for (or given) a human answer."""

    class Kind(models.TextChoices):
        TOOL_REVIEW = "tool_review", "Tool review"
        INTERRUPT = "interrupt", "Question"
        BREAKPOINT = "breakpoint", "Breakpoint"

    class Status(models.TextChoices):
        PENDING = "pending"
        DECIDED = "decided"
        EXPIRED = "expired"
        CANCELLED = "cancelled"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="review_items")
    run = models.ForeignKey(
        Run,
        on_delete=models.CASCADE,
        related_name="review_items",
        help_text="The latest run that paused on this interrupt.",
    )
    graph = models.CharField(max_length=200, db_index=True)
    interrupt_id = models.CharField(max_length=255)
    node = models.CharField(max_length=255, blank=True, default="")
    ns = models.TextField(blank=True, default="")
    timing = models.CharField(max_length=8, blank=True, default="")
    kind = models.CharField(max_length=16, choices=Kind)
    payload_json = models.TextField(help_text="The interrupt value, canonical JSON.")
    digest = models.CharField(max_length=64, help_text="SHA-256 of payload_json.")
    search_text = models.TextField(
        blank=True,
        default="",
        help_text="The payload as the pages show it, secrets redacted: what the inbox search "
        "matches (`reviews.payloads.searchable`).",
    )
    tool_names = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    summary = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="What is asked, in one line, secrets redacted (`reviews.summaries`).",
    )
    status = models.CharField(max_length=16, choices=Status, default=Status.PENDING)
    status_reason = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(null=True, blank=True)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="assigned_review_items",
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="claimed_review_items",
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who started the run (may not approve it).",
    )
    # The review policy in force when the item was created (see `reviews.policies`).
    policy_version = models.CharField(max_length=200, blank=True, default="")
    policy = models.JSONField(default=dict, blank=True)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    reviewer_group_ids = ArrayField(models.IntegerField(), default=list, blank=True)
    responder_ids = ArrayField(models.IntegerField(), default=list, blank=True)
    escalation_group = models.ForeignKey(
        Group, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    escalated_at = models.DateTimeField(null=True, blank=True)
    remind_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)
    overdue_at = models.DateTimeField(
        null=True, blank=True, help_text="The deadline passed and the item keeps waiting."
    )
    expired_at = models.DateTimeField(null=True, blank=True)

    objects = ReviewItemQuerySet.as_manager()

    class Meta:
        db_table = "bw_review_item"
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "interrupt_id"], name="bw_review_item_one_per_interrupt"
            ),
        ]
        indexes = [
            # The inbox's index: its order, and every column the listing's filters, the
            # decider rule (`reviews.permissions`), the counts and the pending metrics
            # read, so those are answered from the index alone (no heap visit per item).
            models.Index(
                fields=["status", "created_at", "id"],
                include=[
                    "graph",
                    "kind",
                    "tool_names",
                    "reviewer_group_ids",
                    "responder_ids",
                    "assignee",
                    "escalated_at",
                    "escalation_group",
                ],
                name="bw_review_item_listing_idx",
            ),
            # The filter menus' distinct (graph, tools) pairs, one probe each
            # (`reviews.inbox.choices`).
            models.Index(fields=["status", "graph", "tool_names"], name="bw_review_item_menu_idx"),
            models.Index(
                fields=["due_at"],
                condition=models.Q(status="pending", due_at__isnull=False),
                name="bw_review_item_due_idx",
            ),
            models.Index(
                fields=["remind_at"],
                condition=models.Q(status="pending", reminded_at__isnull=True),
                name="bw_review_item_remind_idx",
            ),
        ]
        ordering = ["created_at", "id"]
        permissions = [
            ("review", "Can review and decide items"),
            ("manage", "Can reassign items, release claims and extend deadlines"),
            ("reveal_secrets", "Can reveal the secrets withheld from a proposal (audited)"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} on {self.thread_id} ({self.status})"

    @property
    def payload(self) -> Any:
        return json.loads(self.payload_json)

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    @property
    def needs_quorum(self) -> bool:
        """Whether several distinct reviewers must approve the item."""
        return self.required_approvals > 1


class Decision(models.Model):
    """The accepted answer to a review item (at most one, enforced by the database).

    `note` is the reviewer's private note for the audit; it never reaches the run (the
    model only sees the decisions' own `message`). `bindings` lists the execution digest
    each approve or edit was bound to (see `beamweaver_core.agent.review.bind_decisions`).
    """

    class Source(models.TextChoices):
        WEB = "web"
        COMMAND = "command"
        API = "api"

    item = models.OneToOneField(ReviewItem, on_delete=models.CASCADE, related_name="decision")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_decisions"
    )
    client_decision_id = models.CharField(max_length=64)
    digest_seen = models.CharField(max_length=64)
    body_json = models.TextField(help_text="The answer as submitted, canonical JSON.")
    answer_json = models.TextField(help_text="The resume value delivered to the run.")
    summary = models.CharField(max_length=200, help_text="e.g. 'approve', 'edit, reject'.")
    outcome = models.CharField(
        max_length=32, default="accepted", help_text="The outcome code (reviews.outcomes.Code)."
    )
    resume_run = models.ForeignKey(
        Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    source = models.CharField(max_length=8, choices=Source, default=Source.WEB)
    created_at = models.DateTimeField(default=timezone.now)
    note = models.TextField(blank=True, default="", help_text="Private; never sent to the run.")
    reason_code = models.CharField(max_length=64, blank=True, default="")
    decision_types = ArrayField(models.CharField(max_length=16), default=list, blank=True)
    bindings = models.JSONField(null=True, blank=True)
    policy_version = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        db_table = "bw_review_decision"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "client_decision_id"], name="bw_review_decision_client_id"
            ),
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.summary} on item #{self.item_id} by {self.user}"

    @property
    def body(self) -> Any:
        return json.loads(self.body_json)

    @property
    def answer(self) -> Any:
        return json.loads(self.answer_json)


class Approval(models.Model):
    """One reviewer's approval of an item that needs several distinct approvals (N of M).

    It counts only while its digest is the item's current one; the decision is recorded
    when enough eligible reviewers approved (see `reviews.quorum`).
    """

    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="approvals")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_approvals"
    )
    client_decision_id = models.CharField(max_length=64)
    digest_seen = models.CharField(max_length=64)
    body_json = models.TextField()
    note = models.TextField(blank=True, default="")
    source = models.CharField(max_length=8, choices=Decision.Source, default=Decision.Source.WEB)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "bw_review_approval"
        constraints = [
            models.UniqueConstraint(fields=["item", "user"], name="bw_review_approval_one_each"),
            models.UniqueConstraint(
                fields=["user", "client_decision_id"], name="bw_review_approval_client_id"
            ),
        ]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"approval of item #{self.item_id} by {self.user}"


class ReviewPresence(models.Model):
    """A page open on a review item right now (one row per websocket connection)."""

    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="presence")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    channel_name = models.CharField(max_length=255, unique=True)
    seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "bw_review_presence"
        indexes = [models.Index(fields=["item", "seen_at"], name="bw_review_presence_item_idx")]

    def __str__(self) -> str:
        return f"{self.user} on item #{self.item_id}"


__all__ = ["Approval", "Decision", "ReviewItem", "ReviewPresence"]
