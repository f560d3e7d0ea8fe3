"""The agent layer (api.md §2): agents, tools, middleware, human review, subagents.

`MCPServerStdio` / `MCPServerHTTP` (the `mcp` extra) and `LangChainTool` (the `langchain`
extra) are imported when first asked for: their modules import the optional SDK, and the
rest of the package must import without the extras installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from beamweaver_core.agent.agent import Agent
from beamweaver_core.agent.async_subagents import AsyncSubagentSpec, AsyncTask, AsyncTaskClient
from beamweaver_core.agent.decisions import HITL
from beamweaver_core.agent.hitl import HumanInTheLoop
from beamweaver_core.agent.middleware import Middleware, ModelRequest, ToolRequest
from beamweaver_core.agent.review import ActionRequest, ReviewConfig, ReviewRequest
from beamweaver_core.agent.subagents import CompiledSubagent, SubagentSpec
from beamweaver_core.agent.tools import Tool, ToolRuntime, tool
from beamweaver_core.graph.runtime import Envelope
from beamweaver_core.messages import Message, ToolCall

if TYPE_CHECKING:
    from beamweaver_core.agent.langchain_tools import LangChainTool
    from beamweaver_core.agent.mcp_tools import MCPServerHTTP, MCPServerStdio

_OPTIONAL_EXTRAS = {
    "LangChainTool": "beamweaver_core.agent.langchain_tools",
    "MCPServerHTTP": "beamweaver_core.agent.mcp_tools",
    "MCPServerStdio": "beamweaver_core.agent.mcp_tools",
}


def __getattr__(name: str) -> Any:
    module = _OPTIONAL_EXTRAS.get(name)
    if module is None:
        raise AttributeError(f"module 'beamweaver_core.agent' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
