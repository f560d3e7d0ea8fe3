"""Time travel (`runtime.forks`): a replay and a fork with edited state are new durable
runs on a branch beside the thread's history, which is never rewritten; what cannot be
forked is refused with a message that says why."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.exceptions import ThreadBusyError
from beamweaver_core.graph import START, Graph
from beamweaver_core.models import Checkpoint, Run
from beamweaver_core.runtime import forks, registry, service
from tests.runtime.test_run_options import run_next

pytestmark = pytest.mark.django_db(transaction=True)


def history(thread_id: str, graph: str = "steps") -> list[Any]:
    compiled = registry.compiled_graph(graph, PostgresCheckpointer())
    return list(compiled.get_state_history({"configurable": {"thread_id": thread_id}}))


def checkpoint_with_log(thread_id: str, log: list[int]) -> str:
    found = next(s for s in history(thread_id) if s.values.get("log") == log)
    return str(found.config["configurable"]["checkpoint_id"])


def finished_thread(thread_id: str) -> list[str]:
    service.start_run("steps", {"log": []}, thread_id=thread_id)
    assert run_next().status == "succeeded"
    return list(
        Checkpoint.objects.filter(thread_id=thread_id).values_list("checkpoint_id", flat=True)
    )


def test_a_fork_with_an_edited_value_is_a_new_run_on_a_branch_and_the_main_line_stays() -> None:
    before = finished_thread("fork-1")
    at = checkpoint_with_log("fork-1", [0, 1, 2])

    made = forks.fork("fork-1", at, user=None, values={"log": [99]}, as_node="s2")

    assert made.run.status == Run.Status.QUEUED and made.run.kind == Run.Kind.START
    assert made.from_checkpoint == at and made.written_checkpoint
    assert run_next().id == made.run.id
    snapshots = history("fork-1")
    assert snapshots[0].values["log"] == [0, 1, 2, 99, 3, 4, 5]
    written = next(
        s for s in snapshots if s.config["configurable"]["checkpoint_id"] == made.written_checkpoint
    )
    assert written.parent_config["configurable"]["checkpoint_id"] == at
    assert written.metadata["source"] == "update"
    after = set(
        Checkpoint.objects.filter(thread_id="fork-1").values_list("checkpoint_id", flat=True)
    )
    assert set(before) < after  # every checkpoint of the main line is still there
    assert any(s.values.get("log") == [0, 1, 2, 3, 4, 5] for s in snapshots)


def test_a_replay_runs_again_from_the_checkpoint_without_writing_state() -> None:
    finished_thread("fork-2")
    at = checkpoint_with_log("fork-2", [0, 1, 2, 3])

    made = forks.fork("fork-2", at, user=None)

    assert made.written_checkpoint == ""
    assert run_next().status == "succeeded"
    newest = history("fork-2")[0]
    assert newest.values["log"] == [0, 1, 2, 3, 4, 5]
    assert len(history("fork-2")) > 8  # the replay's steps are new checkpoints


def test_what_cannot_be_forked_is_refused_and_nothing_is_queued() -> None:
    finished_thread("fork-3")
    at = checkpoint_with_log("fork-3", [0])

    with pytest.raises(forks.ForkError, match=r"has no checkpoint 'nope'"):
        forks.fork("fork-3", "nope", user=None)
    with pytest.raises(forks.ForkError, match=r"Graph 'steps' has no node 'ghost'; its nodes: s0"):
        forks.fork("fork-3", at, user=None, values={"log": [1]}, as_node="ghost")
    with pytest.raises(forks.ForkError, match=r"Thread 'missing' has no graph to fork"):
        forks.fork("missing", at, user=None)
    service.start_run("steps", {"log": []}, thread_id="fork-3")  # queued, not run yet
    with pytest.raises(ThreadBusyError, match="has an active run"):
        forks.fork("fork-3", at, user=None, values={"log": [1]})
    with pytest.raises(ThreadBusyError, match="has an active run"):
        forks.fork("fork-3", at, user=None)
    assert Run.objects.filter(thread_id="fork-3", status=Run.Status.QUEUED).count() == 1


class Shape(TypedDict):
    calls: list[Any]
    decisions: list[Any]


def test_edited_keys_are_checked_against_the_graphs_state_keys() -> None:
    graph = (
        Graph(name="shaped", state_schema=Shape).add_node("a", dict).add_edge(START, "a").compile()
    )

    assert forks.state_keys(graph, {"decisions": [], "calls": []}) == ["calls", "decisions"]
    with pytest.raises(
        forks.ForkError,
        match=r"'nope' is not a state key of graph 'shaped'; its keys: calls, decisions",
    ):
        forks.state_keys(graph, {"nope": 1, "calls": []})
    steps = registry.compiled_graph("steps", None)
    with pytest.raises(forks.ForkError, match="over 100,000 characters"):
        forks.state_keys(steps, {"log": ["x" * 100_001]})


def test_a_fork_written_as_the_node_that_asked_is_refused_and_starts_nothing() -> None:
    """The thread page's fork goes through `forks.update_state`, which refuses to write
    as a node past a question still unanswered there (the decision service answers)."""
    service.start_run("approval", {"amount": 5}, thread_id="fork-asked")
    assert run_next().status == "interrupted"
    compiled = registry.compiled_graph("approval", PostgresCheckpointer())
    asked = compiled.get_state({"configurable": {"thread_id": "fork-asked"}})
    at = str(asked.config["configurable"]["checkpoint_id"])
    runs = Run.objects.count()

    with pytest.raises(forks.QuestionPendingError, match="would go past them unanswered"):
        forks.fork("fork-asked", at, user=None, values={"amount": 6}, as_node="ask")

    assert Run.objects.count() == runs
    after = compiled.get_state({"configurable": {"thread_id": "fork-asked"}})
    assert after.config == asked.config and after.interrupts == asked.interrupts


def test_a_run_from_a_step_that_waits_on_a_question_is_refused_and_starts_nothing() -> None:
    """A replay there, or a fork whose edit leaves the question pending (no `as_node`),
    would run the step again with no answer: refused, as `/lg` refuses a run without
    input there (the decision service answers questions)."""
    service.start_run("approval", {"amount": 5}, thread_id="fork-open")
    assert run_next().status == "interrupted"
    compiled = registry.compiled_graph("approval", PostgresCheckpointer())
    asked = compiled.get_state({"configurable": {"thread_id": "fork-open"}})
    at = str(asked.config["configurable"]["checkpoint_id"])
    question = asked.interrupts[0].id
    runs = Run.objects.count()

    refusal = rf"Thread 'fork-open' waits for answers to interrupt\(s\) {question} at "
    with pytest.raises(forks.QuestionPendingError, match=refusal):
        forks.fork("fork-open", at, user=None)
    with pytest.raises(forks.QuestionPendingError, match=refusal):
        forks.fork("fork-open", at, user=None, values={"amount": 6})

    assert Run.objects.count() == runs
    assert compiled.get_state({"configurable": {"thread_id": "fork-open"}}) == asked
