"""LangChain tools in `tools=`: `@tool` functions (sync and async), a `BaseTool` subclass
and a toolkit, through review, validation of edits against their args schema, and the
tool ledger."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, BaseToolkit, InjectedToolCallId, ToolException
from langchain_core.tools import tool as lc_tool
from pydantic import BaseModel, Field

from beamweaver_core.agent import Agent, LangChainTool, Message, ToolCall
from beamweaver_core.agent.ledger import MemoryToolLedger, use_ledger
from beamweaver_core.agent.tools import idempotency_key
from beamweaver_core.agent.toolsets import expand_tools
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.exceptions import InvalidDecisionError
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel

ran: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture(autouse=True)
def _fresh_log() -> None:
    ran.clear()


@lc_tool
def restart_service(
    service: Literal["web", "worker", "db"], config: RunnableConfig, reason: str = ""
) -> str:
    """Restart one of the shop's services."""
    key = (config.get("metadata") or {}).get("beamweaver_idempotency_key")
    ran.append(("restart_service", {"service": service, "reason": reason, "key": key}))
    return f"restarted {service}"


@lc_tool
async def page_oncall(message: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Page the on-call engineer."""
    ran.append(("page_oncall", {"message": message}))
    return f"paged ({tool_call_id}): {message}"


class TicketInput(BaseModel):
    title: str = Field(description="One line", max_length=80)
    severity: int = Field(ge=1, le=4, description="1 is the worst")


class OpenTicket(BaseTool):
    name: str = "open_ticket"
    description: str = "Open an incident ticket."
    args_schema: type[BaseModel] = TicketInput

    def _run(self, title: str, severity: int) -> str:
        ran.append(("open_ticket", {"title": title, "severity": severity}))
        if title == "boom":
            raise ToolException("the ticket system is read-only")
        return f"ticket opened: {title} (sev {severity})"


class OpsToolkit(BaseToolkit):
    def get_tools(self) -> list[BaseTool]:
        return [OpenTicket(handle_tool_error=True), page_oncall]


def agent_for(*calls: ToolCall, **options: Any) -> Agent:
    model = ScriptedChatModel([Message.assistant("", calls), Message.assistant("Done.")])
    return Agent.build(
        model=model,
        tools=[restart_service, OpsToolkit()],
        checkpointer=MemoryCheckpointer(),
        **options,
    )


CONFIG = {"configurable": {"thread_id": "lc-1"}}


def results(done: Any) -> list[Message]:
    return [m for m in done.state["messages"] if m.role == "tool"]


def test_langchain_tools_and_toolkits_become_agent_tools_with_their_schemas() -> None:
    tools = {t.name: t for t in expand_tools([restart_service, OpsToolkit()])}

    assert sorted(tools) == ["open_ticket", "page_oncall", "restart_service"]
    assert all(isinstance(t, LangChainTool) for t in tools.values())
    assert tools["restart_service"].description == "Restart one of the shop's services."
    assert tools["restart_service"].args_schema == {
        "type": "object",
        "properties": {
            "service": {"enum": ["web", "worker", "db"], "type": "string"},
            "reason": {"default": "", "type": "string"},
        },
        "required": ["service"],
    }
    ticket = tools["open_ticket"].args_schema["properties"]
    assert ticket["title"]["maxLength"] == 80
    assert (ticket["severity"]["minimum"], ticket["severity"]["maximum"]) == (1, 4)
    # The injected call id is not an argument the model sees.
    assert list(tools["page_oncall"].args_schema["properties"]) == ["message"]


def test_an_approved_langchain_call_runs_once_under_the_ledger_with_its_key() -> None:
    call = ToolCall("c1", "restart_service", {"service": "web", "reason": "stuck"})
    agent = agent_for(call, interrupt_on={"restart_service": True})
    ledger = MemoryToolLedger()

    with use_ledger(ledger):
        paused = agent.invoke({"messages": [Message.user("restart web")]}, CONFIG)
        assert isinstance(paused, Interrupted) and ran == []
        (review,) = paused.interrupt.value["review_configs"]
        assert review["args_schema"]["properties"]["service"]["enum"] == ["web", "worker", "db"]
        done = agent.resume_review([{"type": "approve"}], CONFIG)

    assert isinstance(done, Completed)
    key = idempotency_key("lc-1", "", call)
    assert ran == [("restart_service", {"service": "web", "reason": "stuck", "key": key})]
    assert ledger.attempts == {key: 1}
    assert results(done) == [
        Message.tool("restarted web", tool_call_id="c1", name="restart_service")
    ]


def test_an_edit_is_validated_against_the_langchain_args_schema() -> None:
    agent = agent_for(
        ToolCall("c1", "open_ticket", {"title": "Checkout down", "severity": 2}),
        interrupt_on={"open_ticket": {"allowed_decisions": ["approve", "edit", "reject"]}},
    )
    agent.invoke({"messages": [Message.user("open a ticket")]}, CONFIG)

    with pytest.raises(InvalidDecisionError, match="severity") as refused:
        agent.resume_review(
            [
                {
                    "type": "edit",
                    "edited_action": {"name": "open_ticket", "args": {"title": "x", "severity": 9}},
                }
            ],
            CONFIG,
        )
    assert "9 is greater than the maximum of 4" in str(refused.value)
    assert ran == []

    done = agent.resume_review(
        [
            {
                "type": "edit",
                "edited_action": {
                    "name": "open_ticket",
                    "args": {"title": "Checkout down", "severity": 1},
                },
            }
        ],
        CONFIG,
    )
    assert ran == [("open_ticket", {"title": "Checkout down", "severity": 1})]
    assert "ticket opened: Checkout down (sev 1)" in results(done)[0].content


def test_a_rejected_langchain_call_never_runs() -> None:
    agent = agent_for(
        ToolCall("c1", "restart_service", {"service": "db"}), interrupt_on={"restart_service": True}
    )
    agent.invoke({"messages": [Message.user("restart db")]}, CONFIG)

    done = agent.resume_review([{"type": "reject", "message": "Not the database."}], CONFIG)

    assert ran == []
    assert results(done)[0].status == "error" and "Not the database." in results(done)[0].content


def test_async_tools_injected_call_ids_and_tool_errors() -> None:
    agent = agent_for(
        ToolCall("c1", "page_oncall", {"message": "checkout is down"}),
        ToolCall("c2", "open_ticket", {"title": "boom", "severity": 1}),
    )

    done = agent.invoke({"messages": [Message.user("page and ticket")]}, CONFIG)

    paged, ticket = results(done)
    assert (paged.status, paged.content) == ("success", "paged (c1): checkout is down")
    assert ticket.status == "error"
    assert ticket.content == "the ticket system is read-only"
    assert sorted(name for name, _ in ran) == ["open_ticket", "page_oncall"]  # in parallel


def test_a_langchain_tool_can_be_at_most_once() -> None:
    wrapped = LangChainTool(restart_service, at_most_once=True)
    (found,) = expand_tools([wrapped])
    assert found is wrapped and found.at_most_once is True
