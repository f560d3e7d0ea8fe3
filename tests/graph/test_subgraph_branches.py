"""A subgraph's saved run belongs to the parent checkpoint it ran under.

When the parent task runs again from another checkpoint that kept the task (its state
edited with `update_state`, a fork, an old interrupt answered again), the subgraph runs
again from its start on the parent's state now, as a plain node does, and the answer to
its one pending question goes to the first question the new run asks. Before, the
subgraph adopted its old run: an edit was silently undone, a fork replayed the old
branch's result (found by an outside review, checked against LangGraph 1.x).
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest

from beamweaver_core.checkpoint import Checkpointer, MemoryCheckpointer, PostgresCheckpointer
from beamweaver_core.graph import START, Command, Graph, answered_interrupt, interrupt


class State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    x: int


@pytest.fixture(
    params=["memory", pytest.param("postgres", marks=pytest.mark.django_db(transaction=True))]
)
def checkpointer(request: pytest.FixtureRequest) -> Checkpointer:
    return MemoryCheckpointer() if request.param == "memory" else PostgresCheckpointer()


@pytest.fixture
def config() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}


def _graph(checkpointer: Checkpointer, calls: list[Any], *, pre: bool = False) -> Any:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        calls.append(state.get("x"))
        asked = answered_interrupt()
        answer = interrupt(f"approve x={state.get('x')}?")
        calls.append(asked.value if asked is not None else None)
        return {"items": [f"x={state.get('x')} ans={answer}"]}

    child = Graph(name="child", state_schema=State).add_node("ask", ask)
    child = child.add_edge(START, "ask").compile()
    graph = Graph(state_schema=State).add_node("sub", child)
    if pre:
        graph = graph.add_node("pre", lambda s: {"items": ["pre"]})
        graph = graph.add_edge(START, "pre").add_edge("pre", "sub")
    else:
        graph = graph.add_edge(START, "sub")
    return graph.compile(checkpointer=checkpointer)


def test_an_edit_of_a_paused_thread_reaches_the_subgraph_and_the_answer_carries(
    checkpointer: Checkpointer, config: dict[str, Any]
) -> None:
    calls: list[Any] = []
    graph = _graph(checkpointer, calls)
    assert graph.invoke({"items": [], "x": 1}, config).interrupt.value == "approve x=1?"
    graph.update_state(config, {"x": 99})
    # the question still pending is the one that was asked, and it stays answerable
    assert [i.value for i in graph.get_state(config).interrupts] == ["approve x=1?"]

    done = graph.resume("yes", config)

    assert done.state == {"items": ["x=99 ans=yes"], "x": 99}
    # the new run asked on x=99 and saw, through answered_interrupt(), what was answered
    assert calls == [1, 99, "approve x=1?"]


def test_a_fork_with_changed_state_runs_the_subgraph_again(
    checkpointer: Checkpointer, config: dict[str, Any]
) -> None:
    calls: list[Any] = []
    graph = _graph(checkpointer, calls, pre=True)
    graph.invoke({"items": [], "x": 1}, config)
    assert graph.resume("yes", config).state["items"][-1] == "x=1 ans=yes"
    before_sub = next(s for s in graph.get_state_history(config) if s.next == ("sub",))
    calls.clear()

    forked = graph.update_state(before_sub.config, {"x": 99})
    # the fork keeps the question pending there (interrupted tasks keep their records)
    assert [i.value for i in graph.get_state(forked).interrupts] == ["approve x=1?"]

    done = graph.resume("again", forked)

    assert done.state["items"][-1] == "x=99 ans=again"
    assert calls == [99, "approve x=1?"]


def test_answering_an_old_question_again_forks_into_the_subgraph(
    checkpointer: Checkpointer, config: dict[str, Any]
) -> None:
    calls: list[Any] = []
    graph = _graph(checkpointer, calls)
    graph.invoke({"items": [], "x": 1}, config)
    old = graph.get_state(config).config
    assert graph.resume("A", config).state["items"] == ["x=1 ans=A"]

    assert graph.resume("B", old).state["items"] == ["x=1 ans=B"]


def test_a_resume_with_an_update_reaches_the_subgraph(
    checkpointer: Checkpointer, config: dict[str, Any]
) -> None:
    calls: list[Any] = []
    graph = _graph(checkpointer, calls)
    graph.invoke({"items": [], "x": 1}, config)

    done = graph.invoke(Command(resume="ok", update={"x": 5}), config)

    assert done.state["items"] == ["x=5 ans=ok"]


def test_a_subgraphs_config_is_refused_clearly_and_nothing_is_written(
    checkpointer: Checkpointer, config: dict[str, Any]
) -> None:
    """Reading or writing through a subgraph's config used to fail with "Thread ... has no
    checkpoint" (the namespace was ignored); the root graph is the way in."""
    graph = _graph(checkpointer, [])
    graph.invoke({"items": [], "x": 1}, config)
    inner = graph.get_state(config, subgraphs=True).tasks[0].state.config
    history = len(list(graph.get_state_history(config)))

    for call in (
        lambda: graph.get_state(inner),
        lambda: graph.update_state(inner, {"x": 50}),
    ):
        with pytest.raises(ValueError, match="a subgraph's namespace"):
            call()

    assert len(list(graph.get_state_history(config))) == history
    assert graph.resume("ok", config).state["items"] == ["x=1 ans=ok"]
