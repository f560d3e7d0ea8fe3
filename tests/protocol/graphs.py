"""Graphs the protocol tests run on the live server (through `BEAMWEAVER_GRAPHS`): small,
each for one part of the contract. `ask` and `linear` are the protocol benchmark's
(bench/live/protocol_graphs.py), so the benchmark times graphs these tests check."""

from __future__ import annotations

import operator
from typing import Any

from beamweaver_core.agent import Agent, Message, ToolCall, tool
from beamweaver_core.agent.state import append_messages
from beamweaver_core.graph import START, Graph, interrupt
from beamweaver_core.llm import ScriptedChatModel
from bench.live.protocol_graphs import ask_node
from tests.reviews.graphs import REVIEW_GRAPHS

PROTOCOL_GRAPHS = {
    **REVIEW_GRAPHS,
    "ask": "bench.live.protocol_graphs:ask",
    "linear": "bench.live.protocol_graphs:linear",
    "parallel": "tests.protocol.graphs:parallel",
    "nested": "tests.protocol.graphs:nested",
    "chat": "tests.protocol.graphs:chat",
    "mailer": "tests.protocol.graphs:mailer",
    "configured": "tests.protocol.graphs:configured",
    "nested_ask": "tests.protocol.graphs:nested_ask",
    "greeter": "tests.protocol.graphs:greeter",
    "reply": "tests.protocol.graphs:reply",
}


def _step(name: str) -> Any:
    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [name]}

    return node


def _left(state: dict[str, Any]) -> dict[str, Any]:
    return {"left": interrupt("left?")}


def _right(state: dict[str, Any]) -> dict[str, Any]:
    return {"right": interrupt("right?")}


parallel = (
    Graph(name="parallel")
    .add_node("left", _left)
    .add_node("right", _right)
    .add_edge(START, "left")
    .add_edge(START, "right")
    .compile()
)

_inner = (
    Graph(name="inner")
    .add_reducer("log", operator.add)
    .add_node("deep", _step("deep"))
    .add_edge(START, "deep")
    .compile()
)
nested = (
    Graph(name="nested")
    .add_reducer("log", operator.add)
    .add_node("sub", _inner)
    .add_node("after", _step("after"))
    .add_edge(START, "sub")
    .add_edge("sub", "after")
    .compile()
)


_inner_ask = (
    Graph(name="inner_ask")
    .add_reducer("log", operator.add)
    .add_node("ask", ask_node)
    .add_edge(START, "ask")
    .compile()
)
nested_ask = (
    Graph(name="nested_ask")
    .add_reducer("log", operator.add)
    .add_node("sub", _inner_ask)
    .add_node("after", _step("after"))
    .add_edge(START, "sub")
    .add_edge("sub", "after")
    .compile()
)


def _hello(messages: list[Message]) -> Message:
    return Message.assistant("Hello there friend")


# Its reply streams in three chunks over 40 ms, as a provider's would.
chat = Agent.build(
    model=ScriptedChatModel([_hello] * 1000, chunk_size=6, chunk_delay=0.02), tools=[], name="chat"
)


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email."""
    return f"sent to {to}"


def _mail(messages: list[Message]) -> Message:
    if messages[-1].role == "tool":
        return Message.assistant("Done: " + messages[-1].content)
    return Message.assistant(
        "",
        [
            ToolCall(
                id=f"call-{len(messages)}",
                name="send_email",
                args={"to": "a@example.com", "subject": "Hi"},
            )
        ],
    )


mailer = Agent.build(
    model=ScriptedChatModel([_mail] * 1000),
    tools=[send_email],
    interrupt_on={"send_email": True},
    name="mailer",
)


def _show_config(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    configurable = runtime.config.get("configurable") or {}
    return {
        "seen": {
            "configurable": {k: v for k, v in configurable.items() if k not in ("thread_id",)},
            "context": runtime.context,
        }
    }


configured = (
    Graph(name="configured").add_node("show", _show_config).add_edge(START, "show").compile()
)


def _greet(arg: dict[str, Any] | None) -> dict[str, Any]:
    """Greets the name in its input: a send's, or the state when it runs as a node."""
    return {"log": [f"hello {(arg or {}).get('name', 'everyone')}"]}


greeter = (
    Graph(name="greeter")
    .add_reducer("log", operator.add)
    .add_node("start", _step("start"))
    .add_node("greet", _greet)
    .add_edge(START, "start")
    .compile()
)


def _reply(state: dict[str, Any]) -> dict[str, Any]:
    """Answers with a message of its own, no model: what a node that builds one returns."""
    return {"messages": [{"role": "assistant", "content": "hi", "metadata": {"id": "reply-1"}}]}


reply = (
    Graph(name="reply")
    .add_reducer("messages", append_messages)
    .add_node("reply", _reply)
    .add_edge(START, "reply")
    .compile()
)
