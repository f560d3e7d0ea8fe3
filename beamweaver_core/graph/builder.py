"""`Graph`: the builder. Nodes, edges, reducers; `compile()` checks it and freezes it."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Literal

from beamweaver_core.checkpoint.base import Checkpointer
from beamweaver_core.exceptions import GraphDefinitionError
from beamweaver_core.graph.compiled import CompiledGraph
from beamweaver_core.graph.definition import Branch, Join, NodeSpec
from beamweaver_core.graph.state import Reducer, schema_reducers
from beamweaver_core.types import END, START

_RESERVED_CHARS = ("|", ":", "#")


class Graph:
    """Build a graph step by step; every method returns the builder so calls chain.

    Mistakes are collected and reported together by `compile()`.
    """

    def __init__(self, name: str | None = None, state_schema: type | None = None) -> None:
        self.name = name
        self.state_schema = state_schema
        self.nodes: dict[str, Any] = {}
        self.edges: list[tuple[str | tuple[str, ...], str]] = []
        self.branches: list[tuple[str, Callable[..., Any], Any]] = []
        self.reducers: dict[str, Reducer] = {}
        self._problems: list[str] = []
        self.keys: frozenset[str] | None = None
        if state_schema is not None:
            try:
                self.keys, self.reducers = schema_reducers(state_schema)
            except TypeError as exc:
                self._problems.append(f"state_schema {state_schema!r} is not a TypedDict: {exc}")

    def add_node(self, name: str | Callable[..., Any], fn: Any = None) -> Graph:
        """Add a node: `fn(state)` or `fn(state, runtime)`, sync or async, or a compiled graph."""
        if fn is None and callable(name):
            fn, name = name, getattr(name, "__name__", repr(name))
        assert isinstance(name, str)
        if name in self.nodes:
            self._problems.append(f"node {name!r} is added twice; node names must be unique")
            return self
        self.nodes[name] = fn
        return self

    def add_edge(self, src: str | Sequence[str], dst: str) -> Graph:
        """Run `dst` after `src`; with a list of sources, after all of them (a join)."""
        if isinstance(src, str):
            self.edges.append((src, dst))
        else:
            self.edges.append((tuple(src), dst))
        return self

    def add_conditional_edges(
        self,
        src: str,
        router: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Sequence[str] | None = None,
    ) -> Graph:
        """After `src`, run what `router(state)` returns: a node name, a list of names,
        `END`, or `Send` objects; `path_map` translates the router's return values."""
        self.branches.append((src, router, path_map))
        return self

    def add_reducer(self, key: str, fn: Reducer) -> Graph:
        """Merge updates of `key` with `fn(existing, update)` instead of replacing it."""
        if not callable(fn):
            self._problems.append(f"reducer for {key!r} is not callable: {fn!r}")
        else:
            self.reducers[key] = fn
        return self

    def compile(
        self,
        checkpointer: Checkpointer | None = None,
        interrupt_before: Sequence[str] | Literal["*"] = (),
        interrupt_after: Sequence[str] | Literal["*"] = (),
        name: str | None = None,
    ) -> CompiledGraph:
        """Check the definition and return the runnable graph."""
        problems = list(self._problems)
        specs: dict[str, NodeSpec] = {}
        for node, fn in self.nodes.items():
            if node in (START, END) or not node or any(c in node for c in _RESERVED_CHARS):
                problems.append(
                    f"node name {node!r} is reserved or contains one of {_RESERVED_CHARS}; "
                    "choose another name"
                )
                continue
            if isinstance(fn, CompiledGraph):
                specs[node] = NodeSpec.nested(node, fn)
            elif callable(fn):
                specs[node] = NodeSpec.of(node, fn)
            else:
                problems.append(
                    f"node {node!r} is {fn!r}, which is neither callable nor a compiled graph"
                )

        def known_source(src: str) -> bool:
            return src == START or src in self.nodes

        successors: dict[str, list[str]] = {}
        joins: list[Join] = []
        for src, dst in self.edges:
            if dst == START:
                problems.append(f"edge {src!r} -> START: START cannot be the target of an edge")
            elif dst != END and dst not in self.nodes:
                problems.append(f"edge {src!r} -> {dst!r}: unknown node {dst!r}")
            if isinstance(src, tuple):
                for s in src:
                    if s in (START, END) or s not in self.nodes:
                        problems.append(f"join {list(src)} -> {dst!r}: {s!r} is not a node")
                if not src:
                    problems.append(f"join [] -> {dst!r} has no sources")
                key = f"join:{'+'.join(sorted(src))}>{dst}"
                joins.append(Join(key=key, sources=frozenset(src), target=dst))
            elif src == END:
                problems.append(f"edge END -> {dst!r}: END cannot be the source of an edge")
            elif not known_source(src):
                problems.append(f"edge {src!r} -> {dst!r}: unknown node {src!r}")
            else:
                targets = successors.setdefault(src, [])
                if dst not in targets:
                    targets.append(dst)

        branches: dict[str, list[Branch]] = {}
        for src, router, path_map in self.branches:
            if not known_source(src):
                problems.append(f"conditional edge from unknown node {src!r}")
            if not callable(router):
                problems.append(f"conditional edge from {src!r}: router {router!r} is not callable")
                continue
            branch = Branch.of(src, router, path_map)
            for target in (branch.path_map or {}).values():
                if target != END and target not in self.nodes:
                    problems.append(
                        f"conditional edge from {src!r}: path_map names unknown node {target!r}"
                    )
            branches.setdefault(src, []).append(branch)

        if START not in successors and START not in branches:
            problems.append(
                "no path from START: add an edge from START, e.g. add_edge(START, 'first_node')"
            )

        for label, names in (
            ("interrupt_before", interrupt_before),
            ("interrupt_after", interrupt_after),
        ):
            if names == "*":
                continue
            if isinstance(names, str):
                problems.append(f"{label} must be a list of node names or '*', got {names!r}")
                continue
            for node in names:
                if node not in self.nodes:
                    problems.append(f"{label} names unknown node {node!r}")

        if problems:
            raise GraphDefinitionError(problems)

        graph = CompiledGraph(
            name=name or self.name or "Graph",
            nodes=specs,
            successors={k: tuple(v) for k, v in successors.items()},
            joins=tuple(joins),
            branches={k: tuple(v) for k, v in branches.items()},
            reducers=dict(self.reducers),
            keys=self.keys,
            interrupt_before=frozenset(specs)
            if interrupt_before == "*"
            else frozenset(interrupt_before),
            interrupt_after=frozenset(specs)
            if interrupt_after == "*"
            else frozenset(interrupt_after),
        )
        graph.checkpointer = checkpointer
        return graph


__all__ = ["Graph"]
