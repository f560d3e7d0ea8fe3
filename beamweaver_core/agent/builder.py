"""Turn an agent definition into a graph.

    START -> before_agent hooks -> before_model hooks -> model -> after_model hooks (reversed)
          -> one Send("tools", call) per pending tool call -> tools -> (back to before_model)
          -> or, when the reply has no tool calls: after_agent hooks (reversed) -> END

Each pending tool call is its own `tools` task, so parallel calls run concurrently and a
subagent started by a call gets a deterministic checkpoint namespace. When every tool call
of a reply already has a result (all rejected or answered by a reviewer), the model is
called again.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from beamweaver_core.agent.ledger import run_recorded
from beamweaver_core.agent.middleware import (
    AFTER_HOOKS,
    BEFORE_HOOKS,
    Middleware,
    ModelHandler,
    ModelRequest,
    ToolHandler,
    ToolRequest,
)
from beamweaver_core.agent.state import (
    MESSAGES,
    append_messages,
    last_assistant,
    pending_tool_calls,
    with_messages,
)
from beamweaver_core.agent.tools import Tool, ToolRuntime
from beamweaver_core.graph import END, START, CompiledGraph, Graph, Runtime, Send
from beamweaver_core.llm.base import ChatModel, ToolCallChunk
from beamweaver_core.messages import Message, ToolCall
from beamweaver_core.observability import tracing

MODEL_NODE = "model"
TOOLS_NODE = "tools"


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """Everything a graph is built from (the agent with its defaults resolved)."""

    name: str
    model: ChatModel
    tools: tuple[Tool, ...]
    system_prompt: str | None
    middleware: tuple[Middleware, ...]
    interrupt_before: tuple[str, ...] = ()
    interrupt_after: tuple[str, ...] = ()


def build_graph(spec: AgentSpec) -> CompiledGraph:
    """Compile `spec` into a graph without a checkpointer (see `with_checkpointer`)."""
    tools = _tools_by_name(spec.tools)
    _check_middleware(spec.middleware)
    graph = Graph(name=spec.name).add_reducer(MESSAGES, append_messages)
    for mw in spec.middleware:
        for key, reducer in mw.state_reducers().items():
            graph.add_reducer(key, reducer)

    def hook_nodes(hook: str, order: Sequence[Middleware]) -> list[str]:
        names = []
        for mw in order:
            if mw.overrides(hook):
                name = f"{mw.name}.{hook}"
                graph.add_node(name, _hook_node(getattr(mw, hook)))
                names.append(name)
        return names

    before_agent, before_model = (hook_nodes(h, spec.middleware) for h in BEFORE_HOOKS)
    after_model, after_agent = (hook_nodes(h, spec.middleware[::-1]) for h in AFTER_HOOKS)
    graph.add_node(MODEL_NODE, _model_node(spec, tools))
    graph.add_node(TOOLS_NODE, _tools_node(spec.middleware, tools))

    loop_entry = before_model[0] if before_model else MODEL_NODE
    exit_node = after_agent[0] if after_agent else END
    _chain(graph, [START, *before_agent, loop_entry])
    _chain(graph, [*before_model, MODEL_NODE, *after_model])
    _chain(graph, [*after_agent, END])
    graph.add_edge(TOOLS_NODE, loop_entry)
    graph.add_conditional_edges((after_model or [MODEL_NODE])[-1], _router(loop_entry, exit_node))
    return graph.compile(
        interrupt_before=spec.interrupt_before, interrupt_after=spec.interrupt_after, name=spec.name
    )


def _tools_by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    by_name: dict[str, Tool] = {}
    for item in tools:
        if item.name in by_name:
            raise ValueError(f"Two tools are named {item.name!r}; tool names must be unique.")
        by_name[item.name] = item
    return by_name


def _check_middleware(middleware: Sequence[Middleware]) -> None:
    names = [mw.name for mw in middleware]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(
            f"Several middlewares are named {repeated}; their hook nodes would clash. Give "
            "each one its own name (Middleware(name=...))."
        )


def _chain(graph: Graph, nodes: Sequence[str]) -> None:
    for source, target in itertools.pairwise(nodes):
        graph.add_edge(source, target)


def _hook_node(
    hook: Callable[[Mapping[str, Any], Runtime], Any],
) -> Callable[[Mapping[str, Any], Runtime], Any]:
    def run_hook(state: Mapping[str, Any], runtime: Runtime) -> Any:
        return hook(with_messages(state), runtime)

    return run_hook


def _router(loop_entry: str, exit_node: str) -> Callable[[Mapping[str, Any]], Any]:
    def after_model(state: Mapping[str, Any]) -> Any:
        messages = state.get(MESSAGES) or ()
        last = last_assistant(messages)
        if last is None or not last.tool_calls:
            return exit_node
        pending = pending_tool_calls(messages)
        if not pending:
            return loop_entry
        return [Send(TOOLS_NODE, call) for call in pending]

    return after_model


def _nest(
    wrappers: Sequence[Callable[[Any, Any], Message]], innermost: Callable[[Any], Message]
) -> Callable[[Any], Message]:
    """One handler: `wrappers[0]` outermost, each calling the next as its handler."""
    handler = innermost
    for wrap in reversed(wrappers):
        handler = functools.partial(_call_wrapper, wrap, handler)
    return handler


def _call_wrapper(
    wrap: Callable[[Any, Any], Message], handler: Callable[[Any], Message], request: Any
) -> Message:
    return wrap(request, handler)


def _model_node(
    spec: AgentSpec, tools: Mapping[str, Tool]
) -> Callable[[Mapping[str, Any], Runtime], dict[str, Any]]:
    specs = tuple(t.spec for t in tools.values())
    handler: ModelHandler = _nest(
        [mw.wrap_model_call for mw in spec.middleware if mw.overrides("wrap_model_call")],
        call_model,
    )

    def model(state: Mapping[str, Any], runtime: Runtime) -> dict[str, Any]:
        state = with_messages(state)
        request = ModelRequest(
            model=spec.model,
            messages=tuple(state.get(MESSAGES) or ()),
            tools=specs,
            system_prompt=spec.system_prompt,
            state=state,
            runtime=runtime,
        )
        reply = handler(request)
        if not isinstance(reply, Message) or reply.role != "assistant":
            raise TypeError(
                f"The model call of agent {spec.name!r} returned {reply!r}, not an assistant Message."
            )
        return {MESSAGES: [reply]}

    return model


def call_model(request: ModelRequest) -> Message:
    """Call the model; when someone listens, stream its reply as `model.delta` events.

    Each event's data is `{"message_id", "delta": text}` for a text delta or
    `{"message_id", "tool_call_chunk": {"index", "id", "name", "args"}}` for a piece of a
    tool call (`docs/tools-and-models.md`); `message_id` is the same for every delta of
    one model call and differs between calls (a re-run after a crash streams anew).
    Each call is a span (`observability.tracing.model_span`)."""
    with tracing.model_span(request.model):
        return _call_model(request)


def _call_model(request: ModelRequest) -> Message:
    messages = list(request.messages)
    if request.system_prompt:
        messages.insert(0, Message.system(request.system_prompt))
    runtime = request.runtime
    if runtime.sink is None:
        return request.model.invoke(messages, tools=request.tools)
    message_id = f"run-{uuid.uuid4().hex}"
    reply: Message | None = None
    for item in request.model.stream(messages, tools=request.tools):
        if isinstance(item, str):
            runtime.emit("model.delta", {"message_id": message_id, "delta": item})
        elif isinstance(item, ToolCallChunk):
            chunk = {"index": item.index, "id": item.id, "name": item.name, "args": item.args}
            runtime.emit("model.delta", {"message_id": message_id, "tool_call_chunk": chunk})
        else:
            reply = item
    if reply is None:
        raise TypeError(f"{request.model!r}.stream() ended without the final assistant Message.")
    return reply


def _tools_node(
    middleware: Sequence[Middleware], tools: Mapping[str, Tool]
) -> Callable[[ToolCall, Runtime], dict[str, Any]]:
    def execute(request: ToolRequest) -> Message:
        call = request.tool_call
        runtime = request.runtime
        found = tools.get(call.name)
        if found is None:
            return Message.tool(
                f"Error: there is no tool named `{call.name}`. Available tools: "
                f"{', '.join(sorted(tools)) or 'none'}.",
                tool_call_id=call.id,
                name=call.name,
                status="error",
            )
        runtime.emit(
            "tool.started", {"tool_call_id": call.id, "name": call.name, "args": dict(call.args)}
        )
        with tracing.tool_span(call.name, call.id, call.args) as span:
            result = run_recorded(found, call, ToolRuntime.for_call(call, runtime))
            if result.status == "error":
                tracing.failed(span, None, "the tool returned an error")
        runtime.emit(
            "tool.finished",
            {
                "tool_call_id": call.id,
                "name": call.name,
                "status": result.status,
                "content": result.content,
            },
        )
        return result

    handler: ToolHandler = _nest(
        [mw.wrap_tool_call for mw in middleware if mw.overrides("wrap_tool_call")], execute
    )

    def run_tool(call: ToolCall, runtime: Runtime) -> dict[str, Any]:
        result = handler(ToolRequest(tool_call=call, state=runtime.state, runtime=runtime))
        if not isinstance(result, Message) or result.role != "tool":
            raise TypeError(
                f"The tool call {call.id} ({call.name}) returned {result!r}, not a tool Message."
            )
        return {MESSAGES: [result]}

    return run_tool


__all__ = ["MODEL_NODE", "TOOLS_NODE", "AgentSpec", "build_graph", "call_model"]
