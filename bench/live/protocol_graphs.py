"""The graphs the protocol benchmark runs on BeamWeaver's `/lg`: the same as the LangGraph
equivalents `langgraph dev` serves for it (tests/protocol/differential/langgraph/graphs.py),
so both servers run the same nodes: `ask` pauses on a plain question and finishes once
answered, `linear` runs three nodes. The protocol tests serve these two as well
(tests/protocol/graphs.py), so the benchmark times the graphs the tests check."""

from __future__ import annotations

import operator
from typing import Any

from beamweaver_core.graph import START, Graph, interrupt

GRAPHS = {
    "ask": "bench.live.protocol_graphs:ask",
    "linear": "bench.live.protocol_graphs:linear",
}


def ask_node(state: dict[str, Any]) -> dict[str, Any]:
    """Asks "Approve?" with the state's amount; the answer is the state's `answer`."""
    return {"answer": interrupt({"question": "Approve?", "amount": state.get("amount")})}


def _finish(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    runtime.emit("progress", {"step": "finishing"})
    return {"log": ["finish"]}


ask = (
    Graph(name="ask")
    .add_node("ask", ask_node)
    .add_node("finish", _finish)
    .add_edge(START, "ask")
    .add_edge("ask", "finish")
    .compile()
)


def _named(name: str) -> Any:
    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [name]}

    return node


linear = (
    Graph(name="linear")
    .add_reducer("log", operator.add)
    .add_node("one", _named("one"))
    .add_node("two", _named("two"))
    .add_node("three", _named("three"))
    .add_edge(START, "one")
    .add_edge("one", "two")
    .add_edge("two", "three")
    .compile()
)
