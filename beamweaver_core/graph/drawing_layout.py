"""Where a drawing's boxes and arrows go: a layered (Sugiyama) layout by `grandalf`, the
pure-Python layout library LangGraph draws with, top to bottom.

Boxes are sized from their labels; cycles (an agent's model → tools → model loop) are
laid out by grandalf with their back edges reversed, and each connected part of the
graph is laid out on its own, side by side. A node's edge to itself is not given to the
layout (grandalf cannot route it); the SVG draws it as a loop on the box.
"""

from __future__ import annotations

from dataclasses import dataclass

from grandalf.graphs import Edge, Graph, Vertex
from grandalf.layouts import SugiyamaLayout
from grandalf.routing import EdgeViewer, route_with_lines

from beamweaver_core.graph.drawing import Drawing, DrawnNode

CHAR_WIDTH = 7.5
"""Pixels per label character at the SVG's 13 px font (a monospace-ish estimate)."""
BOX_HEIGHT = 34.0
BOX_PADDING = 28.0
TERMINAL_WIDTH = 64.0
LAYER_SPACE = 46.0
NODE_SPACE = 28.0
MARGIN = 16.0
MAX_LABEL = 40
"""Characters of a label shown at most (longer ones end with an ellipsis)."""


@dataclass(frozen=True, slots=True)
class Box:
    """A node's box: its centre, width and height, and the label drawn in it."""

    x: float
    y: float
    width: float
    height: float
    label: str


@dataclass(frozen=True, slots=True)
class Route:
    """An edge's polyline from its source box's border to its target box's border;
    `self_loop` for an edge from a node to itself (no points: drawn on the box)."""

    source: str
    target: str
    points: tuple[tuple[float, float], ...]
    self_loop: bool = False


@dataclass(frozen=True, slots=True)
class Layout:
    """Boxes by node id, routes in the drawing's edge order, and the picture's size."""

    boxes: dict[str, Box]
    routes: tuple[Route, ...]
    width: float
    height: float


class _BoxView:
    """What grandalf needs of a vertex: its size (it sets `xy`)."""

    def __init__(self, width: float, height: float) -> None:
        self.w = width
        self.h = height
        self.xy = (0.0, 0.0)


def label(node: DrawnNode) -> str:
    """The text in a node's box: its own name, shortened past `MAX_LABEL`."""
    name = {"__start__": "start", "__end__": "end"}.get(node.id, node.name)
    return name if len(name) <= MAX_LABEL else name[: MAX_LABEL - 1] + "…"


def layout(drawing: Drawing) -> Layout:
    """Lay `drawing` out (see the module docstring)."""
    vertices: dict[str, Vertex] = {}
    labels: dict[str, str] = {}
    for node in drawing.nodes:
        text = labels[node.id] = label(node)
        width = TERMINAL_WIDTH if node.is_terminal else len(text) * CHAR_WIDTH + BOX_PADDING
        vertex = Vertex(node.id)
        vertex.view = _BoxView(width, BOX_HEIGHT)
        vertices[node.id] = vertex
    edges: list[Edge] = []
    seen: set[tuple[str, str]] = set()
    for drawn in drawing.edges:
        pair = (drawn.source, drawn.target)
        if drawn.source == drawn.target or pair in seen:
            continue
        seen.add(pair)
        edge = Edge(vertices[drawn.source], vertices[drawn.target])
        edge.view = EdgeViewer()
        edges.append(edge)
    graph = Graph(list(vertices.values()), edges)
    offset = MARGIN
    height = 0.0
    placed: dict[str, tuple[float, float]] = {}
    for part in graph.C:
        xs, bottom = _lay_out_part(part)
        bends = [x for edge in part.sE for x, _ in getattr(edge.view, "_pts", ())]
        left = min([x - v.view.w / 2 for v, (x, _) in xs.items()] + bends)
        right = max([x + v.view.w / 2 for v, (x, _) in xs.items()] + bends)
        for vertex, (x, y) in xs.items():
            placed[vertex.data] = (x - left + offset, y + MARGIN)
        offset += right - left + NODE_SPACE * 2
        height = max(height, bottom)
    shift = {
        vid: (placed[vid][0] - v.view.xy[0], placed[vid][1] - v.view.xy[1])
        for vid, v in vertices.items()
    }
    boxes = {
        vid: Box(placed[vid][0], placed[vid][1], v.view.w, v.view.h, labels[vid])
        for vid, v in vertices.items()
    }
    routes = []
    by_pair = {(e.v[0].data, e.v[1].data): e for e in edges}
    for drawn in drawing.edges:
        if drawn.source == drawn.target:
            routes.append(Route(drawn.source, drawn.target, (), self_loop=True))
            continue
        edge = by_pair[(drawn.source, drawn.target)]
        dx, dy = shift[drawn.source]
        points = tuple((x + dx, y + dy) for x, y in getattr(edge.view, "_pts", ()))
        if not points:  # an edge grandalf left unrouted: a straight line between the boxes
            points = (
                (boxes[drawn.source].x, boxes[drawn.source].y),
                (boxes[drawn.target].x, boxes[drawn.target].y),
            )
        routes.append(Route(drawn.source, drawn.target, points))
    return Layout(boxes, tuple(routes), offset - NODE_SPACE * 2 + MARGIN, height + 2 * MARGIN)


def _lay_out_part(part: Graph) -> tuple[dict[Vertex, tuple[float, float]], float]:
    """Lay out one connected part; its vertices' centres (top at 0) and its height."""
    vertices = list(part.sV)
    if len(vertices) == 1:
        vertex = vertices[0]
        vertex.view.xy = (0.0, vertex.view.h / 2)
        return {vertex: vertex.view.xy}, vertex.view.h
    sugiyama = SugiyamaLayout(part)
    roots = [v for v in vertices if not v.e_in()]
    sugiyama.init_all(roots=roots or None, optimize=True)
    sugiyama.xspace = NODE_SPACE
    sugiyama.yspace = LAYER_SPACE
    sugiyama.route_edge = route_with_lines
    sugiyama.draw()
    top = min(v.view.xy[1] - v.view.h / 2 for v in vertices)
    bottom = max(v.view.xy[1] + v.view.h / 2 for v in vertices)
    for edge in part.sE:
        edge.view._pts = [(x, y - top) for x, y in getattr(edge.view, "_pts", ())]
    for vertex in vertices:
        vertex.view.xy = (vertex.view.xy[0], vertex.view.xy[1] - top)
    return {v: v.view.xy for v in vertices}, bottom - top


__all__ = ["Box", "Layout", "Route", "label", "layout"]
