"""What a compiled graph is made of: node and router specs (with the signatures of the
user's callables read once), joins, and `GraphDefinition`, the checked structure the loop
runs. A node may itself be a graph, so the node spec and the definition live together."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from beamweaver_core.graph.state import Reducer
from beamweaver_core.types import END


def _callable_target(fn: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.isfunction(fn) or inspect.ismethod(fn) or not callable(fn):
        return fn
    call = getattr(type(fn), "__call__", None)  # noqa: B004  (instances with __call__)
    return call if call is not None and not inspect.isbuiltin(fn) else fn


def is_async_callable(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(_callable_target(fn))


def runtime_parameter(fn: Callable[..., Any]) -> str | None:
    """How `fn` wants the runtime: `"positional"` (a required second positional
    parameter), `"keyword"` (a keyword-only parameter named `runtime`), or `None`.
    `lambda s, n=name: ...` keeps its default."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    required = 0
    for param in signature.parameters.values():
        if param.name == "runtime":
            if param.kind is param.KEYWORD_ONLY:
                return "keyword"
            if param.kind is not param.VAR_KEYWORD:
                return "positional"
        if (
            param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD)
            and param.default is param.empty
        ):
            required += 1
    return "positional" if required >= 2 else None


def call_with_runtime(fn: Callable[..., Any], how: str | None, arg: Any, runtime: Any) -> Any:
    if how is None:
        return fn(arg)
    if how == "keyword":
        return fn(arg, runtime=runtime)
    return fn(arg, runtime)


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node: its callable (or compiled subgraph) and how to call it."""

    name: str
    fn: Callable[..., Any] | None
    is_async: bool
    runtime: str | None
    subgraph: GraphDefinition | None = None

    @property
    def takes_runtime(self) -> bool:
        return self.runtime is not None

    def call(self, arg: Any, runtime: Any) -> Any:
        assert self.fn is not None
        return call_with_runtime(self.fn, self.runtime, arg, runtime)

    @classmethod
    def nested(cls, name: str, graph: GraphDefinition) -> NodeSpec:
        """A node that runs `graph` as a subgraph."""
        return cls(name=name, fn=None, is_async=False, runtime=None, subgraph=graph)

    @classmethod
    def of(cls, name: str, target: Callable[..., Any]) -> NodeSpec:
        """A node that calls `target`."""
        return cls(
            name=name,
            fn=target,
            is_async=is_async_callable(target),
            runtime=runtime_parameter(target),
        )


@dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: `router(state[, runtime])` picks the next node(s)."""

    source: str
    router: Callable[..., Any]
    path_map: Mapping[Hashable, str] | None
    runtime: str | None

    def route(self, state: Any, runtime: Any) -> Any:
        return call_with_runtime(self.router, self.runtime, state, runtime)

    @classmethod
    def of(
        cls,
        source: str,
        router: Callable[..., Any],
        path_map: Mapping[Hashable, str] | list[str] | tuple[str, ...] | None,
    ) -> Branch:
        mapping: Mapping[Hashable, str] | None
        if path_map is None:
            mapping = None
        elif isinstance(path_map, Mapping):
            mapping = dict(path_map)
        else:
            mapping = {name: name for name in path_map}
        return cls(
            source=source,
            router=router,
            path_map=mapping,
            runtime=runtime_parameter(router),
        )


@dataclass(frozen=True, slots=True)
class Join:
    """`add_edge([a, b], c)`: `target` runs once every source has finished."""

    key: str
    sources: frozenset[str]
    target: str


class GraphDefinition:
    """A checked graph: its nodes, static edges (`successors`), joins, conditional edges
    (`branches`), reducers, schema keys and static breakpoints. What the loop runs; a
    `CompiledGraph` is one with a checkpointer and the methods to run it."""

    def __init__(
        self,
        *,
        name: str,
        nodes: dict[str, NodeSpec],
        successors: dict[str, tuple[str, ...]],
        joins: tuple[Join, ...],
        branches: dict[str, tuple[Branch, ...]],
        reducers: dict[str, Reducer],
        keys: frozenset[str] | None,
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
    ) -> None:
        self.name = name
        self.nodes = nodes
        self.successors = {k: tuple(t for t in v if t != END) for k, v in successors.items()}
        self.joins = joins
        self.joins_by_source: dict[str, tuple[Join, ...]] = {}
        for join in joins:
            for source in join.sources:
                self.joins_by_source[source] = (*self.joins_by_source.get(source, ()), join)
        self.branches = branches
        self.reducers = reducers
        self.keys = keys
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after


__all__ = [
    "Branch",
    "GraphDefinition",
    "Join",
    "NodeSpec",
    "call_with_runtime",
    "is_async_callable",
    "runtime_parameter",
]
