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
from beamweaver_core.graph.drawing import draw
from beamweaver_core.runtime import registry
from beamweaver_core.runtime.access import access

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
    """Nodes and edges of `graph`, its subgraphs drawn inside it `xray` levels deep (the
    drawing the thread page shows, `beamweaver_core.graph.drawing`)."""
    return draw(graph, xray, fold_depth=0).to_protocol()


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
