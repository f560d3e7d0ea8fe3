"""Start, resume, cancel and re-queue durable runs (used by views, commands and tests).

Each function is one transaction that writes the truth to Postgres; the hint that wakes a
worker is sent only after it commits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists
from django.utils import timezone

from beamweaver_core.checkpoint import serde
from beamweaver_core.exceptions import BeamWeaverError, ThreadBusyError
from beamweaver_core.models import Run, Thread
from beamweaver_core.observability import instruments
from beamweaver_core.observability.runs import queued_context
from beamweaver_core.runtime import options as run_options
from beamweaver_core.runtime import registry, thread_ids
from beamweaver_core.runtime.context import REQUESTER_KEYS, run_context
from beamweaver_core.runtime.events import announce_status
from beamweaver_core.runtime.locks import queued_run_and_thread, run_and_thread
from beamweaver_core.runtime.queue import promote_waiting
from beamweaver_core.runtime.signals import run_finished
from beamweaver_core.runtime.wakeup import notify_run_queued

logger = logging.getLogger(__name__)

ACTIVE = (Run.Status.QUEUED, Run.Status.RUNNING)


class RunStateError(BeamWeaverError, ValueError):
    """The run is not in a state that allows the operation."""


def _carried_context(thread_id: str, context: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The context of a run that carries on the thread's work: `context`, else the thread's
    latest run's, naming the thread's requester (`Run.objects.requester_id`) whatever it
    named."""
    if context is None:
        latest = Run.objects.filter(thread_id=thread_id).order_by("-created_at")
        context = latest.values_list("context", flat=True).first()
    owner_id = Run.objects.requester_id(thread_id)
    owner = None if owner_id is None else get_user_model().objects.filter(pk=owner_id).first()
    if context is None:
        return run_context(None, owner)
    return run_context({k: v for k, v in context.items() if k not in REQUESTER_KEYS}, owner)


def _jsonable(value: Any, what: str) -> Any:
    try:
        return serde.to_jsonable(value, (what,))
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def start_run(
    graph: str,
    input: Mapping[str, Any] | None,
    *,
    thread_id: str | None = None,
    user: Any = None,
    metadata: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    enqueue: bool = False,
) -> Run:
    """Queue a run of the registered `graph` on `input` (a new thread unless given; a
    given `thread_id` must follow `beamweaver_core.runtime.thread_ids`, or
    `InvalidThreadIdError`). `input=None` continues the thread from its pending step
    (with the options' `goto` / `update`, as a `Command`).

    `context` (a JSON object) is the graph's `runtime.context`, kept with the run and
    reused by the thread's resumes; with a `user`, it also carries the requester's
    `user_id` and `username` (taken from `user`, replacing keys of those names). A run
    without input on an existing thread (a replay or fork from a checkpoint, a `goto` or
    `update`) carries on the thread's work (`Run.carries_on`): as a resume, it runs in the
    context of the thread's latest run unless `context` gives a new one, and for the
    thread's requester, not `user` (who is recorded as the run's creator).
    `metadata` is a new thread's; an existing thread gains the keys it lacks (its own
    keep their values).
    `options` say how to run (`beamweaver_core.runtime.options`). A thread takes one queued
    run at a time: another is refused (`ThreadBusyError`), unless `enqueue`, which makes it
    wait (`Run.Status.WAITING`) until the runs before it have run.

    Inside a caller's transaction it opens no savepoint (one statement fewer each way):
    an error it raises leaves that transaction to be rolled back, so a caller that means
    to go on after catching one opens its own savepoint around the call."""
    payload, options_payload, context_payload = _start_payloads(
        graph, input, user, context, options
    )
    thread_id = thread_ids.check(thread_id) if thread_id else uuid.uuid4().hex
    metadata_json = json.dumps(dict(metadata or {}), ensure_ascii=False)
    with _busy(thread_id), transaction.atomic(savepoint=False):
        with connection.cursor() as cursor:
            cursor.execute(_LOCK_THREAD, [thread_id, graph, metadata_json])
            owner, created = cursor.fetchone()
        if owner != graph:
            raise ValueError(f"Thread {thread_id!r} belongs to graph {owner!r}, not {graph!r}.")
        status = Run.Status.QUEUED
        if not created:
            ahead = set(
                Run.objects.filter(
                    thread_id=thread_id, status__in=(Run.Status.QUEUED, Run.Status.WAITING)
                ).values_list("status", flat=True)
            )
            if ahead and enqueue:
                status = Run.Status.WAITING
            elif Run.Status.QUEUED in ahead:
                raise ThreadBusyError(
                    f"Thread {thread_id!r} already has a queued run; wait for it to start."
                )
            if payload is None:
                context_payload = _carried_context(thread_id, context)
        run = _create(
            Thread(id=thread_id),
            graph,
            Run.Kind.START,
            payload,
            user,
            context_payload,
            options=options_payload,
            status=status,
        )
    return run


def check_start(
    graph: str,
    input: Mapping[str, Any] | None,
    *,
    user: Any = None,
    context: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> None:
    """Raise what `start_run` would raise for these arguments before it touches the
    database (`ValueError` saying what is wrong, `UnknownGraphError`): for a caller that
    acts on the thread before starting the run (a multitask strategy stopping its active
    runs) and must not act for a run that will be refused."""
    _start_payloads(graph, input, user, context, options)


def _start_payloads(
    graph: str,
    input: Mapping[str, Any] | None,
    user: Any,
    context: Mapping[str, Any] | None,
    options: Mapping[str, Any] | None,
) -> tuple[Any, Any, dict[str, Any] | None]:
    """A start's input, options and context, checked, as stored."""
    registry.load(graph)
    if input is not None and not isinstance(input, Mapping):
        raise ValueError(f"The input of a run must be a JSON object, got {input!r}.")
    payload = None if input is None else _jsonable(dict(input), "input")
    checked = run_options.check(options, registry.compiled_graph(graph, None)) if options else None
    options_payload = None if checked is None else _jsonable(checked, "options")
    return payload, options_payload, run_context(context, user)


# Create the thread or lock the existing one (the update takes its row lock, as
# SELECT ... FOR UPDATE would), giving a thread without a graph this one and the metadata
# keys it lacks (its own keep their values), in one statement; returns the thread's graph
# and whether the thread is new (then no run of it can be queued).
_LOCK_THREAD = """
INSERT INTO bw_thread (id, graph, status, metadata, created_at, updated_at)
VALUES (%s, %s, 'idle', %s::jsonb, now(), now())
ON CONFLICT (id) DO UPDATE
   SET graph = CASE WHEN bw_thread.graph = '' THEN EXCLUDED.graph ELSE bw_thread.graph END,
       metadata = CASE WHEN jsonb_typeof(bw_thread.metadata) = 'object'
                       THEN EXCLUDED.metadata || bw_thread.metadata
                       ELSE bw_thread.metadata END,
       updated_at = CASE WHEN bw_thread.graph = '' THEN now() ELSE bw_thread.updated_at END
RETURNING graph, (xmax = 0) AS created
"""


def resume_thread(
    thread_id: str,
    answers: Mapping[str, Any] | None,
    *,
    user: Any = None,
    context: Mapping[str, Any] | None = None,
) -> Run:
    """Queue a resume of the thread with `answers` (`{interrupt_id: answer}`; `None` to
    continue past a breakpoint). Answers for a thread whose resume is still queued join
    that run, so several decisions of one thread resume it once.

    The resume carries on the context of the run it continues, unless `context` gives a
    new one (which replaces it whole; `user`, the one answering, is not put in it: the
    context keeps naming who requested the run), and that run's options but the one-shot
    `checkpoint_id`, `goto` and `update` (so a breakpoint it paused at is still the one
    answered). A queued resume has one context: answers
    join it without a context or with that same one, and a different one is refused
    (`ThreadBusyError`) rather than dropped.

    Inside a caller's transaction it opens no savepoint, as `start_run`: an error it
    raises leaves that transaction to be rolled back (the decision service calls it
    inside a savepoint of its own, which turns a refused resume into a `busy` outcome)."""
    payload = None if answers is None else _jsonable(dict(answers), "answers")
    new_context = None if context is None else run_context(context)
    with _busy(thread_id), transaction.atomic(savepoint=False):
        # The queued run, then the thread (`runtime.locks`): the decision service and the
        # deadline sweep hold both already (`run_and_thread` of the paused run), so these
        # locks wait for nothing there, and a cancel of the queued run waits for them.
        queued, thread = queued_run_and_thread(thread_id)
        if thread is None:
            raise LookupError(f"Thread {thread_id!r} does not exist.")
        if thread.status == Thread.Status.CANCELLED:
            raise RunStateError(
                f"Thread {thread_id!r} was cancelled; its pending interrupts can no longer be answered."
            )
        if queued is not None:
            if queued.kind != Run.Kind.RESUME:
                raise ThreadBusyError(
                    f"Thread {thread_id!r} has a queued {queued.kind} run; resume it after that run starts."
                )
            if new_context is not None and new_context != queued.context:
                raise ThreadBusyError(
                    f"Thread {thread_id!r} already has a queued resume with another context, "
                    "and its answers resume the thread with that one; answer without a context "
                    "(or with the same one) to join it, or give the new context once that "
                    "resume has started."
                )
            merged = dict(queued.input or {})
            clash = [k for k in (payload or {}) if k in merged and merged[k] != payload[k]]  # type: ignore[index]
            if clash:
                raise ThreadBusyError(
                    f"Interrupt(s) {clash} of thread {thread_id!r} already have a queued answer."
                )
            merged.update(payload or {})
            queued.input = merged
            queued.save(update_fields=["input", "updated_at"])
            return queued
        # Read after the thread's lock, so it sees a run queued while this waited for it
        # (its lock came after the queued run's): never locked now, which would wait for
        # a run while holding its thread, but refused.
        latest = (
            Run.objects.filter(thread=thread)
            .annotate(queued=Exists(Run.objects.filter(thread=thread, status=Run.Status.QUEUED)))
            .order_by("-created_at")
            .values("context", "options", "queued")
            .first()
        ) or {"context": None, "options": None, "queued": False}
        if latest["queued"]:
            raise ThreadBusyError(
                f"A run of thread {thread_id!r} was queued while its answers were being "
                "queued; answer again to join it."
            )
        if new_context is None:
            new_context = latest["context"]
        return _create(
            thread,
            thread.graph,
            Run.Kind.RESUME,
            payload,
            user,
            new_context,
            options=run_options.carried(latest["options"]),
        )


def add_command(run: Run, goto: Any = None, update: Mapping[str, Any] | None = None) -> Run:
    """Have the queued resume `run` also apply `goto` / `update` when it continues the
    thread (`Command(resume=..., goto=..., update=...)`): for a caller that answers and
    changes the thread at once, in the transaction in which its answer queued `run` (or
    joined it). Refused with `ThreadBusyError` when the run already carries a goto or an
    update (one resume applies one caller's changes) and `ValueError` for ones the graph
    does not take; the caller's transaction is then to be rolled back."""
    with transaction.atomic(savepoint=False):
        queued = (
            Run.objects.select_for_update()
            .filter(pk=run.pk, status=Run.Status.QUEUED, kind=Run.Kind.RESUME)
            .first()
        )
        if queued is None:
            raise RunStateError(f"Run {run.pk} is not a queued resume; it cannot take a command.")
        options = dict(queued.options or {})
        if {"goto", "update"} & set(options):
            raise ThreadBusyError(
                f"The queued resume of thread {queued.thread_id!r} already applies a goto or "
                "an update; send yours once it has started (or as update_state)."
            )
        checked = run_options.check(
            {"goto": goto, "update": update}, registry.compiled_graph(queued.graph, None)
        )
        if checked:
            queued.options = _jsonable({**options, **checked}, "options")
            queued.save(update_fields=["options", "updated_at"])
    return queued


def _create(
    thread: Thread,
    graph: str,
    kind: str,
    payload: Any,
    user: Any,
    context: Any,
    *,
    options: Any = None,
    status: str = Run.Status.QUEUED,
) -> Run:
    """Insert the queued (or waiting) run, in the caller's transaction, which holds the
    thread's row lock and has checked that no run is queued on it. No savepoint: should
    the one-queued-run constraint still refuse it (a run re-queued by an operator
    meanwhile), the whole transaction fails, and `_busy` turns that into
    `ThreadBusyError`."""
    run = Run.objects.create(
        thread=thread,
        graph=graph,
        kind=kind,
        status=status,
        input=payload,
        context=context,
        options=options,
        created_by=user if getattr(user, "pk", None) is not None else None,
        trace_context=queued_context(),
    )
    if status == Run.Status.QUEUED:
        transaction.on_commit(lambda: notify_run_queued(run.id))
    return run


@contextlib.contextmanager
def _busy(thread_id: str) -> Iterator[None]:
    try:
        yield
    except IntegrityError as exc:
        diag = getattr(exc.__cause__, "diag", None)
        if getattr(diag, "constraint_name", None) != "bw_run_one_queued_per_thread":
            raise
        raise ThreadBusyError(
            f"Thread {thread_id!r} already has a queued run; wait for a worker to start it "
            "(or cancel it in the admin) before queueing another."
        ) from None


def cancel_run(run_id: Any, *, user: Any = None) -> Run:
    """Cancel a waiting, queued, running or interrupted run. A running run stops at its
    next checkpoint write (its fenced writes no longer match a running run). A waiting run
    never started: cancelling it leaves its thread as it is."""
    with transaction.atomic():
        run, thread = run_and_thread(run_id)
        if run.status == Run.Status.WAITING:
            _mark_cancelled(run, user)
            return run
        if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.INTERRUPTED):
            raise RunStateError(
                f"Run {run_id} is {run.status}; only waiting, queued, running or interrupted "
                "runs can be cancelled."
            )
        # Accepted decisions are always applied: a queued resume carries them, so neither
        # it nor the paused run it continues can be cancelled before it starts. Cancel the
        # resumed run once it is running instead.
        decided = Run.objects.filter(thread=thread, status=Run.Status.QUEUED, kind=Run.Kind.RESUME)
        if (run.status == Run.Status.INTERRUPTED and decided.exists()) or (
            run.status == Run.Status.QUEUED and run.kind == Run.Kind.RESUME
        ):
            raise RunStateError(
                f"A decision for thread {thread.id!r} was accepted and its resume is queued, so "
                "the run continues with it; cancel the resumed run once it is running."
            )
        _mark_cancelled(run, user)
        thread.status = Thread.Status.CANCELLED
        thread.save(update_fields=["status", "updated_at"])
        run_finished.send(sender=Run, run=run)
        promote_waiting(thread.id)
    return run


def _mark_cancelled(run: Run, user: Any) -> None:
    thread_id, run_id = run.thread_id, str(run.id)
    transaction.on_commit(lambda: announce_status(thread_id, run_id, Run.Status.CANCELLED))
    run.status = Run.Status.CANCELLED
    run.finished_at = timezone.now()
    who = user.get_username() if getattr(user, "pk", None) is not None else ""
    run.error = f"Cancelled by {who or 'an operator'}."
    run.lease_owner = ""
    run.lease_expires_at = None
    run.save()


def requeue_run(run_id: Any) -> Run:
    """Put a failed run back in the queue (it continues from its last checkpoint)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(id=run_id)
        if run.status != Run.Status.FAILED:
            raise RunStateError(f"Run {run_id} is {run.status}; only failed runs can be re-queued.")
        if (
            Run.objects.filter(thread_id=run.thread_id, status=Run.Status.QUEUED)
            .exclude(id=run.id)
            .exists()
        ):
            raise ThreadBusyError(
                f"Thread {run.thread_id!r} already has a queued run, which continues from the "
                f"same checkpoint; let it run (or cancel it) instead of re-queueing run {run_id}."
            )
        run.status = Run.Status.QUEUED
        run.error = ""
        run.attempts = 0
        run.finished_at = None
        run.save()
        transaction.on_commit(lambda: notify_run_queued(run.id))
        transaction.on_commit(instruments.RUN_REQUEUES.labels("operator").inc)
    return run


__all__ = [
    "RunStateError",
    "add_command",
    "cancel_run",
    "check_start",
    "requeue_run",
    "resume_thread",
    "start_run",
]
