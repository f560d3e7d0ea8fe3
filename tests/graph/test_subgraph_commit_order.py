"""A subgraph's checkpoints are stored after the checkpoint its parent's step runs on.

A run's input checkpoint is staged and rides with its first step's commit. A subgraph run
in that first step commits its own checkpoints (and, on a worker, the run's stored events)
before the parent's step ends, so the thread held a subgraph's checkpoints, whose
metadata names a parent checkpoint that did not exist yet, and a live `/lg` stream that
read the run's start found no checkpoint of the run to show: its first `values` missed the
input (found by the differential shapes suite, tests/protocol/differential).
"""

from __future__ import annotations

import asyncio
import operator
import threading
import uuid
from typing import Annotated, Any, TypedDict

import pytest

from beamweaver_core.checkpoint import Checkpointer, MemoryCheckpointer, PostgresCheckpointer
from beamweaver_core.graph import START, Graph


class State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


@pytest.fixture(
    params=["memory", pytest.param("postgres", marks=pytest.mark.django_db(transaction=True))]
)
def checkpointer(request: pytest.FixtureRequest) -> Checkpointer:
    return MemoryCheckpointer() if request.param == "memory" else PostgresCheckpointer()


def _nested(checkpointer: Checkpointer, seen: list[Any], config: dict[str, Any]) -> Any:
    """A graph whose first node is a two-step subgraph; the subgraph's second step (after
    its first step's commit) reads the thread's stored root state."""

    def second(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(graph.get_state(config).values)
        return {"items": ["second"]}

    child = (
        Graph(name="child", state_schema=State)
        .add_node("first", lambda s: {"items": ["first"]})
        .add_node("second", second)
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile()
    )
    graph = (
        Graph(state_schema=State)
        .add_node("sub", child)
        .add_edge(START, "sub")
        .compile(checkpointer=checkpointer)
    )
    return graph


def test_the_parents_input_checkpoint_is_stored_before_its_subgraphs(
    checkpointer: Checkpointer,
) -> None:
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    seen: list[Any] = []
    graph = _nested(checkpointer, seen, config)

    graph.invoke({"items": ["in"]}, config)

    assert seen == [{"items": ["in"]}]
    history = list(graph.get_state_history(config))
    assert [s.metadata.get("source") for s in history] == ["loop", "input"]


def test_the_parents_input_checkpoint_is_stored_once_when_parallel_subgraphs_commit(
    checkpointer: Checkpointer,
) -> None:
    """Two subgraphs of the first step commit at once: the parent's staged checkpoint is
    committed by one of them, exactly once, before either's."""
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    both = threading.Barrier(2, timeout=10)

    def meet(state: dict[str, Any]) -> dict[str, Any]:
        both.wait()
        return {"items": ["met"]}

    def child(name: str) -> Any:
        return (
            Graph(name=name, state_schema=State)
            .add_node("meet", meet)
            .add_node("after", lambda s: {"items": [name]})
            .add_edge(START, "meet")
            .add_edge("meet", "after")
            .compile()
        )

    graph = (
        Graph(state_schema=State)
        .add_node("left", child("left"))
        .add_node("right", child("right"))
        .add_edge(START, "left")
        .add_edge(START, "right")
        .compile(checkpointer=checkpointer)
    )

    graph.invoke({"items": ["in"]}, config)

    history = list(graph.get_state_history(config))
    assert [s.metadata.get("source") for s in history] == ["loop", "input"]
    assert history[1].values == {"items": ["in"]}


def test_the_same_order_when_the_run_is_awaited(checkpointer: Checkpointer) -> None:
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}
    seen: list[Any] = []
    graph = _nested(checkpointer, seen, config)

    asyncio.run(graph.ainvoke({"items": ["in"]}, config))

    assert seen == [{"items": ["in"]}]
    assert [s.metadata.get("source") for s in graph.get_state_history(config)] == [
        "loop",
        "input",
    ]
