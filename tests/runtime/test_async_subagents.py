"""Async subagents on the durable runtime: a task is its own run on the queue.

The supervisor (tests/support/async_agents.py) calls whichever async task tool its user
message names. Parent runs are executed in this process through the worker's own claim
and `execute` (or waited for, when a worker process took them first); tasks run on real
worker processes where a test says so.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from beamweaver_core.agent import Message
from beamweaver_core.agent.tools import ToolRuntime
from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import AsyncSubagentTask, Checkpoint, Run, Thread
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.async_tasks import DurableAsyncTasks
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_run
from reviews.models import ReviewItem
from tests.reviews.conftest import client_for, decide_as, make_reviewer
from tests.support.async_agents import ASYNC_GRAPHS, ASYNC_TOOLS, SUBAGENTS, order
from tests.support.graphs import TEST_GRAPHS
from tests.support.processes import child_env, start_worker
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FAST = {"BEAMWEAVER_POLL_SECONDS": "0.2", "BEAMWEAVER_HEARTBEAT_SECONDS": "1"}
DONE = (Run.Status.INTERRUPTED, Run.Status.SUCCEEDED, Run.Status.FAILED, Run.Status.CANCELLED)


@pytest.fixture(autouse=True)
def _async_graphs(settings: Any) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **ASYNC_GRAPHS},
    }
    # The reviewers' passwords are never used here; hashing them costs seconds.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@contextlib.contextmanager
def worker_process(tmp_path: Path) -> Iterator[Path]:
    """A real worker process on the test database; yields its side-effect ledger."""
    ledger = tmp_path / "ledger"
    env = child_env(
        **FAST,
        BEAMWEAVER_GRAPHS=json.dumps({**TEST_GRAPHS, **ASYNC_GRAPHS}),
        BEAMWEAVER_TEST_LEDGER=str(ledger),
    )
    proc: subprocess.Popen[str] = start_worker(env, "--threads", "2")
    try:
        yield ledger
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Path]:
    with worker_process(tmp_path) as ledger:
        yield ledger


def finish(run: Run) -> Run:
    """Run `run` to its next pause or end as a worker does, or wait for the worker
    process that claimed it first."""
    claim = claim_run(run.id, "test-worker", 30.0)
    if claim is not None:
        execute(claim)
    return wait_for(
        lambda: Run.objects.filter(id=run.id, status__in=DONE).first(), 60, f"run {run.id} to end"
    )


def ask(
    parent: str,
    tool_name: str,
    *,
    user: User | None = None,
    graph: str = "async_supervisor",
    **args: Any,
) -> Run:
    """The supervisor on thread `parent` calls `tool_name` with `args`; its finished run."""
    return finish(service.start_run(graph, order(tool_name, **args), thread_id=parent, user=user))


def state(thread: str, graph: str) -> dict[str, Any]:
    snapshot = registry.compiled_graph(graph, PostgresCheckpointer()).get_state(
        {"configurable": {"thread_id": thread}}
    )
    return snapshot.values


def tool_answer(parent: str, graph: str = "async_supervisor") -> Message:
    """The latest tool message on the supervisor's thread."""
    return [m for m in state(parent, graph)["messages"] if m.role == "tool"][-1]


def task_id_of(answer: Message) -> str:
    prefix = "Launched async subagent. task_id: "
    assert answer.content.startswith(prefix), answer.content
    return answer.content.removeprefix(prefix)


def latest_run(task_id: str) -> Run:
    return Run.objects.filter(thread_id=task_id).order_by("-created_at").first()  # type: ignore[return-value]


def check(parent: str, task_id: str) -> dict[str, Any]:
    assert ask(parent, "check_async_task", task_id=task_id).status == "succeeded"
    answer = tool_answer(parent)
    assert answer.status == "success", answer.content
    return json.loads(answer.content)


def start(parent: str, subagent: str, description: str, user: User | None = None) -> str:
    run = ask(
        parent, "start_async_task", user=user, subagent_type=subagent, description=description
    )
    assert run.status == "succeeded", run.error
    return task_id_of(tool_answer(parent))


@pytest.mark.processes
def test_the_parent_gets_a_task_id_at_once_and_a_worker_runs_the_task(
    tmp_path: Path,
) -> None:
    alice = make_reviewer("alice")
    parent = ask(
        "boss-1",
        "start_async_task",
        user=alice,
        subagent_type="researcher",
        description="the migration of swallows",
    )

    # The parent's run is over while the task has not even been claimed.
    assert parent.status == "succeeded"
    task_id = task_id_of(tool_answer("boss-1"))
    child = latest_run(task_id)
    assert (child.status, child.kind, child.graph) == ("queued", "start", "async_researcher")
    assert child.input == {"messages": [{"role": "user", "content": "the migration of swallows"}]}
    assert child.created_by == alice  # the task works for whoever the parent works for
    task = AsyncSubagentTask.objects.get(thread_id=task_id)
    assert (task.parent_thread_id, task.parent_run_id, task.subagent) == (
        "boss-1",
        parent.id,
        "researcher",
    )
    assert Thread.objects.get(id=task_id).metadata == {
        "async_task": {
            "parent_thread_id": "boss-1",
            "parent_run_id": str(parent.id),
            "subagent": "researcher",
        }
    }
    assert check("boss-1", task_id) == {
        "task_id": task_id,
        "subagent": "researcher",
        "status": "running",
    }

    with worker_process(tmp_path):
        wait_for(lambda: latest_run(task_id).status == "succeeded", 60, "the task to succeed")

    assert check("boss-1", task_id) == {
        "task_id": task_id,
        "subagent": "researcher",
        "status": "success",
        "result": "Findings on: the migration of swallows",
    }
    assert ask("boss-1", "list_async_tasks").status == "succeeded"
    assert tool_answer("boss-1").content == (
        f"1 tracked task(s):\n- task_id: {task_id}  agent: researcher  status: success"
    )


@pytest.mark.processes
def test_update_sends_new_instructions_that_a_worker_runs_on_the_task_s_thread(
    worker: Path,
) -> None:
    task_id = start("boss-2", "researcher", "owls")
    wait_for(lambda: latest_run(task_id).status == "succeeded", 60, "the first answer")

    assert ask("boss-2", "update_async_task", task_id=task_id, message="now bats").status == (
        "succeeded"
    )
    assert tool_answer("boss-2").content == f"Updated async subagent. task_id: {task_id}"
    wait_for(lambda: latest_run(task_id).status == "succeeded", 60, "the updated answer")

    assert check("boss-2", task_id)["result"] == "Findings on: now bats"
    conversation = [(m.role, m.content) for m in state(task_id, "async_researcher")["messages"]]
    assert conversation == [
        ("user", "owls"),
        ("assistant", "Findings on: owls"),
        ("user", "now bats"),
        ("assistant", "Findings on: now bats"),
    ]
    assert Run.objects.filter(thread_id=task_id, kind="start").count() == 2


@pytest.mark.processes
def test_update_of_a_working_task_stops_its_run_and_continues_with_the_new_instructions(
    worker: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    task_id = start("boss-9", "researcher", f"wait:{gate}")
    first = latest_run(task_id)
    wait_for(
        lambda: (
            Checkpoint.objects.filter(thread_id=task_id).exists()
            and state(task_id, "async_researcher")["messages"][-1].role == "tool"
        ),
        60,
        "the task's run to save its notes",
    )

    ask("boss-9", "update_async_task", task_id=task_id, message="now bats")

    first.refresh_from_db()
    assert (first.status, first.error) == (
        "cancelled",
        "Stopped by new instructions from its parent agent ('boss-9').",
    )
    # Its first instructions are in the thread already: the new run carries only the new ones.
    assert latest_run(task_id).input == {"messages": [{"role": "user", "content": "now bats"}]}
    wait_for(lambda: latest_run(task_id).status == "succeeded", 60, "the new run")
    gate.touch()  # the stopped run's model call returns, and its writes are refused
    assert check("boss-9", task_id)["result"] == "Findings on: now bats"
    conversation = [(m.role, m.content) for m in state(task_id, "async_researcher")["messages"]]
    assert conversation == [
        ("user", f"wait:{gate}"),
        ("assistant", ""),
        ("tool", f"notes on wait:{gate}"),
        ("user", "now bats"),
        ("assistant", "Findings on: now bats"),
    ]
    first.refresh_from_db()
    assert first.status == "cancelled"


@pytest.mark.processes
def test_a_task_that_pauses_for_review_is_in_the_inbox_and_a_decision_resumes_it(
    worker: Path,
) -> None:
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    task_id = start("boss-3", "publisher", "Spring sale", user=alice)
    wait_for(lambda: latest_run(task_id).status == "interrupted", 60, "the task to pause")

    item = ReviewItem.objects.get(thread_id=task_id, status="pending")
    assert (item.graph, item.tool_names, item.requested_by) == (
        "async_publisher",
        ["publish"],
        alice,
    )
    assert f'<li id="item-row-{item.pk}"' in client_for(bob).get("/").content.decode()
    status = check("boss-3", task_id)
    assert status["status"] == "interrupted"
    [pending] = status["interrupts"]
    assert pending["id"] == item.interrupt_id
    assert pending["value"]["action_requests"][0]["args"] == {"text": "Spring sale"}
    # New instructions would discard the pending review: refused, and nothing queued.
    assert ask("boss-3", "update_async_task", task_id=task_id, message="Summer sale").status == (
        "succeeded"
    )
    refused = tool_answer("boss-3")
    assert refused.status == "error"
    assert "waiting for a human review" in refused.content
    assert latest_run(task_id).status == "interrupted"

    outcome = decide_as(bob, item, [{"type": "approve"}])

    assert outcome.code == "accepted"
    wait_for(lambda: latest_run(task_id).status == "succeeded", 60, "the resumed task to finish")
    assert check("boss-3", task_id)["result"] == "Published: 'Spring sale' is live"
    assert worker.read_text().splitlines() == ["publish:Spring sale"]


def test_cancel_cancels_the_task_s_run_and_its_pending_review() -> None:
    queued = start("boss-4", "researcher", "moths")
    paused = start("boss-4", "publisher", "Autumn sale")
    assert finish(latest_run(paused)).status == "interrupted"
    item = ReviewItem.objects.get(thread_id=paused)

    for task_id in (queued, paused):
        assert ask("boss-4", "cancel_async_task", task_id=task_id).status == "succeeded"
        assert tool_answer("boss-4").content == f"Cancelled async subagent task: {task_id}"
        run = latest_run(task_id)
        assert run.status == "cancelled"
        assert run.error == "Cancelled by its parent agent (thread 'boss-4')."
        assert check("boss-4", task_id)["status"] == "cancelled"

    item.refresh_from_db()
    assert item.status == "cancelled"
    ask("boss-4", "cancel_async_task", task_id=queued)
    again = tool_answer("boss-4")
    assert (again.status, again.content) == (
        "error",
        f"Error: Task {queued!r} already ended (cancelled); there is nothing to cancel.",
    )


def test_an_accepted_decision_of_a_task_is_applied_before_any_update_or_cancel() -> None:
    """docs/async-subagents.md: while a task continues after an accepted review decision,
    new instructions and a cancel are refused (tool errors), so the decision is applied;
    a cancelled task takes no new instructions."""
    task_id = start("boss-10", "publisher", "Winter sale")
    assert finish(latest_run(task_id)).status == "interrupted"
    item = ReviewItem.objects.get(thread_id=task_id, status="pending")
    assert decide_as(make_reviewer("bob"), item, [{"type": "approve"}]).code == "accepted"
    resume = latest_run(task_id)
    assert (resume.kind, resume.status) == ("resume", "queued")

    for tool_name, extra, refusal in (
        ("update_async_task", {"message": "Summer sale"}, "is continuing after a review decision"),
        ("cancel_async_task", {}, "cannot be cancelled now: a review decision for it was accepted"),
    ):
        assert ask("boss-10", tool_name, task_id=task_id, **extra).status == "succeeded"
        answer = tool_answer("boss-10")
        assert answer.status == "error" and refusal in answer.content, answer.content
    assert latest_run(task_id) == resume and resume.status == "queued"

    assert finish(resume).status == "succeeded"
    assert check("boss-10", task_id)["result"] == "Published: 'Winter sale' is live"

    other = start("boss-10", "researcher", "moles")
    ask("boss-10", "cancel_async_task", task_id=other)
    ask("boss-10", "update_async_task", task_id=other, message="voles")
    assert tool_answer("boss-10").content == (
        f"Error: Task {other!r} was cancelled; start a new task instead."
    )
    assert Run.objects.filter(thread_id=other).count() == 1


def test_update_of_a_task_not_started_yet_keeps_its_first_instructions() -> None:
    task_id = start("boss-5", "researcher", "beetles")
    first = latest_run(task_id)

    ask("boss-5", "update_async_task", task_id=task_id, message="only the blue ones")

    first.refresh_from_db()
    assert first.status == "cancelled"
    second = latest_run(task_id)
    assert second.input == {
        "messages": [
            {"role": "user", "content": "beetles"},
            {"role": "user", "content": "only the blue ones"},
        ]
    }
    assert finish(second).status == "succeeded"
    assert check("boss-5", task_id)["result"] == "Findings on: only the blue ones"


@pytest.mark.parametrize(
    "tool_name", ["check_async_task", "update_async_task", "cancel_async_task"]
)
def test_an_unknown_or_foreign_task_id_is_a_tool_error_and_touches_nothing(tool_name: str) -> None:
    theirs = start("other-boss", "researcher", "ants")
    extra = {"message": "go"} if tool_name == "update_async_task" else {}

    for bogus in (theirs, "task-0123456789abcdef", "' OR 1=1 --"):
        run = ask("boss-6", tool_name, task_id=bogus, **extra)
        assert run.status == "succeeded"
        answer = tool_answer("boss-6")
        assert (answer.status, answer.content) == (
            "error",
            f"Error: No async task {bogus!r} was started by this agent. Pass a task_id exactly "
            "as start_async_task returned it (list_async_tasks shows them all).",
        )
    ask("boss-6", tool_name, task_id="x" * 300, **extra)
    assert "invalid arguments" in tool_answer("boss-6").content
    assert list(Run.objects.filter(thread_id=theirs).values_list("status", flat=True)) == ["queued"]
    ask("boss-6", "list_async_tasks")
    assert tool_answer("boss-6").content == "No async subagent tasks tracked."


def test_a_retried_start_finds_the_task_it_started_instead_of_starting_another() -> None:
    """A worker that died after the task was queued but before the tool's result was
    recorded leaves the call to be run again, with the same idempotency key."""
    parent = service.start_run("async_supervisor", order("list_async_tasks"), thread_id="boss-7")
    claim = claim_run(parent.id, "test-worker", 30.0)
    assert claim is not None
    client = DurableAsyncTasks(claim)
    call = ToolRuntime(tool_call_id="call-1", idempotency_key="ab" * 32, thread_id="boss-7")

    first = client.start(SUBAGENTS[0], "crows", call)
    again = client.start(SUBAGENTS[0], "crows", call)

    assert again == first
    assert Run.objects.filter(thread_id=first.task_id).count() == 1
    assert AsyncSubagentTask.objects.filter(parent_thread_id="boss-7").count() == 1


def test_a_task_runs_in_its_parent_run_s_context() -> None:
    """The task's runs (its first and an update's) carry the parent run's context, so its
    reviews say who asked for the work."""
    parent = service.start_run(
        "async_supervisor",
        order("list_async_tasks"),
        thread_id="boss-9",
        context={"tenant": "acme"},
    )
    claim = claim_run(parent.id, "test-worker", 30.0)
    assert claim is not None
    client = DurableAsyncTasks(claim)
    call = ToolRuntime(tool_call_id="call-1", idempotency_key="cd" * 32, thread_id="boss-9")

    task = client.start(SUBAGENTS[0], "owls", call)
    client.update(task.task_id, "only barn owls", call)

    contexts = [
        r.context for r in Run.objects.filter(thread_id=task.task_id).order_by("created_at")
    ]
    assert contexts == [{"tenant": "acme"}, {"tenant": "acme"}]


@pytest.mark.parametrize("decision", ["approve", "reject"])
@pytest.mark.parametrize("tool_name", ASYNC_TOOLS)
def test_each_async_task_tool_named_in_interrupt_on_waits_for_a_reviewer(
    tool_name: str, decision: str
) -> None:
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    graph = "async_supervisor_reviewed"

    def reviewed(tool: str, approve: bool, **args: Any) -> tuple[ReviewItem, Run]:
        paused = ask("boss-8", tool, user=alice, graph=graph, **args)
        assert paused.status == "interrupted"
        item = ReviewItem.objects.get(thread_id="boss-8", status="pending")
        answer = {"type": "approve"} if approve else {"type": "reject", "message": "Not now."}
        assert decide_as(bob, item, [answer]).code == "accepted"
        resumed = finish(Run.objects.get(thread_id="boss-8", status="queued"))
        assert resumed.status == "succeeded", resumed.error
        return item, resumed

    task_id = None
    if tool_name != "start_async_task":
        reviewed("start_async_task", True, subagent_type="researcher", description="wasps")
        task_id = task_id_of(tool_answer("boss-8", graph))
    args = {
        "start_async_task": {"subagent_type": "researcher", "description": "bees"},
        "check_async_task": {"task_id": task_id},
        "update_async_task": {"task_id": task_id, "message": "hornets"},
        "cancel_async_task": {"task_id": task_id},
        "list_async_tasks": {},
    }[tool_name]
    runs_before = Run.objects.exclude(thread_id="boss-8").count()

    item, _ = reviewed(tool_name, decision == "approve", **args)

    assert item.tool_names == [tool_name]
    assert item.payload["action_requests"][0]["args"] == args
    answer = tool_answer("boss-8", graph)
    task_runs = Run.objects.exclude(thread_id="boss-8")
    if decision == "reject":
        assert answer.status == "error"
        assert "Not now." in answer.content
        assert task_runs.count() == runs_before
        assert not task_runs.filter(status="cancelled").exists()
        return
    assert answer.status == "success", answer.content
    if tool_name == "start_async_task":
        assert task_runs.count() == 1
    elif tool_name == "check_async_task":
        assert json.loads(answer.content)["status"] == "running"
    elif tool_name == "update_async_task":
        assert task_runs.count() == 2  # the first run stopped, a new one queued
    elif tool_name == "cancel_async_task":
        assert latest_run(task_id).status == "cancelled"  # type: ignore[arg-type]
    else:
        assert answer.content.startswith("1 tracked task(s):")
