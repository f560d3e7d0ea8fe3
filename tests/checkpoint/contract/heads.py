"""Part of the checkpointer contract: the heads of many threads read at once (`load_heads`).

A listing of threads (the protocol's `threads.search`) shows each thread's latest state:
`load_heads` gives every thread's head as `load` gives it, and `compiled.latest_states`
builds from them exactly the snapshots `get_state` gives. Every checkpointer runs these
(through `CheckpointerContract`).
"""

from __future__ import annotations

import operator
import uuid
from typing import Any

import pytest

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.graph import START, CompiledGraph, Graph, interrupt
from beamweaver_core.graph.compiled import latest_states
from beamweaver_core.messages import Message


def _charge(state: dict[str, Any]) -> dict[str, Any]:
    raise ValueError("card declined")


def _graphs(checkpointer: Checkpointer) -> dict[str, CompiledGraph]:
    """Graphs whose threads end in every state a thread can be read in, by name."""
    chat = (
        Graph()
        .add_reducer("messages", operator.add)
        .add_node("reply", lambda s: {"messages": [Message.assistant(f"#{len(s['messages'])}")]})
        .add_edge(START, "reply")
    )
    pair = (
        Graph()
        .add_reducer("answers", operator.add)
        .add_node("left", lambda s: {"answers": [f"left:{interrupt('left?')}"]})
        .add_node("right", lambda s: {"answers": [f"right:{interrupt('right?')}"]})
        .add_edge(START, "left")
        .add_edge(START, "right")
    )
    child = (
        Graph(name="child")
        .add_node("c1", lambda s: {"said": interrupt({"q": "inner?"})})
        .add_edge(START, "c1")
        .compile()
    )
    nested = Graph().add_node("sub", child).add_edge(START, "sub")
    failing = Graph().add_node("charge", _charge).add_edge(START, "charge")
    stepped = (
        Graph()
        .add_node("one", lambda s: {"n": 1})
        .add_node("two", lambda s: {"n": 2})
        .add_edge(START, "one")
        .add_edge("one", "two")
    )
    return {
        "chat": chat.compile(checkpointer=checkpointer),
        "pair": pair.compile(checkpointer=checkpointer),
        "nested": nested.compile(checkpointer=checkpointer),
        "failing": failing.compile(checkpointer=checkpointer),
        "breakpoint": stepped.compile(checkpointer=checkpointer, interrupt_before=["two"]),
    }


def _threads(checkpointer: Checkpointer) -> dict[str, CompiledGraph]:
    """Threads run into those states (and one never run), each with its graph, by id."""
    graphs = _graphs(checkpointer)
    threads = {f"{name}-{uuid.uuid4().hex[:8]}": graph for name, graph in graphs.items()}
    threads[f"never-{uuid.uuid4().hex[:8]}"] = graphs["chat"]
    for thread_id, graph in threads.items():
        config = {"configurable": {"thread_id": thread_id}}
        name = thread_id.rsplit("-", 1)[0]
        if name == "chat":
            for _ in range(3):
                graph.invoke({"messages": [Message.user("hi")]}, config)
        elif name == "pair":
            paused = graph.invoke({"answers": []}, config)
            graph.resume({paused.interrupts[0].id: "yes"}, config)
        elif name == "failing":
            with pytest.raises(ValueError, match="card declined"):
                graph.invoke({}, config)
        elif name != "never":
            graph.invoke({}, config)
    return threads


class HeadsContract:
    """Every checkpointer reads the heads of many threads as `load` reads each."""

    def test_load_heads_of_no_threads_is_empty(self, checkpointer: Checkpointer) -> None:
        assert checkpointer.load_heads([]) == {}

    def test_load_heads_gives_each_known_threads_head_as_load_does(
        self, checkpointer: Checkpointer
    ) -> None:
        """Threads paused, failed, chatting (a list stored as appended items), asking in
        a subgraph (whose namespace is not the root's) and at a breakpoint: each head as
        `load` gives it, with its pending records; an unknown thread is left out, and a
        thread asked for twice is there once."""
        threads = list(_threads(checkpointer))
        unknown = f"unknown-{uuid.uuid4().hex[:8]}"
        heads = checkpointer.load_heads([unknown, *threads, threads[0]])
        expected = {t: head for t in threads if (head := checkpointer.load(t)) is not None}
        assert heads == expected
        assert len(expected) == len(threads) - 1  # the thread never run has no head
        assert any(head.records for head in heads.values())

    def test_engine_latest_states_are_what_get_state_gives(
        self, checkpointer: Checkpointer
    ) -> None:
        """For threads of several graphs on one checkpointer, in every state a thread can
        be read in, `latest_states` gives exactly `get_state`'s snapshot of each."""
        threads = _threads(checkpointer)
        states = latest_states(threads)
        assert states == {
            thread_id: graph.get_state({"configurable": {"thread_id": thread_id}})
            for thread_id, graph in threads.items()
        }
        by_kind = {t.rsplit("-", 1)[0]: s for t, s in states.items()}
        assert by_kind["never"].values == {} and by_kind["never"].next == ()
        assert [len(i) for i in (by_kind["pair"].interrupts, by_kind["nested"].interrupts)] == [
            1,
            1,
        ]
        assert [t.error for t in by_kind["failing"].tasks] == ["ValueError('card declined')"]
        assert by_kind["breakpoint"].next == ("two",)
        assert [m.content for m in by_kind["chat"].values["messages"]] == [
            "hi",
            "#1",
            "hi",
            "#3",
            "hi",
            "#5",
        ]
