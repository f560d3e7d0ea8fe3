"""The inbox pages: the list and its batch decisions, an item and its decision, the
notification preferences. Each view works as a plain HTML page first; an htmx request gets
the partial named after the element it replaces (`partials.for_request`). The thread pages
are in `thread_views`, the audit log in `audit_views`."""

from __future__ import annotations

import dataclasses
import re
import uuid
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import retarget

from beamweaver_core.requests import AuthedRequest
from reviews import batch, forms, inbox, partials, reasons, reveal, review_form, services, threads
from reviews.decorators import reviewer_required
from reviews.http_statuses import http_status
from reviews.models import NotificationPreference, ReviewItem
from reviews.permissions import can_reveal
from reviews.posted import encoding_problems, posted, too_large


def _inbox_page(request: AuthedRequest, **extra: Any) -> dict[str, Any]:
    query = inbox.InboxQuery.from_params(request.GET)
    items = ReviewItem.objects.visible_to(request.user)
    context = partials.inbox_context(items, query)
    context["ws_url"] = "/ws/inbox/" + (f"?{query.params()}" if query.params() else "")
    context["reasons"] = reasons.rejection_reasons()
    context["batch_id"] = uuid.uuid4().hex
    context.update(extra)
    return context


@require_GET
@reviewer_required
def inbox_view(request: AuthedRequest) -> HttpResponse:
    """Pending items, oldest first; filters, search and pages in the query string."""
    context = _inbox_page(request)
    return render(request, partials.for_request(request, partials.INBOX, "inbox-list"), context)


_BATCH_ID = re.compile(r"^[A-Za-z0-9]{1,40}$")


@require_POST
@reviewer_required
def batch_view(request: AuthedRequest) -> HttpResponse:
    """Approve or reject the selected items, each through the decision service; answers
    with the per-item report (and the refreshed list)."""
    data = posted(request)
    if data is None:
        return too_large()
    selection, _ = batch.parse_selection(data.getlist("items"))
    action = str(data.get("action", ""))
    problem = ""
    if action not in batch.ACTIONS:
        problem = "Choose Approve or Reject."
    elif not selection:
        problem = "Select at least one item first."
    elif len(selection) > batch.MAX_ITEMS:
        problem = f"Select at most {batch.MAX_ITEMS} items at a time."
    elif undecodable := encoding_problems(request):
        problem = undecodable[0]["message"]
    report = None
    if not problem:
        batch_id = str(data.get("batch_id", ""))
        report = batch.decide_many(
            request.user,
            selection,
            action,
            batch_id=batch_id if _BATCH_ID.match(batch_id) else uuid.uuid4().hex,
            message=str(data.get("message", "")).strip()[:2000],
            reason=str(data.get("reason", "")),
            note=str(data.get("note", "")).strip()[:10_000],
        )
    context = _inbox_page(
        request, report=report, batch_problem=problem, oob_list=bool(request.htmx)
    )
    status = 422 if problem else 200
    if request.htmx:
        return render(request, f"{partials.INBOX}#batch-report", context, status=status)
    return render(request, partials.INBOX, context, status=status)


def _item_or_404(request: AuthedRequest, pk: int) -> ReviewItem:
    return get_object_or_404(
        ReviewItem.objects.visible_to(request.user).select_related("thread", "run"), pk=pk
    )


def _item_page(
    request: AuthedRequest,
    item: ReviewItem,
    *,
    form: review_form.ReviewForm | None = None,
    outcome: services.DecisionOutcome | None = None,
    status: int = 200,
    reveal: bool = False,
) -> HttpResponse:
    context = partials.item_context(item, request.user)
    form = form or review_form.review_form(item, request.user, reveal=reveal)
    context.update(
        {
            "form": form,
            "reveal": form.revealed,
            "outcome": outcome,
            "ws_url": f"/ws/items/{item.pk}/?digest={item.digest}",
        }
    )
    if not request.htmx:
        state = threads.current_state(item.thread)
        context["conversation"] = threads.conversation(state)
    template = partials.for_request(request, partials.ITEM, "decision-panel")
    return render(request, template, context, status=status)


@require_GET
@reviewer_required
def item_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """One review item: the conversation, the proposal and the decision form."""
    item = _item_or_404(request, pk)
    if request.htmx and request.htmx.target == "item-status":
        context = partials.item_context(item, request.user)
        if item.is_pending:
            seen = request.GET.get("digest")
            context["payload_changed"] = bool(seen) and seen != item.digest
            return render(request, f"{partials.ITEM}#item-status", context)
        context["form"] = None
        return retarget(
            render(request, f"{partials.ITEM}#decision-panel", context), "#decision-panel"
        )
    return _item_page(request, item)


@require_POST
@reviewer_required
def decide_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """Decide an item (see `reviews.services.decide` for every outcome)."""
    data = posted(request)
    if data is None:
        return too_large()
    item = ReviewItem.objects.visible_to(request.user).filter(pk=pk).first()
    if item is None:
        # Through the service anyway, so that the attempt is audited like any refusal.
        services.decide(
            services.DecisionRequest(
                item_id=pk,
                user=request.user,
                client_decision_id=str(data.get("client_decision_id", "")),
                digest=str(data.get("digest", "")),
            )
        )
        raise Http404("No such review item.")
    form = review_form.review_form(item, request.user)
    decision = review_form.decision_request(item, data, request.user, form)
    undecodable = encoding_problems(request)
    if undecodable:  # refused by the service like the API's undecodable body
        decision = dataclasses.replace(decision, problems=[*undecodable, *decision.problems])
    outcome = services.decide(decision)
    status = http_status(outcome)
    if status == 404:
        raise Http404("No such review item.")
    if outcome.recorded and outcome.item is not None and outcome.item.pk == item.pk:
        item = outcome.item  # as the service left it, locked and written: no re-read
    else:
        item.refresh_from_db()
    if outcome.recorded and not request.htmx:
        messages.success(request, outcome.message)
        return HttpResponseRedirect(reverse("reviews:item", args=[item.pk]))
    bound = None
    if outcome.correctable and item.is_pending:
        bound = review_form.review_form(item, request.user, data, outcome.problems)
    response = _item_page(request, item, form=bound, outcome=outcome, status=status)
    if status == 403:
        # A policy refusal to show in place, not a lost session (reviews/static/beamweaver/js/beamweaver.js).
        response["X-BeamWeaver-Refusal"] = outcome.code
    return response


@require_POST
@reviewer_required
def reveal_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """The item page with the secrets redaction withheld from its proposal revealed, for
    a reviewer with `reviews.reveal_secrets`; audited (`reviews.reveal`)."""
    item = _item_or_404(request, pk)
    if not can_reveal(request.user):
        return HttpResponse(
            "You may not reveal the secrets of a proposal: an administrator grants the "
            "permission “Can reveal the secrets withheld from a proposal (audited)”.",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    reveal.record(item, request.user, source="web")
    return _item_page(request, item, reveal=True)


@require_POST
@reviewer_required
def preview_edit_view(request: AuthedRequest, pk: int, index: int) -> HttpResponse:
    """The field-level diff of an edit against the proposal (nothing is decided); 422
    with the problems of an edit the decision would refuse."""
    data = posted(request)
    if data is None:
        return too_large()
    item = _item_or_404(request, pk)
    form = review_form.review_form(item, request.user, data)
    if not 0 <= index < len(form.actions):
        raise Http404("No such action.")
    card = form.actions[index]
    if "edit" not in card.offered:
        response = HttpResponse(
            " ".join(form.limits) or "You may not edit this action.",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
        response["X-BeamWeaver-Refusal"] = form.offer.why or "not_allowed"
        return response
    review_form.preview(card)
    status = 422 if card.errors else 200
    if request.htmx:
        return render(
            request,
            f"{partials.ITEM}#edit-diff",
            {"card": card, "item": item, "show_problems": True},
            status=status,
        )
    return _item_page(request, item, form=form, status=status)


@require_http_methods(["GET", "POST"])
@reviewer_required
def preferences_view(request: AuthedRequest) -> HttpResponse:
    """The reviewer's notification preferences."""
    preference = NotificationPreference.objects.filter(user=request.user).first()
    if preference is None:
        preference = NotificationPreference(user=request.user)
    if request.method == "POST":
        form = forms.NotificationPreferenceForm(request.POST, instance=preference)
        if form.is_valid():
            form.save()
            messages.success(request, "Your notification preferences were saved.")
            return redirect("reviews:preferences")
        status = 422
    else:
        form = forms.NotificationPreferenceForm(instance=preference)
        status = 200
    context = {"form": form, "nav": "preferences", "has_email": bool(request.user.email)}
    return render(request, "reviews/preferences.html", context, status=status)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A refused CSRF check: most often a session that changed in another tab."""
    return render(request, "reviews/csrf_failure.html", {"reason": reason}, status=403)


__all__ = [
    "batch_view",
    "csrf_failure",
    "decide_view",
    "inbox_view",
    "item_view",
    "preferences_view",
    "preview_edit_view",
    "reveal_view",
]
