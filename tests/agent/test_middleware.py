"""Middleware hooks: order, graph nodes, wrappers, state, and custom interrupts."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import pytest

from beamweaver_core.agent import Agent, Message, Middleware, ModelRequest, ToolRequest, tool
from beamweaver_core.agent.middleware import ModelHandler, ToolHandler
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import Completed, Interrupted, Runtime, interrupt
from beamweaver_core.llm import ScriptedChatModel
from tests.agent.support import ai, call, result


class Recorder(Middleware):
    """Logs every hook it sees into `log`."""

    def __init__(self, label: str, log: list[str]) -> None:
        super().__init__(name=label)
        self.log = log

    def before_agent(self, state: Mapping[str, Any], runtime: Runtime) -> None:
        self.log.append(f"{self.name}.before_agent")

    def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> None:
        self.log.append(f"{self.name}.before_model")

    def after_model(self, state: Mapping[str, Any], runtime: Runtime) -> None:
        self.log.append(f"{self.name}.after_model")

    def after_agent(self, state: Mapping[str, Any], runtime: Runtime) -> None:
        self.log.append(f"{self.name}.after_agent")

    def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Message:
        self.log.append(f"{self.name}.wrap_model_call>")
        reply = handler(request)
        self.log.append(f"{self.name}.wrap_model_call<")
        return reply

    def wrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Message:
        self.log.append(f"{self.name}.wrap_tool_call>")
        reply = handler(request)
        self.log.append(f"{self.name}.wrap_tool_call<")
        return reply


def test_hook_order_matches_langchain() -> None:
    """Before hooks in list order, after hooks reversed, wrappers nested with the first
    middleware outermost (langgraph-semantics §8.2)."""
    log: list[str] = []

    @tool
    def work() -> str:
        """Do the work."""
        log.append("TOOL")
        return "worked"

    def model_reply(messages: tuple[Message, ...]) -> Message:
        log.append("(model)")
        return ai(call("w1", "work")) if len(messages) == 1 else Message.assistant("done")

    agent = Agent.build(
        model=ScriptedChatModel([model_reply, model_reply]),
        tools=[work],
        middleware=[Recorder("A", log), Recorder("B", log)],
    )

    done = agent.invoke({"messages": [Message.user("go")]})

    assert isinstance(done, Completed)
    model_turn = [
        "A.wrap_model_call>",
        "B.wrap_model_call>",
        "(model)",
        "B.wrap_model_call<",
        "A.wrap_model_call<",
    ]
    assert log == [
        "A.before_agent", "B.before_agent",
        "A.before_model", "B.before_model",
        *model_turn,
        "B.after_model", "A.after_model",
        "A.wrap_tool_call>", "B.wrap_tool_call>", "TOOL", "B.wrap_tool_call<", "A.wrap_tool_call<",
        "A.before_model", "B.before_model",
        *model_turn,
        "B.after_model", "A.after_model",
        "B.after_agent", "A.after_agent",
    ]  # fmt: skip
    assert set(agent.graph_for().nodes) == {
        "model",
        "tools",
        *(
            f"{m}.{h}"
            for m in "AB"
            for h in ("before_agent", "before_model", "after_model", "after_agent")
        ),
    }


def test_only_implemented_hooks_become_nodes() -> None:
    class Audit(Middleware):
        def after_agent(self, state: Mapping[str, Any], runtime: Runtime) -> None:
            return None

    agent = Agent.build(model=ScriptedChatModel([]), middleware=[Audit()])
    assert set(agent.graph_for().nodes) == {"model", "tools", "Audit.after_agent"}


def test_middleware_names_must_be_unique() -> None:
    log: list[str] = []
    with pytest.raises(ValueError, match="Several middlewares are named \\['A'\\]"):
        Agent.build(
            model=ScriptedChatModel([]), middleware=[Recorder("A", log), Recorder("A", log)]
        )


def test_wrappers_can_rewrite_model_requests_and_short_circuit_tools() -> None:
    class Policy(Middleware):
        def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Message:
            return handler(request.replace(system_prompt="Answer in French."))

        def wrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Message:
            if request.tool_call.name == "forbidden":
                return Message.tool(
                    "blocked by policy",
                    tool_call_id=request.tool_call.id,
                    name="forbidden",
                    status="error",
                )
            return handler(request)

    ran: list[str] = []

    @tool
    def forbidden() -> str:
        """Never runs."""
        ran.append("forbidden")
        return "oops"

    model = ScriptedChatModel([ai(call("f1", "forbidden")), Message.assistant("Bloqué.")])
    agent = Agent.build(
        model=model, tools=[forbidden], system_prompt="Answer in English.", middleware=[Policy()]
    )

    done = agent.invoke({"messages": [Message.user("try")]})

    assert isinstance(done, Completed)
    assert ran == []
    assert model.calls[0][0] == Message.system("Answer in French.")
    assert done.state["messages"][2] == result(
        "f1", "forbidden", "blocked by policy", status="error"
    )


def test_hooks_update_state_with_their_own_reducers() -> None:
    class Counter(Middleware):
        def state_reducers(self) -> Mapping[str, Any]:
            return {"model_calls": operator.add}

        def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any]:
            return {"model_calls": 1}

    @tool
    def noop() -> str:
        """Nothing."""
        return ""

    agent = Agent.build(
        model=ScriptedChatModel([ai(call("n1", "noop")), Message.assistant("ok")]),
        tools=[noop],
        middleware=[Counter()],
    )
    done = agent.invoke({"messages": [Message.user("go")], "model_calls": 0})
    assert isinstance(done, Completed)
    assert done.state["model_calls"] == 2


def test_custom_hitl_logic_in_a_hook(
    checkpointer: MemoryCheckpointer, config: dict[str, Any]
) -> None:
    """Custom HITL Logic: a middleware hook may call interrupt() itself; the pause re-runs
    only that hook node."""

    class ApproveRun(Middleware):
        def before_agent(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any]:
            decision = interrupt(
                {"question": "Approve deployment?", "release": state.get("release")}
            )
            return {"approved_by_human": decision}

    model = ScriptedChatModel([Message.assistant("Deploying.")])
    agent = Agent.build(model=model, middleware=[ApproveRun()], checkpointer=checkpointer)

    paused = agent.invoke({"messages": [Message.user("deploy")], "release": "v3"}, config=config)

    assert isinstance(paused, Interrupted)
    assert paused.interrupt.node == "ApproveRun.before_agent"
    assert paused.interrupt.value == {"question": "Approve deployment?", "release": "v3"}
    assert model.calls == []
    done = agent.resume("yes", config=config)
    assert isinstance(done, Completed)
    assert done.state["approved_by_human"] == "yes"
