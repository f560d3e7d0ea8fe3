"""Async subagent tasks on the durable runtime: each task is its own run on the queue.

`DurableAsyncTasks` is the `AsyncTaskClient` a worker installs for the run it executes
(`execution.execute`). A task is a start run of the subagent's registered graph on a new
thread, whose id is the task id; an `AsyncSubagentTask` row makes the parent's thread its
owner. Workers execute it like any run (its own checkpoints, lease and events) and its
pauses reach the review inbox like any run's. A parent sees only the tasks its own thread
started: any other id is unknown to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from beamweaver_core.agent.async_subagents import AsyncSubagentSpec, AsyncTask, AsyncTaskStatus
from beamweaver_core.agent.state import MESSAGES, as_messages, last_assistant
from beamweaver_core.agent.tools import ToolRuntime
from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.exceptions import AsyncTaskError, ThreadBusyError, UnknownAsyncTaskError
from beamweaver_core.graph import StateSnapshot
from beamweaver_core.models import AsyncSubagentTask, Run
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.queue import Claim

STATUS: Mapping[str, AsyncTaskStatus] = {
    Run.Status.QUEUED: "running",
    Run.Status.RUNNING: "running",
    Run.Status.INTERRUPTED: "interrupted",
    Run.Status.SUCCEEDED: "success",
    Run.Status.FAILED: "error",
    Run.Status.CANCELLED: "cancelled",
}
"""A task's status: that of its latest run, in the words deepagents' tools use."""

_MAX_ERROR = 1000


class DurableAsyncTasks:
    """The `AsyncTaskClient` of one claimed run: its thread owns the tasks it starts."""

    def __init__(self, claim: Claim) -> None:
        self.thread_id = claim.thread_id
        self.run_id = claim.run_id
        # A task runs in its parent's context (who asked, what the caller gave).
        self.context = claim.context

    def start(
        self, subagent: AsyncSubagentSpec, description: str, runtime: ToolRuntime
    ) -> AsyncTask:
        """Queue the task's first run; a retried tool call (same idempotency key) finds
        the task it started before instead of starting another."""
        task_id = f"task-{runtime.idempotency_key[:32]}"
        with transaction.atomic():
            task = AsyncSubagentTask.objects.filter(thread_id=task_id).first()
            if task is None:
                service.start_run(
                    subagent.graph,
                    _instructions(description),
                    thread_id=task_id,
                    user=self._requester(),
                    context=self.context,
                    metadata={
                        "async_task": {
                            "parent_thread_id": self.thread_id,
                            "parent_run_id": str(self.run_id),
                            "subagent": subagent.name,
                        }
                    },
                )
                task = AsyncSubagentTask.objects.create(
                    thread_id=task_id,
                    parent_thread_id=self.thread_id,
                    parent_run_id=self.run_id,
                    subagent=subagent.name,
                )
        return self._describe(task, _latest_run(task_id))

    def check(self, task_id: str, runtime: ToolRuntime) -> AsyncTask:
        task = self._owned(task_id)
        return self._describe(task, _latest_run(task_id), detail=True)

    def update(self, task_id: str, message: str, runtime: ToolRuntime) -> AsyncTask:
        """A new start run on the task's thread with `message` (its conversation goes on).

        A task still working on earlier instructions is stopped first (deepagents'
        "interrupt" strategy), except while it continues after a review decision: that
        decision is applied, never discarded. A task waiting for a review is refused,
        since new input would drop the pending review; so is a cancelled task."""
        task = self._owned(task_id)
        with transaction.atomic():
            run = _latest_run(task_id, lock=True)
            if run.status in service.ACTIVE and run.kind == Run.Kind.RESUME:
                raise AsyncTaskError(
                    f"Task {task_id!r} is continuing after a review decision; send new "
                    "instructions once that has finished (check_async_task shows when)."
                )
            if run.status in service.ACTIVE:
                payload = self._stop_for_update(run, message)
            elif run.status == Run.Status.CANCELLED:
                raise AsyncTaskError(f"Task {task_id!r} was cancelled; start a new task instead.")
            elif run.status == Run.Status.INTERRUPTED or (
                run.status == Run.Status.FAILED and _snapshot(run).interrupts
            ):
                raise AsyncTaskError(
                    f"Task {task_id!r} is waiting for a human review in the review inbox; new "
                    "instructions now would discard it. Send them once the review is decided, "
                    "or cancel the task."
                )
            else:
                payload = _instructions(message)
            try:
                service.start_run(
                    run.graph,
                    payload,
                    thread_id=task_id,
                    user=self._requester(),
                    context=self.context,
                )
            except ThreadBusyError as exc:
                raise AsyncTaskError(
                    f"Task {task_id!r} is busy, try again shortly: {exc}"
                ) from None
        return self._describe(task, _latest_run(task_id))

    def cancel(self, task_id: str, runtime: ToolRuntime) -> AsyncTask:
        """Cancel the task's current run (queued, running or waiting for a review)."""
        task = self._owned(task_id)
        with transaction.atomic():
            run = _latest_run(task_id, lock=True)
            if run.status not in (*service.ACTIVE, Run.Status.INTERRUPTED):
                raise AsyncTaskError(
                    f"Task {task_id!r} already ended ({STATUS[run.status]}); there is nothing "
                    "to cancel."
                )
            try:
                service.cancel_run(run.id)
            except service.RunStateError:
                raise AsyncTaskError(
                    f"Task {task_id!r} cannot be cancelled now: a review decision for it was "
                    "accepted and it is continuing with that decision. Check it again later."
                ) from None
            _set_error(run, f"Cancelled by its parent agent (thread {self.thread_id!r}).")
        return self._describe(task, _latest_run(task_id))

    def list(self, runtime: ToolRuntime) -> tuple[AsyncTask, ...]:
        tasks = AsyncSubagentTask.objects.filter(parent_thread_id=self.thread_id)
        latest = {
            run.thread_id: run
            for run in Run.objects.filter(thread_id__in=tasks.values("thread_id"))
            .order_by("thread_id", "-created_at", "-id")
            .distinct("thread_id")
        }
        return tuple(self._describe(task, latest[task.thread_id]) for task in tasks)

    def _owned(self, task_id: str) -> AsyncSubagentTask:
        task = AsyncSubagentTask.objects.filter(
            thread_id=task_id, parent_thread_id=self.thread_id
        ).first()
        if task is None:
            raise UnknownAsyncTaskError(
                f"No async task {task_id!r} was started by this agent. Pass a task_id exactly "
                "as start_async_task returned it (list_async_tasks shows them all)."
            )
        return task

    def _requester(self) -> Any:
        """The user the parent works for: its tasks' reviews count them as the requester
        (so they cannot approve them where self-approval is barred)."""
        parent = Run.objects.filter(id=self.run_id).first()
        requester = parent.requester_id() if parent is not None else None
        if requester is None:
            return None
        return get_user_model().objects.filter(pk=requester).first()

    def _stop_for_update(self, run: Run, message: str) -> dict[str, Any]:
        """Cancel `run` (a queued or running start run) and return the input of the run
        that replaces it: its own input too if it saved nothing yet, so the task never
        loses the instructions it had not started on."""
        service.cancel_run(run.id)
        _set_error(run, f"Stopped by new instructions from its parent agent ({self.thread_id!r}).")
        if _wrote_checkpoint(run):
            return _instructions(message)
        earlier = dict(run.input or {})
        messages = [*(earlier.get(MESSAGES) or ()), *_instructions(message)[MESSAGES]]
        return {**earlier, MESSAGES: messages}

    @staticmethod
    def _describe(task: AsyncSubagentTask, run: Run, *, detail: bool = False) -> AsyncTask:
        status = STATUS[run.status]
        described = AsyncTask(task_id=task.thread_id, subagent=task.subagent, status=status)
        if not detail:
            return described
        if status == "success":
            answer = last_assistant(as_messages(_snapshot(run).values.get(MESSAGES) or ()))
            return dataclasses.replace(described, result=answer.content if answer else "")
        if status == "error":
            return dataclasses.replace(described, error=run.error.split("\n\n", 1)[0][:_MAX_ERROR])
        if status == "interrupted":
            pending = (run.result or {}).get("interrupts") or ()
            return dataclasses.replace(
                described,
                interrupts=tuple({"id": i.get("id"), "value": i.get("value")} for i in pending),
            )
        return described


def _instructions(text: str) -> dict[str, Any]:
    return {MESSAGES: [{"role": "user", "content": text}]}


def _latest_run(task_id: str, *, lock: bool = False) -> Run:
    runs = Run.objects.filter(thread_id=task_id).order_by("-created_at", "-id")
    if lock:
        runs = runs.select_for_update()
    run = runs.first()
    if run is None:  # the task and its first run are created in one transaction
        raise UnknownAsyncTaskError(f"Async task {task_id!r} has no run.")
    return run


def _snapshot(run: Run) -> StateSnapshot:
    graph = registry.compiled_graph(run.graph, PostgresCheckpointer())
    return graph.get_state({"configurable": {"thread_id": run.thread_id}})


def _wrote_checkpoint(run: Run) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM bw_checkpoint WHERE thread_id = %s AND ns = '' "
            "AND metadata::jsonb ->> 'run_id' = %s)",
            [run.thread_id, str(run.id)],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def _set_error(run: Run, text: str) -> None:
    Run.objects.filter(id=run.id).update(error=text)


__all__ = ["STATUS", "DurableAsyncTasks"]
