"""Middleware: hooks around the agent's model and tool calls.

`before_agent`, `before_model`, `after_model` and `after_agent` each become their own graph
node (named `"<middleware name>.<hook>"`), so an interrupt in one of them re-runs only that
small node on resume. Before hooks run in list order, after hooks in reverse order.
`wrap_model_call` and `wrap_tool_call` run inside the `model` and `tools` nodes, nested
with the first middleware outermost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from beamweaver_core.messages import Message, ToolCall

if TYPE_CHECKING:
    from beamweaver_core.graph.runtime import Runtime
    from beamweaver_core.graph.state import Reducer
    from beamweaver_core.llm.base import ChatModel, ToolSpec

BEFORE_HOOKS = ("before_agent", "before_model")
AFTER_HOOKS = ("after_model", "after_agent")


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call: what `wrap_model_call` may inspect or replace before the call.

    The model receives `system_prompt` (as a system message, when set) followed by
    `messages`, and is offered `tools`.
    """

    model: ChatModel
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    system_prompt: str | None
    state: Mapping[str, Any]
    runtime: Runtime

    def replace(self, **changes: Any) -> ModelRequest:
        """A copy with `changes` applied."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """One tool call about to run: what `wrap_tool_call` may inspect or replace."""

    tool_call: ToolCall
    state: Mapping[str, Any]
    runtime: Runtime

    def replace(self, **changes: Any) -> ToolRequest:
        """A copy with `changes` applied."""
        return dataclasses.replace(self, **changes)


ModelHandler = Callable[[ModelRequest], Message]
ToolHandler = Callable[[ToolRequest], Message]


class Middleware:
    """Base class of agent middleware. Override only the hooks you need.

    A node hook receives the agent state and the graph runtime and returns a dict of state
    updates (or `None`). `name` (the class name unless set) names the hook nodes, so two
    middlewares of one agent need different names.
    """

    def __init__(self, *, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    @property
    def name(self) -> str:
        """The prefix of this middleware's node names."""
        return self.__dict__.get("_name") or type(self).__name__

    @name.setter
    def name(self, value: str) -> None:
        self.__dict__["_name"] = value

    def before_agent(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Runs once per invocation, before the first model call."""
        return None

    def before_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Runs before every model call."""
        return None

    def after_model(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Runs after every model call, before any of its tool calls execute."""
        return None

    def after_agent(self, state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """Runs once per invocation, after the model answered without tool calls."""
        return None

    def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Message:
        """Around each model call: call `handler(request)` (or not) and return a reply."""
        return handler(request)

    def wrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Message:
        """Around each tool call: call `handler(request)` (or not) and return a tool message."""
        return handler(request)

    def state_reducers(self) -> Mapping[str, Reducer]:
        """Reducers of the state keys this middleware writes (none by default)."""
        return {}

    def overrides(self, hook: str) -> bool:
        """Whether this middleware implements `hook` (only those become nodes or wrappers)."""
        return getattr(type(self), hook) is not getattr(Middleware, hook)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


__all__ = [
    "AFTER_HOOKS",
    "BEFORE_HOOKS",
    "Middleware",
    "ModelHandler",
    "ModelRequest",
    "ToolHandler",
    "ToolRequest",
]
