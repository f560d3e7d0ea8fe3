"""The inbox pages. Each view works as a plain HTML page first; an htmx request gets the
partial named after the element it replaces (`template#partial`)."""

from __future__ import annotations

import csv
import dataclasses
import re
import unicodedata
import uuid
from typing import Any
from urllib.parse import quote, unquote_to_bytes

from django.contrib import messages
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.db.models import Q
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import retarget

from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.redaction import redact, redact_text
from beamweaver_core.runtime import service as runtime_service
from reviews import (
    batch,
    cancelling,
    forms,
    inbox,
    partials,
    reasons,
    reveal,
    review_form,
    services,
    threads,
)
from reviews.converters import thread_segment
from reviews.decorators import reviewer_required
from reviews.models import AuditEvent, NotificationPreference, ReviewItem
from reviews.permissions import can_reveal, visible_audit, visible_threads

AUDIT_PAGE_SIZE = 50


def _partial(request: HttpRequest, template: str, name: str) -> str:
    return f"{template}#{name}" if request.htmx else template


def _posted(request: HttpRequest) -> Any:
    """The POST data, or `None` if the body is over Django's size or field limits."""
    try:
        return request.POST
    except (RequestDataTooBig, TooManyFieldsSent):
        return None


def _undecodable(request: HttpRequest) -> list[str]:
    """The names of posted fields that are not valid UTF-8 (Django turns such bytes into
    U+FFFD, so the answer would not be what the reviewer sent). A multipart body is
    parsed as a stream (by the CSRF check, before the view), so its bytes are gone: there
    a U+FFFD in a field is refused, as it cannot be told apart from an undecodable byte."""
    if request.content_type == "multipart/form-data":
        return [key for key, values in request.POST.lists() if any("\ufffd" in v for v in values)]
    if request.content_type != "application/x-www-form-urlencoded":
        return []
    body, encoding = request.body, request.encoding or "utf-8"
    bad = []
    for part in body.split(b"&"):
        name, _, value = (unquote_to_bytes(p.replace(b"+", b" ")) for p in part.partition(b"="))
        try:
            name.decode(encoding)
            value.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            bad.append(name.decode("utf-8", "replace"))
    return bad


def _encoding_problems(request: HttpRequest) -> list[dict[str, Any]]:
    bad = _undecodable(request)
    if not bad:
        return []
    message = (
        f"The form field(s) {', '.join(bad)[:200]} are not valid UTF-8; nothing was decided. "
        "Send the form again from the page (or with UTF-8 text)."
    )
    return [{"index": None, "field": "body", "message": message}]


def _too_large() -> HttpResponse:
    return HttpResponse(
        "The request is too large.", status=413, content_type="text/plain; charset=utf-8"
    )


def _inbox_page(request: HttpRequest, **extra: Any) -> dict[str, Any]:
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
def inbox_view(request: HttpRequest) -> HttpResponse:
    """Pending items, oldest first; filters, search and pages in the query string."""
    context = _inbox_page(request)
    return render(request, _partial(request, partials.INBOX, "inbox-list"), context)


_BATCH_ID = re.compile(r"^[A-Za-z0-9]{1,40}$")


@require_POST
@reviewer_required
def batch_view(request: HttpRequest) -> HttpResponse:
    """Approve or reject the selected items, each through the decision service; answers
    with the per-item report (and the refreshed list)."""
    data = _posted(request)
    if data is None:
        return _too_large()
    selection, _ = batch.parse_selection(data.getlist("items"))
    action = str(data.get("action", ""))
    problem = ""
    if action not in batch.ACTIONS:
        problem = "Choose Approve or Reject."
    elif not selection:
        problem = "Select at least one item first."
    elif len(selection) > batch.MAX_ITEMS:
        problem = f"Select at most {batch.MAX_ITEMS} items at a time."
    elif undecodable := _encoding_problems(request):
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


def _item_or_404(request: HttpRequest, pk: int) -> ReviewItem:
    return get_object_or_404(
        ReviewItem.objects.visible_to(request.user).select_related("thread", "run"), pk=pk
    )


def _item_page(
    request: HttpRequest,
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
            "thread": item.thread,
            "ws_url": f"/ws/items/{item.pk}/?digest={item.digest}",
        }
    )
    if not request.htmx:
        state = threads.current_state(item.thread)
        context["conversation"] = threads.conversation(state)
    template = _partial(request, partials.ITEM, "decision-panel")
    return render(request, template, context, status=status)


@require_GET
@reviewer_required
def item_view(request: HttpRequest, pk: int) -> HttpResponse:
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
def decide_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Decide an item (see `reviews.services.decide` for every outcome)."""
    data = _posted(request)
    if data is None:
        return _too_large()
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
    undecodable = _encoding_problems(request)
    if undecodable:  # refused by the service like the API's undecodable body
        decision = dataclasses.replace(decision, problems=[*undecodable, *decision.problems])
    outcome = services.decide(decision)
    if outcome.status == 404:
        raise Http404("No such review item.")
    item.refresh_from_db()
    if outcome.recorded and not request.htmx:
        messages.success(request, outcome.message)
        return HttpResponseRedirect(reverse("reviews:item", args=[item.pk]))
    bound = None
    if outcome.status == 422 and item.is_pending:
        bound = review_form.review_form(item, request.user, data, outcome.problems)
    response = _item_page(request, item, form=bound, outcome=outcome, status=outcome.status)
    if outcome.status == 403:
        # A policy refusal to show in place, not a lost session (reviews/static/beamweaver/js/beamweaver.js).
        response["X-BeamWeaver-Refusal"] = outcome.code
    return response


@require_POST
@reviewer_required
def reveal_view(request: HttpRequest, pk: int) -> HttpResponse:
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
def preview_edit_view(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """The field-level diff of an edit against the proposal (nothing is decided)."""
    data = _posted(request)
    if data is None:
        return _too_large()
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
    review_form.preview(card, data)
    if request.htmx:
        return render(
            request,
            f"{partials.ITEM}#edit-diff",
            {"card": card, "item": item, "show_problems": True},
        )
    return _item_page(request, item, form=form)


@require_GET
@reviewer_required
def thread_view(request: HttpRequest, thread_id: str) -> HttpResponse:
    """A thread: status, live run progress, state, history, review items, decisions."""
    thread = get_object_or_404(visible_threads(request.user), id=thread_id)
    context = partials.thread_context(thread, request.user)
    context["ws_url"] = f"/ws/threads/{quote(thread_segment(thread.id), safe='')}/"
    return render(request, _partial(request, partials.THREAD, "thread-live"), context)


@require_POST
@reviewer_required
def cancel_run_view(request: HttpRequest, thread_id: str) -> HttpResponse:
    """Cancel the thread's active run (its pending items are cancelled with it), for who
    may (`reviews.cancelling`)."""
    outcome = cancelling.cancel(request.user, thread_id)
    if outcome.status == 404:
        raise Http404("No such thread.")
    if outcome.status == 403:
        return HttpResponse(outcome.message, status=403, content_type="text/plain; charset=utf-8")
    if outcome.status == 200:
        messages.success(request, outcome.message)
    elif outcome.code == "no_active_run":
        messages.info(request, outcome.message)
    else:
        messages.error(request, outcome.message)
    return redirect("reviews:thread", thread_id=thread_id)


@require_http_methods(["GET", "POST"])
@reviewer_required
def start_run_view(request: HttpRequest) -> HttpResponse:
    """Pick a registered graph, type its input, then watch it on its thread page."""
    if request.method == "POST":
        data = _posted(request)
        if data is None:
            return _too_large()
        form = forms.StartRunForm(data)
        if form.is_valid():
            try:
                run = runtime_service.start_run(
                    form.cleaned_data["graph"], form.cleaned_data["input"], user=request.user
                )
            except (BeamWeaverError, LookupError, ValueError) as exc:
                form.add_error(None, str(exc))
            else:
                return redirect("reviews:thread", thread_id=run.thread_id)
        status = 422
    else:
        form = forms.StartRunForm(initial={"graph": request.GET.get("graph", "")})
        status = 200
    agents = [name for name, _ in form.fields["graph"].choices if forms.is_agent(str(name))]
    return render(
        request, "reviews/start_run.html", {"form": form, "agents": agents}, status=status
    )


def _audit_events(request: HttpRequest) -> tuple[Any, dict[str, str]]:
    filters = {
        key: str(request.GET.get(key, "")).strip()[:200]
        for key in ("actor", "action", "thread", "graph", "item")
    }
    events = visible_audit(request.user, AuditEvent.objects.select_related("actor"))
    if filters["actor"]:
        events = events.filter(actor_name=filters["actor"])
    if filters["action"]:
        events = events.filter(action=filters["action"])
    if filters["thread"]:
        events = events.filter(thread_ref__icontains=filters["thread"])
    if filters["graph"]:
        events = events.filter(graph=filters["graph"])
    if filters["item"]:
        events = events.filter(Q(item_ref=filters["item"]))
    return events, filters


@require_GET
@reviewer_required
def audit_view(request: HttpRequest) -> HttpResponse:
    """The audit log: every decision and refused attempt; filterable; CSV export."""
    events, filters = _audit_events(request)
    if request.GET.get("format") == "csv":
        return _audit_csv(events)
    number = request.GET.get("page")
    page = inbox.CappedPaginator(events, AUDIT_PAGE_SIZE, number).get_page(number)
    query = "&".join(f"{k}={quote(v)}" for k, v in filters.items() if v)
    context = {
        "page": page,
        "filters": filters,
        "query": query,
        "actions": AuditEvent.Action.choices,
    }
    return render(request, _partial(request, "reviews/audit.html", "audit-list"), context)


class _Echo:
    def write(self, value: str) -> str:
        return value


# Spreadsheets run a cell as a formula when its first visible character is one of these
# (after NFKC, so the fullwidth and small forms count too); they skip leading spaces,
# line breaks, control and format characters to find it.
_FORMULA_TRIGGERS = frozenset("=+-@|")


def _csv_cell(value: Any) -> str:
    text = "" if value is None else redact_text(str(value))
    if text[:1] in ("\t", "\r", "\n"):
        return "'" + text
    for char in text:
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zs", "Zl", "Zp"):
            continue
        if unicodedata.normalize("NFKC", char)[:1] in _FORMULA_TRIGGERS:
            return "'" + text
        break
    return text


_AUDIT_COLUMNS = (
    "at",
    "actor_name",
    "action",
    "item_ref",
    "thread_ref",
    "graph",
    "interrupt_id",
    "summary",
    "status_code",
    "digest_seen",
    "digest_current",
    "client_decision_id",
    "decision",
    "diff",
    "message",
    "note",
    "source",
)


def _audit_csv(events: Any) -> StreamingHttpResponse:
    from reviews.payloads import canonical

    writer = csv.writer(_Echo())

    def rows() -> Any:
        yield writer.writerow(_AUDIT_COLUMNS)
        for event in events.iterator(chunk_size=500):
            values = []
            for column in _AUDIT_COLUMNS:
                value = getattr(event, column)
                if column in ("decision", "diff") and value is not None:
                    value = canonical(redact(value))
                elif column == "at":
                    value = value.isoformat()
                values.append(_csv_cell(value))
            yield writer.writerow(values)

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="beamweaver-audit.csv"'
    return response


@require_http_methods(["GET", "POST"])
@reviewer_required
def preferences_view(request: HttpRequest) -> HttpResponse:
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
    "audit_view",
    "batch_view",
    "cancel_run_view",
    "csrf_failure",
    "decide_view",
    "inbox_view",
    "item_view",
    "preferences_view",
    "preview_edit_view",
    "reveal_view",
    "start_run_view",
    "thread_view",
]
