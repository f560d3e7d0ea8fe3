"""Drawing a graph: its structure (static, conditional and `Send` edges, subgraphs drawn
inside or folded), the protocol's `get_graph` body from it, the layout, and the SVG with
every label escaped."""

from __future__ import annotations

import re
from typing import Any, Literal

from beamweaver_core.graph import END, START, Graph
from beamweaver_core.graph.drawing import DrawnEdge, draw
from beamweaver_core.graph.drawing_layout import layout
from beamweaver_core.graph.drawing_svg import Marks, render
from beamweaver_core.types import Send


def _noop(state: dict[str, Any]) -> dict[str, Any]:
    return {}


def route(state: dict[str, Any]) -> Literal["tools", "__end__"]:
    return END


def fan_out(state: dict[str, Any]) -> list[Send]:
    return [Send("worker", {"n": n}) for n in range(3)]


def agent_graph() -> Any:
    return (
        Graph(name="agent")
        .add_node("model", _noop)
        .add_node("tools", _noop)
        .add_edge(START, "model")
        .add_conditional_edges("model", route)
        .add_edge("tools", "model")
        .compile()
    )


def test_a_conditional_edge_goes_to_the_literal_targets_of_its_router() -> None:
    drawing = draw(agent_graph())

    assert [n.id for n in drawing.nodes] == [START, "model", "tools", END]
    assert drawing.edges == (
        DrawnEdge("tools", "model"),
        DrawnEdge("model", "tools", conditional=True),
        DrawnEdge(START, "model"),
        DrawnEdge("model", END),
    )


def test_a_router_returning_sends_is_a_fan_out_to_its_path_map() -> None:
    graph = (
        Graph(name="fan")
        .add_node("plan", _noop)
        .add_node("worker", _noop)
        .add_edge(START, "plan")
        .add_conditional_edges("plan", fan_out, ["worker"])
        .add_edge("worker", END)
        .compile()
    )

    drawing = draw(graph)

    assert DrawnEdge("plan", "worker", fanout=True) in drawing.edges
    assert {"source": "plan", "target": "worker", "conditional": True} in drawing.to_protocol()[
        "edges"
    ]
    svg = render(drawing, layout(drawing), dom_id="g")
    assert re.search(r'class="edge edge-fanout"[^>]*data-source="plan" data-target="worker"', svg)
    assert ">Send</text>" in svg


def test_a_subgraph_is_folded_with_its_own_drawing_or_drawn_inside_on_xray() -> None:
    inner = Graph(name="inner").add_node("deep", _noop).add_edge(START, "deep").compile()
    graph = (
        Graph(name="outer")
        .add_node("sub", inner)
        .add_node("after", _noop)
        .add_edge(START, "sub")
        .add_edge("sub", "after")
        .compile()
    )

    folded = draw(graph)
    inside = draw(graph, xray=1)

    assert [n.id for n in folded.nodes] == [START, "sub", "after", END]
    assert folded.nodes[1].subgraph == "inner"
    assert [n.id for n in folded.folded["sub"].nodes] == [START, "deep", END]
    assert [n.id for n in inside.nodes] == [START, "sub:deep", "after", END]
    assert inside.folded == {}
    assert folded.to_protocol() == {
        "nodes": [
            {"id": START, "type": "runnable", "data": {"name": START}},
            {"id": "sub", "type": "runnable", "data": {"name": "sub"}},
            {"id": "after", "type": "runnable", "data": {"name": "after"}},
            {"id": END},
        ],
        "edges": [
            {"source": "sub", "target": "after"},
            {"source": START, "target": "sub"},
            {"source": "after", "target": END},
        ],
    }


def test_the_layout_places_every_box_inside_the_picture_and_routes_every_edge() -> None:
    drawing = draw(agent_graph())

    laid_out = layout(drawing)

    assert set(laid_out.boxes) == {n.id for n in drawing.nodes}
    for box in laid_out.boxes.values():
        assert box.x - box.width / 2 >= 0 and box.x + box.width / 2 <= laid_out.width
        assert box.y - box.height / 2 >= 0 and box.y + box.height / 2 <= laid_out.height
    assert [(r.source, r.target) for r in laid_out.routes] == [
        (e.source, e.target) for e in drawing.edges
    ]
    assert all(len(r.points) >= 2 for r in laid_out.routes)
    # Layered top to bottom: start above the model, the model above the tools.
    boxes = laid_out.boxes
    assert boxes[START].y < boxes["model"].y < boxes["tools"].y


def test_a_node_looping_to_itself_and_disconnected_parts_are_drawn() -> None:
    graph = (
        Graph(name="loop")
        .add_node("again", _noop)
        .add_edge(START, "again")
        .add_conditional_edges("again", lambda s: "again", ["again", END])
        .compile()
    )
    drawing = draw(graph)

    laid_out = layout(drawing)

    loops = [r for r in laid_out.routes if r.self_loop]
    assert [(r.source, r.target) for r in loops] == [("again", "again")]
    svg = render(drawing, laid_out, dom_id="loop")
    assert 'data-source="again" data-target="again"' in svg


def test_every_label_and_attribute_of_the_svg_is_escaped() -> None:
    name = 'x"><script>alert(1)</script>&'
    graph = Graph(name=name).add_node(name, _noop).add_edge(START, name).compile()
    drawing = draw(graph)

    svg = render(
        drawing,
        layout(drawing),
        Marks(paused={name: '<img src=x onerror="alert(2)">'}),
        dom_id="esc",
    )

    assert "<script>" not in svg and "<img" not in svg
    assert 'data-node="x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;"' in svg
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in svg
    assert "style=" not in svg


def test_the_marks_show_running_paused_visited_and_taken() -> None:
    drawing = draw(agent_graph())

    svg = render(
        drawing,
        layout(drawing),
        Marks(
            running=frozenset({"tools"}),
            paused={"model": "review of send_email"},
            counts={"model": 2, "tools": 1},
            taken=frozenset({(START, "model"), ("model", "tools")}),
        ),
        dom_id="m",
    )

    assert re.search(r'<g class="node is-running on-path" data-node="tools">', svg)
    assert re.search(r'<g class="node is-paused on-path" data-node="model">', svg)
    assert "&#215;2</text>" in svg and "⏸ review of send_email" in svg
    taken = re.findall(
        r'class="edge[^"]*on-path"[^>]*data-source="([^"]+)" data-target="([^"]+)"', svg
    )
    assert sorted(taken) == sorted([(START, "model"), ("model", "tools")])
    assert re.match(r'<svg [^>]*viewBox="0 0 [\d.]+ [\d.]+" width="[\d.]+" height="[\d.]+"', svg)
