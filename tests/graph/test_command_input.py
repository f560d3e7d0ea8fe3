"""`Command(update=..., goto=...)` given as input without `resume`: the update is applied to
the thread's pending step and the goto targets join it, as on LangGraph; questions the
step waits on keep waiting (test_differential.py compares the results with LangGraph)."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import NothingToResumeError
from beamweaver_core.graph import START, Command, Graph, Interrupted, interrupt


def approval(checkpointer: MemoryCheckpointer, runs: list[str]) -> Any:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        runs.append("ask")
        return {"answer": interrupt(f"pay {state['amount']}?")}

    def notify(state: dict[str, Any]) -> dict[str, Any]:
        runs.append("notify")
        return {"log": [f"notified about {state['amount']}"]}

    return (
        Graph()
        .add_reducer("log", operator.add)
        .add_node("ask", ask)
        .add_node("notify", notify)
        .add_node("pay", lambda s: {"log": [f"paid {s['amount']} ({s['answer']})"]})
        .add_edge(START, "ask")
        .add_edge("ask", "pay")
        .compile(checkpointer=checkpointer)
    )


def test_an_update_without_resume_changes_a_paused_thread_and_the_question_waits(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """The waiting node is not run again, so the question a reviewer sees (its id and its
    value) is the one they answer; the answer then runs it on the updated state."""
    runs: list[str] = []
    graph = approval(checkpointer, runs)
    paused = graph.invoke({"amount": 100, "log": []}, config)
    runs.clear()

    changed = graph.invoke(Command(update={"amount": 90}), config)

    assert changed == Interrupted(
        interrupt=paused.interrupt,
        interrupts=paused.interrupts,
        state={"amount": 90, "log": []},
    )
    assert runs == []
    assert graph.get_state(config).metadata["source"] == "update"
    done = graph.resume("ok", config)
    assert done.state == {"amount": 90, "answer": "ok", "log": ["paid 90 (ok)"]}


def test_a_goto_without_resume_runs_its_target_while_the_question_waits(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """The target joins the paused step: it runs now and is not run again when the question
    is answered."""
    runs: list[str] = []
    graph = approval(checkpointer, runs)
    paused = graph.invoke({"amount": 100, "log": []}, config)
    runs.clear()

    changed = graph.invoke(Command(goto="notify"), config)

    assert isinstance(changed, Interrupted) and changed.interrupts == paused.interrupts
    assert changed.state == {"amount": 100, "log": ["notified about 100"]}
    done = graph.resume("ok", config)
    assert done.state["log"] == ["notified about 100", "paid 100 (ok)"]
    assert runs == ["notify", "ask"]


def test_a_command_with_the_answer_still_answers_the_question(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    runs: list[str] = []
    graph = approval(checkpointer, runs)
    graph.invoke({"amount": 100, "log": []}, config)

    done = graph.invoke(Command(resume="ok", update={"amount": 80}, goto="notify"), config)

    assert done.state["log"] == ["notified about 80", "paid 80 (ok)"]


def test_an_answer_may_update_a_key_an_earlier_command_updated_at_the_same_step(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Each command is applied on a checkpoint of its own (LangGraph keeps both updates as
    input of the one waiting step and fails: two values for `amount` in one step)."""
    graph = approval(checkpointer, [])
    graph.invoke({"amount": 100, "log": []}, config)
    graph.invoke(Command(update={"amount": 90}), config)

    done = graph.invoke(Command(resume="ok", update={"amount": 80}), config)

    assert done.state == {"amount": 80, "answer": "ok", "log": ["paid 80 (ok)"]}


def test_an_empty_command_is_refused_like_a_resume_without_an_answer(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = approval(checkpointer, [])
    graph.invoke({"amount": 100, "log": []}, config)

    with pytest.raises(ValueError, match="waiting for answers"):
        graph.invoke(Command(), config)


def test_a_command_on_a_thread_with_no_checkpoint_is_refused(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """There is no step to apply it to (LangGraph starts the graph from an unclear mix of
    the command and START): start the thread with input."""
    graph = approval(checkpointer, [])

    with pytest.raises(NothingToResumeError, match="Start it with invoke"):
        graph.invoke(Command(update={"amount": 1}, goto="notify"), config)
