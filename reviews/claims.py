"""Claim, release and reassign review items: who is working on an item.

A claim says "I am deciding this one": while an item is claimed, only its claimer may
decide it (`reviews.rules.decision_refusal`). Claiming is for items one reviewer
decides; an item that needs several approvals cannot be claimed (it can be reassigned),
nor can the run's requester claim an item they may not approve (`claim_refusal`).
Each change locks the item, so of two reviewers claiming at once exactly one wins; it is
audited and pushed to every open page at once.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from beamweaver_core.users import User, find_user
from reviews import realtime
from reviews.models import AuditEvent, NotificationEvent, ReviewItem
from reviews.notifications import notify
from reviews.outcomes import Code, Outcome
from reviews.permissions import can_manage, can_review, is_decider, policy_allows
from reviews.rules import holds_back


def _locked(item_id: int, user: User) -> ReviewItem | None:
    item = ReviewItem.objects.visible_to(user).select_for_update().filter(pk=item_id).first()
    if item is not None:
        # Read after the lock: the claimer's name for messages.
        item = ReviewItem.objects.select_related("claimed_by", "assignee").get(pk=item.pk)
    return item


def _locked_pending(item_id: int, user: User) -> ReviewItem | Outcome:
    """The item, locked for a change by `user`; or the outcome that ends the change: no
    such item (or one they may not see), or one no longer pending."""
    item = _locked(item_id, user)
    if item is None:
        return Outcome(Code.NOT_FOUND, "No such review item.")
    if not item.is_pending:
        return Outcome(Code.GONE, f"This item is {item.status}; nothing to claim.", item)
    return item


def _holder(item: ReviewItem, unknown: str = "another reviewer") -> str:
    return item.claimed_by.get_username() if item.claimed_by else unknown


def _record(item: ReviewItem, user: User, action: str, message: str) -> None:
    AuditEvent.objects.about(item, action, message, actor=user, source="web")
    realtime.announce(realtime.UPDATED, item.pk, item.thread_id)


def claim_refusal(user: User, item: ReviewItem) -> Outcome | None:
    """Why `user` may not claim pending `item`, whoever holds it (`None`: they may)."""
    if not is_decider(user, item):
        return Outcome(
            Code.NOT_ALLOWED, "The review policy does not let you decide this item.", item
        )
    if item.needs_quorum:
        return Outcome(
            Code.QUORUM,
            f"This item needs {item.required_approvals} approvals from different "
            "reviewers, so nobody can claim it.",
            item,
        )
    if holds_back(Code.SELF_APPROVAL, user, item):
        # Their claim would refuse everyone else's approval, and they cannot give theirs.
        return Outcome(
            Code.SELF_APPROVAL,
            "You started this run, so you cannot approve it; another reviewer must. "
            "Claiming it would keep them from deciding it.",
            item,
        )
    return None


def claim(item_id: int, user: User) -> Outcome:
    """Claim the item for `user` (a no-op if they hold it already)."""
    with transaction.atomic():
        item = _locked_pending(item_id, user)
        if isinstance(item, Outcome):
            return item
        refusal = claim_refusal(user, item)
        if refusal is not None:
            return refusal
        if item.claimed_by_id == user.pk:
            return Outcome(Code.CLAIM_TAKEN, "You hold this item already.", item)
        if item.claimed_by_id is not None:
            holder = _holder(item)
            return Outcome(Code.CLAIMED, f"{holder} claimed this item first.", item)
        item.claimed_by, item.claimed_at = user, timezone.now()
        item.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
        _record(item, user, AuditEvent.Action.CLAIMED, "Claimed.")
        return Outcome(Code.CLAIM_TAKEN, "You claimed this item.", item)


def unclaim(item_id: int, user: User) -> Outcome:
    """Release the claim (its holder, or a manager)."""
    with transaction.atomic():
        item = _locked_pending(item_id, user)
        if isinstance(item, Outcome):
            return item
        if item.claimed_by_id is None:
            return Outcome(Code.UNCLAIMED, "Nobody holds this item.", item)
        if item.claimed_by_id != user.pk and not can_manage(user):
            holder = _holder(item)
            return Outcome(
                Code.NOT_ALLOWED, f"Only {holder} or a manager can release this claim.", item
            )
        holder = _holder(item, "?")
        item.claimed_by, item.claimed_at = None, None
        item.save(update_fields=["claimed_by", "claimed_at", "updated_at"])
        _record(item, user, AuditEvent.Action.UNCLAIMED, f"Released the claim of {holder}.")
        return Outcome(Code.UNCLAIMED, "The item is free again.", item)


def reassign(item_id: int, user: User, username: str) -> Outcome:
    """Assign the item to another reviewer (a manager, to anyone; its current holder,
    handing it over, to a reviewer its policy names); they hold it at once, unless it
    needs several approvals."""
    with transaction.atomic():
        item = _locked_pending(item_id, user)
        if isinstance(item, Outcome):
            return item
        holder = item.claimed_by_id or item.assignee_id
        if not can_manage(user) and holder != user.pk:
            return Outcome(
                Code.NOT_ALLOWED,
                "Only a manager, or whoever holds the item, can reassign it.",
                item,
            )
        target = find_user(username)
        if target is None or not can_review(target):
            return Outcome(
                Code.INVALID, f"{username!r} is not an active reviewer; choose another.", item
            )
        if not can_manage(user) and not policy_allows(target, item, as_assignee=False):
            # An assignee decides the item: a holder choosing one outside the policy's
            # deciders would pick who approves (the second approval of an N-of-M, say).
            return Outcome(
                Code.NOT_ALLOWED,
                f"The review policy does not name {username} among this item's deciders; "
                "hand it to one it names, or ask a manager to assign it.",
                item,
            )
        if holds_back(Code.SELF_APPROVAL, target, item):
            return Outcome(
                Code.INVALID,
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
        notify(NotificationEvent.ASSIGNED, item, actor=user)
        return Outcome(Code.REASSIGNED, f"Assigned to {username}.", item)


__all__ = ["claim", "claim_refusal", "reassign", "unclaim"]
