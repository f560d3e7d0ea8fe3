"""The graphs of the big database: three agents that each propose one tool call for review.

Each graph pauses in its first super-step on a tool review (the HumanInTheLoop payload
shape), so the inbox sees three graphs and three tools; answered, it records what it would
execute and ends. The input names a customer and an order (`{"customer": "cust-0417",
"order": "ord-000123"}`), which the proposal quotes, so a search for a customer finds
that customer's items only. The fixture's bulk rows are clones of threads these graphs
wrote through the runtime (`bench.scale.bulk`).
"""

from __future__ import annotations

from typing import Any

from beamweaver_core.agent import HITL
from beamweaver_core.agent.review import ActionRequest, ReviewConfig, ReviewRequest
from beamweaver_core.graph import START, CompiledGraph, Graph, interrupt

TOOLS = {"scale_refund": "issue_refund", "scale_email": "send_email", "scale_notify": "notify"}
"""Graph name → the tool it proposes."""

GRAPHS = {name: f"bench.scale.graphs:{name}" for name in TOOLS}
"""What the processes' `BEAMWEAVER_GRAPHS` adds for the big database."""

_SCHEMA = {"type": "object", "additionalProperties": {"type": "string", "maxLength": 500}}


def _args(tool: str, customer: str, order: str) -> dict[str, str]:
    if tool == "issue_refund":
        return {"customer": customer, "order_id": order, "reason": "Damaged in transit."}
    if tool == "send_email":
        return {
            "to": f"{customer}@example.com",
            "subject": f"About your order {order}",
            "body": "Hello,\nyour request was processed.\nRegards, support\n" * 3,
        }
    return {"channel": "#ops", "text": f"{customer}: escalation about {order}"}


def review_request(graph: str, state: dict[str, Any]) -> ReviewRequest:
    """The review `graph` asks for on `state` (its input)."""
    tool = TOOLS[graph]
    args = _args(tool, str(state.get("customer", "")), str(state.get("order", "")))
    return ReviewRequest(
        (ActionRequest(name=tool, args=args, description=f"Run {tool} as proposed?"),),
        (
            ReviewConfig(
                action_name=tool,
                allowed_decisions=("approve", "edit", "reject", "respond"),
                args_schema=_SCHEMA,
            ),
        ),
    )


def _build(name: str) -> CompiledGraph:
    def propose(state: dict[str, Any]) -> dict[str, Any]:
        review = review_request(name, state)
        answer = interrupt(review.to_value())
        return {"decisions": list(HITL.validate_decisions(review, answer))}

    def act(state: dict[str, Any]) -> dict[str, Any]:
        approved = [d for d in state.get("decisions", []) if d.get("type") in ("approve", "edit")]
        return {"executed": len(approved)}

    return (
        Graph(name=name)
        .add_node("propose", propose)
        .add_node("act", act)
        .add_edge(START, "propose")
        .add_edge("propose", "act")
        .compile()
    )


scale_refund = _build("scale_refund")
scale_email = _build("scale_email")
scale_notify = _build("scale_notify")
