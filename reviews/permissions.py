"""Who may see and decide what. Every view, the consumers, the API and the decision
service ask here, so a rule changes in one module.

Deny by default: without the `reviews.review` permission a user sees nothing, and an item
or thread the user may not see answers exactly like one that does not exist (404).

A thread, and the audit events of an item, are hidden along with any item the user may not
see (they show what the item reviews).

An item's deciders come from the review policy copied onto it (`reviews.policies`):
members of its reviewer groups, its allowed responders, its assignee, and, once it was
escalated, members of the escalation group. An item with no groups and no responders can
be decided by every reviewer. Deciders see the item; managers (`reviews.manage`) see
every item too, so they can reassign it or extend its deadline, but decide only what
they are deciders of. On top of that, the user who started the run may not approve it,
and an item claimed by someone else waits for its claimer.
"""

from __future__ import annotations

from typing import TypeVar

from django.db.models import Exists, OuterRef, Q, QuerySet

from beamweaver_core.models import Thread
from beamweaver_core.users import AnyUser, User
from reviews.live_check import LiveCheck
from reviews.models import AuditEvent, ReviewItem
from reviews.roles import (
    EVERY_REVIEWER,
    MANAGE_PERMISSION,
    REVEAL_PERMISSION,
    REVIEW_PERMISSION,
    can_manage,
    can_reveal,
    can_review,
    decider_filter,
    group_ids,
    manager_ids,
    reviewers,
    visible_items,
)

_Events = TypeVar("_Events", bound=QuerySet[AuditEvent])


def is_decider(user: AnyUser | None, item: ReviewItem) -> bool:
    """Whether the item's policy lets `user` decide it (the same rule as `visible_items`)."""
    return can_review(user) and policy_allows(user, item)


def policy_allows(user: User, item: ReviewItem, *, as_assignee: bool = True) -> bool:
    """Whether the item's policy names `user` among its deciders, for a user already known
    to hold the reviewer permission (e.g. one of `reviewers()`: no permission queries).
    The item's assignee decides it too, unless `as_assignee` is false (whom the policy
    itself names, for a holder handing the item over)."""
    if not item.reviewer_group_ids and not item.responder_ids:
        return True
    if user.pk in item.responder_ids or (as_assignee and item.assignee_id == user.pk):
        return True
    groups = set(group_ids(user))
    if groups & set(item.reviewer_group_ids):
        return True
    return item.escalated_at is not None and item.escalation_group_id in groups


def named_by_policy(item: ReviewItem) -> Q:
    """The users (a filter on users) whom the item's policy itself names among its
    deciders: `policy_allows(user, item, as_assignee=False)` as a query, to list whom a
    holder may hand the item to."""
    if not item.reviewer_group_ids and not item.responder_ids:
        return Q()
    groups = list(item.reviewer_group_ids)
    if item.escalated_at is not None and item.escalation_group_id is not None:
        groups.append(item.escalation_group_id)
    return Q(pk__in=item.responder_ids) | Q(groups__in=groups)


def _hidden_item_ids(user: User) -> QuerySet[ReviewItem]:
    return ReviewItem.objects.exclude(decider_filter(user))


def visible_threads(user: AnyUser | None) -> QuerySet[Thread]:
    """The threads `user` may see (a queryset; empty without the permission): all of them
    for managers; for other reviewers, those without a review item they may not see (a
    thread's state and history show what its items review)."""
    if not can_review(user):
        return Thread.objects.none()
    if can_manage(user):
        return Thread.objects.all()
    # NOT EXISTS, not NOT IN: Postgres answers it with an anti-join on the items'
    # thread index; NOT IN hashed every hidden item of the table for each page.
    return Thread.objects.filter(~Exists(_hidden_item_ids(user).filter(thread_id=OuterRef("id"))))


def hidden_from_some(thread_id: str) -> bool:
    """Whether some reviewers may not see the thread (`visible_threads`): one of its items
    is decided by the deciders its policy named, not by every reviewer."""
    return ReviewItem.objects.filter(thread_id=thread_id).exclude(EVERY_REVIEWER).exists()


def visible_audit(user: AnyUser | None, events: _Events) -> _Events:
    """The audit events `user` may read: managers all of them; other reviewers those of
    items they may see, and their own events of no item (an attempt on an item that does
    not exist). Events whose item was deleted since are left to managers: they may tell
    what a hidden item was. An attempt on an item hidden from its author is audited
    against that item, so it is read by those who may see the item."""
    if not can_review(user):
        return events.none()
    if can_manage(user):
        return events
    seen = Q(item__isnull=False) & ~Exists(_hidden_item_ids(user).filter(pk=OuterRef("item_id")))
    return events.filter(seen | Q(item__isnull=True, actor_id=user.pk))


__all__ = [
    "MANAGE_PERMISSION",
    "REVEAL_PERMISSION",
    "REVIEW_PERMISSION",
    "LiveCheck",
    "can_manage",
    "can_reveal",
    "can_review",
    "group_ids",
    "hidden_from_some",
    "is_decider",
    "manager_ids",
    "named_by_policy",
    "policy_allows",
    "reviewers",
    "visible_audit",
    "visible_items",
    "visible_threads",
]
