"""LangGraph equivalents of the protocol tests' graphs (tests/protocol/graphs.py and the
"steps" and "explode" graphs of tests/support/graphs.py), served by `langgraph dev` for the differential
suite: same nodes, same state keys and reducers, same interrupts, custom events and
messages."""

from __future__ import annotations

import operator
import os
import time
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt


class AskState(TypedDict, total=False):
    amount: Any
    answer: Any
    # Written once, so no reducer: LangGraph shows a reducer's channel as `[]` from the
    # start, where BeamWeaver (like a plain key here) shows it once a node writes it.
    log: list[Any]


def _ask(state: AskState) -> dict[str, Any]:
    return {"answer": interrupt({"question": "Approve?", "amount": state.get("amount")})}


def _finish(state: AskState) -> dict[str, Any]:
    get_stream_writer()({"step": "finishing"})
    return {"log": ["finish"]}


ask = (
    StateGraph(AskState)
    .add_node("ask", _ask)
    .add_node("finish", _finish)
    .add_edge(START, "ask")
    .add_edge("ask", "finish")
    .compile()
)


class LogState(TypedDict, total=False):
    log: Annotated[list[Any], operator.add]


def _named(name: str) -> Any:
    def node(state: LogState) -> dict[str, Any]:
        return {"log": [name]}

    return node


linear = (
    StateGraph(LogState)
    .add_node("one", _named("one"))
    .add_node("two", _named("two"))
    .add_node("three", _named("three"))
    .add_edge(START, "one")
    .add_edge("one", "two")
    .add_edge("two", "three")
    .compile()
)


class PairState(TypedDict, total=False):
    left: Any
    right: Any


def _left(state: PairState) -> dict[str, Any]:
    return {"left": interrupt("left?")}


def _right(state: PairState) -> dict[str, Any]:
    return {"right": interrupt("right?")}


parallel = (
    StateGraph(PairState)
    .add_node("left", _left)
    .add_node("right", _right)
    .add_edge(START, "left")
    .add_edge(START, "right")
    .compile()
)


def _step(i: int) -> Any:
    def node(state: LogState) -> dict[str, Any]:
        time.sleep(float(os.environ.get("BEAMWEAVER_TEST_STEP_SECONDS", "0")))
        return {"log": [i]}

    return node


def _build_steps() -> Any:
    builder = StateGraph(LogState)
    for i in range(6):
        builder.add_node(f"s{i}", _step(i))
    builder.add_edge(START, "s0")
    for i in range(5):
        builder.add_edge(f"s{i}", f"s{i + 1}")
    return builder.compile()


steps = _build_steps()


def _explode(state: LogState) -> dict[str, Any]:
    raise RuntimeError("the tool backend is down (api_key=sk-test-0123456789abcdefghij)")


explode = StateGraph(LogState).add_node("explode", _explode).add_edge(START, "explode").compile()


def _greet(arg: dict[str, Any] | None) -> dict[str, Any]:
    return {"log": [f"hello {(arg or {}).get('name', 'everyone')}"]}


greeter = (
    StateGraph(LogState)
    .add_node("start", _named("start"))
    .add_node("greet", _greet)
    .add_edge(START, "start")
    .compile()
)


def _deep_inner() -> Any:
    return StateGraph(LogState).add_node("deep", _named("deep")).add_edge(START, "deep").compile()


nested = (
    StateGraph(LogState)
    .add_node("sub", _deep_inner())
    .add_node("after", _named("after"))
    .add_edge(START, "sub")
    .add_edge("sub", "after")
    .compile()
)


def _asking_inner() -> Any:
    return StateGraph(AskState).add_node("ask", _ask).add_edge(START, "ask").compile()


def _after(state: AskState) -> dict[str, Any]:
    return {"log": ["after"]}


# `AskState`'s `log` has no reducer, as in `ask`: only "after" writes it.
nested_ask = (
    StateGraph(AskState)
    .add_node("sub", _asking_inner())
    .add_node("after", _after)
    .add_edge(START, "sub")
    .add_edge("sub", "after")
    .compile()
)


class ReplyState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def _reply(state: ReplyState) -> dict[str, Any]:
    return {"messages": [AIMessage(content="hi", id="reply-1")]}


reply = StateGraph(ReplyState).add_node("reply", _reply).add_edge(START, "reply").compile()
