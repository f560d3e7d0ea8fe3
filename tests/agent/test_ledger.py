"""The tool-execution ledger: finished calls never run twice; an at-most-once call whose
outcome is unknown waits for a human (reliability.md S4)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from beamweaver_core.agent import Agent, Message, ToolCall, tool
from beamweaver_core.agent.ledger import OUTCOME_UNKNOWN, MemoryToolLedger, use_ledger
from beamweaver_core.agent.tools import idempotency_key
from beamweaver_core.checkpoint import MemoryCheckpointer
from beamweaver_core.graph import Completed, Interrupted
from beamweaver_core.llm import ScriptedChatModel

CALL = ToolCall("call-1", "charge_card", {"amount": 30})


def make_agent(calls: list[dict[str, Any]], *, at_most_once: bool) -> Any:
    @tool(at_most_once=at_most_once)
    def charge_card(amount: int) -> str:
        """Charge the customer's card."""
        calls.append({"amount": amount})
        return f"charged {amount}"

    model = ScriptedChatModel(
        [Message.assistant("", tool_calls=[CALL]), Message.assistant("Done.")] * 3
    )
    return Agent.build(model=model, tools=[charge_card], checkpointer=MemoryCheckpointer())


def config() -> dict[str, Any]:
    return {"configurable": {"thread_id": f"ledger-{uuid.uuid4().hex[:6]}"}}


def tool_messages(result: Any) -> list[tuple[str, str | None]]:
    return [(m.content, m.status) for m in result.state["messages"] if m.role == "tool"]


def test_a_call_already_done_returns_its_recorded_result_without_running() -> None:
    calls: list[dict[str, Any]] = []
    agent = make_agent(calls, at_most_once=False)
    cfg = config()
    ledger = MemoryToolLedger()
    key = idempotency_key(cfg["configurable"]["thread_id"], "", CALL)
    ledger.begin(key, tool=CALL.name, thread_id=None, args={})
    ledger.finish(
        key, Message.tool("charged 30 (earlier attempt)", tool_call_id=CALL.id, name=CALL.name)
    )

    with use_ledger(ledger):
        result = agent.invoke({"messages": [Message.user("charge me")]}, config=cfg)

    assert calls == []
    assert tool_messages(result) == [("charged 30 (earlier attempt)", "success")]


def test_every_call_is_recorded_before_and_after_it_runs() -> None:
    calls: list[dict[str, Any]] = []
    cfg = config()
    ledger = MemoryToolLedger()
    with use_ledger(ledger):
        result = make_agent(calls, at_most_once=False).invoke(
            {"messages": [Message.user("go")]}, config=cfg
        )
    key = idempotency_key(cfg["configurable"]["thread_id"], "", CALL)
    assert isinstance(result, Completed) and calls == [{"amount": 30}]
    entry = ledger.begin(key, tool=CALL.name, thread_id=None, args={})
    assert (
        entry.status == "done"
        and entry.message is not None
        and entry.message.content == "charged 30"
    )


def test_an_ordinary_tool_with_an_unknown_outcome_runs_again_with_the_same_key() -> None:
    calls: list[dict[str, Any]] = []
    cfg = config()
    ledger = MemoryToolLedger()
    ledger.begin(
        idempotency_key(cfg["configurable"]["thread_id"], "", CALL),
        tool=CALL.name,
        thread_id=None,
        args={},
    )
    with use_ledger(ledger):
        result = make_agent(calls, at_most_once=False).invoke(
            {"messages": [Message.user("go")]}, config=cfg
        )
    assert isinstance(result, Completed) and calls == [{"amount": 30}]


@pytest.mark.parametrize(
    ("answer", "ran", "message"),
    [
        (
            {"outcome": "succeeded", "result": "charged 30 (confirmed by ops)"},
            False,
            ("charged 30 (confirmed by ops)", "success"),
        ),
        ({"outcome": "not_run"}, True, ("charged 30", "success")),
        ({"outcome": "skip"}, False, None),
    ],
)
def test_an_at_most_once_tool_with_an_unknown_outcome_waits_for_a_human(
    answer: dict[str, Any], ran: bool, message: tuple[str, str] | None
) -> None:
    calls: list[dict[str, Any]] = []
    agent = make_agent(calls, at_most_once=True)
    cfg = config()
    ledger = MemoryToolLedger()
    ledger.begin(
        idempotency_key(cfg["configurable"]["thread_id"], "", CALL),
        tool=CALL.name,
        thread_id=None,
        args={},
    )

    with use_ledger(ledger):
        paused = agent.invoke({"messages": [Message.user("charge me")]}, config=cfg)
        assert isinstance(paused, Interrupted)
        assert paused.interrupt.value["kind"] == OUTCOME_UNKNOWN
        assert paused.interrupt.value["tool"] == "charge_card"
        assert calls == []
        again = agent.resume({"outcome": "maybe?"}, config=cfg)
        assert (
            isinstance(again, Interrupted)
            and "is not one of the three answers" in again.interrupt.value["error"]
        )
        done = agent.resume(answer, config=cfg)

    assert isinstance(done, Completed)
    assert calls == ([{"amount": 30}] if ran else [])
    [(content, status)] = tool_messages(done)
    if message is None:
        assert status == "error" and "operator chose to skip it" in content
    else:
        assert (content, status) == message
