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

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.auth.views import redirect_to_login
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect

from beamweaver_core.models import Thread

REVIEW_PERMISSION = "reviews.review"
MANAGE_PERMISSION = "reviews.manage"


@dataclass(frozen=True)
class Refusal:
    """Why a user may not do something to an item; `status` is the HTTP status."""

    status: int
    code: str
    message: str


def can_review(user: Any) -> bool:
    """Whether `user` may use the inbox at all (see and decide review items)."""
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and user.is_active
        and user.has_perm(REVIEW_PERMISSION)
    )


def can_manage(user: Any) -> bool:
    """Whether `user` may reassign any item, release claims and extend deadlines."""
    return can_review(user) and bool(user.has_perm(MANAGE_PERMISSION))


def group_ids(user: Any) -> list[int]:
    """The ids of the user's groups (read once per user object; prefetched groups are
    used as they are)."""
    cached = getattr(user, "_bw_group_ids", None)
    if cached is None:
        cached = sorted(group.pk for group in user.groups.all())
        user._bw_group_ids = cached
    return list(cached)


def _decider_filter(user: Any) -> Q:
    groups = group_ids(user)
    rule = (
        Q(reviewer_group_ids=[], responder_ids=[])
        | Q(responder_ids__contains=[user.pk])
        | Q(assignee_id=user.pk)
    )
    if groups:
        rule |= Q(reviewer_group_ids__overlap=groups) | Q(
            escalated_at__isnull=False, escalation_group_id__in=groups
        )
    return rule


def visible_items(user: Any, items: QuerySet[Any]) -> QuerySet[Any]:
    """The review items of `items` that `user` may see."""
    if not can_review(user):
        return items.none()
    if can_manage(user):
        return items
    return items.filter(_decider_filter(user))


def is_decider(user: Any, item: Any) -> bool:
    """Whether the item's policy lets `user` decide it (the same rule as `visible_items`)."""
    if not can_review(user):
        return False
    if not item.reviewer_group_ids and not item.responder_ids:
        return True
    if user.pk in item.responder_ids or item.assignee_id == user.pk:
        return True
    groups = set(group_ids(user))
    if groups & set(item.reviewer_group_ids):
        return True
    return item.escalated_at is not None and item.escalation_group_id in groups


def decision_refusal(user: Any, item: Any, *, executes: bool) -> Refusal | None:
    """Why `user` may not answer `item` now (`None`: they may). `executes` says whether the
    answer lets something run (an approve or edit, or continuing past a breakpoint)."""
    if not is_decider(user, item):
        return Refusal(
            403,
            "not_allowed",
            "The review policy of this item does not let you decide it; a manager can "
            "reassign it to you.",
        )
    if executes and item.requested_by_id is not None and item.requested_by_id == user.pk:
        return Refusal(
            403,
            "self_approval",
            "You started this run, so you cannot approve it; another reviewer must.",
        )
    if item.claimed_by_id is not None and item.claimed_by_id != user.pk:
        claimer = item.claimed_by.get_username() if item.claimed_by else "another reviewer"
        return Refusal(
            409,
            "claimed",
            f"{claimer} claimed this item; ask them or a manager to release it.",
        )
    return None


@dataclass(frozen=True)
class DecisionOffer:
    """Which kinds of answer `decision_offer` lets a user give on an item now.

    `decide`: any answer at all; `execute`: answers that let something run (approve,
    edit, continue a breakpoint); `edit`: an edit. `why` names the rule that holds
    something back ("" when nothing is): `not_allowed`, `self_approval` (the user started
    the run) or `already_approved` (their approval counts towards a quorum already); an
    item that needs several approvals never offers an edit."""

    decide: bool
    execute: bool
    edit: bool
    why: str = ""


def decision_offer(user: Any, item: Any) -> DecisionOffer:
    """What the item page offers `user` (the same rules `decision_refusal` enforces; a
    claim by someone else is left to the refusal, since it changes while the page is
    open)."""
    # Imported here: quorum imports this module.
    from reviews import quorum

    if not is_decider(user, item):
        return DecisionOffer(False, False, False, "not_allowed")
    if item.kind == "interrupt":  # answers, never approvals
        return DecisionOffer(True, True, True)
    edit = not quorum.applies(item)
    if item.requested_by_id is not None and item.requested_by_id == user.pk:
        return DecisionOffer(True, False, False, "self_approval")
    if quorum.applies(item) and any(a.user_id == user.pk for a in quorum.counted(item)):
        return DecisionOffer(True, False, False, "already_approved")
    return DecisionOffer(True, True, edit)


def _holders(permission: str) -> QuerySet[Any]:
    app, codename = permission.split(".")
    ids = Permission.objects.filter(content_type__app_label=app, codename=codename)
    users = get_user_model().objects.filter(is_active=True)
    return users.filter(
        Q(is_superuser=True) | Q(user_permissions__in=ids) | Q(groups__permissions__in=ids)
    ).distinct()


def reviewers() -> QuerySet[Any]:
    """Active users with the reviewer permission (directly, through a group, or as
    superusers), their groups prefetched."""
    return _holders(REVIEW_PERMISSION).prefetch_related("groups")


def manager_ids() -> set[int]:
    """The ids of active users with the manager permission."""
    return set(_holders(MANAGE_PERMISSION).values_list("pk", flat=True))


def _hidden_item_ids(user: Any) -> QuerySet[Any]:
    # Imported here: the models import this module (ReviewItem.objects.visible_to).
    from reviews.models import ReviewItem

    return ReviewItem.objects.exclude(_decider_filter(user))


def visible_threads(user: Any) -> Any:
    """The threads `user` may see (a queryset; empty without the permission): all of them
    for managers; for other reviewers, those without a review item they may not see (a
    thread's state and history show what its items review)."""
    if not can_review(user):
        return Thread.objects.none()
    if can_manage(user):
        return Thread.objects.all()
    return Thread.objects.exclude(id__in=_hidden_item_ids(user).values("thread_id"))


def visible_audit(user: Any, events: QuerySet[Any]) -> QuerySet[Any]:
    """The audit events `user` may read: those of items they may see, and those of no
    item (attempts on items that do not exist)."""
    if not can_review(user):
        return events.none()
    if can_manage(user):
        return events
    return events.exclude(item__in=_hidden_item_ids(user))


def can_see_thread(user: Any, thread_id: str) -> bool:
    return visible_threads(user).filter(id=thread_id).exists()


def reviewer_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Log in first (an htmx request is sent to the login page as a whole page, never
    swapped into a fragment), then require the reviewer permission (403 page)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            login = redirect_to_login(request.get_full_path())
            if getattr(request, "htmx", False):
                current = request.htmx.current_url_abs_path or request.get_full_path()
                return HttpResponseClientRedirect(redirect_to_login(current)["Location"])
            return login
        if not can_review(request.user):
            return render(request, "reviews/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapper


__all__ = [
    "MANAGE_PERMISSION",
    "REVIEW_PERMISSION",
    "DecisionOffer",
    "Refusal",
    "can_manage",
    "can_review",
    "can_see_thread",
    "decision_offer",
    "decision_refusal",
    "group_ids",
    "is_decider",
    "manager_ids",
    "reviewer_required",
    "reviewers",
    "visible_audit",
    "visible_items",
    "visible_threads",
]
