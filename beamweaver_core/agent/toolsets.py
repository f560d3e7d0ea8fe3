"""What an agent's `tools=` accepts, made into `Tool`s: tools, `Tool` subclasses, typed
functions, LangChain tools, and toolsets (MCP servers, LangChain toolkits) expanded into
their tools."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from beamweaver_core.agent.tools import FunctionTool, Tool

if TYPE_CHECKING:
    # For the type only: the engine imports the optional langchain-core only for a LangChain
    # tool it was given (`as_tool`).
    from langchain_core.tools import BaseTool


class Toolset(Protocol):
    """Several tools from one source, expanded when the agent is built: an MCP server
    (`MCPServerStdio`, `MCPServerHTTP`) or a LangChain toolkit."""

    def get_tools(self) -> Sequence[Any]:
        """The tools (anything `as_tool` accepts)."""


def as_tool(value: Any) -> Tool:
    """A `Tool` from a tool, a `Tool` subclass (instantiated), a LangChain tool or a plain
    typed function."""
    if isinstance(value, Tool):
        tool_obj = value
    elif isinstance(value, type) and issubclass(value, Tool):
        tool_obj = value()
    elif _is_langchain_tool(value):
        # The adapter module imports langchain-core, an optional extra: only for a
        # LangChain tool, which exists only when langchain-core is installed.
        from beamweaver_core.agent.langchain_tools import LangChainTool

        tool_obj = LangChainTool(value)
    elif callable(value):
        tool_obj = FunctionTool(value)
    else:
        raise TypeError(
            f"{value!r} is not a tool: pass a Tool, a Tool subclass, a function, a LangChain "
            "tool, or a toolset (an MCP server, a LangChain toolkit)."
        )
    tool_obj.check()
    return tool_obj


def expand_tools(values: Iterable[Any]) -> list[Tool]:
    """The `Tool`s of an agent's `tools=`: one per tool or function, every tool of a
    toolset (anything with `get_tools()`: an MCP server, a LangChain toolkit).

    Two tools of one name are refused, naming where each came from (MCP servers take a
    `prefix=` to tell their tools apart)."""
    tools: list[Tool] = []
    for value in values:
        get_tools = getattr(value, "get_tools", None)
        if callable(get_tools) and not isinstance(value, Tool | type):
            tools.extend(as_tool(item) for item in get_tools())
        else:
            tools.append(as_tool(value))
    seen: dict[str, Tool] = {}
    for item in tools:
        first = seen.setdefault(item.name, item)
        if first is not item:
            raise ValueError(
                f"Two tools are named {item.name!r}: {_origin(first)} and {_origin(item)}. Tool "
                "names must be unique; give an MCP server a prefix (prefix='files_') or rename "
                "one of the tools."
            )
    return tools


def _origin(tool_obj: Tool) -> str:
    origin = getattr(tool_obj, "origin", None)
    return f"one from {origin}" if origin else f"{tool_obj!r}"


def _is_langchain_tool(value: Any) -> bool:
    # A LangChain tool exists only once langchain_core.tools is imported; never import it here.
    module = sys.modules.get("langchain_core.tools")
    return module is not None and isinstance(value, module.BaseTool)


ToolLike: TypeAlias = "Tool | type[Tool] | Callable[..., Any] | Toolset | BaseTool"
"""One entry of an agent's `tools=`."""

__all__ = ["ToolLike", "Toolset", "as_tool", "expand_tools"]
