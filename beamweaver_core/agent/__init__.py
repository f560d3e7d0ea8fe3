"""The agent layer (api.md §2): agents, tools, middleware, human review, subagents.

`MCPServerStdio` / `MCPServerHTTP` (the `mcp` extra) and `LangChainTool` (the `langchain`
extra) import their optional SDK only when first used.

Names are loaded on first use: `beamweaver_core.llm` imports `agent.messages`, and the
agent modules import `llm`, so importing every agent module here would make the import
order of the two packages matter.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from beamweaver_core.agent.agent import Agent
    from beamweaver_core.agent.async_subagents import AsyncSubagentSpec, AsyncTask, AsyncTaskClient
    from beamweaver_core.agent.hitl import HumanInTheLoop
    from beamweaver_core.agent.langchain_tools import LangChainTool
    from beamweaver_core.agent.mcp_tools import MCPServerHTTP, MCPServerStdio
    from beamweaver_core.agent.messages import Message, ToolCall
    from beamweaver_core.agent.middleware import Middleware, ModelRequest, ToolRequest
    from beamweaver_core.agent.review import HITL, ActionRequest, ReviewConfig, ReviewRequest
    from beamweaver_core.agent.subagents import CompiledSubagent, SubagentSpec
    from beamweaver_core.agent.tools import Tool, ToolRuntime, tool
    from beamweaver_core.graph.runtime import Envelope

_EXPORTS = {
    "Agent": "beamweaver_core.agent.agent",
    "AsyncSubagentSpec": "beamweaver_core.agent.async_subagents",
    "AsyncTask": "beamweaver_core.agent.async_subagents",
    "AsyncTaskClient": "beamweaver_core.agent.async_subagents",
    "HumanInTheLoop": "beamweaver_core.agent.hitl",
    "LangChainTool": "beamweaver_core.agent.langchain_tools",
    "MCPServerHTTP": "beamweaver_core.agent.mcp_tools",
    "MCPServerStdio": "beamweaver_core.agent.mcp_tools",
    "Message": "beamweaver_core.agent.messages",
    "ToolCall": "beamweaver_core.agent.messages",
    "Middleware": "beamweaver_core.agent.middleware",
    "ModelRequest": "beamweaver_core.agent.middleware",
    "ToolRequest": "beamweaver_core.agent.middleware",
    "HITL": "beamweaver_core.agent.review",
    "ActionRequest": "beamweaver_core.agent.review",
    "ReviewConfig": "beamweaver_core.agent.review",
    "ReviewRequest": "beamweaver_core.agent.review",
    "CompiledSubagent": "beamweaver_core.agent.subagents",
    "SubagentSpec": "beamweaver_core.agent.subagents",
    "Tool": "beamweaver_core.agent.tools",
    "ToolRuntime": "beamweaver_core.agent.tools",
    "tool": "beamweaver_core.agent.tools",
    "Envelope": "beamweaver_core.graph.runtime",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'beamweaver_core.agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "HITL",
    "ActionRequest",
    "Agent",
    "AsyncSubagentSpec",
    "AsyncTask",
    "AsyncTaskClient",
    "CompiledSubagent",
    "Envelope",
    "HumanInTheLoop",
    "LangChainTool",
    "MCPServerHTTP",
    "MCPServerStdio",
    "Message",
    "Middleware",
    "ModelRequest",
    "ReviewConfig",
    "ReviewRequest",
    "SubagentSpec",
    "Tool",
    "ToolCall",
    "ToolRequest",
    "ToolRuntime",
    "tool",
]
