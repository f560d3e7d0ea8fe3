"""A graph as a drawing: its nodes and edges (static, conditional, `Send` fan-outs) and its
subgraphs, the one structure behind the protocol's `get_graph` (`Drawing.to_protocol`)
and the thread page's picture (`drawing_layout`, `drawing_svg`).

A conditional edge goes to its path map's targets; without one, to the `Literal` names
its router's return annotation lists (as LangGraph draws it), else to every node and
`END`. A router annotated to return `Send` objects is a fan-out: its edges are marked so.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from beamweaver_core.graph.definition import Branch, GraphDefinition
from beamweaver_core.types import END, START, Send

MAX_DEPTH = 20
"""Subgraph levels drawn inside their parent at most (a drawing is bounded whatever
`xray` asks)."""


@dataclass(frozen=True, slots=True)
class DrawnNode:
    """A box of the drawing. `id` is unique in the drawing (a subgraph's nodes are
    prefixed `parent:`); `name` is the node's own name; `subgraph` names the graph a
    node runs as a subgraph (drawn folded, as one box, when not drawn inside)."""

    id: str
    name: str
    subgraph: str = ""

    @property
    def is_terminal(self) -> bool:
        return self.id in (START, END)


@dataclass(frozen=True, slots=True)
class DrawnEdge:
    """An arrow: `conditional` for a router's choice, `fanout` for a router's `Send`s."""

    source: str
    target: str
    conditional: bool = False
    fanout: bool = False


@dataclass(frozen=True, slots=True)
class Drawing:
    """The nodes (START first, END last) and edges of a graph; `folded` maps the id of
    each subgraph node drawn as one box to the drawing of its graph."""

    name: str
    nodes: tuple[DrawnNode, ...]
    edges: tuple[DrawnEdge, ...]
    folded: dict[str, Drawing] = field(default_factory=dict)

    def to_protocol(self) -> dict[str, list[dict[str, Any]]]:
        """The LangGraph Platform `GET /assistants/{id}/graph` body."""
        nodes: list[dict[str, Any]] = []
        for node in self.nodes:
            if node.id == END:
                nodes.append({"id": END})
            else:
                nodes.append({"id": node.id, "type": "runnable", "data": {"name": node.id}})
        edges: list[dict[str, Any]] = []
        for edge in self.edges:
            shown: dict[str, Any] = {"source": edge.source, "target": edge.target}
            if edge.conditional or edge.fanout:
                shown["conditional"] = True
            edges.append(shown)
        return {"nodes": nodes, "edges": edges}


def draw(graph: GraphDefinition, xray: int = 0, *, fold_depth: int = 1) -> Drawing:
    """The drawing of `graph`: subgraphs drawn inside it `xray` levels deep; the others
    are one box each, with their own drawing in `folded` (`fold_depth` levels of them)."""
    nodes: list[DrawnNode] = [DrawnNode(START, START)]
    edges: list[DrawnEdge] = []
    folded: dict[str, Drawing] = {}
    entries, exits = _draw(graph, "", min(xray, MAX_DEPTH), nodes, edges, folded, fold_depth)
    edges.extend(DrawnEdge(START, target) for target in entries)
    edges.extend(DrawnEdge(source, END) for source in exits)
    nodes.append(DrawnNode(END, END))
    return Drawing(graph.name, tuple(nodes), tuple(edges), folded)


def _draw(
    graph: GraphDefinition,
    prefix: str,
    xray: int,
    nodes: list[DrawnNode],
    edges: list[DrawnEdge],
    folded: dict[str, Drawing],
    fold_depth: int,
) -> tuple[list[str], list[str]]:
    """Draw `graph`'s nodes (ids prefixed) into `nodes`/`edges`; its entry and exit ids."""
    inside: dict[str, tuple[list[str], list[str]]] = {}
    for name, spec in graph.nodes.items():
        node_id = f"{prefix}{name}"
        if spec.subgraph is not None and xray > 0:
            inside[name] = _draw(
                spec.subgraph, f"{node_id}:", xray - 1, nodes, edges, folded, fold_depth
            )
            continue
        if spec.subgraph is not None and fold_depth > 0:
            folded[node_id] = draw(spec.subgraph, 0, fold_depth=fold_depth - 1)
        nodes.append(DrawnNode(node_id, name, spec.subgraph.name if spec.subgraph else ""))
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
            edges.extend(DrawnEdge(s, t) for s in ends(source) for t in entry(target))
    for join in graph.joins:
        for source in sorted(join.sources):
            leaving.add(source)
            edges.extend(DrawnEdge(s, t) for s in ends(source) for t in entry(join.target))
    exits: list[str] = []
    for source, branches in graph.branches.items():
        leaving.add(source)
        for branch in branches:
            fanout = _returns_send(branch.router)
            for target in _choices(graph, branch):
                if target == END:
                    exits.extend(ends(source))
                    continue
                edges.extend(
                    DrawnEdge(s, t, conditional=not fanout, fanout=fanout)
                    for s in ends(source)
                    for t in entry(target)
                )
    for name in graph.nodes:
        if name not in leaving:
            exits.extend(ends(name))
    starts = [t for target in graph.successors.get(START, ()) for t in entry(target)]
    for branch in graph.branches.get(START, ()):
        starts.extend(
            t for target in _choices(graph, branch) if target in graph.nodes for t in entry(target)
        )
    return starts, sorted(set(exits), key=exits.index)


def _choices(graph: GraphDefinition, branch: Branch) -> list[str]:
    """Where a conditional edge may lead (see the module docstring)."""
    if branch.path_map:
        return sorted(set(branch.path_map.values()))
    named = [n for n in _literal_names(branch.router) if n in graph.nodes or n == END]
    return sorted(set(named)) if named else [*graph.nodes, END]


def _return_hint(router: Callable[..., Any]) -> Any:
    try:
        return typing.get_type_hints(router).get("return")
    except Exception:  # an annotation naming what cannot be imported here: no hint
        return None


def _walk(hint: Any, depth: int = 0) -> list[Any]:
    """`hint` and the types inside it (bounded: annotations may nest without end)."""
    if hint is None or depth > 8:
        return []
    found = [hint]
    for arg in typing.get_args(hint):
        found.extend(_walk(arg, depth + 1))
    return found


def _literal_names(router: Callable[..., Any]) -> list[str]:
    names: list[str] = []
    for part in _walk(_return_hint(router)):
        if typing.get_origin(part) is typing.Literal:
            names.extend(str(v) for v in typing.get_args(part) if isinstance(v, str))
    return names


def _returns_send(router: Callable[..., Any]) -> bool:
    return any(part is Send for part in _walk(_return_hint(router)))


__all__ = ["MAX_DEPTH", "Drawing", "DrawnEdge", "DrawnNode", "draw"]
