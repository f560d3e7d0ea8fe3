"""Claim, release and reassign review items: who is working on an item.

A claim says "I am deciding this one": while an item is claimed, only its claimer may
decide it (`reviews.rules.decision_refusal`). Claiming is for items one reviewer
decides; an item that needs several approvals cannot be claimed (it can be reassigned).
Each change locks the item, so of two reviewers claiming at once exactly one wins; it is
audited and pushed to every open page at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from beamweaver_core.users import User, find_user
from reviews import realtime
from reviews.models import AuditEvent, NotificationEvent, ReviewItem
from reviews.notifications import notify
from reviews.permissions import can_manage, can_review, is_decider


@dataclass(frozen=True)
class ClaimOutcome:
    """What a claim action did; `status` is the HTTP status to answer with."""

    status: int
    code: str
    message: str
    item: ReviewItem | None = None


def _locked(item_id: int, user: User) -> ReviewItem | None:
    item = ReviewItem.objects.visible_to(user).select_for_update().filter(pk=item_id).first()
    if item is not None:
        # Read after the lock: the claimer's name for messages.
        item = ReviewItem.objects.select_related("claimed_by", "assignee").get(pk=item.pk)
    return item


def _gone(item: ReviewItem) -> ClaimOutcome:
    return ClaimOutcome(410, "gone", f"This item is {item.status}; nothing to claim.", item)


def _record(item: ReviewItem, user: User, action: str, message: str) -> None:
    AuditEvent.objects.about(item, action, message, actor=user, source="web")
    realtime.announce(realtime.UPDATED, item.pk, item.thread_id)


def claim(item_id: int, user: User) -> ClaimOutcome:
    """Claim the item for `user` (a no-op if they hold it already)."""
    with transaction.atomic():
        item = _locked(item_id, user)
        if item is None:
            return ClaimOutcome(404, "not_found", "No such review item.")
        if not item.is_pending:
            return _gone(item)
        if not is_decider(user, item):
            return ClaimOutcome(
                403, "not_allowed", "The review policy does not let you decide this item.", item
            )
        if item.needs_quorum:
            return ClaimOutcome(
                409,
                "quorum",
                f"This item needs {item.required_approvals} approvals from different "
                "reviewers, so nobody can claim it.",
                item,
            )
        if item.claimed_by_id == user.pk:
            return ClaimOutcome(200, "claimed", "You hold this item already.", item)
        if item.claimed_by_id is not None:
            holder = item.claimed_by.get_username() if item.claimed_by else "another reviewer"
            return ClaimOutcome(409, "claimed", f"{holder} claimed this item first.", item)
        item.claimed_by, item.claimed_at = user, timezone.now()
        item.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
        _record(item, user, AuditEvent.Action.CLAIMED, "Claimed.")
        return ClaimOutcome(200, "claimed", "You claimed this item.", item)


def unclaim(item_id: int, user: User) -> ClaimOutcome:
    """Release the claim (its holder, or a manager)."""
    with transaction.atomic():
        item = _locked(item_id, user)
        if item is None:
            return ClaimOutcome(404, "not_found", "No such review item.")
        if not item.is_pending:
            return _gone(item)
        if item.claimed_by_id is None:
            return ClaimOutcome(200, "unclaimed", "Nobody holds this item.", item)
        if item.claimed_by_id != user.pk and not can_manage(user):
            holder = item.claimed_by.get_username() if item.claimed_by else "another reviewer"
            return ClaimOutcome(
                403, "not_allowed", f"Only {holder} or a manager can release this claim.", item
            )
        holder = item.claimed_by.get_username() if item.claimed_by else "?"
        item.claimed_by, item.claimed_at = None, None
        item.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
        _record(item, user, AuditEvent.Action.UNCLAIMED, f"Released the claim of {holder}.")
        return ClaimOutcome(200, "unclaimed", "The item is free again.", item)


def reassign(item_id: int, user: User, username: str) -> ClaimOutcome:
    """Assign the item to another reviewer (a manager, or its current holder handing it
    over); they hold it at once, unless it needs several approvals."""
    with transaction.atomic():
        item = _locked(item_id, user)
        if item is None:
            return ClaimOutcome(404, "not_found", "No such review item.")
        if not item.is_pending:
            return _gone(item)
        holder = item.claimed_by_id or item.assignee_id
        if not can_manage(user) and holder != user.pk:
            return ClaimOutcome(
                403,
                "not_allowed",
                "Only a manager, or whoever holds the item, can reassign it.",
                item,
            )
        target = find_user(username)
        if target is None or not can_review(target):
            return ClaimOutcome(
                422, "invalid", f"{username!r} is not an active reviewer; choose another.", item
            )
        if target.pk == item.requested_by_id:
            return ClaimOutcome(
                422,
                "invalid",
                f"{username} started this run and cannot approve it; choose another reviewer.",
                item,
            )
        before = item.assignee.get_username() if item.assignee else "nobody"
        item.assignee = target
        if item.needs_quorum:
            item.claimed_by, item.claimed_at = None, None
        else:
            item.claimed_by, item.claimed_at = target, timezone.now()
        item.save(update_fields=["assignee", "claimed_by", "claimed_at", "updated_at"])
        _record(
            item, user, AuditEvent.Action.REASSIGNED, f"Reassigned from {before} to {username}."
        )
        notify(NotificationEvent.ASSIGNED, item)
        return ClaimOutcome(200, "reassigned", f"Assigned to {username}.", item)


__all__ = ["ClaimOutcome", "claim", "reassign", "unclaim"]
