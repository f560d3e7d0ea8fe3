"""The thread pages: a thread and its live run, cancelling its run, starting a run."""

from __future__ import annotations

from urllib.parse import quote

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.runtime import service as runtime_service
from reviews import cancelling, forms, partials
from reviews.converters import thread_segment
from reviews.decorators import reviewer_required
from reviews.http_statuses import http_status
from reviews.outcomes import Code
from reviews.permissions import visible_threads
from reviews.posted import posted, too_large


@require_GET
@reviewer_required
def thread_view(request: HttpRequest, thread_id: str) -> HttpResponse:
    """A thread: status, live run progress, state, history, review items, decisions."""
    thread = get_object_or_404(visible_threads(request.user), id=thread_id)
    context = partials.thread_context(thread, request.user)
    context["ws_url"] = f"/ws/threads/{quote(thread_segment(thread.id), safe='')}/"
    return render(request, partials.for_request(request, partials.THREAD, "thread-live"), context)


@require_POST
@reviewer_required
def cancel_run_view(request: HttpRequest, thread_id: str) -> HttpResponse:
    """Cancel the thread's active run (its pending items are cancelled with it), for who
    may (`reviews.cancelling`)."""
    outcome = cancelling.cancel(request.user, thread_id)
    status = http_status(outcome)
    if status in (403, 404):
        if status == 404:
            raise Http404("No such thread.")
        return HttpResponse(outcome.message, status=403, content_type="text/plain; charset=utf-8")
    if outcome.done:
        messages.success(request, outcome.message)
    elif outcome.code == Code.NO_ACTIVE_RUN:
        messages.info(request, outcome.message)
    else:
        messages.error(request, outcome.message)
    return redirect("reviews:thread", thread_id=thread_id)


@require_http_methods(["GET", "POST"])
@reviewer_required
def start_run_view(request: HttpRequest) -> HttpResponse:
    """Pick a registered graph, type its input, then watch it on its thread page."""
    if request.method == "POST":
        data = posted(request)
        if data is None:
            return too_large()
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


__all__ = ["cancel_run_view", "start_run_view", "thread_view"]
