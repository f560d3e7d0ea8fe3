"""`answered_interrupt()`: a node re-run on resume reads the question its answer belongs to,
as it was saved with the pause, even when it would now ask something else."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer, PostgresCheckpointer
from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.graph import (
    END,
    START,
    Completed,
    Graph,
    Interrupted,
    answered_interrupt,
    interrupt,
)


@pytest.fixture(
    params=[
        "memory",
        pytest.param("postgres", marks=pytest.mark.django_db(transaction=True)),
    ]
)
def store(request: pytest.FixtureRequest) -> Checkpointer:
    if request.param == "memory":
        return MemoryCheckpointer()
    return PostgresCheckpointer()


def test_a_node_reads_the_saved_questions_of_its_answers(store: Checkpointer) -> None:
    """Two questions in one node; the node's inputs change at every attempt (here a
    counter), so a recomputed question would differ. The hook reports `None` before a new
    question and the saved question before an answered one, for the answer consumed at an
    earlier resume too."""
    attempts: list[int] = []
    seen: list[tuple[int, Any]] = []

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        attempt = len(attempts)
        attempts.append(attempt)
        answers = []
        for n in range(2):
            asked = answered_interrupt()
            seen.append((attempt, None if asked is None else (asked.id, asked.value)))
            answers.append(interrupt({"question": n, "asked_at_attempt": attempt}))
        return {"answers": answers}

    graph = (
        Graph(name="ask")
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .add_edge("ask", END)
        .compile(checkpointer=store)
    )
    config = {"configurable": {"thread_id": f"ask-{uuid.uuid4().hex[:8]}"}}

    first = graph.invoke({"answers": []}, config=config)
    assert isinstance(first, Interrupted)
    second = graph.resume("one", config=config)
    assert isinstance(second, Interrupted)
    done = graph.resume("two", config=config)

    assert isinstance(done, Completed)
    assert done.state["answers"] == ["one", "two"]
    assert seen == [
        (0, None),
        (1, (first.interrupt.id, {"question": 0, "asked_at_attempt": 0})),
        (1, None),
        (2, (first.interrupt.id, {"question": 0, "asked_at_attempt": 0})),
        (2, (second.interrupt.id, {"question": 1, "asked_at_attempt": 1})),
    ]


def test_raising_after_reading_the_question_keeps_the_interrupt_pending(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """A node that refuses the answer (raises) leaves the thread paused on the same
    interrupt; a later resume is read against the same saved question."""
    refuse = [True]

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        asked = answered_interrupt()
        if asked is not None and refuse[0]:
            raise ValueError(f"cannot apply an answer to {asked.value}")
        return {"answer": interrupt("question")}

    graph = (
        Graph(name="refuse")
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .add_edge("ask", END)
        .compile(checkpointer=checkpointer)
    )
    paused = graph.invoke({"answer": None}, config=config)
    assert isinstance(paused, Interrupted)

    with pytest.raises(ValueError, match="cannot apply an answer to question"):
        graph.resume("yes", config=config)

    assert graph.get_state(config).interrupts == paused.interrupts
    refuse[0] = False
    done = graph.resume("yes", config=config)
    assert isinstance(done, Completed)
    assert done.state["answer"] == "yes"


def test_outside_a_node_it_says_where_to_call_it() -> None:
    with pytest.raises(RuntimeError, match="outside a graph node"):
        answered_interrupt()


def test_without_a_checkpointer_there_is_never_an_answer() -> None:
    seen: list[Any] = []

    def node(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(answered_interrupt())
        return {"ok": True}

    graph = Graph().add_node("n", node).add_edge(START, "n").add_edge("n", END).compile()
    assert isinstance(graph.invoke({"ok": False}), Completed)
    assert seen == [None]
