"""Agents for the async subagent tests (`ASYNC_GRAPHS`, also loadable by worker processes
through `BEAMWEAVER_GRAPHS`).

Their models are rules over the conversation, so any process, any run and any resume
replies the same. The supervisor does what its latest user message says: a JSON object
`{"tool": name, "args": {...}}` becomes that tool call, and once the tool answered, the
supervisor repeats the answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from beamweaver_core.agent import Agent, AsyncSubagentSpec, Message, ToolCall, tool
from beamweaver_core.llm.base import ChatModel, ToolSpec
from tests.support.graphs import ledger

ASYNC_GRAPHS = {
    "async_supervisor": "tests.support.async_agents:supervisor",
    "async_supervisor_reviewed": "tests.support.async_agents:reviewed_supervisor",
    "async_researcher": "tests.support.async_agents:researcher",
    "async_publisher": "tests.support.async_agents:publisher",
}
ASYNC_TOOLS = (
    "start_async_task",
    "check_async_task",
    "update_async_task",
    "cancel_async_task",
    "list_async_tasks",
)


class RuleModel(ChatModel):
    """A chat model whose reply is a function of the conversation."""

    provider = "rules"
    model_name = "rules"

    def __init__(self, reply: Callable[[Sequence[Message]], Message]) -> None:
        self.reply = reply

    def invoke(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()) -> Message:
        return self.reply(messages)


def order(tool_name: str, **args: object) -> dict[str, object]:
    """The supervisor input that makes it call `tool_name` with `args`."""
    return {
        "messages": [{"role": "user", "content": json.dumps({"tool": tool_name, "args": args})}]
    }


def _supervise(messages: Sequence[Message]) -> Message:
    last = messages[-1]
    if last.role == "tool":
        return Message.assistant(last.content)
    wanted = json.loads(last.content)
    return Message.assistant(
        "", [ToolCall(f"call-{len(messages)}", wanted["tool"], wanted["args"])]
    )


def _research(messages: Sequence[Message]) -> Message:
    """Answer the latest instructions. `wait:PATH` first takes notes (a tool step), then
    waits up to a minute for the file PATH to exist, so a test can catch the task working
    after it saved a step."""
    last = messages[-1]
    asked = next(m.content for m in reversed(messages) if m.role == "user")
    if last.role == "user" and asked.startswith("wait:"):
        return Message.assistant(
            "", [ToolCall(f"note-{len(messages)}", "take_notes", {"topic": asked})]
        )
    if last.role == "tool":
        gate = Path(asked.removeprefix("wait:"))
        deadline = time.monotonic() + 60
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return Message.assistant(f"Findings on: {asked}")


@tool
def take_notes(topic: str) -> str:
    """Take notes on a topic."""
    return f"notes on {topic}"


def _publish_then_report(messages: Sequence[Message]) -> Message:
    last = messages[-1]
    if last.role == "tool":
        return Message.assistant(f"Published: {last.content}")
    return Message.assistant(
        "", [ToolCall(f"pub-{len(messages)}", "publish", {"text": last.content})]
    )


@tool
def publish(text: str) -> str:
    """Publish a text to the company blog."""
    ledger(f"publish:{text}")
    return f"'{text}' is live"


SUBAGENTS = [
    AsyncSubagentSpec("researcher", "Researches a topic.", graph="async_researcher"),
    AsyncSubagentSpec(
        "publisher", "Publishes a text once a human approved.", graph="async_publisher"
    ),
]

supervisor = Agent(model=RuleModel(_supervise), subagents=SUBAGENTS, name="async_supervisor")
reviewed_supervisor = Agent(
    model=RuleModel(_supervise),
    subagents=SUBAGENTS,
    interrupt_on=dict.fromkeys(ASYNC_TOOLS, True),
    name="async_supervisor_reviewed",
)
researcher = Agent(model=RuleModel(_research), tools=[take_notes], name="async_researcher")
publisher = Agent(
    model=RuleModel(_publish_then_report),
    tools=[publish],
    interrupt_on={"publish": True},
    name="async_publisher",
)
