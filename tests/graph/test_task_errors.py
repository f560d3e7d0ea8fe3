"""A failed task's error in the thread's snapshots (`TaskInfo.error`), as LangGraph shows
the ERROR write of a failed task in `get_state(...).tasks[].error`. (The contract suite
runs the plain failure on every checkpointer.)"""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import START, Graph, interrupt
from beamweaver_core.graph.steps import MAX_TASK_ERROR_CHARS


def test_a_failed_answer_shows_the_error_and_the_question_still_pending(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """The answer is discarded with the failed attempt (docs/engine.md), so the task still
    waits on its question, and its error says why the answer failed; a good answer then
    finishes it, and the error stays with the checkpoint it failed at."""

    def strict(state: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt("give me 'good'")
        if answer != "good":
            raise ValueError(f"bad answer {answer!r}")
        return {"v": answer}

    graph = Graph().add_node("strict", strict).add_edge(START, "strict")
    compiled = graph.compile(checkpointer=checkpointer)
    pending = compiled.invoke({}, config).interrupts
    with pytest.raises(ValueError, match="bad answer"):
        compiled.resume("bad", config)

    state = compiled.get_state(config)

    assert state.interrupts == pending and state.next == ("strict",)
    assert [(t.error, t.interrupts) for t in state.tasks] == [
        ("ValueError(\"bad answer 'bad'\")", pending)
    ]
    assert compiled.resume("good", config).state == {"v": "good"}
    assert [t.error for t in compiled.get_state(config).tasks] == []


def test_a_task_error_is_cut_to_a_bounded_length(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """The error text comes from node, tool and model code: it is stored cut, saying how
    much was cut."""

    def echo(state: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("x" * 100_000)

    graph = Graph().add_node("echo", echo).add_edge(START, "echo")
    compiled = graph.compile(checkpointer=checkpointer)
    with pytest.raises(RuntimeError):
        compiled.invoke({}, config)

    (task,) = compiled.get_state(config).tasks

    assert task.error is not None
    cut = len(repr(RuntimeError("x" * 100_000))) - MAX_TASK_ERROR_CHARS
    assert task.error == "RuntimeError('" + "x" * (MAX_TASK_ERROR_CHARS - 14) + (
        f"… [{cut} more characters cut]"
    )


def test_an_exception_whose_repr_fails_is_still_recorded(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    class Unprintable(Exception):
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    def fail(state: dict[str, Any]) -> dict[str, Any]:
        raise Unprintable

    graph = Graph().add_node("fail", fail).add_edge(START, "fail")
    compiled = graph.compile(checkpointer=checkpointer)
    with pytest.raises(Unprintable):
        compiled.invoke({}, config)

    assert [t.error for t in compiled.get_state(config).tasks] == ["Unprintable(<unprintable>)"]


def test_a_state_update_after_a_failure_starts_the_step_without_the_error(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """`update_state` continues the failed step on a new checkpoint: nothing failed there
    yet, so its task shows no error (the failed checkpoint keeps it), and it runs on the
    updated values."""

    def divide(state: dict[str, Any]) -> dict[str, Any]:
        return {"q": 10 // state["d"]}

    graph = Graph().add_node("divide", divide).add_edge(START, "divide")
    compiled = graph.compile(checkpointer=checkpointer)
    with pytest.raises(ZeroDivisionError):
        compiled.invoke({"d": 0}, config)

    compiled.update_state(config, {"d": 5})

    state = compiled.get_state(config)
    assert [(t.name, t.error) for t in state.tasks] == [("divide", None)]
    history = [[t.error for t in s.tasks] for s in compiled.get_state_history(config)]
    assert history == [[None], ["ZeroDivisionError('integer division or modulo by zero')"]]
    assert compiled.invoke(None, config).state == {"d": 5, "q": 2}
