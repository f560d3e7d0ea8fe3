"""Views that change who holds an item and when it is due: claim, release, reassign,
extend the deadline. Each answers an htmx request with the `#item-routing` partial (the
same one pushed live to every other open page of the item), and a plain form post with a
redirect to the item and a message. An item the user may not see is a 404 whatever was
asked, unless the change was made and took it out of their sight (a holder handing it
over): that answers with the inbox (htmx: `HX-Redirect`) and says so."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from beamweaver_core.requests import AuthedRequest
from reviews import claims, deadlines, partials
from reviews.decorators import reviewer_required
from reviews.http_statuses import http_status
from reviews.models import ReviewItem
from reviews.outcomes import Code, Outcome

EXTEND_CHOICES_HOURS = (1, 4, 24, 72)
REFUSAL_HEADER = "X-BeamWeaver-Refusal"


def _answer(request: AuthedRequest, pk: int, outcome: Outcome) -> HttpResponse:
    status = http_status(outcome)
    if status == 404:
        raise Http404("No such review item.")
    visible = ReviewItem.objects.visible_to(request.user).select_related("thread")
    item = visible.filter(pk=pk).first()
    if item is None and not outcome.done:
        # Refused before the item was read (a bad number of hours): unknown or hidden.
        raise Http404("No such review item.")
    if item is None:
        # Done, and out of the user's sight now (a holder handed it over): the inbox.
        messages.success(request, f"{outcome.message} You can no longer see this item.")
        inbox = reverse("reviews:inbox")
        return HttpResponseClientRedirect(inbox) if request.htmx else redirect(inbox)
    if not request.htmx:
        (messages.success if outcome.done else messages.error)(request, outcome.message)
        return redirect("reviews:item", pk=pk)
    context = partials.item_context(item, request.user)
    context.update({"routing_message": outcome.message, "routing_ok": outcome.done})
    response = render(request, f"{partials.ITEM}#item-routing", context, status=status)
    if status == 403:
        # A refusal to show in place, not a lost session (see reviews/static/beamweaver/js/beamweaver.js).
        response[REFUSAL_HEADER] = "1"
    return response


@require_POST
@reviewer_required
def claim_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """Claim the item: while you hold it, nobody else can decide it."""
    outcome = claims.claim(pk, request.user)
    return _answer(request, pk, outcome)


@require_POST
@reviewer_required
def unclaim_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """Release the claim (its holder, or a manager)."""
    outcome = claims.unclaim(pk, request.user)
    return _answer(request, pk, outcome)


@require_POST
@reviewer_required
def reassign_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """Assign the item to another reviewer (a manager, or its holder)."""
    username = str(request.POST.get("assignee", "")).strip()[:150]
    outcome = claims.reassign(pk, request.user, username)
    return _answer(request, pk, outcome)


@require_POST
@reviewer_required
def extend_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """Move the deadline later (managers)."""
    try:
        hours = int(request.POST.get("hours", ""))
    except ValueError:
        hours = 0
    if hours not in EXTEND_CHOICES_HOURS:
        choices = ", ".join(str(h) for h in EXTEND_CHOICES_HOURS)
        return _answer(request, pk, Outcome(Code.INVALID, f"Extend by one of {choices} hours."))
    return _answer(request, pk, deadlines.extend(pk, request.user, timedelta(hours=hours)))


__all__ = ["claim_view", "extend_view", "reassign_view", "unclaim_view"]
