"""Async subagents in the agent layer: the five tools, their review, their client contract.

The durable client (tasks as queued runs) is tested in tests/runtime/test_async_subagents.py;
here a small in-memory client stands in for "some client passed on the spec", as a
library-only user would pass one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from beamweaver_core.agent import (
    Agent,
    AsyncSubagentSpec,
    AsyncTask,
    Message,
    SubagentSpec,
)
from beamweaver_core.agent.agent import AnySubagent
from beamweaver_core.agent.tools import ToolRuntime
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import (
    AsyncTaskClientRequiredError,
    AsyncTaskError,
    UnknownAsyncTaskError,
)
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import ai, call


class NotebookClient:
    """Keeps tasks in a dict, owned by the thread that started them."""

    def __init__(self, prefix: str = "t") -> None:
        self.prefix = prefix
        self.tasks: dict[str, tuple[str, AsyncTask]] = {}
        self.calls: list[tuple[str, ...]] = []

    def _owned(self, task_id: str, runtime: ToolRuntime) -> AsyncTask:
        owner, task = self.tasks.get(task_id, (None, None))
        if task is None or owner != runtime.thread_id:
            raise UnknownAsyncTaskError(f"No async task {task_id!r} was started here.")
        return task

    def start(
        self, subagent: AsyncSubagentSpec, description: str, runtime: ToolRuntime
    ) -> AsyncTask:
        self.calls.append(("start", subagent.name, description))
        task = AsyncTask(f"{self.prefix}{len(self.tasks) + 1}", subagent.name, "running")
        self.tasks[task.task_id] = (runtime.thread_id or "", task)
        return task

    def check(self, task_id: str, runtime: ToolRuntime) -> AsyncTask:
        self.calls.append(("check", task_id))
        task = self._owned(task_id, runtime)
        return AsyncTask(task.task_id, task.subagent, "success", result="42")

    def update(self, task_id: str, message: str, runtime: ToolRuntime) -> AsyncTask:
        self.calls.append(("update", task_id, message))
        raise AsyncTaskError(f"Task {task_id!r} is waiting for a human review.")

    def cancel(self, task_id: str, runtime: ToolRuntime) -> AsyncTask:
        self.calls.append(("cancel", task_id))
        task = self._owned(task_id, runtime)
        return AsyncTask(task.task_id, task.subagent, "cancelled")

    def list(self, runtime: ToolRuntime) -> Sequence[AsyncTask]:
        return [task for owner, task in self.tasks.values() if owner == runtime.thread_id]


def supervisor(model: ScriptedChatModel, *specs: AnySubagent, **options: Any) -> Agent:
    return Agent.build(
        model=model, subagents=list(specs), checkpointer=MemoryCheckpointer(), **options
    )


def contents(done: Any) -> list[tuple[str, str, str | None]]:
    return [(m.role, m.content, m.status) for m in done.state["messages"] if m.role == "tool"]


def offered(agent: Agent, model: ScriptedChatModel) -> dict[str, Any]:
    """The tools the model is offered on its first call, by name."""
    agent.invoke({"messages": [Message.user("hi")]}, config={"configurable": {"thread_id": "o"}})
    return {spec.name: spec for spec in model.tools_offered[0]}


def test_the_parent_gets_the_five_deepagents_tools_with_their_arguments() -> None:
    spec = AsyncSubagentSpec("researcher", "Researches a topic.", graph="research")
    model = ScriptedChatModel([Message.assistant("hi")])

    tools = offered(supervisor(model, spec), model)

    assert list(tools) == [
        "start_async_task",
        "check_async_task",
        "update_async_task",
        "cancel_async_task",
        "list_async_tasks",
    ]
    required = {name: tool.parameters.get("required", []) for name, tool in tools.items()}
    assert required == {
        "start_async_task": ["description", "subagent_type"],
        "check_async_task": ["task_id"],
        "update_async_task": ["task_id", "message"],
        "cancel_async_task": ["task_id"],
        "list_async_tasks": [],
    }
    start = tools["start_async_task"]
    assert start.parameters["properties"]["subagent_type"]["enum"] == ["researcher"]
    assert "- researcher: Researches a topic." in start.description


def test_a_library_agent_without_a_client_is_told_how_to_give_one() -> None:
    spec = AsyncSubagentSpec("researcher", "Researches.", graph="research")
    model = ScriptedChatModel(
        [ai(call("c1", "start_async_task", description="owls", subagent_type="researcher"))]
    )
    agent = supervisor(model, spec)

    with pytest.raises(AsyncTaskClientRequiredError) as caught:
        agent.invoke(
            {"messages": [Message.user("go")]}, config={"configurable": {"thread_id": "a"}}
        )

    assert str(caught.value) == (
        "Async subagent 'researcher' has no client to run its tasks. Run the agent through "
        "the durable runtime (register it in settings.BEAMWEAVER['GRAPHS'] and start it with "
        "start_run, the inbox or manage.py run_graph), or pass AsyncSubagentSpec(..., "
        "client=...) an AsyncTaskClient."
    )


def test_a_client_on_the_spec_runs_the_tasks_and_refusals_reach_the_model_as_errors() -> None:
    notebook = NotebookClient()
    spec = AsyncSubagentSpec("researcher", "Researches.", graph="research", client=notebook)
    model = ScriptedChatModel(
        [
            ai(call("c1", "start_async_task", description="owls", subagent_type="researcher")),
            ai(
                call("c2", "check_async_task", task_id="t1"),
                call("c3", "check_async_task", task_id="t9"),
                call("c4", "update_async_task", task_id="t1", message="bats"),
                call("c5", "list_async_tasks"),
                call("c6", "list_async_tasks", status_filter="cancelled"),
                call("c7", "cancel_async_task", task_id="t1"),
            ),
            Message.assistant("done"),
        ]
    )
    agent = supervisor(model, spec)

    done = agent.invoke(
        {"messages": [Message.user("go")]}, config={"configurable": {"thread_id": "a"}}
    )

    assert isinstance(done, Completed)
    assert contents(done) == [
        ("tool", "Launched async subagent. task_id: t1", "success"),
        (
            "tool",
            json.dumps(
                {"task_id": "t1", "subagent": "researcher", "status": "success", "result": "42"}
            ),
            "success",
        ),
        ("tool", "Error: No async task 't9' was started here.", "error"),
        ("tool", "Error: Task 't1' is waiting for a human review.", "error"),
        (
            "tool",
            "1 tracked task(s):\n- task_id: t1  agent: researcher  status: running",
            "success",
        ),
        ("tool", "No async subagent tasks tracked.", "success"),
        ("tool", "Cancelled async subagent task: t1", "success"),
    ]
    assert notebook.calls[0] == ("start", "researcher", "owls")


def test_each_tool_asks_the_client_that_knows_the_task() -> None:
    first, second = NotebookClient("a"), NotebookClient("b")
    specs = (
        AsyncSubagentSpec("researcher", "Researches.", graph="research", client=first),
        AsyncSubagentSpec("writer", "Writes.", graph="write", client=second),
    )
    model = ScriptedChatModel(
        [
            ai(call("c1", "start_async_task", description="draft", subagent_type="writer")),
            ai(call("c2", "check_async_task", task_id="b1")),
            Message.assistant("ok"),
        ]
    )

    done = supervisor(model, *specs).invoke(
        {"messages": [Message.user("go")]}, config={"configurable": {"thread_id": "a"}}
    )

    assert json.loads(contents(done)[1][1])["status"] == "success"
    assert first.calls == [("check", "b1")]
    assert second.calls == [("start", "writer", "draft"), ("check", "b1")]


@pytest.mark.parametrize(
    ("tool_name", "args"),
    [
        ("start_async_task", {"description": "owls", "subagent_type": "researcher"}),
        ("check_async_task", {"task_id": "t1"}),
        ("update_async_task", {"task_id": "t1", "message": "bats"}),
        ("cancel_async_task", {"task_id": "t1"}),
        ("list_async_tasks", {}),
    ],
)
def test_interrupt_on_puts_each_async_tool_under_review(
    tool_name: str, args: dict[str, Any]
) -> None:
    notebook = NotebookClient()
    spec = AsyncSubagentSpec("researcher", "Researches.", graph="research", client=notebook)
    model = ScriptedChatModel([ai(call("c1", tool_name, **args)), Message.assistant("ok")])
    agent = supervisor(model, spec, interrupt_on={tool_name: True})
    config = {"configurable": {"thread_id": "reviewed"}}

    paused = agent.invoke({"messages": [Message.user("go")]}, config=config)

    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value["action_requests"][0]["name"] == tool_name
    assert paused.interrupt.value["action_requests"][0]["args"] == args
    done = agent.resume_review([{"type": "reject", "message": "Not now."}], config=config)
    assert isinstance(done, Completed)
    assert notebook.calls == []
    assert done.state["messages"][2].status == "error"
    assert "Not now." in done.state["messages"][2].content


def test_async_subagent_specs_are_checked_when_the_agent_is_built() -> None:
    model = ScriptedChatModel([Message.assistant("hi")])
    twice = [AsyncSubagentSpec("r", "R.", graph="g"), AsyncSubagentSpec("r", "R again.", graph="h")]
    with pytest.raises(ValueError, match="Two async subagents are named 'r'"):
        Agent.build(model=model, subagents=twice)
    with pytest.raises(ValueError, match="Async subagent 'r' names no graph"):
        Agent.build(model=model, subagents=[AsyncSubagentSpec("r", "R.", graph="")])


def test_async_and_inline_subagents_live_side_by_side() -> None:
    model = ScriptedChatModel([Message.assistant("hi")])
    agent = supervisor(
        model,
        SubagentSpec("helper", "Helps.", "Help."),
        AsyncSubagentSpec("researcher", "Researches.", graph="research"),
    )

    assert list(offered(agent, model)) == [
        "task",
        "start_async_task",
        "check_async_task",
        "update_async_task",
        "cancel_async_task",
        "list_async_tasks",
    ]
