"""A laid-out drawing as inline SVG markup, with what a run did marked on it.

Every label and attribute value is escaped here (node names come from the graph's code,
interrupt notes from its state); the markup carries classes only, no inline style (the
pages' CSP has no `'unsafe-inline'`), so the stylesheet colours it. The picture keeps
its natural size (`width`/`height`) with a `viewBox`: on a narrow screen its container
scrolls rather than shrinking the text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape

from beamweaver_core.graph.drawing import Drawing
from beamweaver_core.graph.drawing_layout import Box, Layout, Route

BEND = 14.0
"""How far an edge bows out when the opposite edge joins the same two boxes."""
LOOP = 30.0
"""How far a node's loop to itself reaches beyond its box."""
MAX_NOTE = 60


@dataclass(frozen=True, slots=True)
class Marks:
    """What to mark on the drawing: nodes running now, paused (with a note each, e.g.
    what the interrupt asks), visited by the current run (with how many times they ran),
    and the edges it took."""

    running: frozenset[str] = frozenset()
    paused: Mapping[str, str] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    taken: frozenset[tuple[str, str]] = frozenset()


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _attr(value: str) -> str:
    return escape(value, quote=True)


def render(drawing: Drawing, layout: Layout, marks: Marks | None = None, *, dom_id: str) -> str:
    """The SVG of `drawing` laid out as `layout`; `dom_id` prefixes its element ids (a
    page may show several drawings), and must be made of letters, digits and hyphens."""
    marks = marks or Marks()
    arrow = f"{dom_id}-arrow"
    width = layout.width + (LOOP if any(r.self_loop for r in layout.routes) else 0.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph-drawing" id="{_attr(dom_id)}" '
        f'viewBox="0 0 {_num(width)} {_num(layout.height)}" width="{_num(width)}" '
        f'height="{_num(layout.height)}" role="img" aria-labelledby="{_attr(dom_id)}-title">',
        f'<title id="{_attr(dom_id)}-title">Graph {_attr(drawing.name)}</title>',
        f'<defs><marker id="{_attr(arrow)}" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path class="arrow-head" d="M0,0 L10,5 L0,10 z"/></marker></defs>',
        '<g class="edges">',
    ]
    pairs = {(r.source, r.target) for r in layout.routes}
    for drawn, route in zip(drawing.edges, layout.routes, strict=True):
        classes = ["edge"]
        if drawn.conditional:
            classes.append("edge-conditional")
        if drawn.fanout:
            classes.append("edge-fanout")
        if (drawn.source, drawn.target) in marks.taken:
            classes.append("on-path")
        box = layout.boxes[drawn.source]
        path = _path(route, box, bowed=(drawn.target, drawn.source) in pairs)
        parts.append(
            f'<path class="{" ".join(classes)}" d="{path}" marker-end="url(#{_attr(arrow)})" '
            f'data-source="{_attr(drawn.source)}" data-target="{_attr(drawn.target)}"/>'
        )
        if drawn.fanout and route.points:
            x, y = _middle(route.points)
            parts.append(f'<text class="edge-label" x="{_num(x + 4)}" y="{_num(y)}">Send</text>')
    parts.append('</g><g class="nodes">')
    for node in drawing.nodes:
        box = layout.boxes[node.id]
        parts.append(_node(node.id, node.is_terminal, node.subgraph, box, marks))
    parts.append("</g></svg>")
    return "".join(parts)


def _node(node_id: str, terminal: bool, subgraph: str, box: Box, marks: Marks) -> str:
    classes = ["node"]
    if terminal:
        classes.append("node-terminal")
    if subgraph:
        classes.append("node-subgraph")
    if node_id in marks.running:
        classes.append("is-running")
    if node_id in marks.paused:
        classes.append("is-paused")
    count = marks.counts.get(node_id, 0)
    if count:
        classes.append("on-path")
    left, top = box.x - box.width / 2, box.y - box.height / 2
    title = node_id if not subgraph else f"{node_id} (runs graph {subgraph})"
    note = marks.paused.get(node_id, "")
    if note:
        title += f": paused, {note}"
    radius = box.height / 2 if terminal else 6
    inner = [
        f"<title>{escape(title)}</title>",
        f'<rect x="{_num(left)}" y="{_num(top)}" width="{_num(box.width)}" '
        f'height="{_num(box.height)}" rx="{_num(radius)}"/>',
        f'<text x="{_num(box.x)}" y="{_num(box.y)}" text-anchor="middle" '
        f'dominant-baseline="central">{escape(box.label)}</text>',
    ]
    if count > 1:
        inner.append(
            f'<text class="node-count" x="{_num(left + box.width - 2)}" y="{_num(top - 3)}" '
            f'text-anchor="end">&#215;{count}</text>'
        )
    if note:
        shown = note if len(note) <= MAX_NOTE else note[: MAX_NOTE - 1] + "…"
        inner.append(
            f'<text class="node-note" x="{_num(box.x)}" y="{_num(top + box.height + 12)}" '
            f'text-anchor="middle">⏸ {escape(shown)}</text>'
        )
    return f'<g class="{" ".join(classes)}" data-node="{_attr(node_id)}">' + "".join(inner) + "</g>"


def _path(route: Route, box: Box, *, bowed: bool) -> str:
    if route.self_loop:
        right, y = box.x + box.width / 2, box.y
        return (
            f"M{_num(right)},{_num(y - 6)} C{_num(right + LOOP)},{_num(y - 22)} "
            f"{_num(right + LOOP)},{_num(y + 22)} {_num(right)},{_num(y + 6)}"
        )
    points = route.points
    if bowed and len(points) == 2:
        (x1, y1), (x2, y2) = points
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        cx = (x1 + x2) / 2 - (y2 - y1) / length * BEND
        cy = (y1 + y2) / 2 + (x2 - x1) / length * BEND
        return f"M{_num(x1)},{_num(y1)} Q{_num(cx)},{_num(cy)} {_num(x2)},{_num(y2)}"
    start, *rest = points
    return f"M{_num(start[0])},{_num(start[1])} " + " ".join(
        f"L{_num(x)},{_num(y)}" for x, y in rest
    )


def _middle(points: tuple[tuple[float, float], ...]) -> tuple[float, float]:
    (x1, y1), (x2, y2) = points[0], points[-1]
    return (x1 + x2) / 2, (y1 + y2) / 2


__all__ = ["Marks", "render"]
