"""The five async task tools an agent with `AsyncSubagentSpec`s gets (deepagents' names
and arguments), and the routing of each task operation to the client that runs the task.

A client's refusal (`AsyncTaskError`) becomes an error tool message the model can read;
any other exception fails the run, as a failing nested graph does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from beamweaver_core.agent.async_subagents import (
    ASYNC_TASK_STATUSES,
    AsyncSubagentSpec,
    AsyncTask,
    AsyncTaskClient,
    current_async_task_client,
)
from beamweaver_core.agent.tools import Tool, ToolRuntime
from beamweaver_core.exceptions import (
    AsyncTaskClientRequiredError,
    AsyncTaskError,
    UnknownAsyncTaskError,
)
from beamweaver_core.messages import Message, ToolCall

_TASK_ID = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "description": "The exact task_id returned by start_async_task.",
}


class AsyncSubagents:
    """The parent's async subagents by name, and the clients that run their tasks."""

    def __init__(self, specs: Sequence[AsyncSubagentSpec]) -> None:
        self.specs = {spec.name: spec for spec in specs}

    def client_for(self, spec: AsyncSubagentSpec) -> AsyncTaskClient:
        client = spec.client if spec.client is not None else current_async_task_client.get()
        if client is None:
            raise AsyncTaskClientRequiredError(
                f"Async subagent {spec.name!r} has no client to run its tasks. Run the agent "
                "through the durable runtime (register it in settings.BEAMWEAVER['GRAPHS'] and "
                "start it with start_run, the inbox or manage.py run_graph), or pass "
                f"AsyncSubagentSpec(..., client=...) an AsyncTaskClient."
            )
        return client

    def clients(self) -> list[AsyncTaskClient]:
        """The distinct clients of all subagents, in the order of the specs."""
        found: list[AsyncTaskClient] = []
        for spec in self.specs.values():
            client = self.client_for(spec)
            if all(client is not known for known in found):
                found.append(client)
        return found

    def on_task(self, task_id: str, act: _TaskAction) -> AsyncTask:
        """`act` on the client that knows `task_id` (each says if it does not)."""
        *others, last = self.clients()
        for client in others:
            try:
                return act(client)
            except UnknownAsyncTaskError:
                continue
        return act(last)


class _TaskAction(Protocol):
    def __call__(self, client: AsyncTaskClient) -> AsyncTask: ...


class _AsyncTaskTool(Tool):
    """A tool over the parent's async subagents."""

    # Refusals (`AsyncTaskError`) go back to the model; a failing client fails the run.
    handle_errors = False

    def __init__(self, subagents: AsyncSubagents) -> None:
        self.subagents = subagents

    def execute(self, call: ToolCall, runtime: ToolRuntime) -> Message:
        try:
            return super().execute(call, runtime)
        except AsyncTaskError as exc:
            return Message.tool(
                f"Error: {exc}", tool_call_id=call.id, name=call.name, status="error"
            )


class StartAsyncTaskTool(_AsyncTaskTool):
    name = "start_async_task"

    def __init__(self, subagents: AsyncSubagents) -> None:
        super().__init__(subagents)
        listing = "\n".join(f"- {s.name}: {s.description}" for s in subagents.specs.values())
        self.description = (
            "Start a subagent on a task in the background. Returns a task_id at once; the "
            "subagent works on its own and may take long or wait for a human review.\n"
            f"Available async subagents:\n{listing}\n"
            "Tell the user the task_id and carry on; call check_async_task only when the "
            "user asks about the task, never in a loop. update_async_task sends it new "
            "instructions, cancel_async_task stops it, list_async_tasks shows every task."
        )
        self.args_schema = {
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The complete task: the subagent sees only this.",
                },
                "subagent_type": {
                    "type": "string",
                    "enum": list(subagents.specs),
                    "description": "Which async subagent runs the task.",
                },
            },
            "required": ["description", "subagent_type"],
            "additionalProperties": False,
        }

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> str:
        spec = self.subagents.specs[args["subagent_type"]]
        task = self.subagents.client_for(spec).start(spec, args["description"], runtime)
        return f"Launched async subagent. task_id: {task.task_id}"


class CheckAsyncTaskTool(_AsyncTaskTool):
    name = "check_async_task"
    description = (
        "Check an async task: its status (running, interrupted, success, error, cancelled) "
        "and, once it succeeded, its result. An interrupted task waits for a human review."
    )
    args_schema = {
        "type": "object",
        "properties": {"task_id": _TASK_ID},
        "required": ["task_id"],
        "additionalProperties": False,
    }

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> str:
        task_id = args["task_id"]
        task = self.subagents.on_task(task_id, lambda c: c.check(task_id, runtime))
        return json.dumps(task.to_dict(), ensure_ascii=False)


class UpdateAsyncTaskTool(_AsyncTaskTool):
    name = "update_async_task"
    description = (
        "Send new instructions to an async task. The subagent keeps its conversation and "
        "continues with your message; work in progress is stopped and started again. The "
        "task_id stays the same."
    )
    args_schema = {
        "type": "object",
        "properties": {
            "task_id": _TASK_ID,
            "message": {
                "type": "string",
                "minLength": 1,
                "description": "The new instructions for the subagent.",
            },
        },
        "required": ["task_id", "message"],
        "additionalProperties": False,
    }

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> str:
        task_id, message = args["task_id"], args["message"]
        task = self.subagents.on_task(task_id, lambda c: c.update(task_id, message, runtime))
        return f"Updated async subagent. task_id: {task.task_id}"


class CancelAsyncTaskTool(_AsyncTaskTool):
    name = "cancel_async_task"
    description = "Cancel an async task that is no longer needed."
    args_schema = CheckAsyncTaskTool.args_schema

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> str:
        task_id = args["task_id"]
        task = self.subagents.on_task(task_id, lambda c: c.cancel(task_id, runtime))
        return f"Cancelled async subagent task: {task.task_id}"


class ListAsyncTasksTool(_AsyncTaskTool):
    name = "list_async_tasks"
    description = (
        "List the async tasks started here with their current status (statuses seen "
        "earlier in the conversation may be stale)."
    )
    args_schema = {
        "type": "object",
        "properties": {
            "status_filter": {
                "type": "string",
                "enum": [*ASYNC_TASK_STATUSES, "all"],
                "description": "Only tasks with this status (default: all).",
            }
        },
        "additionalProperties": False,
    }

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> str:
        wanted = args.get("status_filter", "all")
        tasks = [
            task
            for client in self.subagents.clients()
            for task in client.list(runtime)
            if wanted in ("all", task.status)
        ]
        if not tasks:
            return "No async subagent tasks tracked."
        lines = [f"- task_id: {t.task_id}  agent: {t.subagent}  status: {t.status}" for t in tasks]
        return f"{len(tasks)} tracked task(s):\n" + "\n".join(lines)


def async_task_tools(specs: Sequence[AsyncSubagentSpec]) -> list[Tool]:
    """The parent's five async task tools over `specs`."""
    seen: set[str] = set()
    for spec in specs:
        if not isinstance(spec, AsyncSubagentSpec):
            raise TypeError(f"{spec!r} is not an AsyncSubagentSpec.")
        if spec.name in seen:
            raise ValueError(
                f"Two async subagents are named {spec.name!r}; subagent names must be unique."
            )
        if not isinstance(spec.graph, str) or not spec.graph:
            raise ValueError(
                f"Async subagent {spec.name!r} names no graph: set graph= to a name "
                "registered in settings.BEAMWEAVER['GRAPHS']."
            )
        seen.add(spec.name)
    subagents = AsyncSubagents(specs)
    return [
        StartAsyncTaskTool(subagents),
        CheckAsyncTaskTool(subagents),
        UpdateAsyncTaskTool(subagents),
        CancelAsyncTaskTool(subagents),
        ListAsyncTasksTool(subagents),
    ]


__all__ = [
    "AsyncSubagents",
    "CancelAsyncTaskTool",
    "CheckAsyncTaskTool",
    "ListAsyncTasksTool",
    "StartAsyncTaskTool",
    "UpdateAsyncTaskTool",
    "async_task_tools",
]
