"""The agent the hostile tests drive: real tools, real review, countable side effects.

`ledger_agent` proposes exactly the tool calls its first user message lists, turn by
turn (JSON: `{"turns": [[{"name": ..., "args": {...}}, ...], ...]}`, or `{"calls": [...]}`
for one turn), all calls of a turn in one review when they are reviewed, then says
"Done." (or the plan's `"say"`: model output the tests control). Its model is a pure function of the conversation, so a run retried in another
process proposes the same calls with the same ids, and the idempotency keys of the
retried calls are the same.

Every tool records its side effect through `bench.hostile.effects` under the call's
idempotency key. `wire_funds` is at most once: after a crash that leaves its outcome
unknown, the run asks a human instead of wiring again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

from beamweaver_core.agent import Agent, Message, ToolCall
from beamweaver_core.agent.tools import Tool, ToolRuntime
from beamweaver_core.llm.base import ChatModel, ToolSpec
from bench.hostile import effects

EMAIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "maxLength": 200},
        "subject": {"type": "string", "maxLength": 200},
        "body": {"type": "string"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["to", "subject", "body"],
    "additionalProperties": False,
}
REFUND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^[A-Z]-[0-9]{1,8}$"},
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000},
    },
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}
PATH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 1, "maxLength": 500}},
    "required": ["path"],
    "additionalProperties": False,
}
NOTIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "maxLength": 500}},
    "required": ["text"],
    "additionalProperties": False,
}
RECORD_SCHEMA: dict[str, Any] = {"type": "object"}
"""`store_record` takes any JSON object: hostile shapes reach the checkpoint as they are."""
WIRE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "account": {"type": "string", "maxLength": 64},
        "amount": {"type": "number", "exclusiveMinimum": 0},
    },
    "required": ["account", "amount"],
    "additionalProperties": False,
}

INTERRUPT_ON: dict[str, Any] = {
    "send_email": {"allowed_decisions": ["approve", "edit", "reject", "respond"]},
    "issue_refund": {"allowed_decisions": ["approve", "edit", "reject"]},
    "notify": {"allowed_decisions": ["approve", "reject"]},
    "remove_file": True,
    "fetch_file": False,
    "wire_funds": {"allowed_decisions": ["approve", "reject"]},
    "store_record": {"allowed_decisions": ["approve", "reject"]},
    "block_loop": {"allowed_decisions": ["approve", "reject"]},
}


class _EffectTool(Tool):
    """A tool whose whole work is one recorded side effect."""

    def __init__(self, name: str, schema: dict[str, Any], *, at_most_once: bool = False) -> None:
        self.name = name
        self.description = f"Fake `{name}`: records one side effect under its idempotency key."
        self.args_schema = schema
        self.at_most_once = at_most_once

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> Any:
        return effects.record(
            self.name,
            runtime.idempotency_key,
            args,
            thread=runtime.thread_id,
            idempotent=not self.at_most_once,
        )


BLOCK_ENV = "BEAMWEAVER_BLOCK_SECONDS"
"""How long `block_loop` blocks its event loop with `time.sleep` before its effect."""


class _LoopBlockingTool(_EffectTool):
    """An `async def` tool that calls `time.sleep` inside the coroutine, blocking the
    event loop it runs on (the LangGraph #7213 shape), then records its effect."""

    async def run(self, args: dict[str, Any], runtime: ToolRuntime) -> Any:  # type: ignore[override]
        time.sleep(float(os.environ.get(BLOCK_ENV) or 0))  # the fault: blocks the loop
        return super().run(args, runtime)


TOOLS = (
    _EffectTool("send_email", EMAIL_SCHEMA),
    _EffectTool("issue_refund", REFUND_SCHEMA),
    _EffectTool("notify", NOTIFY_SCHEMA),
    _EffectTool("remove_file", PATH_SCHEMA),
    _EffectTool("fetch_file", PATH_SCHEMA),
    _EffectTool("wire_funds", WIRE_SCHEMA, at_most_once=True),
    _EffectTool("store_record", RECORD_SCHEMA),
    _LoopBlockingTool("block_loop", NOTIFY_SCHEMA),
)


def _plan(messages: Sequence[Message]) -> dict[str, Any]:
    first = next((m for m in messages if m.role == "user"), None)
    return dict(json.loads(first.content)) if first is not None else {}


def planned_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """The calls of the next turn (ids `t<turn>-c<index>`), or none when the plan is done."""
    plan = _plan(messages)
    turns = plan.get("turns") or [plan.get("calls") or []]
    turn = sum(1 for m in messages if m.role == "assistant")
    if turn >= len(turns):
        return []
    return [
        ToolCall(f"t{turn}-c{index}", call["name"], dict(call.get("args") or {}))
        for index, call in enumerate(turns[turn])
    ]


class PlanModel(ChatModel):
    """Proposes the planned calls turn by turn, then answers the plan's `say` ("Done.")."""

    provider = "hostile"
    model_name = "plan"

    def invoke(self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()) -> Message:
        calls = planned_calls(messages)
        if calls:
            return Message.assistant("", calls)
        return Message.assistant(str(_plan(messages).get("say") or "Done."))


def agent_input(*turns: Sequence[dict[str, Any]], say: str | None = None) -> dict[str, Any]:
    """The run input asking `ledger_agent` to propose each turn's calls in turn, then to
    answer `say`."""
    plan: dict[str, Any] = {"turns": [list(calls) for calls in turns]}
    if say is not None:
        plan["say"] = say
    return {"messages": [{"role": "user", "content": json.dumps(plan)}]}


ledger_agent = Agent.build(
    model=PlanModel(), tools=TOOLS, interrupt_on=INTERRUPT_ON, name="ledger_agent"
)

GRAPHS = {"ledger_agent": "bench.hostile.agents:ledger_agent"}
"""Registry entries for settings (and `BEAMWEAVER_GRAPHS` in child processes)."""

__all__ = [
    "BLOCK_ENV",
    "GRAPHS",
    "INTERRUPT_ON",
    "TOOLS",
    "PlanModel",
    "agent_input",
    "ledger_agent",
]
