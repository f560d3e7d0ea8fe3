"""The live parts of the pages: each is a template partial named after the element id it
replaces, and the context it needs is built here, so the HTTP view and the websocket
consumer render exactly the same HTML from the same rows."""

from __future__ import annotations

from collections.abc import Hashable
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.template.loader import render_to_string
from django.utils import timezone

from beamweaver_core.models import Run, Thread
from beamweaver_core.requests import Request
from beamweaver_core.users import User, username_path
from reviews import cancelling, claims, inbox, quorum, reasons, threads
from reviews.models import Decision, ReviewItem, ReviewPresence
from reviews.permissions import can_manage, is_decider, named_by_policy, reviewers
from reviews.rules import can_execute, decision_offer
from reviews.thread_studio import ThreadStudio

PRESENCE_TTL = timedelta(seconds=60)

INBOX = "reviews/inbox.html"
ITEM = "reviews/item.html"
THREAD = "reviews/thread.html"


def for_request(request: Request, template: str, partial: str) -> str:
    """The template to render for `request`: an htmx request gets only the partial
    named after the element it replaces (`template#partial`), a plain one the page."""
    return f"{template}#{partial}" if request.htmx else template


def render(template: str, partial: str, context: dict[str, Any]) -> str:
    """One partial of a page (`template#partial`) as HTML."""
    return render_to_string(f"{template}#{partial}", context)


def inbox_context(items: QuerySet[ReviewItem], query: inbox.InboxQuery) -> dict[str, Any]:
    """The inbox list for `query` over the items the user may see."""
    context = inbox_counts_context(items, query)
    context.update(
        items=list(context["page"].object_list),
        statuses=inbox.STATUSES,
        choices=inbox.choices(items),
    )
    return context


def inbox_counts_context(
    items: QuerySet[ReviewItem], query: inbox.InboxQuery, key: Hashable | None = None
) -> dict[str, Any]:
    """What the inbox's counts and pager show (a live push re-renders only those): the
    page of `query` (its rows read when used) and the counts, counted in one statement
    (`key`: see `inbox.listing`)."""
    page, counts = inbox.listing(items, query, key)
    return {
        "query": query,
        "page": page,
        "counts": counts,
        "counts_over": inbox.over_cap(counts),
        "count_cap": f"{inbox.COUNT_CAP:,}",
        "shown_count": page.paginator.count,
        "shown_capped": getattr(page.paginator, "capped", False),
    }


def item_context(item: ReviewItem, user: User) -> dict[str, Any]:
    """The status, decision and presence of one item, for `user`."""
    decision = (
        Decision.objects.select_related("user").filter(item=item).first()
        if item.status == ReviewItem.Status.DECIDED
        else None
    )
    next_item = None
    if not item.is_pending:
        next_item = (
            ReviewItem.objects.visible_to(user)
            .pending()
            .exclude(pk=item.pk)
            .order_by("created_at", "id")
            .first()
        )
    return {
        "item": item,
        "next_item": next_item,
        "decision": decision,
        "decided_by_you": decision is not None and decision.user_id == user.pk,
        "viewers": viewers(item, user),
        "routing": routing(item, user),
        "offer": decision_offer(user, item) if item.is_pending else None,
        "reasons": reasons.rejection_reasons(),
        "reveal": False,  # secrets are revealed only by `views.reveal_view`, audited
    }


def routing(item: ReviewItem, user: User) -> dict[str, Any]:
    """Who decides the item, who holds it, its approvals and deadline, and which of the
    claim / release / reassign / extend actions `user` may take."""
    pending = item.is_pending
    decider = is_decider(user, item)
    manager = can_manage(user)
    holder = item.claimed_by_id or item.assignee_id
    can_reassign = pending and (manager or holder == user.pk)
    now = timezone.now()
    return {
        "groups": item.policy.get("groups") or [],
        "responders": item.policy.get("responders") or [],
        "escalate_to": item.policy.get("escalate_to"),
        "approvals": [a.user.get_username() for a in quorum.counted(item)]
        if item.needs_quorum
        else [],
        "decider": decider,
        "claimed_by_you": item.claimed_by_id == user.pk,
        "requested_by_you": item.requested_by_id is not None and item.requested_by_id == user.pk,
        "overdue": bool(item.due_at and item.due_at <= now),
        "can_claim": pending
        and item.claimed_by_id is None
        and claims.claim_refusal(user, item) is None,
        "can_release": pending
        and item.claimed_by_id is not None
        and (item.claimed_by_id == user.pk or manager),
        "can_reassign": can_reassign,
        "reviewers": reviewer_names(
            exclude=item.requested_by_id if can_execute(item) else None,
            named_by=None if manager else item,
        )
        if can_reassign
        else [],
        "can_extend": pending and manager,
    }


def reviewer_names(
    *, exclude: int | None = None, limit: int = 200, named_by: ReviewItem | None = None
) -> list[str]:
    """Usernames of active reviewers, to choose an assignee from (those `named_by`'s
    policy names among its deciders, when a holder hands it over)."""
    chosen = reviewers().exclude(pk=exclude or 0)
    if named_by is not None:
        chosen = chosen.filter(named_by_policy(named_by)).distinct()
    return [u.get_username() for u in chosen.order_by(username_path())[:limit]]


def viewers(item: ReviewItem, user: User) -> list[str]:
    """Who else has the item open right now (usernames, sorted)."""
    since = timezone.now() - PRESENCE_TTL
    names = (
        ReviewPresence.objects.filter(item=item, seen_at__gte=since)
        .exclude(user_id=user.pk)
        .values_list(username_path("user"), flat=True)
        .distinct()
    )
    return sorted(set(names))


def thread_context(thread: Thread, user: User) -> dict[str, Any]:
    """Everything live on a thread page."""
    items = list(
        ReviewItem.objects.visible_to(user)
        .filter(thread=thread)
        .select_related("claimed_by", "assignee")
        .order_by("-created_at", "-id")
    )
    decisions = list(
        Decision.objects.filter(item__in=items)
        .select_related("user", "item")
        .order_by("-created_at")
    )
    runs = list(
        Run.objects.filter(thread=thread).select_related("created_by").order_by("-created_at")[:10]
    )
    state = threads.current_state(thread)
    active = next((r for r in runs if r.status in ("queued", "running", "interrupted")), None)
    return {
        "thread": thread,
        "runs": runs,
        "active_run": active,
        "may_cancel": cancelling.may_cancel(user, active),
        "items": items,
        "pending_items": [i for i in items if i.is_pending],
        "decisions": decisions,
        "state": state,
        "conversation": threads.conversation(state),
        "studio": ThreadStudio(thread, user, state, items),
        "history": threads.history(thread),
        "events": threads.events(thread),
    }


__all__ = [
    "INBOX",
    "ITEM",
    "THREAD",
    "inbox_context",
    "item_context",
    "render",
    "routing",
    "thread_context",
    "viewers",
]
