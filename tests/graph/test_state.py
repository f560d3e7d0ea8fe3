"""get_state, history, update_state and time travel."""

from __future__ import annotations

import dataclasses
import operator
import threading
from typing import Any, TypedDict

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import (
    CheckpointerRequiredError,
    CheckpointNotFoundError,
    InvalidUpdateError,
    MissingResumeValueError,
)
from beamweaver_core.graph import START, Command, Graph, interrupt


def abc(checkpointer: MemoryCheckpointer) -> Any:
    return (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("a", lambda s: {"items": ["a"]})
        .add_node("b", lambda s: {"items": ["b"]})
        .add_node("c", lambda s: {"items": ["c"]})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .compile(checkpointer=checkpointer)
    )


def with_id(config: dict[str, Any], checkpoint_id: str) -> dict[str, Any]:
    return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}}


def test_history_lists_every_checkpoint_newest_first(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = abc(checkpointer)
    graph.invoke({"items": ["in"]}, config)

    history = list(graph.get_state_history(config))

    assert [
        (s.metadata["step"], s.metadata["source"], s.next, s.values["items"]) for s in history
    ] == [
        (2, "loop", (), ["in", "a", "b", "c"]),
        (1, "loop", ("c",), ["in", "a", "b"]),
        (0, "loop", ("b",), ["in", "a"]),
        (-1, "input", ("a",), ["in"]),
    ]
    assert history[0].parent_config == history[1].config
    assert history[-1].parent_config is None
    assert [s.metadata["step"] for s in graph.get_state_history(config, limit=2)] == [2, 1]
    assert [
        s.metadata["step"] for s in graph.get_state_history(config, before=history[1].config)
    ] == [0, -1]


def test_get_state_describes_the_pending_step(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_reducer("answers", operator.add)
        .add_node("ask", lambda s: {"answers": [interrupt("q")]})
        .add_node("done_sibling", lambda s: {"answers": ["sib"]})
        .add_edge(START, "ask")
        .add_edge(START, "done_sibling")
        .compile(checkpointer=checkpointer)
    )
    paused = graph.invoke({"answers": []}, config)
    state = graph.get_state(config)

    assert state.values == {"answers": ["sib"]}
    assert state.next == ("ask",)
    assert state.interrupts == paused.interrupts
    assert [(t.name, t.interrupts, t.result) for t in state.tasks] == [
        ("ask", paused.interrupts, None),
        ("done_sibling", (), {"answers": ["sib"]}),
    ]
    assert state.config["configurable"]["thread_id"] == config["configurable"]["thread_id"]
    assert state.created_at is not None
    # The step's history entry is the same snapshot (docs/engine.md, "The snapshot of a
    # paused step"), also once the step has completed, where the answered task then shows
    # what it wrote, as in LangGraph's history.
    assert next(iter(graph.get_state_history(config))) == state
    graph.resume("a", config)
    ask, sibling = state.tasks
    assert list(graph.get_state_history(config))[1] == dataclasses.replace(
        state, tasks=(dataclasses.replace(ask, result={"answers": ["a"]}), sibling)
    )


def test_get_state_of_an_unknown_thread_is_empty_and_of_an_unknown_checkpoint_an_error(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = abc(checkpointer)
    assert graph.get_state(config).values == {}
    with pytest.raises(CheckpointNotFoundError):
        graph.get_state(with_id(config, "0" * 32))


def test_state_apis_need_a_checkpointer() -> None:
    graph = Graph().add_node("a", lambda s: None).add_edge(START, "a").compile()
    with pytest.raises(CheckpointerRequiredError):
        graph.get_state({"configurable": {"thread_id": "t"}})


def test_a_thread_id_is_required_with_a_checkpointer(checkpointer: MemoryCheckpointer) -> None:
    with pytest.raises(ValueError, match="every call needs a thread"):
        abc(checkpointer).invoke({"items": []})


def test_a_finished_parallel_step_shows_its_own_values_whatever_the_timing(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """The task that finished while its sibling still ran saved its writes mid-step, and
    the history showed that step as half done ("next" the slow one, "values" with the
    fast one's writes) where the same run with other timing showed it whole."""
    graph = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("fast", lambda s: {"items": ["fast"]})
        .add_node("slow", lambda s: threading.Event().wait(0.3) or {"items": ["slow"]})
        .add_node("end", lambda s: {"items": ["end"]})
        .add_edge(START, "fast")
        .add_edge(START, "slow")
        .add_edge(["fast", "slow"], "end")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({"items": []}, config)

    first = list(graph.get_state_history(config))[-1]

    assert (first.next, first.values) == (("fast", "slow"), {"items": []})


def test_update_state_as_a_node_schedules_its_successors(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = abc(checkpointer)
    graph.invoke({"items": ["in"]}, config)

    graph.update_state(config, {"items": ["manual"]}, as_node="b")

    state = graph.get_state(config)
    assert (state.next, state.metadata["source"], state.values["items"]) == (
        ("c",),
        "update",
        ["in", "a", "b", "c", "manual"],
    )
    assert graph.invoke(None, config).state["items"] == ["in", "a", "b", "c", "manual", "c"]


def test_update_state_without_as_node_keeps_the_pending_interrupt_answerable(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Only the values change: the question stays pending with its id (resume answers it,
    and the node runs again on the updated state), as in LangGraph, where the resume is
    accepted too. (The contract suite runs the same on every checkpointer.)"""
    graph = (
        Graph()
        .add_node("ask", lambda s: {"answer": interrupt(f"approve {s['amount']}?")})
        .add_node("pay", lambda s: {"paid": f"{s['amount']} ({s['answer']})"})
        .add_edge(START, "ask")
        .add_edge("ask", "pay")
        .compile(checkpointer=checkpointer)
    )
    paused = graph.invoke({"amount": 100}, config)

    graph.update_state(config, {"amount": 900})

    state = graph.get_state(config)
    assert (state.interrupts, state.next, state.metadata["source"]) == (
        paused.interrupts,
        ("ask",),
        "update",
    )
    with pytest.raises(MissingResumeValueError):
        graph.invoke(None, config)
    done = graph.resume("ok", config)
    assert done.state == {"amount": 900, "answer": "ok", "paid": "900 (ok)"}


def test_update_state_as_end_clears_the_pending_step(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = (
        Graph()
        .add_node("ask", lambda s: {"a": interrupt("q")})
        .add_edge(START, "ask")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({}, config)
    graph.update_state(config, None, as_node="__end__")
    assert (graph.get_state(config).next, graph.get_state(config).interrupts) == ((), ())


def test_clearing_a_paused_step_keeps_what_its_finished_tasks_wrote(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """As LangGraph's `update_state(config, None, as_node=END)`: the sibling that finished
    while the other task paused ran (its side effects happened); its writes stand."""
    graph = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("ask", lambda s: {"items": [f"ask:{interrupt('q')}"]})
        .add_node("sibling", lambda s: {"items": ["sibling"]})
        .add_edge(START, "ask")
        .add_edge(START, "sibling")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({"items": []}, config)

    graph.update_state(config, None, as_node="__end__")

    snapshot = graph.get_state(config)
    assert (snapshot.values, snapshot.next, snapshot.interrupts) == ({"items": ["sibling"]}, (), ())


def test_the_first_write_of_an_empty_thread_is_its_input(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """As on LangGraph: `update_state` on a thread with no checkpoint schedules what
    follows START, and `invoke(None)` runs it."""
    graph = abc(checkpointer)

    graph.update_state(config, {"items": ["u"]})

    assert graph.get_state(config).next == ("a",)
    assert graph.invoke(None, config).state == {"items": ["u", "a", "b", "c"]}


def test_update_state_with_an_unknown_node_is_refused(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    with pytest.raises(InvalidUpdateError, match="node 'ghost' does not exist"):
        abc(checkpointer).update_state(config, {"x": 1}, as_node="ghost")


def test_replaying_from_an_old_checkpoint_forks_a_new_branch(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    runs: list[str] = []
    graph = (
        Graph()
        .add_reducer("items", operator.add)
        .add_node("a", lambda s: runs.append("a") or {"items": ["a"]})
        .add_node("b", lambda s: runs.append("b") or {"items": ["b"]})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({"items": []}, config)
    after_a = next(s for s in graph.get_state_history(config) if s.next == ("b",))
    runs.clear()

    replayed = graph.invoke(None, after_a.config)

    assert replayed.state == {"items": ["a", "b"]}
    assert runs == ["b"]
    sources = [s.metadata["source"] for s in graph.get_state_history(config)]
    assert sources[:2] == ["loop", "fork"]


def test_answering_an_old_interrupt_again_forks_with_the_new_answer(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """LangGraph #6663: the second answer at an old checkpoint was silently ignored."""
    graph = (
        Graph()
        .add_node("ask", lambda s: {"n": 2 if interrupt("double?") else 1})
        .add_edge(START, "ask")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({}, config)
    paused_at = graph.get_state(config).config["configurable"]["checkpoint_id"]
    assert graph.resume(True, config).state == {"n": 2}

    again = graph.invoke(Command(resume=False), with_id(config, paused_at))

    assert again.state == {"n": 1}
    assert graph.get_state(config).values == {"n": 1}


def test_forking_from_an_unknown_checkpoint_is_an_error(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = abc(checkpointer)
    graph.invoke({"items": []}, config)
    with pytest.raises(CheckpointNotFoundError, match="has no checkpoint"):
        graph.invoke(None, with_id(config, "f" * 32))


def test_every_unknown_checkpoint_error_says_how_to_find_a_valid_one(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = abc(checkpointer)
    graph.invoke({"items": []}, config)
    missing = with_id(config, "f" * 32)
    for call in (
        lambda: graph.invoke(None, missing),
        lambda: graph.get_state(missing),
        lambda: graph.update_state(missing, {"items": ["x"]}),
    ):
        with pytest.raises(CheckpointNotFoundError) as info:
            call()
        assert f"has no checkpoint {'f' * 32!r}" in str(info.value)
        assert "get_state_history(config)" in str(info.value)


def test_forking_without_a_checkpointer_says_what_to_do() -> None:
    graph = Graph().add_node("a", lambda s: None).add_edge(START, "a").compile(name="Plain")
    with pytest.raises(CheckpointerRequiredError) as info:
        graph.invoke({}, {"configurable": {"thread_id": "t", "checkpoint_id": "c1"}})
    assert "graph 'Plain' keeps none" in str(info.value)
    assert "compile it with a checkpointer" in str(info.value)


def test_update_state_with_undeclared_keys_names_the_declared_ones(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    class State(TypedDict):
        count: int

    graph = (
        Graph(state_schema=State)
        .add_node("a", lambda s: None)
        .add_edge(START, "a")
        .compile(checkpointer=checkpointer)
    )
    graph.invoke({"count": 1}, config)
    with pytest.raises(InvalidUpdateError) as info:
        graph.update_state(config, {"cuont": 2})
    assert "['cuont'] are not in the state schema (declared: ['count'])" in str(info.value)


def test_new_input_at_an_old_checkpoint_starts_a_branch_from_it(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = abc(checkpointer)
    graph.invoke({"items": ["first"]}, config)
    start = list(graph.get_state_history(config))[-1]

    result = graph.invoke({"items": ["second"]}, start.config)

    assert result.state["items"] == ["first", "second", "a", "b", "c"]
