"""Streaming agent runs: typed envelopes, token deltas, tool events, live delivery."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from beamweaver_core.agent import Agent, Envelope, Message, SubagentSpec, tool
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import Command, Completed, Interrupted
from beamweaver_core.llm import ChatModel, ScriptedChatModel, ToolSpec
from tests.agent.support import Toolbox, ai, call


def reader(box: Toolbox, checkpointer: MemoryCheckpointer | None = None) -> Agent:
    return Agent.build(
        model=ScriptedChatModel(
            [ai(call("c1", "fetch_file", path="a")), Message.assistant("File a says hello.")]
        ),
        tools=[box.fetch_file],
        checkpointer=checkpointer,
    )


def test_stream_events_collects_the_whole_run() -> None:
    done = reader(Toolbox()).stream_events({"messages": [Message.user("read a")]})

    assert isinstance(done, Completed)
    assert all(isinstance(e, Envelope) for e in done.events)
    assert [(e.event, e.node) for e in done.events] == [
        ("run.started", None),
        ("node.started", "model"),
        ("model.delta", "model"),
        ("model.delta", "model"),
        ("node.finished", "model"),
        ("state.updated", None),
        ("node.started", "tools"),
        ("tool.started", "tools"),
        ("tool.finished", "tools"),
        ("node.finished", "tools"),
        ("state.updated", None),
        ("node.started", "model"),
        ("model.delta", "model"),
        ("model.delta", "model"),
        ("model.delta", "model"),
        ("model.delta", "model"),
        ("node.finished", "model"),
        ("state.updated", None),
        ("run.completed", None),
    ]
    assert [e.seq for e in done.events] == list(range(1, len(done.events) + 1))
    tool_events = [e.data for e in done.events if e.event.startswith("tool.")]
    assert tool_events == [
        {"tool_call_id": "c1", "name": "fetch_file", "args": {"path": "a"}},
        {
            "tool_call_id": "c1",
            "name": "fetch_file",
            "status": "success",
            "content": "contents of a",
        },
    ]
    deltas = [e.data for e in done.events if e.event == "model.delta"]
    first_id, second_id = deltas[0]["message_id"], deltas[-1]["message_id"]
    assert first_id != second_id
    assert deltas[:2] == [
        {
            "message_id": first_id,
            "tool_call_chunk": {"index": 0, "id": "c1", "name": "fetch_file", "args": '{"path": '},
        },
        {
            "message_id": first_id,
            "tool_call_chunk": {"index": 0, "id": None, "name": None, "args": '"a"}'},
        },
    ]
    assert all(d["message_id"] == second_id for d in deltas[2:])
    assert "".join(d["delta"] for d in deltas[2:]) == "File a says hello."


class CountingModel(ChatModel):
    """Records whether it was asked to invoke or to stream."""

    def __init__(self) -> None:
        self.used: list[str] = []

    def invoke(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()) -> Message:
        self.used.append("invoke")
        return Message.assistant("plain")

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> Iterator[str | Message]:
        self.used.append("stream")
        yield "pla"
        yield "in"
        yield Message.assistant("plain")


def test_the_model_streams_only_when_someone_listens() -> None:
    model = CountingModel()
    agent = Agent.build(model=model)

    agent.invoke({"messages": [Message.user("hi")]})
    streamed = agent.stream_events({"messages": [Message.user("hi")]})

    assert model.used == ["invoke", "stream"]
    deltas = [e.data for e in streamed.events if e.event == "model.delta"]
    message_id = deltas[0]["message_id"]
    assert deltas == [
        {"message_id": message_id, "delta": "pla"},
        {"message_id": message_id, "delta": "in"},
    ]


def test_streaming_with_hitl(checkpointer: MemoryCheckpointer, config: dict[str, Any]) -> None:
    """Streaming With HITL: the pause returns `Interrupted` with the events up to it; the
    resumed run streams too."""
    box = Toolbox()
    agent = Agent.build(
        model=ScriptedChatModel(
            [
                ai(call("c1", "remove_file", path="old.db"), text="Removing old.db."),
                Message.assistant("Removed."),
            ]
        ),
        tools=[box.remove_file],
        interrupt_on={"remove_file": True},
        checkpointer=checkpointer,
    )

    paused = agent.stream_events(
        {"messages": [Message.user("Delete old records from the database.")]}, config=config
    )

    assert isinstance(paused, Interrupted)
    assert paused.interrupt.value["action_requests"][0]["name"] == "remove_file"
    assert [e.event for e in paused.events][-3:] == [
        "node.started",
        "node.finished",
        "run.interrupted",
    ]
    assert [e.data.get("delta") for e in paused.events if e.event == "model.delta"] == [
        "Removing ",
        "old.db.",
        None,  # the tool call's arguments, in two pieces
        None,
    ]
    assert not any(e.event.startswith("tool.") for e in paused.events)
    assert paused.events[-1].data["result"] == paused

    done = agent.stream_events(Command(resume={"decisions": [{"type": "approve"}]}), config=config)

    assert isinstance(done, Completed)
    assert [e.event for e in done.events if e.event.startswith("tool.")] == [
        "tool.started",
        "tool.finished",
    ]
    assert done.events[-1].event == "run.completed"


def test_iter_events_yields_live() -> None:
    """Envelopes arrive while the run is still going: the tool waits until the consumer has
    seen its `tool.started` event."""
    seen_start = threading.Event()

    @tool
    def wait_for_watcher() -> str:
        """Wait until someone watches."""
        return "watched" if seen_start.wait(timeout=5) else "nobody watched"

    agent = Agent.build(
        model=ScriptedChatModel([ai(call("w1", "wait_for_watcher")), Message.assistant("ok")]),
        tools=[wait_for_watcher],
    )
    events = []
    for envelope in agent.iter_events({"messages": [Message.user("go")]}):
        events.append(envelope)
        if envelope.event == "tool.started":
            seen_start.set()

    last = events[-1]
    assert last.event == "run.completed"
    assert isinstance(last.data["result"], Completed)
    finished = next(e for e in events if e.event == "tool.finished")
    assert finished.data["content"] == "watched"


def test_astream_events() -> None:
    agent = reader(Toolbox())

    async def collect() -> list[Envelope]:
        return [e async for e in agent.astream_events({"messages": [Message.user("read a")]})]

    events = asyncio.run(collect())
    assert events[0].event == "run.started"
    assert events[-1].event == "run.completed"
    text = "".join(e.data.get("delta", "") for e in events if e.event == "model.delta")
    assert text == "File a says hello."


def test_subagent_events_carry_their_namespace(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    box = Toolbox()
    model = ScriptedChatModel(
        [
            ai(call("p1", "task", description="read a", subagent_type="reader")),
            ai(call("s1", "fetch_file", path="a")),
            Message.assistant("a read"),
            Message.assistant("The reader read a."),
        ]
    )
    agent = Agent.build(
        model=model,
        subagents=[
            SubagentSpec("reader", "Reads files.", "Read carefully.", tools=[box.fetch_file])
        ],
        checkpointer=checkpointer,
    )

    done = agent.stream_events({"messages": [Message.user("go")]}, config=config)

    assert isinstance(done, Completed)
    nested = [
        e for e in done.events if e.event == "tool.started" and e.data["name"] == "fetch_file"
    ]
    assert len(nested) == 1
    assert nested[0].ns.startswith("tools:") and nested[0].ns.endswith("|reader")
    (top,) = [e for e in done.events if e.event == "tool.started" and e.data["name"] == "task"]
    assert top.ns == ""  # the parent's own tool runs at the root
