"""Messages on the wire in LangChain's format, both ways (no server needed)."""

from __future__ import annotations

import pytest

from beamweaver_core.agent.state import as_message
from beamweaver_core.messages import Message, ToolCall
from beamweaver_core.protocol.messages import from_wire, input_values, to_wire
from beamweaver_core.protocol.values import state_values


def test_our_messages_go_out_as_langchain_dicts_with_stable_ids() -> None:
    call = ToolCall(id="c1", name="send_email", args={"to": "a@example.com"})
    values = {
        "messages": [
            Message.user("hi"),
            Message.assistant("", [call]),
            Message.tool("sent", tool_call_id="c1", name="send_email", status="error"),
        ]
    }
    human, ai, tool = state_values(values)["messages"]
    assert human == {
        "type": "human",
        "id": human["id"],
        "content": "hi",
        "name": None,
        "additional_kwargs": {},
        "response_metadata": {},
    }
    assert ai["type"] == "ai"
    assert ai["tool_calls"] == [
        {"id": "c1", "name": "send_email", "args": {"to": "a@example.com"}, "type": "tool_call"}
    ]
    assert (tool["type"], tool["tool_call_id"], tool["status"]) == ("tool", "c1", "error")
    assert state_values(values)["messages"][0]["id"] == human["id"]  # stable across reads
    assert len({human["id"], ai["id"], tool["id"]}) == 3


def test_both_input_forms_come_in_as_our_messages_keeping_the_client_id() -> None:
    given = {
        "messages": [
            {"type": "human", "content": "hello", "id": "m-1"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {"type": "ai", "content": "", "tool_calls": [{"id": "t1", "name": "x", "args": {}}]},
            {"type": "tool", "content": "done", "tool_call_id": "t1"},
        ],
        "other": 1,
    }
    converted = input_values(given)
    messages = [as_message(m) for m in converted["messages"]]
    assert [m.role for m in messages] == ["user", "user", "assistant", "tool"]
    assert messages[0].metadata == {"id": "m-1"} and messages[1].content == "ab"
    assert messages[2].tool_calls == (ToolCall(id="t1", name="x", args={}),)
    assert converted["other"] == 1
    assert to_wire(messages[0], 0)["id"] == "m-1"


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"type": "robot", "content": "x"}, "needs a 'type'"),
        ({"type": "human", "content": [{"type": "image_url", "image_url": "x"}]}, "not supported"),
        ({"type": "tool", "content": "x"}, "tool_call_id"),
        (
            {"type": "human", "content": "x", "tool_calls": [{"id": "1", "name": "n", "args": {}}]},
            "Only an ai",
        ),
        (
            {"type": "ai", "content": "x", "tool_calls": [{"id": "1", "name": "n", "args": []}]},
            "'args' must be an object",
        ),
    ],
)
def test_a_malformed_message_is_refused_saying_what_is_wrong(message: dict, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        from_wire(message)
