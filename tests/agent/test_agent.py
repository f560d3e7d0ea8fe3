"""The agent loop: building, the model/tools graph, concurrency, state, module-style agents."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

import pytest

from beamweaver_core.agent import Agent, Message, Middleware, tool
from beamweaver_core.checkpoint import MemoryCheckpointer, serde
from beamweaver_core.exceptions import GraphDefinitionError
from beamweaver_core.graph import Completed, Interrupted, Runtime
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import Toolbox, ai, call, result


def test_a_reply_without_tool_calls_ends_the_run() -> None:
    """The model gets the system prompt first and the tool specs; no tool call -> done."""
    box = Toolbox()
    model = ScriptedChatModel([Message.assistant("Hello!")])
    agent = Agent.build(model=model, tools=[box.fetch_file], system_prompt="Be nice.")

    done = agent.invoke({"messages": [Message.user("hi")]})

    assert isinstance(done, Completed)
    assert done.state == {"messages": [Message.user("hi"), Message.assistant("Hello!")]}
    assert model.calls == [(Message.system("Be nice."), Message.user("hi"))]
    assert model.tools_offered == [(box.fetch_file.spec,)]


def test_the_loop_calls_the_model_after_tools_until_no_tool_calls() -> None:
    box = Toolbox()
    model = ScriptedChatModel(
        [
            ai(call("c1", "fetch_file", path="a")),
            ai(call("c2", "fetch_file", path="b")),
            Message.assistant("Read a and b."),
        ]
    )
    agent = Agent.build(model=model, tools=[box.fetch_file])

    done = agent.invoke({"messages": [{"role": "user", "content": "read a, b"}]})

    assert isinstance(done, Completed)
    assert done.state["messages"] == [
        Message.user("read a, b"),
        ai(call("c1", "fetch_file", path="a")),
        result("c1", "fetch_file", "contents of a"),
        ai(call("c2", "fetch_file", path="b")),
        result("c2", "fetch_file", "contents of b"),
        Message.assistant("Read a and b."),
    ]
    assert len(model.calls) == 3


def test_graph_nodes() -> None:
    box = Toolbox()
    agent = Agent.build(
        model=ScriptedChatModel([]), tools=[box.remove_file], interrupt_on={"remove_file": True}
    )
    assert set(agent.graph_for().nodes) == {"model", "tools", "HumanInTheLoop.after_model"}


def test_parallel_tool_calls_run_concurrently() -> None:
    """Each tool call is its own task: both calls are inside their tools before either
    returns (a sequential run would break the barrier)."""
    barrier = threading.Barrier(2, timeout=5)

    @tool
    def meet(who: str) -> str:
        """Wait for the other call."""
        barrier.wait()
        return f"{who} met"

    agent = Agent.build(
        model=ScriptedChatModel(
            [ai(call("m1", "meet", who="a"), call("m2", "meet", who="b")), Message.assistant("ok")]
        ),
        tools=[meet],
    )

    done = agent.invoke({"messages": [Message.user("meet")]})

    assert isinstance(done, Completed)
    assert done.state["messages"][2:4] == [
        result("m1", "meet", "a met"),
        result("m2", "meet", "b met"),
    ]


def test_parallel_tool_calls_run_concurrently_under_ainvoke() -> None:
    barrier = threading.Barrier(2, timeout=5)

    @tool
    def meet(who: str) -> str:
        """Wait for the other call."""
        barrier.wait()
        return who

    agent = Agent.build(
        model=ScriptedChatModel(
            [ai(call("m1", "meet", who="a"), call("m2", "meet", who="b")), Message.assistant("ok")]
        ),
        tools=[meet],
    )
    done = asyncio.run(agent.ainvoke({"messages": [Message.user("meet")]}))
    assert isinstance(done, Completed)
    assert [m.content for m in done.state["messages"][2:4]] == ["a", "b"]


def test_state_round_trips_through_the_checkpointer_as_json(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Messages, tool calls and review bookkeeping survive JSON storage unchanged."""
    box = Toolbox()
    agent = Agent.build(
        model=ScriptedChatModel(
            [ai(call("c1", "remove_file", path="a b.txt")), Message.assistant("Done ✓")]
        ),
        tools=[box.remove_file],
        interrupt_on={"remove_file": True},
        checkpointer=checkpointer,
    )
    agent.invoke({"messages": [Message.user("rm 'a b.txt'")]}, config=config)
    done = agent.resume_review(
        [{"type": "edit", "edited_action": {"name": "remove_file", "args": {"path": "c.txt"}}}],
        config=config,
    )

    assert isinstance(done, Completed)
    assert serde.loads(serde.dumps(done.state)) == done.state
    stored = agent.get_state(config).values
    assert stored == done.state
    assert stored["messages"][1].tool_calls[0].args == {"path": "c.txt"}
    assert stored["messages"][1].metadata == {
        "original_tool_calls": [{"id": "c1", "name": "remove_file", "args": {"path": "a b.txt"}}]
    }


def test_module_style_agent_class_and_instances(checkpointer: MemoryCheckpointer) -> None:
    """A subclass is configured by class attributes; the class answers the run methods on a
    shared instance; the compiled graph is cached per checkpointer."""
    box = Toolbox()

    class Reader(Agent):
        model = ScriptedChatModel(
            [ai(call("c1", "fetch_file", path="x")), Message.assistant("x read")] * 2
        )
        tools = [box.fetch_file]
        system_prompt = "Read files."

    first = Reader.invoke(
        {"messages": ["read x"]},
        checkpointer=checkpointer,
        config={"configurable": {"thread_id": "a"}},
    )
    assert isinstance(first, Completed)
    assert first.state["messages"][0] == Message.user("read x")
    assert Reader.graph_for(checkpointer) is Reader.graph_for(checkpointer)
    assert Reader.graph_for(MemoryCheckpointer()) is not Reader.graph_for(checkpointer)
    assert Reader.graph_for().name == "Reader"
    assert Reader.default() is Reader.default()
    assert isinstance(Reader.default(), Reader)

    other = Reader(checkpointer=checkpointer, name="reader-2")
    second = asyncio.run(
        other.ainvoke({"messages": ["read x"]}, {"configurable": {"thread_id": "b"}})
    )
    assert isinstance(second, Completed)
    assert other.graph_for().name == "reader-2"
    assert other.get_state({"configurable": {"thread_id": "b"}}).values == second.state


def test_async_resume(checkpointer: MemoryCheckpointer, config: dict[str, Any]) -> None:
    box = Toolbox()
    agent = Agent.build(
        model=ScriptedChatModel([ai(call("c1", "remove_file", path="a")), Message.assistant("ok")]),
        tools=[box.remove_file],
        interrupt_on={"remove_file": True},
        checkpointer=checkpointer,
    )

    async def scenario() -> Any:
        paused = await agent.ainvoke({"messages": [Message.user("rm a")]}, config)
        assert isinstance(paused, Interrupted)
        return await agent.aresume({"decisions": [{"type": "approve"}]}, config)

    done = asyncio.run(scenario())
    assert isinstance(done, Completed)
    assert box.names() == ["remove_file"]


def test_build_errors() -> None:
    with pytest.raises(ValueError, match="has no chat model"):
        Agent.build(tools=[])
    with pytest.raises(GraphDefinitionError, match="interrupt_before names unknown node 'modle'"):
        Agent.build(model=ScriptedChatModel([]), interrupt_before=["modle"])
    with pytest.raises(TypeError, match="Unknown agent option"):
        Agent(modle=ScriptedChatModel([]))


def test_the_graph_accepts_message_dicts_as_input(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Workers and commands run `graph_for(checkpointer)` on JSON input directly: message
    dicts are seen as `Message`s by hooks and the model, and stored as such."""
    seen: list[Any] = []

    class Peek(Middleware):
        def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> None:
            seen.append(state["messages"][0])

    model = ScriptedChatModel([Message.assistant("hi")])
    agent = Agent.build(model=model, middleware=[Peek()], checkpointer=checkpointer)

    done = agent.graph_for().invoke({"messages": [{"role": "user", "content": "hello"}]}, config)

    assert isinstance(done, Completed)
    assert done.state["messages"] == [Message.user("hello"), Message.assistant("hi")]
    assert seen == [Message.user("hello")]
    assert model.calls == [(Message.user("hello"),)]
    assert agent.get_state(config).values == done.state
