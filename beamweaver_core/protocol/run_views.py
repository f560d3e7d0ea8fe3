"""`/threads/{id}/runs` and `/runs`: create (background), wait, stream, list, get, join,
join the stream, cancel (interrupt or rollback), delete; stateless runs and batches.

Every run is queued for the durable runtime's workers (`protocol.launch`); this process
only waits on what they store."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from beamweaver_core.models import Run
from beamweaver_core.protocol import lookup, representations, schemas
from beamweaver_core.protocol.auth import token_of
from beamweaver_core.protocol.body import check, flag, json_body, number, parse
from beamweaver_core.protocol.db import in_thread
from beamweaver_core.protocol.deletion import kept_elsewhere
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.protocol.launch import launch
from beamweaver_core.protocol.outcome import result
from beamweaver_core.protocol.stopping import stop
from beamweaver_core.protocol.waiting import result_body, until_stopped

R = TypeVar("R", bound=HttpResponseBase)

RUN_STATUS_FILTER = {
    "pending": (Run.Status.WAITING, Run.Status.QUEUED),
    "running": (Run.Status.RUNNING,),
    "success": (Run.Status.SUCCEEDED, Run.Status.INTERRUPTED),
    "error": (Run.Status.FAILED,),
    "interrupted": (Run.Status.CANCELLED,),
    "timeout": (),
}


def _shown(run: Run) -> dict[str, Any]:
    return representations.run(run, lookup.protocol_record(run))


def located(response: R, run: Run, suffix: str = "") -> R:
    """`Content-Location` names the run (the SDKs read the run id from it); `Location`
    where to reconnect, relative to the API root (the SDKs join it onto their base URL)."""
    path = f"/threads/{run.thread_id}/runs/{run.id}"
    response["Content-Location"] = path
    if suffix:
        response["Location"] = f"{path}{suffix}"
    return response


def create(request: HttpRequest, user: Any, thread_id: str | None = None) -> HttpResponse:
    schema = "RunCreateStateless" if thread_id is None else "RunCreateStateful"
    run = launch(user, thread_id, json_body(request, schema))
    return located(JsonResponse(_shown(run)), run)


def batch(request: HttpRequest, user: Any) -> list[dict[str, Any]]:
    """Stateless runs, all of them or none: they are queued in one transaction, so an item
    refused undoes those before it before any worker sees them."""
    runs = parse(request)
    check(runs, "RunBatchCreate")
    with transaction.atomic():
        return [_shown(launch(user, None, body)) for body in runs]


def listing(request: HttpRequest, user: Any, thread_id: str) -> list[dict[str, Any]]:
    thread = lookup.thread(user, thread_id)
    limit = number(request.GET, "limit", 10, low=1, high=1000)
    offset = number(request.GET, "offset", 0, low=0, high=1_000_000)
    runs = Run.objects.filter(thread=thread).select_related("protocol").order_by("-created_at")
    status = request.GET.get("status")
    if status:
        if status not in RUN_STATUS_FILTER:
            raise ProtocolError(422, f"status must be one of {', '.join(schemas.RUN_STATUSES)}.")
        runs = runs.filter(status__in=RUN_STATUS_FILTER[status])
    return [_shown(run) for run in runs[offset : offset + limit]]


def get(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> dict[str, Any]:
    return _shown(lookup.run(user, thread_id, run_id, record=True))


def delete(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> None:
    run = lookup.run(user, thread_id, run_id)
    # Not under the thread's lock: a running run's worker may hold it for a step, and the
    # run's own lock below serialises the delete with what the run does.
    lookup.may_change(user, run.thread)
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run.id)
        if run.status in lookup.ACTIVE:
            raise ProtocolError(409, f"Run {run_id} is {run.status}; cancel it before deleting it.")
        kept = kept_elsewhere(run)
        if kept:
            raise ProtocolError(
                409, f"Run {run_id} has {kept} that the audit keeps, so it cannot be deleted."
            )
        run.delete()


def _action(request: HttpRequest) -> str:
    action = request.GET.get("action", "interrupt")
    if action not in ("interrupt", "rollback"):
        raise ProtocolError(422, "action must be interrupt or rollback.")
    return action


def cancel(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> HttpResponse:
    run = lookup.run(user, thread_id, run_id)
    action, waited = _action(request), flag(request.GET, "wait")
    if run.status not in (*lookup.ACTIVE, Run.Status.INTERRUPTED):
        raise ProtocolError(
            409, f"Run {run_id} is {run.status}; only active or paused runs can be cancelled."
        )
    stop(user, [run], action)
    return HttpResponse(status=204 if waited else 202)


def cancel_many(request: HttpRequest, user: Any) -> HttpResponse:
    """The runs a `status` names (every visible thread's), or those of `thread_id` and
    `run_ids`; all of them or none."""
    body = json_body(request, "RunsCancel")
    action = _action(request)
    named = "thread_id" in body or "run_ids" in body
    if "status" in body and named:
        raise ProtocolError(
            422,
            "When providing a 'status', 'thread_id' and 'run_ids' must be omitted: the status "
            "cancels every run with that status.",
        )
    if "status" not in body and not named:
        raise ProtocolError(
            422, "Name the runs to cancel: 'thread_id' and/or 'run_ids', or a 'status'."
        )
    runs = Run.objects.filter(thread__in=lookup.threads(user))
    if "thread_id" in body:
        runs = runs.filter(thread_id=body["thread_id"])
    if "run_ids" in body:
        runs = runs.filter(id__in=body["run_ids"])
    wanted = {
        "pending": (Run.Status.WAITING, Run.Status.QUEUED),
        "running": (Run.Status.RUNNING,),
    }.get(body.get("status", "all"), lookup.ACTIVE)
    stop(user, list(runs.filter(status__in=wanted).order_by("created_at")), action)
    return HttpResponse(status=204)


# -- async: waits and streams -------------------------------------------------------


def _launched(request: HttpRequest, user: Any, thread_id: str | None) -> tuple[dict[str, Any], Run]:
    """The request's run body and the run it started (one trip to a database thread)."""
    schema = "RunCreateStateless" if thread_id is None else "RunCreateStateful"
    body = json_body(request, schema)
    return body, launch(user, thread_id, body)


async def wait(request: HttpRequest, user: Any, thread_id: str | None = None) -> HttpResponseBase:
    body, run = await in_thread(_launched)(request, user, thread_id)
    leaving = body.get("on_disconnect") == "cancel"
    response = StreamingHttpResponse(
        result_body(
            run,
            cancel_on_disconnect=leaving,
            user=user,
            token=token_of(request),
            thread_id=thread_id,
        ),
        content_type="application/json",
    )
    return located(response, run, "/join")


async def join(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> HttpResponseBase:
    run = await in_thread(lookup.run)(user, thread_id, run_id)
    stopped = await until_stopped(run)
    thread = await in_thread(lookup.thread_again)(token_of(request), thread_id, latest_options=True)
    body = await in_thread(result)(stopped, thread) if stopped is not None else {}
    return JsonResponse(body)


__all__ = [
    "batch",
    "cancel",
    "cancel_many",
    "create",
    "delete",
    "get",
    "join",
    "listing",
    "wait",
]
