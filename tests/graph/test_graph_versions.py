"""Paused threads meet new graph code (reliability cases 46 and 47).

A node runs again from its beginning on resume, and answers are matched to its
`interrupt()` calls by order. What the engine promises when the code changed under a
paused thread: a step naming a node that no longer exists is refused loudly before
anything is written, and the thread stays resumable by the code that paused it.
"""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import BeamWeaverError, GraphChangedError
from beamweaver_core.graph import END, START, Completed, Graph, Interrupted, interrupt


def one_question(node: str, checkpointer: MemoryCheckpointer, ledger: list[str]) -> Any:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        ledger.append(node)
        return {"answer": interrupt({"question": "ship it?"})}

    return (
        Graph(name="Release")
        .add_node(node, ask)
        .add_edge(START, node)
        .add_edge(node, END)
        .compile(checkpointer=checkpointer)
    )


def test_a_renamed_node_is_refused_loudly_and_the_thread_is_left_untouched(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    ledger: list[str] = []
    old = one_question("ask", checkpointer, ledger)
    paused = old.invoke({"answer": None}, config=config)
    assert isinstance(paused, Interrupted)
    before = [s.config for s in old.get_state_history(config)]

    new = one_question("ask_v2", checkpointer, ledger)
    with pytest.raises(GraphChangedError) as refused:
        new.resume("yes", config=config)

    assert isinstance(refused.value, BeamWeaverError)
    assert refused.value.missing == ("ask",)
    assert "'ask'" in str(refused.value) and "ask_v2" in str(refused.value)
    assert [s.config for s in old.get_state_history(config)] == before
    assert ledger == ["ask"]  # the new code ran nothing
    done = old.resume("yes", config=config)
    assert isinstance(done, Completed) and done.state["answer"] == "yes"


def test_side_effects_before_an_interrupt_run_again_on_each_resume_unless_upserted(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    appended: list[str] = []
    upserted: dict[str, int] = {}

    def three_questions(state: dict[str, Any]) -> dict[str, Any]:
        appended.append("effect")  # re-executed: the node restarts from its beginning
        upserted["order-1"] = upserted.get("order-1", 0) or 1  # the recommended upsert
        answers = [interrupt(f"q{i}") for i in range(3)]
        return {"answer": answers}

    graph = (
        Graph(name="Ledger")
        .add_node("node", three_questions)
        .add_edge(START, "node")
        .add_edge("node", END)
        .compile(checkpointer=checkpointer)
    )
    result = graph.invoke({"answer": None}, config=config)
    for answer in ("a", "b"):
        assert isinstance(result, Interrupted)
        result = graph.resume(answer, config=config)
    assert isinstance(result, Interrupted)
    result = graph.resume("c", config=config)

    assert isinstance(result, Completed) and result.state["answer"] == ["a", "b", "c"]
    assert appended == ["effect"] * 4  # detected: one run plus three resumes
    assert upserted == {"order-1": 1}
