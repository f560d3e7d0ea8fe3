"""The graph the realtime workloads run on the live server: it pauses at once.

`bench_review` asks for a review of one proposed `send_email` call (the payload shape of
the HumanInTheLoop middleware, so the inbox shows it as a tool review) in its first
super-step; answered, it records what it would execute and ends. The server finds it
through `BEAMWEAVER_GRAPHS` (see `GRAPHS`).
"""

from __future__ import annotations

from typing import Any

from beamweaver_core.agent import HITL
from beamweaver_core.agent.review import ActionRequest, ReviewConfig, ReviewRequest
from beamweaver_core.graph import START, Graph, interrupt

GRAPH_NAME = "bench_review"
GRAPHS = {GRAPH_NAME: "bench.live.graphs:review_graph"}
"""What the server's `BEAMWEAVER_GRAPHS` adds (the product's own graphs stay registered)."""

EMAIL_SCHEMA = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "maxLength": 200},
        "subject": {"type": "string", "maxLength": 200},
        "body": {"type": "string"},
    },
    "required": ["to", "subject", "body"],
    "additionalProperties": False,
}


def review_request(topic: str) -> ReviewRequest:
    """The review the graph asks for: one `send_email` call about `topic`."""
    args = {
        "to": "ops@example.com",
        "subject": f"Weekly report: {topic}",
        "body": "All systems nominal.\nQueue depth within bounds.\n" * 4,
    }
    return ReviewRequest(
        (ActionRequest(name="send_email", args=args, description="Send the weekly report?"),),
        (
            ReviewConfig(
                action_name="send_email",
                allowed_decisions=("approve", "edit", "reject", "respond"),
                args_schema=EMAIL_SCHEMA,
            ),
        ),
    )


def _propose(state: dict[str, Any]) -> dict[str, Any]:
    review = review_request(str(state.get("topic", "")))
    answer = interrupt(review.to_value())
    return {"decisions": list(HITL.validate_decisions(review, answer))}


def _act(state: dict[str, Any]) -> dict[str, Any]:
    approved = [d for d in state.get("decisions", []) if d.get("type") in ("approve", "edit")]
    return {"executed": len(approved)}


review_graph = (
    Graph(name=GRAPH_NAME)
    .add_node("propose", _propose)
    .add_node("act", _act)
    .add_edge(START, "propose")
    .add_edge("propose", "act")
    .compile()
)
