"""Streaming and non-streaming calls of the same recorded exchanges give the same message.

The official SDKs talk to a real HTTP server on 127.0.0.1 that replays recorded provider
responses (`recordings/`: each exchange as the complete JSON response and as the
server-sent events of the same reply). An agent streams the deltas as `model.delta`
events while the model node runs, and ends with the state of the non-streamed run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from beamweaver_core.agent import Agent, Message, tool
from beamweaver_core.llm import (
    AnthropicChatModel,
    ChatModel,
    OpenAIChatModel,
    ToolCallChunk,
    ToolSpec,
)
from tests.llm.conftest import ReplayServer

ASK = [Message.user("Weather in Paris, and in Oslo for two days?")]
WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
)

Start = Callable[[list[str]], ReplayServer]


def model_for(provider: str, server: ReplayServer) -> ChatModel:
    if provider == "openai":
        return OpenAIChatModel(
            "gpt-4o-mini", base_url=f"{server.url}/v1", api_key="sk-test-key-0123", max_retries=0
        )
    return AnthropicChatModel(
        "claude-haiku-4-5", base_url=server.url, api_key="sk-ant-test-0123", max_retries=0
    )


def streamed(model: ChatModel, messages: list[Message]) -> tuple[list[Any], Message]:
    items = list(model.stream(messages, tools=[WEATHER]))
    final = items.pop()
    assert isinstance(final, Message)
    return items, final


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("exchange", ["tool_turn", "answer_turn"])
def test_the_streamed_message_is_identical_to_the_non_streamed_one(
    replay_server: Start, provider: str, exchange: str
) -> None:
    server = replay_server([f"{provider}_{exchange}", f"{provider}_{exchange}"])
    model = model_for(provider, server)

    whole = model.invoke(ASK, tools=[WEATHER])
    deltas, final = streamed(model, ASK)

    assert final == whole
    assert [body.get("stream") for body in server.bodies] == [None, True]
    text = "".join(d for d in deltas if isinstance(d, str))
    assert text == whole.content
    pieces = [d for d in deltas if isinstance(d, ToolCallChunk)]
    for index, call in enumerate(whole.tool_calls):
        mine = [p for p in pieces if p.index == index]
        assert (mine[0].id, mine[0].name) == (call.id, call.name)
        assert all(p.id is None and p.name is None for p in mine[1:])
        assert json.loads("".join(p.args for p in mine)) == call.args


def test_a_streamed_refusal_is_the_reply_text_as_when_not_streamed(replay_server: Start) -> None:
    server = replay_server(["openai_refusal", "openai_refusal"])
    model = model_for("openai", server)

    whole = model.invoke(ASK)
    deltas, final = streamed(model, ASK)

    assert whole == Message.assistant("I can't help with that.")
    assert final == whole
    assert "".join(deltas) == whole.content


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Current weather for a city."""
    return f"{city}: sunny for {days} day(s)"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_agent_streams_deltas_while_running_and_ends_in_the_same_state(
    replay_server: Start, provider: str
) -> None:
    script = [f"{provider}_tool_turn", f"{provider}_answer_turn"]
    plain = Agent.build(model=model_for(provider, replay_server(script)), tools=[get_weather])
    live = Agent.build(model=model_for(provider, replay_server(script)), tools=[get_weather])

    quiet = plain.invoke({"messages": ASK})
    loud = live.stream_events({"messages": ASK})

    assert loud.state["messages"] == quiet.state["messages"]
    assert [m.role for m in loud.state["messages"]] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    deltas = [e for e in loud.events if e.event == "model.delta"]
    assert {e.node for e in deltas} == {"model"}
    first, second = (e.data["message_id"] for e in (deltas[0], deltas[-1]))
    assert first != second
    turn = [e.data for e in deltas if e.data["message_id"] == first]
    assert "".join(d.get("delta", "") for d in turn) == "Checking both cities."
    chunks = [d["tool_call_chunk"] for d in turn if "tool_call_chunk" in d]
    assert [c["name"] for c in chunks if c["name"]] == ["get_weather", "get_weather"]
    assert json.loads("".join(c["args"] for c in chunks if c["index"] == 1)) == {
        "city": "Oslo",
        "days": 2,
    }
    answer = "".join(e.data.get("delta", "") for e in deltas if e.data["message_id"] == second)
    assert answer == loud.state["messages"][-1].content
    # The deltas arrive while the model node runs, between its start and its finish.
    order = [(e.event, e.node) for e in loud.events]
    first_delta = order.index(("model.delta", "model"))
    assert order[first_delta - 1] == ("node.started", "model")
