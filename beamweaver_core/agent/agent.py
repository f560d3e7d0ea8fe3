"""`Agent`: a model, its tools and middleware, compiled to a graph with `model` and `tools`
nodes.

Build one with `Agent.build(model=..., tools=[...], interrupt_on={...}, checkpointer=...)`,
or define a module-style agent by subclassing with class attributes:

    class ReviewedAgent(Agent):
        model = init_chat_model("anthropic:claude-sonnet-4-5")
        tools = [remove_file, fetch_file, notify_email]
        interrupt_on = {"remove_file": True, "fetch_file": False}

    ReviewedAgent.invoke({"messages": [...]}, checkpointer=checkpointer, config=config)

The class itself then answers `invoke`, `resume`, `resume_review`, `stream_events`,
`iter_events`, `astream_events` and `get_state` (on a shared instance); every call may name
its `checkpointer`. The graph is compiled once per agent and reused per checkpointer.
"""

from __future__ import annotations

import functools
import threading
import types
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from beamweaver_core.agent.async_subagents import AsyncSubagentSpec
from beamweaver_core.agent.async_task_tools import async_task_tools
from beamweaver_core.agent.builder import AgentSpec, build_graph
from beamweaver_core.agent.hitl import CHECKPOINTER_ADVICE, HumanInTheLoop
from beamweaver_core.agent.middleware import Middleware
from beamweaver_core.agent.review_policy import PolicyValue
from beamweaver_core.agent.state import MESSAGES, as_messages
from beamweaver_core.agent.subagents import (
    CompiledSubagent,
    SubagentSpec,
    inherited_tool_names,
    task_tool,
)
from beamweaver_core.agent.tools import Tool
from beamweaver_core.agent.toolsets import ToolLike, expand_tools
from beamweaver_core.exceptions import CheckpointerRequiredError, GraphDefinitionError
from beamweaver_core.graph import CompiledGraph, Envelope, StateSnapshot
from beamweaver_core.llm.base import ChatModel
from beamweaver_core.types import Command, RunResult

if TYPE_CHECKING:
    from beamweaver_core.checkpoint.base import Checkpointer

AnySubagent = SubagentSpec | CompiledSubagent | AsyncSubagentSpec
Config = dict[str, Any]
_R = TypeVar("_R")
_UNSET: Any = object()
_OPTIONS = (
    "model",
    "tools",
    "interrupt_on",
    "middleware",
    "system_prompt",
    "subagents",
    "interrupt_before",
    "interrupt_after",
    "checkpointer",
    "name",
)


class _AgentMethod(Generic[_R]):
    """A method that works on an agent instance and on a module-style `Agent` subclass
    (where it runs on the subclass's shared default instance)."""

    def __init__(self, fn: Callable[..., _R]) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __get__(self, obj: Agent | None, owner: type[Agent]) -> Callable[..., _R]:
        if obj is not None:
            return types.MethodType(self.fn, obj)

        @functools.wraps(self.fn)
        def on_class(*args: Any, **kwargs: Any) -> _R:
            return self.fn(owner.default(), *args, **kwargs)

        return on_class


class Agent:
    """An agent: a chat model calling tools in a loop, with middleware around it.

    Options (class attributes of module-style agents, or `build` arguments): `model`,
    `tools` (tools, `Tool` subclasses, typed functions, LangChain tools, and toolsets: MCP
    servers and LangChain toolkits, expanded when the agent is built), `interrupt_on`
    (shorthand for a `HumanInTheLoop` middleware appended last), `middleware`,
    `system_prompt`, `subagents` (reached through a `task` tool; `AsyncSubagentSpec`s
    through the async task tools `start_async_task`, `check_async_task`,
    `update_async_task`, `cancel_async_task` and `list_async_tasks`), `interrupt_before` /
    `interrupt_after` (static breakpoints on node names such as `"model"` and `"tools"`),
    `checkpointer` and `name`.
    """

    model: ChatModel | None = None
    tools: Sequence[ToolLike] = ()
    interrupt_on: Mapping[str, PolicyValue] | None = None
    middleware: Sequence[Middleware] = ()
    system_prompt: str | None = None
    subagents: Sequence[AnySubagent] = ()
    interrupt_before: Sequence[str] = ()
    interrupt_after: Sequence[str] = ()
    checkpointer: Checkpointer | None = None
    name: str | None = None

    _default_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise TypeError(f"Unknown agent option(s) {unknown}; known: {list(_OPTIONS)}.")
        for key, value in options.items():
            if value is not _UNSET:
                setattr(self, key, value)
        self._lock = threading.Lock()
        self._compiled: CompiledGraph | None = None
        self._by_checkpointer: weakref.WeakKeyDictionary[Checkpointer, CompiledGraph] = (
            weakref.WeakKeyDictionary()
        )

    @classmethod
    def build(
        cls,
        *,
        model: ChatModel = _UNSET,
        tools: Sequence[ToolLike] = _UNSET,
        interrupt_on: Mapping[str, PolicyValue] | None = _UNSET,
        checkpointer: Checkpointer | None = _UNSET,
        system_prompt: str | None = _UNSET,
        middleware: Sequence[Middleware] = _UNSET,
        subagents: Sequence[AnySubagent] = _UNSET,
        interrupt_before: Sequence[str] = _UNSET,
        interrupt_after: Sequence[str] = _UNSET,
        name: str | None = _UNSET,
    ) -> Agent:
        """Build and compile an agent; options left out keep the class's attributes
        (for `Agent` itself: no tools, no review, no middleware, no checkpointer)."""
        agent = cls(
            model=model,
            tools=tools,
            interrupt_on=interrupt_on,
            checkpointer=checkpointer,
            system_prompt=system_prompt,
            middleware=middleware,
            subagents=subagents,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            name=name,
        )
        agent.graph_for()
        return agent

    @classmethod
    def default(cls) -> Agent:
        """The shared instance that class-level calls of a module-style agent run on."""
        shared = cls.__dict__.get("_shared_instance")
        if shared is None:
            with cls._default_lock:
                shared = cls.__dict__.get("_shared_instance")
                if shared is None:
                    shared = cls()
                    cls._shared_instance = shared  # type: ignore[attr-defined]
        return shared

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._graph_name()!r}>"

    # -- compiling ----------------------------------------------------------------------

    def _graph_name(self) -> str:
        return self.name or type(self).__name__

    def _spec(self) -> AgentSpec:
        if not isinstance(self.model, ChatModel):
            raise ValueError(
                f"Agent {self._graph_name()!r} has no chat model: pass model= to Agent.build "
                "or set the `model` class attribute (e.g. init_chat_model('openai:gpt-4o'))."
            )
        tools = expand_tools(self.tools)
        middleware = list(self.middleware)
        reviews = [mw for mw in middleware if isinstance(mw, HumanInTheLoop)]
        delegated = [s for s in self.subagents if not isinstance(s, AsyncSubagentSpec)]
        if delegated:
            tools.append(
                task_tool(
                    delegated,
                    model=self.model,
                    interrupt_on=self.interrupt_on,
                    review=reviews,
                    make_agent=Agent,
                )
            )
        background = [s for s in self.subagents if isinstance(s, AsyncSubagentSpec)]
        if background:
            tools.extend(async_task_tools(background))
        if self.interrupt_on:
            if reviews:
                raise ValueError(
                    f"Agent {self._graph_name()!r} has both interrupt_on and a HumanInTheLoop "
                    "middleware; put the whole review policy in one of them."
                )
            middleware.append(HumanInTheLoop(self.interrupt_on, tools=tools))
        self._check_review_policy(middleware, tools)
        return AgentSpec(
            name=self._graph_name(),
            model=self.model,
            tools=tuple(tools),
            system_prompt=self.system_prompt,
            middleware=tuple(middleware),
            interrupt_before=tuple(self.interrupt_before),
            interrupt_after=tuple(self.interrupt_after),
        )

    def _check_review_policy(self, middleware: Sequence[Middleware], tools: Sequence[Tool]) -> None:
        """Every tool a review policy names must be a tool of this agent (or of a subagent
        spec that inherits the policy): a misspelt name would leave the real tool
        unreviewed."""
        delegated = [s for s in self.subagents if not isinstance(s, AsyncSubagentSpec)]
        known = {t.name for t in tools} | inherited_tool_names(delegated)
        problems: list[str] = []
        for mw in middleware:
            if isinstance(mw, HumanInTheLoop):
                declared_as = (
                    "interrupt_on"
                    if self.interrupt_on and mw is middleware[-1]
                    else f"HumanInTheLoop {mw.name!r}"
                )
                problems.extend(mw.check_tools(known, declared_as=declared_as))
        if problems:
            raise GraphDefinitionError(
                [f"agent {self._graph_name()!r}: {problem}" for problem in problems]
            )

    @_AgentMethod
    def graph_for(self, checkpointer: Checkpointer | None = None) -> CompiledGraph:
        """The compiled graph, saving to `checkpointer` (default: the agent's own)."""
        with self._lock:
            if self._compiled is None:
                self._compiled = build_graph(self._spec())
            chosen = checkpointer if checkpointer is not None else self.checkpointer
            if chosen is None:
                return self._compiled
            graph = self._by_checkpointer.get(chosen)
            if graph is None:
                graph = self._compiled.with_checkpointer(chosen)
                self._by_checkpointer[chosen] = graph
            return graph

    def _saved_graph(self, checkpointer: Checkpointer | None, what: str) -> CompiledGraph:
        """The compiled graph for an operation on a saved thread (`what`), which needs a
        checkpointer: say how to give the agent one (not how to compile a graph)."""
        graph = self.graph_for(checkpointer)
        if graph.checkpointer is None:
            raise CheckpointerRequiredError(
                f"Agent {self._graph_name()!r} has no checkpointer, so it keeps no thread to "
                f"{what}. {CHECKPOINTER_ADVICE}"
            )
        return graph

    # -- running ------------------------------------------------------------------------

    @_AgentMethod
    def invoke(
        self,
        input: Any,
        config: Config | None = None,
        *,
        context: Any = None,
        checkpointer: Checkpointer | None = None,
    ) -> RunResult:
        """Run the agent on `input` (`{"messages": [...]}`); `Completed` or `Interrupted`."""
        return self.graph_for(checkpointer).invoke(_agent_input(input), config, context)

    @_AgentMethod
    def resume(
        self,
        value: Any = None,
        config: Config | None = None,
        *,
        context: Any = None,
        checkpointer: Checkpointer | None = None,
    ) -> RunResult:
        """Answer the pending interrupt(s): for a tool review, `{"decisions": [...]}`."""
        return self._saved_graph(checkpointer, "resume").resume(value, config, context)

    @_AgentMethod
    def resume_review(
        self,
        decisions: Sequence[Mapping[str, Any]],
        config: Config | None = None,
        *,
        interrupt_id: str | None = None,
        context: Any = None,
        checkpointer: Checkpointer | None = None,
    ) -> RunResult:
        """`resume({"decisions": decisions})`; name `interrupt_id` when several are pending."""
        answer: Any = {"decisions": list(decisions)}
        if interrupt_id is not None:
            answer = {interrupt_id: answer}
        return self._saved_graph(checkpointer, "resume").resume(answer, config, context)

    @_AgentMethod
    async def ainvoke(
        self,
        input: Any,
        config: Config | None = None,
        *,
        context: Any = None,
        checkpointer: Checkpointer | None = None,
    ) -> RunResult:
        """Async `invoke`."""
        return await self.graph_for(checkpointer).ainvoke(_agent_input(input), config, context)

    @_AgentMethod
    async def aresume(
        self,
        value: Any = None,
        config: Config | None = None,
        *,
        context: Any = None,
        checkpointer: Checkpointer | None = None,
    ) -> RunResult:
        """Async `resume`."""
        return await self._saved_graph(checkpointer, "resume").aresume(value, config, context)

    @_AgentMethod
    def stream_events(
        self,
        input: Any,
        config: Config | None = None,
        *,
        context: Any = None,
        checkpointer: Checkpointer | None = None,
    ) -> RunResult:
        """Run like `invoke`; the result's `.events` holds every `Envelope` up to the end
        or the pause (including `model.delta`, `tool.started` and `tool.finished`). Pass
        `Command(resume=...)` as `input` to stream a resumed run."""
        return self.graph_for(checkpointer).stream_events(_agent_input(input), config, context)

    @_AgentMethod
    def iter_events(
        self,
        input: Any,
        config: Config | None = None,
        *,
        context: Any = None,
        checkpointer: Checkpointer | None = None,
    ) -> Iterator[Envelope]:
        """Yield envelopes live; the last one is `run.completed`, `run.interrupted` or
        `run.failed` and carries the result."""
        return self.graph_for(checkpointer).iter_events(_agent_input(input), config, context)

    @_AgentMethod
    async def astream_events(
        self,
        input: Any,
        config: Config | None = None,
        *,
        context: Any = None,
        checkpointer: Checkpointer | None = None,
    ) -> AsyncIterator[Envelope]:
        """Async `iter_events`."""
        async for envelope in self.graph_for(checkpointer).astream_events(
            _agent_input(input), config, context
        ):
            yield envelope

    @_AgentMethod
    def get_state(
        self, config: Config, *, subgraphs: bool = False, checkpointer: Checkpointer | None = None
    ) -> StateSnapshot:
        """The thread's latest state (see `CompiledGraph.get_state`)."""
        return self._saved_graph(checkpointer, "read").get_state(config, subgraphs=subgraphs)


def _agent_input(value: Any) -> Any:
    """Input with its messages as `Message`s (dicts and strs are accepted too)."""
    if isinstance(value, Mapping) and not isinstance(value, Command) and MESSAGES in value:
        return {**value, MESSAGES: as_messages(value[MESSAGES])}
    return value


__all__ = ["Agent", "AnySubagent"]
