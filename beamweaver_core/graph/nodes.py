"""How the engine calls user code: node and router specs, with their signatures read once."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from beamweaver_core.graph.compiled import CompiledGraph


def _callable_target(fn: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.isfunction(fn) or inspect.ismethod(fn) or not callable(fn):
        return fn
    call = getattr(type(fn), "__call__", None)  # noqa: B004  (instances with __call__)
    return call if call is not None and not inspect.isbuiltin(fn) else fn


def is_async_callable(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(_callable_target(fn))


def takes_second_argument(fn: Callable[..., Any]) -> bool:
    """Whether `fn` accepts a second positional argument (the runtime)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    positional = 0
    for param in signature.parameters.values():
        if param.kind is param.VAR_POSITIONAL:
            return True
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            positional += 1
        elif param.kind is param.KEYWORD_ONLY and param.name == "runtime":
            return True
    return positional >= 2


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node: its callable (or compiled subgraph) and how to call it."""

    name: str
    fn: Callable[..., Any] | None
    is_async: bool
    takes_runtime: bool
    subgraph: CompiledGraph | None = None

    @classmethod
    def of(cls, name: str, target: Any) -> NodeSpec:
        from beamweaver_core.graph.compiled import CompiledGraph

        if isinstance(target, CompiledGraph):
            return cls(name=name, fn=None, is_async=False, takes_runtime=False, subgraph=target)
        return cls(
            name=name,
            fn=target,
            is_async=is_async_callable(target),
            takes_runtime=takes_second_argument(target),
        )


@dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: `router(state[, runtime])` picks the next node(s)."""

    source: str
    router: Callable[..., Any]
    path_map: Mapping[Hashable, str] | None
    takes_runtime: bool

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
            takes_runtime=takes_second_argument(router),
        )


@dataclass(frozen=True, slots=True)
class Join:
    """`add_edge([a, b], c)`: `target` runs once every source has finished."""

    key: str
    sources: frozenset[str]
    target: str


__all__ = ["Branch", "Join", "NodeSpec", "is_async_callable", "takes_second_argument"]
