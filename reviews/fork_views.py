"""Time travel on the thread page: the form to replay or fork a thread at a checkpoint,
and its submission (`reviews.forking`)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.exceptions import CheckpointNotFoundError
from beamweaver_core.models import Thread
from beamweaver_core.redaction import redact
from beamweaver_core.requests import AuthedRequest
from beamweaver_core.runtime import registry
from reviews import forking, payloads
from reviews.decorators import reviewer_required
from reviews.http_statuses import http_status
from reviews.outcomes import Code
from reviews.permissions import visible_threads
from reviews.thread_rights import change_refusal


def _forbidden(request: AuthedRequest, thread: Thread, reason: str) -> HttpResponse:
    context = {"thread": thread, "reason": reason}
    return render(request, "reviews/fork_forbidden.html", context, status=403)


@require_http_methods(["GET", "POST"])
@reviewer_required
def fork_view(request: AuthedRequest, thread_id: str, checkpoint_id: str) -> HttpResponse:
    """Replay the thread from `checkpoint_id`, or fork it there with edited values: for
    who may change the thread (`reviews.thread_rights`), checked again under the thread's
    lock when the form is sent (`forking.fork_thread`)."""
    thread = get_object_or_404(visible_threads(request.user), id=thread_id)
    refusal = change_refusal(request.user, thread)
    if refusal is not None:
        return _forbidden(request, thread, refusal.message)
    if not thread.graph:
        raise Http404("The thread has no graph.")
    graph = registry.compiled_graph(thread.graph, PostgresCheckpointer())
    config: dict[str, Any] = {
        "configurable": {"thread_id": thread.id, "checkpoint_id": checkpoint_id}
    }
    try:
        snapshot = graph.get_state(config)
    except CheckpointNotFoundError:
        raise Http404("No such checkpoint.") from None
    values = redact(payloads.plain(snapshot.values))
    values = values if isinstance(values, dict) else {}
    form = forking.ForkForm(
        request.POST if request.method == "POST" else None,
        keys=forking.state_keys(thread, values),
        nodes=list(graph.nodes),
        current=values,
        merged=forking.merged_keys(thread),
        initial={"checkpoint_id": checkpoint_id, "mode": forking.FORK},
    )
    status = 200
    if request.method == "POST":
        if form.is_valid() and form.cleaned_data["checkpoint_id"] == checkpoint_id:
            outcome = forking.fork_thread(request.user, thread.id, form.cleaned_data)
            if outcome.done:
                messages.success(request, outcome.message)
                return redirect("reviews:thread", thread_id=thread.id)
            if outcome.code == Code.NOT_FOUND:
                raise Http404(outcome.message)
            if outcome.code == Code.NOT_ALLOWED:
                return _forbidden(request, thread, outcome.message)
            form.add_error(None, outcome.message)
            status = http_status(outcome)
        else:
            status = 422
    context = {
        "thread": thread,
        "checkpoint_id": checkpoint_id,
        "step": snapshot.metadata.get("step"),
        "next": snapshot.next,
        "form": form,
    }
    return render(request, "reviews/fork.html", context, status=status)


__all__ = ["fork_view"]
