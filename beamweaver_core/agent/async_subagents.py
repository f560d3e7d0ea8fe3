"""Async subagents: agents the parent starts in the background and checks on later.

An `AsyncSubagentSpec` in an agent's `subagents` gives the agent five tools, named and
shaped as in LangChain's deepagents: `start_async_task(description, subagent_type)` returns
a task id at once; `check_async_task(task_id)`, `update_async_task(task_id, message)`,
`cancel_async_task(task_id)` and `list_async_tasks(status_filter)` work on the tasks this
agent's thread started. They are ordinary tools of the agent, so `interrupt_on` can put any
of them under review.

This module holds the spec and the client contract; the tools are in `async_task_tools`.
Where tasks run is an `AsyncTaskClient`'s business; this layer only defines the contract.
Runs executed by the durable runtime get a client from it (each task is its own queued
run, on its own thread; see `beamweaver_core.runtime.async_tasks`); an agent run anywhere
else needs `client=` on the spec.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from beamweaver_core.agent.tools import ToolRuntime

AsyncTaskStatus = Literal["running", "interrupted", "success", "error", "cancelled"]
ASYNC_TASK_STATUSES: tuple[AsyncTaskStatus, ...] = (
    "running",
    "interrupted",
    "success",
    "error",
    "cancelled",
)


@dataclass(frozen=True, slots=True)
class AsyncSubagentSpec:
    """A subagent whose tasks run in the background, each as its own run of the graph
    registered as `graph` (a name in `settings.BEAMWEAVER["GRAPHS"]`, like deepagents'
    `graph_id`). `client` runs its tasks; by default the durable runtime's."""

    name: str
    description: str
    graph: str
    client: AsyncTaskClient | None = None


@dataclass(frozen=True, slots=True)
class AsyncTask:
    """A task as its client sees it now.

    `status` is `running` (queued or executing), `interrupted` (paused for a human: the
    pending `interrupts` wait in the review inbox), `success` (with the subagent's final
    answer as `result`), `error` (with `error`) or `cancelled`.
    """

    task_id: str
    subagent: str
    status: AsyncTaskStatus
    result: str | None = None
    error: str | None = None
    interrupts: tuple[Mapping[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The JSON object `check_async_task` shows the model."""
        data: dict[str, Any] = {
            "task_id": self.task_id,
            "subagent": self.subagent,
            "status": self.status,
        }
        if self.result is not None:
            data["result"] = self.result
        if self.error is not None:
            data["error"] = self.error
        if self.interrupts:
            data["interrupts"] = [dict(i) for i in self.interrupts]
        return data


class AsyncTaskClient(Protocol):
    """Runs the tasks of async subagents for the parent whose tool call `runtime`
    describes (its thread owns the tasks it starts).

    A refusal raises `AsyncTaskError`, an id this parent did not start
    `UnknownAsyncTaskError`; the tools report both to the model. Any other exception
    fails the parent's run.
    """

    def start(
        self, subagent: AsyncSubagentSpec, description: str, runtime: ToolRuntime
    ) -> AsyncTask:
        """Start a task at once (do not wait for it); the same `runtime.idempotency_key`
        again must return the task it started the first time."""
        ...

    def check(self, task_id: str, runtime: ToolRuntime) -> AsyncTask:
        """The task's status now, with its result, error or pending interrupts."""
        ...

    def update(self, task_id: str, message: str, runtime: ToolRuntime) -> AsyncTask:
        """Give the task new instructions (it keeps its conversation)."""
        ...

    def cancel(self, task_id: str, runtime: ToolRuntime) -> AsyncTask:
        """Stop the task."""
        ...

    def list(self, runtime: ToolRuntime) -> Sequence[AsyncTask]:
        """Every task this parent started, oldest first."""
        ...


current_async_task_client: ContextVar[AsyncTaskClient | None] = ContextVar(
    "beamweaver_async_task_client", default=None
)


@contextmanager
def use_async_task_client(client: AsyncTaskClient | None) -> Iterator[None]:
    """Run the tasks of async subagents without their own `client` with `client` inside
    this block (and its graph tasks). The durable runtime does this for every run."""
    token = current_async_task_client.set(client)
    try:
        yield
    finally:
        current_async_task_client.reset(token)


__all__ = [
    "ASYNC_TASK_STATUSES",
    "AsyncSubagentSpec",
    "AsyncTask",
    "AsyncTaskClient",
    "AsyncTaskStatus",
    "current_async_task_client",
    "use_async_task_client",
]
