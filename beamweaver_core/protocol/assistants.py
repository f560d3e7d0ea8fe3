"""Registered graphs as the protocol's assistants: one assistant per graph, whose
`graph_id` and `name` are the registered name and whose `assistant_id` is the uuid5 of the
name that LangGraph's server gives a graph's default assistant (so either names it).

Assistants are read-only here: they are the graphs in `settings.BEAMWEAVER["GRAPHS"]`, so
creating, versioning or deleting one is refused (`docs/protocol.md`).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.utils import timezone

from beamweaver_core.graph.compiled import CompiledGraph
from beamweaver_core.graph.definition import GraphDefinition
from beamweaver_core.runtime import registry
from beamweaver_core.runtime.access import access
from beamweaver_core.types import END, START

NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""LangGraph's namespace for the ids of graphs' default assistants."""

_LOADED_AT = timezone.now()


def assistant_id(name: str) -> str:
    """The assistant id of the graph registered as `name`."""
    return str(uuid.uuid5(NAMESPACE_GRAPH, name))


def names(user: Any) -> list[str]:
    """The registered graphs `user` may start."""
    policy = access()
    return [name for name in registry.registered_names() if policy.may_start(user, name)]


def graph_name(ident: str, user: Any) -> str | None:
    """The graph an assistant id or name designates, if `user` may start it."""
    for name in names(user):
        if ident in (name, assistant_id(name)):
            return name
    return None


def compiled(name: str) -> CompiledGraph:
    """The registered graph (without a checkpointer: for drawing and schemas)."""
    return registry.compiled_graph(name, None)


def assistant(name: str) -> dict[str, Any]:
    """The assistant of the graph registered as `name`."""
    graph = compiled(name)
    at = _LOADED_AT.isoformat()
    return {
        "assistant_id": assistant_id(name),
        "graph_id": name,
        "name": name,
        "description": (graph.name if graph.name != name else None),
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "version": 1,
        "created_at": at,
        "updated_at": at,
    }


def drawing(graph: CompiledGraph, xray: int) -> dict[str, list[dict[str, Any]]]:
    """Nodes and edges of `graph`, its subgraphs drawn inside it `xray` levels deep."""
    nodes: list[dict[str, Any]] = [{"id": START, "type": "runnable", "data": {"name": START}}]
    edges: list[dict[str, Any]] = []
    entries, exits = _draw(graph, "", xray, nodes, edges)
    edges.extend({"source": START, "target": target} for target in entries)
    edges.extend({"source": source, "target": END} for source in exits)
    nodes.append({"id": END})
    return {"nodes": nodes, "edges": edges}


def _draw(
    graph: GraphDefinition,
    prefix: str,
    xray: int,
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
) -> tuple[list[str], list[str]]:
    """Draw `graph`'s nodes (ids prefixed) into `nodes`/`edges`; its entry and exit ids."""
    inside: dict[str, tuple[list[str], list[str]]] = {}
    for name, spec in graph.nodes.items():
        node_id = f"{prefix}{name}"
        if spec.subgraph is not None and xray > 0:
            inside[name] = _draw(spec.subgraph, f"{node_id}:", xray - 1, nodes, edges)
        else:
            nodes.append({"id": node_id, "type": "runnable", "data": {"name": node_id}})
            inside[name] = ([node_id], [node_id])

    def entry(name: str) -> list[str]:
        return inside[name][0] if name in inside else [f"{prefix}{name}"]

    def ends(name: str) -> list[str]:
        return inside[name][1] if name in inside else [f"{prefix}{name}"]

    leaving: set[str] = set()
    for source, targets in graph.successors.items():
        if source == START:
            continue
        for target in targets:
            leaving.add(source)
            edges.extend({"source": s, "target": t} for s in ends(source) for t in entry(target))
    for join in graph.joins:
        for source in sorted(join.sources):
            leaving.add(source)
            edges.extend(
                {"source": s, "target": t} for s in ends(source) for t in entry(join.target)
            )
    exits: list[str] = []
    for source, branches in graph.branches.items():
        leaving.add(source)
        for branch in branches:
            choices = (
                sorted(set(branch.path_map.values())) if branch.path_map else [*graph.nodes, END]
            )
            for target in choices:
                if target == END:
                    exits.extend(ends(source))
                    continue
                edges.extend(
                    {"source": s, "target": t, "conditional": True}
                    for s in ends(source)
                    for t in entry(target)
                )
    for name in graph.nodes:
        if name not in leaving:
            exits.extend(ends(name))
    starts = [t for target in graph.successors.get(START, ()) for t in entry(target)]
    for branch in graph.branches.get(START, ()):
        starts.extend(
            t
            for target in (branch.path_map or {}).values()
            if target in graph.nodes
            for t in entry(target)
        )
    return starts, sorted(set(exits), key=exits.index)


def schemas(name: str, graph: GraphDefinition) -> dict[str, Any]:
    """The graph's schemas: its state keys (the engine keeps no value types)."""
    state: dict[str, Any] = {"title": name, "type": "object"}
    if graph.keys is not None:
        state["properties"] = {key: {} for key in sorted(graph.keys)}
    return {
        "graph_id": name,
        "input_schema": state,
        "output_schema": state,
        "state_schema": state,
        "config_schema": None,
        "context_schema": None,
    }


def subgraphs(graph: GraphDefinition, recurse: bool, prefix: str = "") -> dict[str, Any]:
    """The graph's subgraphs' schemas by namespace (`node` or, nested, `node|child`)."""
    found: dict[str, Any] = {}
    for node, spec in graph.nodes.items():
        if spec.subgraph is None:
            continue
        ns = f"{prefix}{node}"
        found[ns] = {
            k: v for k, v in schemas(spec.subgraph.name, spec.subgraph).items() if k != "graph_id"
        }
        if recurse:
            found.update(subgraphs(spec.subgraph, True, f"{ns}|"))
    return found


__all__ = [
    "NAMESPACE_GRAPH",
    "assistant",
    "assistant_id",
    "compiled",
    "drawing",
    "graph_name",
    "names",
    "schemas",
    "subgraphs",
]
