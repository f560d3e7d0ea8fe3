"""Messages on the wire in LangChain's format, both ways (no server needed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.db import database_sync_to_async

from beamweaver_core.agent.state import as_message
from beamweaver_core.messages import Message, ToolCall
from beamweaver_core.protocol.messages import from_wire, input_values, to_wire
from beamweaver_core.protocol.values import state_values
from tests.protocol.conftest import api_user, async_client_of, read_stream, token_for
from tests.reviews.conftest import run_next

HUMAN = {"type": "human", "content": "mail", "id": "h1"}


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


def _sse(sent: bytes) -> list[tuple[str, Any]]:
    """The (event, data) of each frame of a stream (heartbeats left out)."""
    out = []
    for frame in sent.decode().split("\r\n\r\n"):
        fields = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
        if "event" in fields:
            out.append((fields["event"], json.loads(fields.get("data", "null"))))
    return out


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("protocol_graphs")
async def test_updates_carry_messages_as_values_does_with_the_same_ids() -> None:
    """An `updates` event shows a node's new messages in LangChain's format, each the
    message (with its id) that the next `values` event shows."""
    token = await database_sync_to_async(lambda: token_for(api_user("alice")))()
    client = async_client_of(token)
    thread = (await client.post("/lg/threads", {}, content_type="application/json")).json()
    run = await client.post(
        f"/lg/threads/{thread['thread_id']}/runs",
        {"assistant_id": "mailer", "input": {"messages": [HUMAN]}},
        content_type="application/json",
    )
    await database_sync_to_async(run_next)()

    stream = await client.get(
        f"/lg/threads/{thread['thread_id']}/runs/{run.json()['run_id']}/stream",
        {"stream_mode": ["values", "updates"]},
    )
    sent = _sse(await read_stream(stream))

    updates = [data for event, data in sent if event == "updates" and "model" in data]
    assert len(updates) == 1
    (ai,) = updates[0]["model"]["messages"]
    assert ai["type"] == "ai" and "role" not in ai
    assert ai["tool_calls"] == [
        {
            "id": "call-1",
            "name": "send_email",
            "args": {"to": "a@example.com", "subject": "Hi"},
            "type": "tool_call",
        }
    ]
    after = sent[[data for _, data in sent].index(updates[0]) + 1]
    assert after[0] == "values"
    assert after[1]["messages"][-1] == ai  # the same message, the same id
    assert after[1]["messages"][0]["id"] == "h1"
