"""LangChain tools as agent tools: `BaseTool`s, `@tool` functions, toolkits.

An agent's `tools=[...]` accepts them as they are (a toolkit is expanded into its tools):
each becomes a `LangChainTool` whose name, description and argument schema are the
LangChain tool's, so review, validation of edited arguments and the tool ledger apply as
to any tool. Needs the `langchain` extra (`langchain-core`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from beamweaver_core.agent.tools import Tool, ToolRuntime
from beamweaver_core.messages import Message, ToolStatus

try:
    from langchain_core.messages import ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_function
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "LangChain tools need `langchain-core`, which is not installed. Install the extra: "
        "pip install 'beamweaver[langchain]'"
    ) from exc

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool


class LangChainTool(Tool):
    """A LangChain tool (`BaseTool`) run as an agent tool.

    The arguments schema is the one LangChain gives the model (without injected
    arguments). The tool is invoked with the call as a LangChain `ToolCall`, so tools that
    take an `InjectedToolCallId` get the call's id, and its `ToolMessage` (content and
    status) becomes the tool message. The run's idempotency key and thread are in the
    invocation's `config["metadata"]` (`beamweaver_idempotency_key`,
    `beamweaver_thread_id`). `at_most_once=True` marks a tool that must never run twice
    (see `agent.ledger`).
    """

    def __init__(self, tool: BaseTool, *, at_most_once: bool = False) -> None:
        self.tool = tool
        self.name = tool.name
        self.description = tool.description
        self.args_schema = convert_to_openai_function(tool)["parameters"]
        self.at_most_once = at_most_once
        self.origin = "LangChain"
        # Async-only tools (`@tool` on an `async def`) refuse synchronous invocation.
        self._async_only = (
            getattr(tool, "func", None) is None and getattr(tool, "coroutine", None) is not None
        )

    def run(
        self, args: dict[str, Any], runtime: ToolRuntime
    ) -> Message | Coroutine[Any, Any, Message]:
        """Invoke the LangChain tool (its async implementation if it has only that)."""
        call = {
            "type": "tool_call",
            "id": runtime.tool_call_id,
            "name": self.tool.name,
            "args": args,
        }
        config: RunnableConfig = {
            "run_name": self.tool.name,
            "metadata": {
                "beamweaver_idempotency_key": runtime.idempotency_key,
                "beamweaver_thread_id": runtime.thread_id,
            },
        }
        if self._async_only:
            return self._arun(call, config, runtime)
        return self._message(self.tool.invoke(call, config), runtime)

    async def _arun(
        self, call: dict[str, Any], config: RunnableConfig, runtime: ToolRuntime
    ) -> Message:
        return self._message(await self.tool.ainvoke(call, config), runtime)

    def _message(self, output: Any, runtime: ToolRuntime) -> Message:
        status: ToolStatus = "success"
        if isinstance(output, ToolMessage):
            status = "error" if output.status == "error" else "success"
            output = output.content
        return Message.tool(
            content_text(output), tool_call_id=runtime.tool_call_id, name=self.name, status=status
        )


def content_text(content: Any) -> str:
    """A LangChain message content (str, or a list of content blocks) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            else:
                parts.append(json.dumps(block, ensure_ascii=False, sort_keys=True, default=str))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)


__all__ = ["LangChainTool", "content_text"]
