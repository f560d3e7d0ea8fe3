"""`/threads`: create, get, update (metadata), delete, copy, search, count."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest, JsonResponse

from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol import assistants, lookup, representations
from beamweaver_core.protocol.body import json_body
from beamweaver_core.protocol.deletion import delete_thread, kept_elsewhere
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.runtime import thread_ids
from beamweaver_core.runtime.access import access
from beamweaver_core.types import StateSnapshot

SCAN_LIMIT = 1000
"""Threads read at most to match a `values` filter (values are not indexed)."""

_COPY = {
    "bw_checkpoint": (
        "ns, checkpoint_id, seq, step, parent_id, source, created_at, document, metadata, "
        "task_writes"
    ),
    "bw_checkpoint_blob": "ns, channel, version, blob",
    "bw_checkpoint_write": "ns, checkpoint_id, task_id, record",
}


def shown(thread: Thread) -> dict[str, Any]:
    """The thread as `threads.get` shows it: its state read alone (`lookup.snapshot`), and
    its latest run if it failed (a failed thread's error is its latest run's)."""
    failed = (
        lookup.latest_runs([thread.pk]).get(thread.pk)
        if thread.status == Thread.Status.FAILED
        else None
    )
    return _shown(thread, lookup.snapshot(thread), failed)


def shown_all(threads: Iterable[Thread]) -> list[dict[str, Any]]:
    """The threads as `shown` shows each. Read `lookup.with_busy` and
    `lookup.with_latest_options`, they ask, whatever their number, one statement for
    their checkpoints (`lookup.snapshots`) and one for the latest runs of those that
    failed."""
    found = list(threads)
    failed = lookup.latest_runs([t.pk for t in found if t.status == Thread.Status.FAILED])
    snapshots = lookup.snapshots(found)
    return [
        _shown(thread, snapshot, failed.get(thread.pk))
        for thread, snapshot in zip(found, snapshots, strict=True)
    ]


def _shown(
    thread: Thread, snapshot: StateSnapshot | None, failed_run: Run | None
) -> dict[str, Any]:
    error = representations.error_of(failed_run)
    return representations.thread(
        thread,
        snapshot,
        busy=lookup.busy(thread),
        error=error["message"] if error else None,
    )


def create(request: HttpRequest, user: Any) -> dict[str, Any]:
    body = json_body(request, "ThreadCreate")
    if body.get("supersteps"):
        raise ProtocolError(
            422,
            "Creating a thread with supersteps is not supported: create it, then add state "
            "with threads.update_state.",
        )
    metadata = dict(body.get("metadata") or {})
    thread_id = thread_ids.check(body["thread_id"]) if body.get("thread_id") else str(uuid.uuid4())
    graph = assistants.graph_name(str(metadata.get("graph_id", "")), user) or ""
    existing = Thread.objects.filter(id=thread_id).first()
    if existing is not None:
        if (
            body.get("if_exists") == "do_nothing"
            and lookup.threads(user).filter(id=thread_id).exists()
        ):
            return shown(existing)
        raise ProtocolError(409, f"Thread {thread_id!r} already exists.")
    try:
        with transaction.atomic():
            thread = Thread.objects.create(id=thread_id, graph=graph, metadata=metadata)
    except IntegrityError:
        raise ProtocolError(409, f"Thread {thread_id!r} already exists.") from None
    # Just created: no run, no checkpoint, so nothing to read for its status and state.
    return representations.thread(thread, None, busy=False)


def get(request: HttpRequest, user: Any, thread_id: str) -> dict[str, Any]:
    return shown(lookup.thread(user, thread_id, busy=True, latest_options=True))


def patch(request: HttpRequest, user: Any, thread_id: str) -> dict[str, Any]:
    body = json_body(request, "ThreadPatch")
    with transaction.atomic():
        locked = lookup.changeable(user, thread_id)
        locked.metadata = {**(locked.metadata or {}), **body["metadata"]}
        locked.save(update_fields=["metadata", "updated_at"])
    return shown(locked)


def delete(request: HttpRequest, user: Any, thread_id: str) -> None:
    with transaction.atomic():
        thread = lookup.changeable(user, thread_id)
        if lookup.busy(thread):
            raise ProtocolError(
                409,
                f"Thread {thread_id!r} has an active run; cancel it before deleting the thread.",
            )
        kept = kept_elsewhere(thread)
        if kept:
            raise ProtocolError(
                409,
                f"Thread {thread_id!r} has {kept} that the audit keeps, so it cannot be deleted "
                "over the API; an administrator can delete it in the admin.",
            )
        delete_thread(thread)


def copy(request: HttpRequest, user: Any, thread_id: str) -> dict[str, Any]:
    new_id = str(uuid.uuid4())
    _not_running(lookup.thread(user, thread_id))  # at once, without waiting on its lock
    with transaction.atomic():
        # Checked under the thread's lock, which the pause that asks a question holds while
        # it writes the question's review items: a question that would hide the thread
        # from some reviewers is either seen here or asked after the copy.
        thread = lookup.locked(user, thread_id)
        refusal = access().copy_refusal(thread)
        if refusal is not None:
            raise ProtocolError(409, refusal)
        _not_running(thread)
        status = Thread.Status.IDLE if thread.status == Thread.Status.RUNNING else thread.status
        copied = Thread.objects.create(
            id=new_id, graph=thread.graph, status=status, metadata=dict(thread.metadata or {})
        )
        with connection.cursor() as cursor:
            for table, columns in _COPY.items():
                cursor.execute(
                    f"INSERT INTO {table} (thread_id, {columns}) "
                    f"SELECT %s, {columns} FROM {table} WHERE thread_id = %s",
                    [new_id, thread.id],
                )
    return shown(copied)


def _not_running(thread: Thread) -> None:
    """409 while a run of the thread runs: it writes its checkpoints as it goes, a
    question's before the pause writes the items that may hide the thread, so a copy then
    could keep what they hide."""
    if Run.objects.filter(thread=thread, status=Run.Status.RUNNING).exists():
        raise ProtocolError(
            409, f"Thread {thread.id!r} has a running run; copy it once the run stops."
        )


def _filtered(user: Any, body: Mapping[str, Any]) -> QuerySet[Thread]:
    """The visible threads the body's filters match, each read with what `shown_all`
    needs of it (`lookup.with_busy`, `lookup.with_latest_options`; a plain count leaves
    out what it does not filter on)."""
    threads = lookup.with_latest_options(lookup.with_busy(lookup.threads(user)))
    if body.get("ids"):
        threads = threads.filter(id__in=body["ids"])
    if body.get("metadata"):
        threads = threads.filter(metadata__contains=body["metadata"])
    status = body.get("status")
    if status:
        if status == "busy":
            threads = threads.filter(**{lookup.BUSY: True})
        else:
            threads = threads.filter(**{lookup.BUSY: False})
            if status == "interrupted":
                threads = threads.filter(status=Thread.Status.INTERRUPTED)
            elif status == "error":
                threads = threads.filter(status=Thread.Status.FAILED)
            else:
                threads = threads.exclude(
                    Q(status=Thread.Status.INTERRUPTED) | Q(status=Thread.Status.FAILED)
                )
    return threads


def _contains(values: Any, wanted: Mapping[str, Any]) -> bool:
    return isinstance(values, Mapping) and all(
        key in values and values[key] == value for key, value in wanted.items()
    )


def search(request: HttpRequest, user: Any) -> JsonResponse:
    body = json_body(request, "ThreadSearchRequest")
    field = {
        "thread_id": "id",
        "status": "status",
        "created_at": "created_at",
        "updated_at": "updated_at",
        "state_updated_at": "updated_at",
    }[body.get("sort_by") or "created_at"]
    order = field if body.get("sort_order") == "asc" else f"-{field}"
    threads = _filtered(user, body).order_by(order, "id")
    offset, limit = body.get("offset", 0), body.get("limit", 10)
    wanted = body.get("values")
    if wanted:
        shown_threads = shown_all(threads[:SCAN_LIMIT])
        page = [t for t in shown_threads if _contains(t["values"], wanted)][offset : offset + limit]
    else:
        page = shown_all(threads[offset : offset + limit])
    if body.get("select"):
        page = [{k: t[k] for k in body["select"] if k in t} for t in page]
    return JsonResponse(page, safe=False)


def count(request: HttpRequest, user: Any) -> int:
    body = json_body(request, "ThreadCountRequest")
    threads = _filtered(user, body)
    if body.get("values"):
        shown_threads = shown_all(threads[:SCAN_LIMIT])
        return sum(1 for t in shown_threads if _contains(t["values"], body["values"]))
    return threads.count()


__all__ = ["copy", "count", "create", "delete", "get", "patch", "search", "shown", "shown_all"]
