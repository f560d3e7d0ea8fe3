"""Tools: the `Tool` base class, the `@tool` decorator, and what a running tool can see.

A tool call's arguments are validated against the tool's JSON Schema before it runs. An
invalid call or an exception raised by the tool becomes an error tool message that the
model can read and correct, never a crash of the run.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from jsonschema import Draft202012Validator

from beamweaver_core.agent.canonical import canonical_json
from beamweaver_core.agent.schema import EMPTY_OBJECT_SCHEMA, RUNTIME_PARAMETER, function_schema
from beamweaver_core.agent.schema_validation import check_schema, schema_problems
from beamweaver_core.exceptions import (
    CheckpointerRequiredError,
    InvalidDecisionError,
    ThreadBusyError,
)
from beamweaver_core.graph.threads import run_coroutine_blocking
from beamweaver_core.llm.base import ToolSpec
from beamweaver_core.messages import Message, ToolCall

if TYPE_CHECKING:
    from beamweaver_core.graph.runtime import Runtime

logger = logging.getLogger(__name__)

_RUN_ERRORS = (InvalidDecisionError, ThreadBusyError, CheckpointerRequiredError)
"""Errors about the run rather than the tool's work; they fail the task instead of
becoming a tool message. An invalid review answer inside a nested agent must stay
unconsumed; a run that lost its thread or cannot pause must stop."""


@dataclass(frozen=True, slots=True)
class ToolRuntime:
    """What a running tool can see of its run.

    `state` is the agent's state when the tool step started, `config` and `context` what
    the caller passed to `invoke`. `idempotency_key` is derived from the thread, the
    agent's namespace, the tool call id and the canonical arguments: a side-effecting tool
    can use it to do its work at most once even if its step is run again after a crash.
    """

    tool_call_id: str
    idempotency_key: str
    state: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    context: Any = None
    thread_id: str | None = None
    graph_runtime: Runtime | None = None

    def emit(self, event: str, data: Any = None) -> None:
        """Send a custom event to the run's stream (a no-op when nobody streams)."""
        if self.graph_runtime is not None:
            self.graph_runtime.emit(event, data)

    @classmethod
    def for_call(cls, call: ToolCall, runtime: Runtime) -> ToolRuntime:
        """The runtime of `call` running in the graph task whose runtime is `runtime`."""
        # The task's namespace without its own last segment names the agent (root or a
        # subagent inside a parent task); it is the same when the step is run again.
        agent_ns = runtime.checkpoint_ns.rpartition("|")[0]
        return cls(
            tool_call_id=call.id,
            idempotency_key=idempotency_key(runtime.thread_id, agent_ns, call),
            state=runtime.state,
            config=runtime.config,
            context=runtime.context,
            thread_id=runtime.thread_id,
            graph_runtime=runtime,
        )


def idempotency_key(thread_id: str | None, agent_ns: str, call: ToolCall) -> str:
    """A stable key for executing `call` in this thread and agent (hex SHA-256)."""
    material = canonical_json([thread_id, agent_ns, call.id, call.name, dict(call.args)])
    return hashlib.sha256(material.encode()).hexdigest()


class Tool:
    """A tool the model can call. Subclass it, or decorate a function with `@tool`.

    Subclasses set `name`, `description` and `args_schema` (a JSON Schema of the
    arguments object) and implement `run(self, args, runtime)`, sync or `async def`; its
    return value becomes the tool message's content (a str as is, anything else as JSON),
    unless it is a tool `Message` itself (e.g. one with `status="error"`), used as it is.

    `handle_errors = False` lets exceptions raised by `run` propagate and fail the run
    instead of becoming an error message (invalid arguments are always reported to the
    model). `at_most_once = True` marks a tool that must never run twice: if a crash leaves
    its outcome unknown, the run asks a human instead of retrying (see `agent.ledger`).
    """

    name: str = ""
    description: str = ""
    args_schema: Mapping[str, Any] = EMPTY_OBJECT_SCHEMA
    handle_errors: bool = True
    at_most_once: bool = False

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> Any:
        """Do the work. Override in subclasses."""
        raise NotImplementedError(f"{type(self).__name__} must implement run(self, args, runtime)")

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.args_schema)

    def check(self) -> Draft202012Validator:
        """Check the name and `args_schema` once (`ValueError` if invalid); return the
        schema's validator."""
        cached: Draft202012Validator | None = self.__dict__.get("_validator")
        if cached is None:
            if not isinstance(self.name, str) or not self.name:
                raise ValueError(f"{type(self).__name__} has no name; set `name` on the tool.")
            cached = check_schema(self.args_schema, f"tool {self.name!r}")
            self.__dict__["_validator"] = cached
        return cached

    def argument_problems(self, args: Any) -> list[tuple[str, str]]:
        """Every way `args` fails `args_schema`, as `(path, message)` pairs."""
        return schema_problems(self.check(), args)

    def execute(self, call: ToolCall, runtime: ToolRuntime) -> Message:
        """Validate `call`'s arguments, run the tool, and return its tool message."""
        args = dict(call.args)
        problems = self.argument_problems(args)
        if problems:
            listing = "\n".join(f"- {path or '(arguments)'}: {text}" for path, text in problems)
            return Message.tool(
                f"Error: invalid arguments for tool `{self.name}`:\n{listing}\n"
                "Fix the arguments and call the tool again.",
                tool_call_id=call.id,
                name=call.name,
                status="error",
            )
        try:
            result = self.run(args, runtime)
            if inspect.isawaitable(result):
                result = run_coroutine_blocking(result)
        except _RUN_ERRORS:
            raise
        except Exception as exc:
            if not self.handle_errors:
                raise
            logger.warning("Tool %r failed on call %s", self.name, call.id, exc_info=True)
            return Message.tool(
                f"Error: tool `{self.name}` raised {type(exc).__name__}: {exc}",
                tool_call_id=call.id,
                name=call.name,
                status="error",
            )
        if isinstance(result, Message) and result.role == "tool":
            return result
        return Message.tool(result, tool_call_id=call.id, name=call.name)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FunctionTool(Tool):
    """A tool made from a typed function by `@tool`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        at_most_once: bool = False,
    ) -> None:
        self.fn = fn
        self.at_most_once = at_most_once
        self.name = name or fn.__name__
        doc = description if description is not None else inspect.getdoc(fn)
        if not doc:
            raise ValueError(
                f"Tool {self.name!r} has no description: give {fn.__qualname__} a docstring "
                "(the model reads it to decide when to call the tool) or pass description=."
            )
        self.description = doc
        self.args_schema = function_schema(fn)
        self.takes_runtime = RUNTIME_PARAMETER in inspect.signature(fn).parameters

    def run(self, args: dict[str, Any], runtime: ToolRuntime) -> Any:
        """Call the function with the arguments (and `runtime=` when it asks for it)."""
        if self.takes_runtime:
            return self.fn(**args, runtime=runtime)
        return self.fn(**args)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, at_most_once: bool = False
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    at_most_once: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a tool from a typed function (sync or async).

    The tool's name is the function's name, its description the docstring, and its
    argument schema comes from the type hints. A parameter named `runtime` receives the
    `ToolRuntime`. Use as `@tool` or `@tool(name=..., description=..., at_most_once=True)`.
    """
    if fn is not None:
        return FunctionTool(fn, name=name, description=description, at_most_once=at_most_once)

    def decorate(target: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(target, name=name, description=description, at_most_once=at_most_once)

    return decorate


__all__ = [
    "FunctionTool",
    "Tool",
    "ToolRuntime",
    "idempotency_key",
    "tool",
]
