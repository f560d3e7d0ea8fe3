"""Streaming: collected events, live iteration, async iteration, custom events."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import START, Command, Completed, Graph, Interrupted, Runtime, interrupt


def two_steps(checkpointer: MemoryCheckpointer) -> Any:
    return (
        Graph()
        .add_node("work", lambda s: {"worked": True})
        .add_node("ask", lambda s: {"answer": interrupt("ok?")})
        .add_edge(START, "work")
        .add_edge("work", "ask")
        .compile(checkpointer=checkpointer)
    )


def test_stream_events_collects_the_events_up_to_the_pause(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    result = two_steps(checkpointer).stream_events({}, config)

    assert isinstance(result, Interrupted)
    assert [(e.event, e.node) for e in result.events] == [
        ("run.started", None),
        ("node.started", "work"),
        ("node.finished", "work"),
        ("state.updated", None),
        ("node.started", "ask"),
        ("node.finished", "ask"),
        ("run.interrupted", None),
    ]
    assert [e.seq for e in result.events] == list(range(1, 8))
    assert result.events[2].data["update"] == {"worked": True}
    assert result.events[-1].data["interrupts"][0]["value"] == "ok?"


def test_stream_events_after_resume_ends_with_run_completed(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    graph = two_steps(checkpointer)
    graph.invoke({}, config)
    result = graph.stream_events(Command(resume="yes"), config)
    assert isinstance(result, Completed)
    assert result.events[-1].event == "run.completed"
    assert result.events[-1].data["result"].state == {"worked": True, "answer": "yes"}


def test_invoke_collects_no_events() -> None:
    graph = Graph().add_node("a", lambda s: {"v": 1}).add_edge(START, "a").compile()
    assert graph.invoke({}).events == []


def test_iter_events_yields_each_event_as_it_happens() -> None:
    release = threading.Event()

    def waits_for_consumer(_: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
        runtime.emit("waiting", None)
        assert release.wait(5), "the consumer never saw the event while the node was running"
        return {"done": True}

    graph = Graph().add_node("wait", waits_for_consumer).add_edge(START, "wait").compile()
    seen: list[str] = []
    for envelope in graph.iter_events({}):
        seen.append(envelope.event)
        if envelope.event == "waiting":
            release.set()
    assert seen == [
        "run.started",
        "node.started",
        "waiting",
        "node.finished",
        "state.updated",
        "run.completed",
    ]


def test_iter_events_reports_a_failure_as_the_last_event() -> None:
    def boom(_: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("missing")

    graph = Graph().add_node("boom", boom).add_edge(START, "boom").compile()
    events = list(graph.iter_events({}))
    assert events[-1].event == "run.failed"
    assert isinstance(events[-1].data["exception"], KeyError)


@pytest.mark.asyncio
async def test_astream_events_yields_live_envelopes(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    events = [e async for e in two_steps(checkpointer).astream_events({}, config)]
    assert [e.event for e in events][-1] == "run.interrupted"
    assert events[-1].data["result"].interrupt.value == "ok?"
    assert [e.node for e in events if e.event == "node.finished"] == ["work", "ask"]


def test_subgraph_events_carry_their_namespace(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    child = (
        Graph(name="child").add_node("inner", lambda s: {"x": 1}).add_edge(START, "inner").compile()
    )
    parent = (
        Graph().add_node("sub", child).add_edge(START, "sub").compile(checkpointer=checkpointer)
    )
    events = parent.stream_events({}, config).events
    inner = [e for e in events if e.node == "inner"]
    assert inner and all(e.ns.startswith("sub:") and e.ns.endswith("|child") for e in inner)


def test_async_subgraph_nodes_and_emit_under_ainvoke() -> None:
    async def node(_: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
        runtime.emit("tick", 1)
        await asyncio.sleep(0)
        return {"v": 1}

    graph = Graph().add_node("n", node).add_edge(START, "n").compile()

    async def run() -> list[str]:
        return [e.event async for e in graph.astream_events({})]

    assert "tick" in asyncio.run(run())


def test_on_event_receives_envelopes_live_without_collecting_them() -> None:
    seen: list[str] = []
    graph = Graph().add_node("a", lambda s: {"v": 1}).add_edge(START, "a").compile()
    result = graph.invoke({}, on_event=lambda e: seen.append(e.event))
    assert seen == [
        "run.started",
        "node.started",
        "node.finished",
        "state.updated",
        "run.completed",
    ]
    assert result.events == []


def test_custom_events_carry_the_same_ns_as_node_events() -> None:
    def node(_: dict[str, Any], runtime: Runtime) -> None:
        runtime.emit("custom", 1)

    graph = Graph().add_node("n", node).add_edge(START, "n").compile()
    assert {e.ns for e in graph.stream_events({}).events if e.node == "n"} == {""}


def _chain(ran: list[str], node: Any) -> Any:
    graph = Graph().add_reducer("items", lambda a, b: a + b)
    for name in "abcd":
        graph = graph.add_node(name, node(name))
    graph = graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", "d")
    return graph.compile(checkpointer=MemoryCheckpointer())


def test_closing_iter_events_stops_the_run(config: dict[str, Any]) -> None:
    """As a LangGraph stream closed early: later steps neither run nor are saved (the run
    went on to the end in a background thread, every step saved)."""
    ran: list[str] = []

    def node(name: str) -> Any:
        return lambda s: ran.append(name) or {"items": [name]}

    graph = _chain(ran, node)
    events = graph.iter_events({"items": []}, config)
    for envelope in events:
        if envelope.event == "node.finished":
            break
    events.close()
    threading.Event().wait(0.3)  # time enough for a run that was not stopped to finish

    assert "d" not in ran and "c" not in ran
    assert graph.get_state(config).values["items"][0] == "a"
    assert len(graph.get_state(config).values["items"]) <= 2


async def test_closing_astream_events_returns_at_once_and_stops_the_run(
    config: dict[str, Any],
) -> None:
    """`aclose()` waited for the whole run to end (forever, had a node hung)."""
    ran: list[str] = []

    def node(name: str) -> Any:
        async def step(state: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(0.2)
            ran.append(name)
            return {"items": [name]}

        return step

    graph = _chain(ran, node)
    events = graph.astream_events({"items": []}, config)
    async for envelope in events:
        if envelope.event == "node.finished":
            break
    await events.aclose()
    assert ran == ["a"]  # aclose() did not wait for b, c and d
    await asyncio.sleep(0.5)

    assert ran == ["a"]
    assert graph.get_state(config).values == {"items": ["a"]}
